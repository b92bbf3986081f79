#!/bin/bash
# Run 39 (#28): the build of `eefcdbe` records a training loop whose DataLoader forks new
# workers every epoch (from the main thread) and whose helper thread starts a child 15 s in
# (run39_loader.py); check_children.py then says when the recording first listed each.
B=.device/bins/gw-head
$B record -o $OUT/rec.jsonl --interval 250ms --duration 50s 2>> $OUT/log.txt &
sleep 3
timeout 60 python3 docs/workloads/run39_loader.py 40 $OUT/loader.jsonl 2>> $OUT/log.txt
wait
python3 docs/workloads/check_children.py $OUT/rec.jsonl $OUT/loader.jsonl | tee $OUT/children.txt
gzip $OUT/rec.jsonl

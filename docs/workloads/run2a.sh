#!/bin/bash
# Device run 2a: variants the rules were not tuned on, each recorded and diagnosed live;
# then a hang with a snapshot (JSON + Markdown) and the TUI live in a pty.
B=target/release/gpuwatch; R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1
for m in dataloader launch_bound healthy_below_cap; do
  $B record -o $R/$m.jsonl --interval 250ms --duration 72s 2>>$R/log.txt &
  $B diagnose --for 70s --json > $R/$m-diag.json 2>>$R/log.txt &
  sleep 3
  python3 .device/variants.py $m 60 $R/$m-span.json >> $R/log.txt 2>&1
  wait
  echo "$m diag rc=$?" >> $R/log.txt
done
python3 .device/variants.py spin 80 $R/spin-span.json >> $R/log.txt 2>&1 &
W=$!
sleep 1
$B record -o $R/spin.jsonl --interval 250ms --duration 78s 2>>$R/log.txt &
( sleep 10; $B snapshot --for 62s --window 2m -o $R/h200-hang.json 2>>$R/log.txt ) &
( sleep 10; $B snapshot --for 62s --window 2m --format md -o $R/h200-hang.md 2>>$R/log.txt ) &
GPUWATCH_SNAPSHOT_DIR=$R python3 .device/tui_pty.py 60 $R/tui-h200.bin -- $B --interval 250ms >> $R/log.txt 2>&1
wait
ls -la $R >> $R/log.txt
tar czf $OUT/run2a.tgz -C $OUT r
cat $R/log.txt

#!/bin/bash
# Device run 3 (two H200s): a collective hang with one rank stalled on the host.
B=target/release/gpuwatch; R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1
nvidia-smi -L > $R/log.txt; nvidia-smi topo -m >> $R/log.txt 2>&1
$B record -o $R/nccl_hang.jsonl --interval 250ms --duration 110s 2>>$R/log.txt &
$B diagnose --for 105s --json > $R/nccl_hang-diag.json 2>>$R/log.txt &
D=$!
sleep 3
timeout 200 python3 .device/nccl_hang.py 30 70 $R/nccl_hang-span.json >> $R/log.txt 2>&1
echo "workload rc=$?" >> $R/log.txt
wait $D; echo "diagnose rc=$?" >> $R/log.txt
wait
tar czf $OUT/run3.tgz -C $OUT r
cat $R/log.txt | tail -30

#!/bin/bash
# Device run 2b: two healthy variants (a fixed loader, inference under the cap), the monitors
# side by side, gpuwatch's cost against its interval, and the observer effect on an idle GPU.
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1
for m in dataloader_fixed transformer_inference; do
  $B record -o $R/$m.jsonl --interval 250ms --duration 72s 2>>$R/log.txt &
  $B diagnose --for 70s --json > $R/$m-diag.json 2>>$R/log.txt &
  sleep 3
  python3 .device/variants.py $m 60 $R/$m-span.json >> $R/log.txt 2>&1
  wait
done
nvidia-smi --query-gpu=power.draw,clocks.sm,pstate,clocks_event_reasons.active --format=csv,noheader -lms 200 > $R/observer-without.csv & S=$!
sleep 30; kill $S
python3 .device/bench/monitor_overhead.py 32 observer -- $B --interval 100ms > $R/observer-gpuwatch.json &
sleep 1
nvidia-smi --query-gpu=power.draw,clocks.sm,pstate,clocks_event_reasons.active --format=csv,noheader -lms 200 > $R/observer-with.csv & S=$!
sleep 30; kill $S; wait
N=/tmp/nvtop/usr/bin/nvtop
bash .device/bench/overhead.sh 20 "gpuwatch-1s|$B --interval 1s" "gpuwatch-0.25s|$B --interval 250ms" "gpuwatch-0.1s|$B --interval 100ms" "gpuwatch-0.05s|$B --interval 50ms" "nvtop-1s|$N -d 10" "nvtop-0.1s|$N -d 1" "nvitop-1s|python3 -m nvitop --interval 1" "nvitop-0.25s|python3 -m nvitop --interval 0.25" > $R/overhead.jsonl 2>>$R/log.txt
nvidia-smi -q -d POWER,PERFORMANCE > $R/smi-end.txt 2>&1
date -u >> $R/log.txt; uname -a >> $R/log.txt; nproc >> $R/log.txt; lscpu | grep "Model name" >> $R/log.txt
tar czf $OUT/run2b.tgz -C $OUT r
cat $R/overhead.jsonl $R/log.txt

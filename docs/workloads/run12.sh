#!/bin/bash
# Device run 12 (issues 12, 14, 17), build of this commit: the monitors side by side again
# (performance.md), the exporters scraped every second (gpuwatch serve with and without its
# opt-in series, nvitop-exporter), and a real torch job run with CUDA_LAUNCH_BLOCKING=1 in
# its launch-bound phase while gpuwatch records: the recording carries what the process ran
# with, and the diagnosis of it names the setting.
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1
N=/tmp/nvtop/usr/bin/nvtop
date -u > $R/log.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/log.txt
lscpu | grep "Model name" >> $R/log.txt; nproc >> $R/log.txt; uname -r >> $R/log.txt
echo "build $(git log -1 --format=%h 2>/dev/null) $(git status --porcelain 2>/dev/null | wc -l) uncommitted" >> $R/log.txt
# 1. The live torch job with CUDA_LAUNCH_BLOCKING=1 (first: the hint is what this run is for).
timeout 100 $B record -o $R/blocking.jsonl --interval 250ms --duration 80s 2>>$R/log.txt & REC=$!
sleep 2
CUDA_LAUNCH_BLOCKING=1 timeout 90 python3 .device/workloads/gpu_workloads.py 60 sync_small_kernels $R/blocking-spans.json >> $R/log.txt 2>&1
wait $REC
$B diagnose --replay $R/blocking.jsonl --json > $R/blocking-diagnosis.json 2>>$R/log.txt
gzip -9 -k $R/blocking.jsonl; cp $R/blocking.jsonl.gz $R/blocking-diagnosis.json $OUT/
# 2. The monitors side by side, 20 s each under a steady bf16 load (as in run 7 and 10).
timeout 300 bash .device/bench/overhead.sh 20 "gpuwatch-1s|$B --interval 1s" "gpuwatch-0.25s|$B --interval 250ms" "gpuwatch-0.1s|$B --interval 100ms" "nvtop-1s|$N -d 10" "nvtop-0.1s|$N -d 1" > $R/overhead.jsonl 2>>$R/log.txt
cp $R/overhead.jsonl $OUT/overhead.jsonl
# 3. Exporters, each scraped every second for 30 s beside the same load.
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/bench/peers/whl/*.whl .device/exporter/*.whl 2>>$R/log.txt >/dev/null
export PYTHONPATH=/tmp/site
E() { echo -n "{\"label\": \"$1\", \"result\": " >> $R/exporters.jsonl; timeout 90 bash docs/workloads/exporter_cost.sh 30 5 "$2" -- "${@:3}" | tr -d '\n' >> $R/exporters.jsonl; echo "}" >> $R/exporters.jsonl; }
E gpuwatch-serve-1s http://127.0.0.1:9947/metrics $B serve --interval 1s
E gpuwatch-serve-250ms http://127.0.0.1:9947/metrics $B serve --interval 250ms
E gpuwatch-serve-1s-processes-dcgm http://127.0.0.1:9947/metrics $B serve --interval 1s --processes 4 --dcgm-compat
E nvitop-exporter-1s http://127.0.0.1:5050/metrics python3 -m nvitop_exporter --bind-address 127.0.0.1 --port 5050 --interval 1
cp $R/exporters.jsonl $OUT/exporters.jsonl
timeout 20 $B serve --listen 127.0.0.1:9948 --processes 4 --dcgm-compat >/dev/null 2>&1 & S=$!; sleep 6; curl -s http://127.0.0.1:9948/metrics > $R/serve-metrics.txt; kill $S; wait $S
kill $LOAD; wait $LOAD 2>/dev/null
cp $R/serve-metrics.txt $R/log.txt $OUT/
cat $R/overhead.jsonl $R/exporters.jsonl; tail -5 $R/log.txt
python3 -c "
import json; d=json.load(open('$R/blocking-diagnosis.json'))
for f in d.get('findings',[]): print(f['rule'], f['severity'], '|', f['causes'][0][:100]); print('   ', [e for e in f['evidence'] if 'environ' in e])
"

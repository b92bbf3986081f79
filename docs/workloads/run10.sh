#!/bin/bash
# Device run 10 (issue 12): the monitors side by side after the store/driver rework (the screen
# copies what changed from the store and draws without the lock); per-thread breakdown;
# fast-tick timings through the one driver; a 100 ms recording to check the interval travels.
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1
N=/tmp/nvtop/usr/bin/nvtop
date -u > $R/log.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/log.txt
lscpu | grep "Model name" >> $R/log.txt; nproc >> $R/log.txt; uname -r >> $R/log.txt
git log -1 --format=%h >> $R/log.txt 2>/dev/null
timeout 300 bash .device/bench/overhead.sh 20 "gpuwatch-1s|$B --interval 1s" "gpuwatch-0.25s|$B --interval 250ms" "gpuwatch-0.1s|$B --interval 100ms" "nvtop-1s|$N -d 10" "nvtop-0.1s|$N -d 1" > $R/overhead.jsonl 2>>$R/log.txt
cp $R/overhead.jsonl $OUT/overhead.jsonl
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
timeout 60 $B devices --timings 200 --interval 100ms > $R/timings.txt 2>&1
P() { timeout 60 python3 docs/workloads/probe.py 25 4 "$1" -- bash -c "exec $2" >> $R/probe.jsonl; }
P gw-tui-0.1s "$B --interval 100ms"
P gw-tui-1s "$B --interval 1s"
P nvtop-0.1s "$N -d 1"
timeout 30 $B record -o $R/rec-100ms.jsonl --interval 100ms --duration 8s 2>>$R/log.txt
# Exporters, each scraped every second for 30 s beside the same load (issue 14).
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .device/bench/peers/whl/*.whl .device/exporter/*.whl 2>>$R/log.txt
export PYTHONPATH=/tmp/site
E() { echo -n "{\"label\": \"$1\", \"result\": " >> $R/exporters.jsonl; timeout 90 bash docs/workloads/exporter_cost.sh 30 5 "$2" -- "${@:3}" | tr -d '\n' >> $R/exporters.jsonl; echo "}" >> $R/exporters.jsonl; }
E gpuwatch-serve-250ms http://127.0.0.1:9947/metrics $B serve --interval 250ms
E gpuwatch-serve-1s http://127.0.0.1:9947/metrics $B serve --interval 1s
E nvitop-exporter-1s http://127.0.0.1:5050/metrics python3 -m nvitop_exporter --bind-address 127.0.0.1 --port 5050 --interval 1
cp $R/exporters.jsonl $OUT/exporters.jsonl
curl -s http://127.0.0.1:1/ >/dev/null 2>&1
timeout 20 $B serve --listen 127.0.0.1:9948 >/dev/null 2>&1 & S=$!; sleep 6; curl -s http://127.0.0.1:9948/metrics > $R/serve-metrics.txt; curl -s http://127.0.0.1:9948/findings.json > $R/serve-findings.json; kill $S; wait $S
kill $LOAD; wait $LOAD 2>/dev/null
gzip -9 $R/rec-100ms.jsonl
tar czf $OUT/run10.tgz -C $OUT r
cat $R/overhead.jsonl $R/timings.txt | head -40; python3 -c "
import json
for l in open('$R/probe.jsonl'):
    d=json.loads(l); print(d['label'], d['cpu_pct'], d['steady_cpu_pct'], d['peak_rss_mib'], d['threads_steady_s'])"
cat $R/exporters.jsonl; grep -c "" $R/serve-metrics.txt; grep "gpuwatch_gpm_sm_active_ratio\|gpuwatch_power_watts{" $R/serve-metrics.txt | cut -c1-60,180-
tail -5 $R/log.txt

#!/bin/bash
# Device run 7: the monitors side by side after the slow-call and wake-up cuts; per-thread
# breakdown; fast-tick timings; the DataLoader(num_workers=0) variant live with the fixed rule.
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
export PYTHONUNBUFFERED=1
N=/tmp/nvtop/usr/bin/nvtop
date -u > $R/log.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/log.txt
lscpu | grep "Model name" >> $R/log.txt; nproc >> $R/log.txt; uname -r >> $R/log.txt
bash .device/bench/overhead.sh 20 "gpuwatch-1s|$B --interval 1s" "gpuwatch-0.25s|$B --interval 250ms" "gpuwatch-0.1s|$B --interval 100ms" "gpuwatch-0.05s|$B --interval 50ms" "nvtop-1s|$N -d 10" "nvtop-0.1s|$N -d 1" "nvitop-1s|python3 -m nvitop --interval 1" "nvitop-0.25s|python3 -m nvitop --interval 0.25" > $R/overhead.jsonl 2>>$R/log.txt
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
$B devices --timings 200 --interval 100ms > $R/timings.txt 2>&1
P() { python3 .device/probe.py 25 4 "$1" -- bash -c "exec $2" >> $R/probe.jsonl; }
P gw-tui-0.1s "$B --interval 100ms"
P gw-tui-1s "$B --interval 1s"
P nvtop-0.1s "$N -d 1"
$B record -o $R/single-proc.jsonl --interval 250ms --duration 8s 2>>$R/log.txt
kill $LOAD; wait $LOAD 2>/dev/null
m=dataloader
$B record -o $R/$m.jsonl --interval 250ms --duration 72s 2>>$R/log.txt &
$B diagnose --for 70s --json > $R/$m-diag.json 2>>$R/log.txt &
sleep 3
python3 .device/variants.py $m 60 $R/$m-span.json >> $R/log.txt 2>&1
wait
gzip -9 $R/single-proc.jsonl $R/$m.jsonl
tar czf $OUT/run7.tgz -C $OUT r
cat $R/overhead.jsonl $R/timings.txt; python3 -c "
import json
for l in open('$R/probe.jsonl'):
    d=json.loads(l); print(d['label'], d['cpu_pct'], d['steady_cpu_pct'], d['peak_rss_mib'], d['threads_steady_s'])"
python3 -c "import json; d=json.load(open('$R/$m-diag.json')); print([ (f['rule'], f['opened_ms']) for f in d.get('findings', d.get('active', []))] if isinstance(d, dict) else d)" 2>&1 | head -5
tail -5 $R/log.txt

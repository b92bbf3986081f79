#!/bin/bash
# Run 25 (#31): what the lent H200 says about MIG, that MIG naming gives clear errors on a GPU
# without instances, live diagnose beside a spinning kernel and a starved loader (non-MIG
# judging unchanged), and the monitor beside nvtop at 100 ms once.
B=$PWD/target/release/gpuwatch; R=$OUT
date -u > $R/log.txt
{ nvidia-smi --query-gpu=name,mig.mode.current,mig.mode.pending --format=csv; nvidia-smi -q | grep -i -A3 'MIG'; nvidia-smi mig -lgi; nvidia-smi -L; } > $R/mig.txt 2>&1
{ $B devices; echo "rc=$?"; for i in 0:1 MIG-0000 0; do echo "--- -i $i"; timeout 10 $B query -i $i; echo "rc=$?"; done; } > $R/devices.txt 2>&1
timeout 60 python3 .device/workloads/gpu_workloads.py 40 spin_hang,starved_loader $R/spans.json >> $R/log.txt 2>&1 &
sleep 8
timeout 40 $B diagnose --for 30s > $R/diagnose-hang.txt 2>&1
sleep 8
timeout 40 $B diagnose --for 30s > $R/diagnose-starved.txt 2>&1
wait
mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop; N=/tmp/nvtop/usr/bin/nvtop
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
M() { timeout 60 python3 docs/workloads/steady_overhead.py 5 20 "$1" -- "${@:2}" >> $R/threads.jsonl 2>>$R/log.txt; }
M new-0.1s $B --interval 100ms
M nvtop-0.1s $N -d 1
M new-1s $B --interval 1s
kill $LOAD; wait $LOAD 2>/dev/null
cat $R/threads.jsonl | python3 -c "import json,sys; [print(d['label'], d['cpu_pct'], d['peak_rss_mib']) for d in map(json.loads, sys.stdin)]"

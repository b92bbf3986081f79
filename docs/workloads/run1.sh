#!/bin/bash
# Device run 1: static facts, NVML call timings, a recording of every labelled phase, live diagnose.
B=target/release/gpuwatch
export PYTHONUNBUFFERED=1
{ nvidia-smi -L; $B devices; echo "rc=$?"; $B devices --json; } > $OUT/devices.txt 2>&1
$B devices --timings 300 --interval 100ms > $OUT/timings.txt 2>&1
$B record -o $OUT/h200-phases.jsonl --interval 250ms --duration 460s 2> $OUT/record.log &
REC=$!
$B diagnose --for 300s --json > $OUT/diag-live.json 2>&1 &
DIAG=$!
sleep 3
python3 .device/workloads/gpu_workloads.py 40 "" $OUT/spans.json > $OUT/workloads.log 2>&1
python3 - > $OUT/nvidia-smi-q.txt 2>&1 <<'PY' &
import torch,time,subprocess
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<6: c=a@a
torch.cuda.synchronize(); print(subprocess.run(['nvidia-smi','-q'],capture_output=True,text=True).stdout)
PY
wait $!
python3 .device/workloads/gpu_workloads.py 220 idle_mem_held $OUT/spans-idlemem.json >> $OUT/workloads.log 2>&1
kill -INT $REC; wait $REC; echo "record rc=$?" >> $OUT/record.log
wait $DIAG; echo "diag rc=$?" >> $OUT/workloads.log
ls -la $OUT

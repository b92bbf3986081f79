#!/bin/bash
# Run 31 (#28): every NVML call timed (median, p90, max latency per call and its thread) by
# `gpuwatch devices --timings` over 100 ticks at 250 ms beside the steady bf16 load, build
# c049b79: which calls of the slow round cost the most.
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<60:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & sleep 6; timeout 60 .device/bins/gw-now devices --timings 100 --interval 250ms > $OUT/timings.txt 2>&1; echo rc=$? >> $OUT/timings.txt; kill %1

#!/bin/bash
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
python3 .device/nvml_cost2.py
kill $LOAD

#!/bin/bash
# Device run 9: two processes on one GPU: per-process utilization still comes from NVML's
# per-process query (only a single process takes the GPU's own utilization).
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
L() { python3 -c "
import torch,time,sys
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<60:
  c=a@a; torch.cuda.synchronize(); time.sleep(float(sys.argv[1]))
" $1 & }
L 0.0; A=$!
L 0.2; C=$!
sleep 8
$B record -o $R/two-procs.jsonl --interval 250ms --duration 12s 2>>$R/log.txt
kill $A $C
python3 - <<PY
import json
lines = open("$R/two-procs.jsonl").read().splitlines()
for l in lines[8::8]:
    d = json.loads(l)["devices"][0]; s = d["sample"]
    print("gpu util", s["util_gpu_pct"], [(p["pid"], p["sm_pct"], p["mem_pct"]) for p in d["processes"]])
PY

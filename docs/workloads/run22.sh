#!/bin/bash
# Device run 22 (issues 24 and 28): what reading stacks costs a pure-Python process, per CPU
# second of its own (stepcost3.py, 40 pairs: steps per thread-CPU second do not move when the
# VM takes the core away); and where the monitor's CPU goes by thread at 1 s and 100 ms, and
# the exporter's, under the same steady bf16 load as run 21.
B=$PWD/target/release/gpuwatch; R=$OUT
date -u > $R/log.txt
timeout 260 python3 docs/workloads/stepcost3.py $B 40 $R python >> $R/log.txt 2>&1
python3 docs/workloads/stepcost3_report.py $R > $R/stepcost3.json 2>>$R/log.txt
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
M() { timeout 60 python3 docs/workloads/steady_overhead.py 5 20 "$1" -- "${@:2}" >> $R/threads.jsonl 2>>$R/log.txt; }
M new-1s $B --interval 1s
M new-0.1s $B --interval 100ms
M new-1s-no-stacks $B --interval 1s --no-stacks
M serve-1s $B serve --interval 1s
kill $LOAD; wait $LOAD 2>/dev/null
cat $R/stepcost3.json $R/threads.jsonl; tail -3 $R/log.txt

#!/bin/bash
# Device run 21 (issues 28 and 24): the monitors side by side in one run under a steady bf16
# load, each in a 200x50 pty, CPU in steady state from schedstat (steady_overhead.py): this
# commit's build against the build before issue 28's work (a44503e, .device/gw-base) and nvtop;
# the exporters scraped every second; what nvmlInit alone maps; then what reading stacks costs
# a pure-Python process (stepcost3.py, 30 pairs of 2 s windows).
B=$PWD/target/release/gpuwatch; O=$PWD/.device/gw-base; R=$OUT
mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop; N=/tmp/nvtop/usr/bin/nvtop
date -u > $R/log.txt; nproc >> $R/log.txt; python3 --version >> $R/log.txt
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
M() { timeout 60 python3 docs/workloads/steady_overhead.py 5 20 "$1" -- "${@:2}" >> $R/overhead.jsonl 2>>$R/log.txt; }
M new-0.1s $B --interval 100ms
M base-0.1s $O --interval 100ms
M nvtop-0.1s $N -d 1
M new-0.25s $B --interval 250ms
M base-0.25s $O --interval 250ms
M new-1s $B --interval 1s
M base-1s $O --interval 1s
M nvtop-1s $N -d 10
E() { echo -n "{\"label\": \"$1\", \"result\": " >> $R/exporters.jsonl; timeout 60 bash docs/workloads/exporter_steady.sh 30 5 "$2" -- "${@:3}" | tr -d '\n' >> $R/exporters.jsonl; echo "}" >> $R/exporters.jsonl; }
E new-serve-1s http://127.0.0.1:9947/metrics $B serve --interval 1s
E base-serve-1s http://127.0.0.1:9948/metrics $O serve --interval 1s --listen 127.0.0.1:9948
kill $LOAD; wait $LOAD 2>/dev/null
timeout 20 python3 docs/workloads/nvml_rss.py > $R/nvml_rss.txt 2>&1
timeout 200 python3 docs/workloads/stepcost3.py $B 30 $R python >> $R/log.txt 2>&1
python3 docs/workloads/stepcost3_report.py $R > $R/stepcost3.json 2>>$R/log.txt
cat $R/overhead.jsonl $R/exporters.jsonl $R/stepcost3.json; tail -3 $R/nvml_rss.txt; tail -3 $R/log.txt

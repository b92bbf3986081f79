#!/bin/bash
# Run 34 (#28): this session's start `af991e5` against `97a1dbd` (rule windows kept sorted
# between evaluations), alternating, beside the same steady bf16 load as runs 27-33 and nvtop;
# then a live `diagnose` of the load with the new build (the verdict must not change).
R=$OUT; D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
date -u > $R/log.txt
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
M() { timeout 60 python3 docs/workloads/steady_overhead.py 5 20 "$1" -- "${@:2}" >> $R/threads.jsonl 2>>$R/log.txt; }
mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop 2>>$R/log.txt
NVTOP=/tmp/nvtop/usr/bin/nvtop
for round in 1 2 3; do
  M new-0.1s $NEW --interval 100ms
  M old-0.1s $OLD --interval 100ms
done
M nvtop-0.1s $NVTOP -d 1
for round in 1 2; do
  M new-1s $NEW --interval 1s
  M old-1s $OLD --interval 1s
done
M new-serve-1s $NEW serve --interval 1s --listen 127.0.0.1:9478
M old-serve-1s $OLD serve --interval 1s --listen 127.0.0.1:9477
M new-0.25s $NEW --interval 250ms
M old-0.25s $OLD --interval 250ms
M nvtop-1s $NVTOP -d 10
timeout 60 $NEW diagnose --for 30s --json > $R/diagnose.json 2>>$R/log.txt
kill $LOAD; wait $LOAD 2>/dev/null
python3 - $R/threads.jsonl <<'PY' | tee $R/summary.txt
import json, sys
for d in map(json.loads, open(sys.argv[1])):
    print(f"{d['label']:18} {d['cpu_pct']:6.3f} %  rss {d['peak_rss_mib']:5.1f} MiB  tty {d['tty_bytes_per_s']:6} B/s  {d['threads_ms']}")
PY

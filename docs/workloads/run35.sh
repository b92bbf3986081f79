#!/bin/bash
# Run 35 (#28): run 34 found the new build higher at 100 ms (every window sorted again whole at
# each judging; fixed in e98617f). This session's start `af991e5` against `e303c76` (that fix
# and the findings pane drawn from a kept document), alternating, the new build first, beside
# the same steady bf16 load as runs 27-34.
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
for round in 1 2 3 4; do
  M new-0.1s $NEW --interval 100ms
  M old-0.1s $OLD --interval 100ms
done
for round in 1 2; do
  M new-1s $NEW --interval 1s
  M old-1s $OLD --interval 1s
done
M new-0.25s $NEW --interval 250ms
M old-0.25s $OLD --interval 250ms
kill $LOAD; wait $LOAD 2>/dev/null
python3 - $R/threads.jsonl <<'PY' | tee $R/summary.txt
import json, sys
for d in map(json.loads, open(sys.argv[1])):
    print(f"{d['label']:18} {d['cpu_pct']:6.3f} %  rss {d['peak_rss_mib']:5.1f} MiB  tty {d['tty_bytes_per_s']:6} B/s  {d['threads_ms']}")
PY

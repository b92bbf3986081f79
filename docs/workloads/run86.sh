#!/bin/bash
# Run 86 (#28): the stack thread's look now and then (64e9280: 5 reads over 2 s, not 10), never
# measured on a GPU (run 85 chose a load that draws over half the TDP, where no look is taken).
# The look is for a process on a GPU under half its TDP with no cause open or timed: here a
# process that holds a small tensor and sleeps. `serve --interval 1s`, 60 s after a 30 s
# warm-up (the look repeats every 30 s, so the window holds two), new then old, then new with
# --no-stacks (what the looks add) and a 90 s recording (what the rules made of the process).
# NEW = gw-new16 = 912dc55, OLD = gw-prev = fb5ed80.
NEW=.device/bins/gw-new16 OLD=.device/bins/gw-prev
R=$OUT
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$R/gpu.txt"
python3 -c "
import torch,time
a=torch.zeros(1<<20,device='cuda'); torch.cuda.synchronize()
time.sleep(3600)
" &
LOAD=$!
sleep 10
nvidia-smi --query-gpu=power.draw,utilization.gpu,memory.used --format=csv >> "$R/gpu.txt"
for b in "$NEW" "$OLD"; do
  timeout 110 python3 docs/workloads/steady_overhead.py 30 60 "$(basename $b)-idle-serve-1s" -- \
    $b serve --interval 1s --listen 127.0.0.1:9471 >> "$R/threads.jsonl" 2>> "$R/log.txt"
done
timeout 110 python3 docs/workloads/steady_overhead.py 30 60 "gw-new16-idle-serve-1s-nostacks" -- \
  $NEW serve --interval 1s --listen 127.0.0.1:9471 --no-stacks >> "$R/threads.jsonl" 2>> "$R/log.txt"
timeout 100 $NEW diagnose --for 60s --interval 1s > "$R/diagnose.txt" 2>&1
kill $LOAD
python3 - "$R/threads.jsonl" <<'PY' | tee "$R/summary.txt"
import json, sys
for d in map(json.loads, open(sys.argv[1])):
    print(f"{d['label']:34} {d['cpu_pct']:6.3f} %  rss {d['peak_rss_mib']:5.1f} MiB  {d['threads_ms']}")
PY

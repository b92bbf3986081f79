#!/bin/bash
# Run 93 (#28): the figures owed since run 89, on main's head (e5fdde9 = gw-head: start-up's
# pages given back 10 s in, the link order made again on 2026-12-07), in one call, the most
# owed first so that a call stopped at its limit keeps them:
#  1. the side-by-side table (shared/bench/overhead.sh, 20 s each from start, 200x50
#     pty, beside its own bf16 load): gpuwatch at 100 ms, 250 ms, 1 s and serve, nvtop -d 1 and
#     -d 10, nvitop 0.25 s;
#  2. run 91: resident memory over 32 s of gw-head and of b1ee22f (gw-cur, run 78's order, no
#     release), then gw-head's map at 31 s with its text by crate;
#  3. run 90 on gw-head: callgrind on NVML split at the release, for the GPU's own tiers of what
#     runs after start-up in the link order (link_order.sh with GPU_STEADY).
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv >> "$OUT/log.txt"
. docs/workloads/bench.sh
NEW=.device/bins/gw-head
peers
D=.device/bins
start_load
for b in gw-head gw-cur; do
  timeout 45 python3 docs/workloads/rss_timeline.py 32 -- $D/$b --interval 100ms > "$R/timeline-$b.txt" 2>> "$R/log.txt"
done
TEXTMAP=$R/textmap-gw-head.txt timeout 45 python3 docs/workloads/rss_map.py 31 gw-head-0.1s -- \
  $D/gw-head --interval 100ms >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
stop_load
B=gw-head bash docs/workloads/run90.sh

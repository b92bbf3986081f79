#!/bin/bash
# Run 74 (#28): run 73 again, to see whether its higher readings (the old build as well as the
# new, nvtop too) were its machine's. NEW = gw-new5 = c8a3626: run 73's build plus every rule
# wording an open finding once a second and `--demo persistence`; OLD the same 202212f; the
# same steady bf16 load, nvtop, pairs turned round, the memory map and the bare NVML client.
NEW=.device/bins/gw-new5 OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
timeout 30 python3 docs/workloads/nvml_rss.py > "$R/nvml_rss.txt" 2>> "$R/log.txt"
python3 -c "import os; print('python alone', [l for l in open('/proc/self/status') if l.startswith('VmRSS')])" >> "$R/nvml_rss.txt"
timeout 40 python3 docs/workloads/rss_map.py 15 new-0.1s -- $NEW --interval 100ms \
  >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
for round in 1 2; do pair $round 100ms --interval 100ms; done
for round in 1 2; do pair $round 250ms --interval 250ms; done
for round in 1 2; do pair $round 1s --interval 1s; done
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:947$round; done
M nvtop-100ms "$NVTOP" -d 1
M nvtop-1s "$NVTOP" -d 10
stop_load
summary

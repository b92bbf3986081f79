#!/bin/bash
# Run 77 (#28): run 76 read the new build above the old at 1 s in both pairs (+0.010, +0.012),
# the second run in a row with that sign (run 74: +0.004, +0.002). Three more pairs at 1 s,
# turned round, beside the same steady bf16 load, to call it a regression or noise; and the
# rest of the table for the build that lands: NEW = gw-new9 = 545aafc (run 76's build plus the
# last session's text, band and status-line changes), OLD = 202212f.
# Two parts, each under a call's 10 minutes:
#   `run77.sh a`: a headless diagnosis as a user's first check, three pairs at 1 s, nvtop -d 10;
#   `run77.sh b`: the memory map, the bare NVML client, 100 ms and 250 ms, serve, nvtop -d 1.
NEW=.device/bins/gw-new9 OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
if [ "$1" = a ]; then
  timeout 30 $NEW diagnose --for 8s > "$R/diagnose.txt" 2>&1; echo "rc=$?" >> "$R/diagnose.txt"
  for round in 1 2 3; do pair $round 1s --interval 1s; done
  M nvtop-1s "$NVTOP" -d 10
else
  timeout 30 python3 docs/workloads/nvml_rss.py > "$R/nvml_rss.txt" 2>> "$R/log.txt"
  for b in gw-new9 gw-old; do
    timeout 40 python3 docs/workloads/rss_map.py 15 $b-0.1s -- .device/bins/$b --interval 100ms \
      >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
  done
  for round in 1 2; do pair $round 100ms --interval 100ms; done
  pair 1 250ms --interval 250ms
  pair 2 serve-1s serve --interval 1s --listen 127.0.0.1:9471
  M nvtop-100ms "$NVTOP" -d 1
fi
stop_load
summary

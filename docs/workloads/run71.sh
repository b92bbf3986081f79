#!/bin/bash
# Run 71 (#28): run 68's side-by-side again, with NEW = b6d664a, whose link order puts first
# what the monitor runs on a GPU machine (callgrind there, run 70) and whose relative
# relocations are packed (DT_RELR), against the same OLD (202212f), beside the steady bf16
# load: where the new one's resident memory is (rss_map.py), then the pairs at 100 ms, 250 ms,
# 1 s and serve at 1 s, turned round, and nvtop -d 1 and -d 10 for the ratios, in one run.
NEW=.device/bins/gw-new3 OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
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

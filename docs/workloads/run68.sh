#!/bin/bash
# Run 68 (#27, #28): run 64's side-by-side again, with NEW = the build with the code that runs
# laid side by side (src/link-order.txt; also the health rules' scenarios in their files and
# the findings pane counting only changed lines) against the same OLD (202212f), beside the
# steady bf16 load: first where each one's resident memory is (rss_map.py), then the pairs at
# 100 ms, 250 ms, 1 s and serve at 1 s, turned round, and nvtop -d 1 and -d 10 for the ratios.
# Build and copy the two binaries as run64.sh says.
NEW=.device/bins/gw-new OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
RM() { timeout 40 python3 docs/workloads/rss_map.py 15 "$@" >> "$R/rss_map.jsonl" 2>> "$R/log.txt"; }
RM new-0.1s -- $NEW --interval 100ms
RM old-0.1s -- $OLD --interval 100ms
for round in 1 2; do pair $round 100ms --interval 100ms; done
for round in 1 2; do pair $round 250ms --interval 250ms; done
for round in 1 2; do pair $round 1s --interval 1s; done
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:9472; done
M nvtop-100ms "$NVTOP" -d 1
M nvtop-1s "$NVTOP" -d 10
stop_load
summary

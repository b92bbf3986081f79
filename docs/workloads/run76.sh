#!/bin/bash
# Run 76 (#28): the fourth side-by-side of the wording change, and the first on an H200 since
# run 69 (runs 70-75 had only H100s). Run 74 read the new build 0.02 above the old at 100 ms in
# both pairs where runs 71 and 73 read it below: a fourth reading above would make it a
# regression. NEW = gw-new7 = a0564b6 (run 74's build plus the lost scenario declared by its
# rule, the process view's and the error messages' changes); OLD the same 202212f; the same
# steady bf16 load, nvtop, pairs turned round, the memory map and the bare NVML client.
# Two parts, each under a call's 10 minutes: `run76.sh a` (memory, 100 and 250 ms, nvtop -d 1)
# and `run76.sh b` (1 s, serve, nvtop -d 10).
NEW=.device/bins/gw-new7 OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
if [ "$1" = a ]; then
  timeout 30 python3 docs/workloads/nvml_rss.py > "$R/nvml_rss.txt" 2>> "$R/log.txt"
  for b in gw-new7 gw-old; do
    timeout 40 python3 docs/workloads/rss_map.py 15 $b-0.1s -- .device/bins/$b --interval 100ms \
      >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
  done
  for round in 1 2; do pair $round 100ms --interval 100ms; done
  for round in 1 2; do pair $round 250ms --interval 250ms; done
  M nvtop-100ms "$NVTOP" -d 1
else
  for round in 1 2; do pair $round 1s --interval 1s; done
  for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:947$round; done
  M nvtop-1s "$NVTOP" -d 10
fi
stop_load
summary

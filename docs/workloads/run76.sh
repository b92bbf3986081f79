#!/bin/bash
# Run 76 (#28): the fourth side-by-side of the wording change. Run 74 read the new build 0.02
# above the old at 100 ms in both pairs where runs 71 and 73 read it below: a fourth reading
# above would make it a regression. NEW = gw-new6 = ae685d0 (run 74's build plus the lost
# scenario declared by its rule, and docs); OLD the same 202212f; the same steady bf16 load,
# nvtop, pairs turned round, the memory map and the bare NVML client.
NEW=.device/bins/gw-new6 OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
timeout 30 python3 docs/workloads/nvml_rss.py > "$R/nvml_rss.txt" 2>> "$R/log.txt"
for b in gw-new6 gw-old; do
  timeout 40 python3 docs/workloads/rss_map.py 15 $b-0.1s -- .device/bins/$b --interval 100ms \
    >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
done
for round in 1 2; do pair $round 100ms --interval 100ms; done
for round in 1 2; do pair $round 250ms --interval 250ms; done
for round in 1 2; do pair $round 1s --interval 1s; done
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:947$round; done
M nvtop-100ms "$NVTOP" -d 1
M nvtop-1s "$NVTOP" -d 10
stop_load
summary

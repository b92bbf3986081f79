#!/bin/bash
# Run 89 (#28): where the last 3 MiB over the memory target could come from. (1) Whether
# nvmlInitWithFlags' flags (NO_GPUS 1, NO_ATTACH 2) change the 15 MiB NVML keeps, and which
# anonymous mappings hold them (nvml_flags.py). (2) When gpuwatch's RSS forms over its first
# 6 s (rss_timeline.py) and its map at 15 s with the text by crate (rss_map.py, TEXTMAP).
# (3) callgrind of the build of b1ee22f (gw-cur) on NVML, as run 78 did, for the link order's
# GPU tiers: the last sessions renamed functions out of run 78's lists.
. docs/workloads/bench.sh
D=.device/bins
for f in 0 1 2 3; do
  timeout 30 python3 docs/workloads/nvml_flags.py $f >> "$R/nvml_flags.txt" 2>&1
done
start_load
timeout 20 python3 docs/workloads/rss_timeline.py 6 -- $D/gw-cur --interval 100ms > "$R/timeline.txt" 2>> "$R/log.txt"
TEXTMAP=$R/textmap.txt timeout 40 python3 docs/workloads/rss_map.py 15 gw-cur-0.1s -- $D/gw-cur --interval 100ms \
  >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
. <(sed -n '/^export VALGRIND_LIB/,$p' docs/workloads/run72.sh)

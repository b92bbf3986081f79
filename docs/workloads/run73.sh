#!/bin/bash
# Run 73 (#28): run 71's side-by-side again, with NEW = gw-new4, the build of this session's
# main (rules one file each, the loop renamed pacer) linked in the order run 72's profile gave,
# against the same OLD (202212f), beside the steady bf16 load and nvtop, in one run. Before the
# pairs: where the new one's resident memory is (rss_map.py), and what a bare ctypes NVML
# client maps after nvmlInit and the calls a monitor makes (nvml_rss.py), so the RSS target
# (nvmlInit + 2 MiB) is read against a floor measured in the same run.
NEW=.device/bins/gw-new4 OLD=.device/bins/gw-old
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

#!/bin/bash
# Run 91 (#28): the monitor giving back start-up's pages after 10 s, with the link order that
# lays what runs after start-up first (gw-steady3: this session's order, its after-start-up
# tiers from the demo here, its GPU tiers run 89's), against what landed (gw-cur, b1ee22f),
# beside the steady load. Per build: its resident memory over 32 s (rss_timeline.py: the peak
# at start, the drop at 10 s, what it settles at once the 30 s look at a process has run),
# then a CPU pair at 100 ms, then nvtop -d 1 beside both in the issue's harness. Last, run 90's
# callgrind of what runs after start-up on NVML, for the order's next GPU tiers.
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-steady3 OLD=$D/gw-cur
start_load
for b in gw-steady3 gw-cur; do
  timeout 45 python3 docs/workloads/rss_timeline.py 32 -- $D/$b --interval 100ms > "$R/timeline-$b.txt" 2>> "$R/log.txt"
  TEXTMAP=$R/textmap-$b.txt timeout 40 python3 docs/workloads/rss_map.py 14 $b-0.1s -- $D/$b --interval 100ms \
    >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
done
pair 1 100ms --interval 100ms
summary
nvtop=$(nvtop_path)
timeout 120 bash .device/bench/overhead.sh 20 "new-0.1s|$NEW --interval 100ms" "nvtop-0.1s|$nvtop -d 1" \
  "old-0.1s|$OLD --interval 100ms" 2>> "$R/log.txt" > "$R/shared.jsonl"
stop_load
# (run 90's callgrind, for the next order's GPU tiers, was left for a later run: the device time
# left this session could not hold both.)

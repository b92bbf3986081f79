#!/bin/bash
# Run 91 (#28): the monitor giving back start-up's pages after 10 s, with the link order that
# lays what runs after start-up first (gw-steady3 = a release build of main's head, dee6995 or
# later: its after-start-up tiers from the demo here, its GPU tiers run 89's), against what
# landed before (gw-cur, b1ee22f), beside the steady load: each one's resident memory over 32 s (rss_timeline.py: the peak at
# start, the drop at 10 s, where it settles once the look at a process every 30 s has run),
# then the new build's map at 31 s with its text by crate. Short, to fit the device time left
# this session (525 s, a start included): no CPU pair (nothing in the sampling loop changed;
# the release is one madvise, 10 s in), no callgrind for the next order's GPU tiers (run90.sh).
. docs/workloads/bench.sh
D=.device/bins
start_load
for b in gw-steady3 gw-cur; do
  timeout 45 python3 docs/workloads/rss_timeline.py 32 -- $D/$b --interval 100ms > "$R/timeline-$b.txt" 2>> "$R/log.txt"
done
TEXTMAP=$R/textmap-gw-steady3.txt timeout 45 python3 docs/workloads/rss_map.py 31 gw-steady3-0.1s -- \
  $D/gw-steady3 --interval 100ms >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
stop_load

#!/bin/bash
# Run 46 (#28): the session's last build (`gw-new`, 1521087: frames sent through tui::Screen's
# own diff, text formatted into kept strings) against the last stop that landed, `a2bdd91`
# (`gw-old`), alternating with the OLD build first this time (run 45 ran the new one first,
# and its sampling thread, whose code did not change, read higher in every pair), beside the
# steady bf16 load and nvtop (docs/workloads/bench.sh); then where the new build's resident
# memory is (docs/workloads/rss_map.py).
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
NVTOP=$(nvtop_path)
start_load
for round in 1 2 3; do
  M old-0.1s $OLD --interval 100ms
  M new-0.1s $NEW --interval 100ms
done
M nvtop-0.1s "$NVTOP" -d 1
for round in 1 2 3; do
  M old-1s $OLD --interval 1s
  M new-1s $NEW --interval 1s
done
M nvtop-1s "$NVTOP" -d 10
for round in 1 2; do
  M old-serve-1s $OLD serve --interval 1s --listen 127.0.0.1:9477
  M new-serve-1s $NEW serve --interval 1s --listen 127.0.0.1:9478
done
RM() { timeout 40 python3 docs/workloads/rss_map.py 15 "$@" >> "$R/rss_map.jsonl" 2>> "$R/log.txt"; }
RM new-0.1s -- $NEW --interval 100ms
stop_load
summary

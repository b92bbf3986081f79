#!/bin/bash
# Run 45 (#28): frames sent through tui::Screen's own diff (`gw-new`, build of c9312c9) against
# the last stop that landed, `a2bdd91` (`gw-old`), alternating with the new build first, beside
# the steady bf16 load and nvtop (docs/workloads/bench.sh); then where each one's resident
# memory is (docs/workloads/rss_map.py) and what a bare NVML client holds (nvml_rss.py).
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
NVTOP=$(nvtop_path)
start_load
for round in 1 2 3; do
  M new-0.1s $NEW --interval 100ms
  M old-0.1s $OLD --interval 100ms
done
M nvtop-0.1s "$NVTOP" -d 1
for round in 1 2 3; do
  M new-1s $NEW --interval 1s
  M old-1s $OLD --interval 1s
done
M nvtop-1s "$NVTOP" -d 10
for round in 1 2; do
  M new-serve-1s $NEW serve --interval 1s --listen 127.0.0.1:9478
  M old-serve-1s $OLD serve --interval 1s --listen 127.0.0.1:9477
done
RM() { timeout 40 python3 docs/workloads/rss_map.py 15 "$@" >> "$R/rss_map.jsonl" 2>> "$R/log.txt"; }
RM new-0.1s -- $NEW --interval 100ms
RM old-0.1s -- $OLD --interval 100ms
RM new-serve-1s -- $NEW serve --interval 1s --listen 127.0.0.1:9478
RM nvtop-0.1s -- "$NVTOP" -d 1
stop_load
timeout 30 python3 docs/workloads/nvml_rss.py > "$R/nvml_rss.txt" 2>&1
summary

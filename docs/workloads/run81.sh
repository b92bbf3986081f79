#!/bin/bash
# Run 81 (#28, #27): run 79 again for the build that landed last session (3cc5272), by the
# issue's own harness (shared/bench/overhead.sh: CPU over 20 s in a 200x50 pty with start-up included, VmHWM),
# every peer beside gpuwatch, and the steady harness's pairs for the build that lands.
# NEW = gw-new12 = 3cc5272 (the link order made again in 2b161d4, the status-line, seek-bar and
# wrap changes), OLD = gw-old = 202212f (the build the last runs compared against).
#   `run81.sh a`: overhead.sh with gpuwatch (new and old), nvtop, nvitop and nvidia-smi dmon;
#   `run81.sh b`: the memory map and text by crate, pairs at 100 ms, 250 ms, 1 s and serve.
NEW=.device/bins/gw-new12 OLD=.device/bins/gw-old
if [ "$1" = a ]; then
  NVTOP=/tmp/nvtop/usr/bin/nvtop
  mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop
  bash .device/bench/overhead.sh 20 \
    "new-0.1s|$NEW --interval 100ms" "old-0.1s|$OLD --interval 100ms" \
    "nvtop-0.1s|$NVTOP -d 1" \
    "new-0.25s|$NEW --interval 250ms" "old-0.25s|$OLD --interval 250ms" \
    "nvitop-0.25s|python3 -m nvitop --interval 0.25" \
    "new-1s|$NEW --interval 1s" "old-1s|$OLD --interval 1s" "nvtop-1s|$NVTOP -d 10" \
    "nvitop-1s|python3 -m nvitop --interval 1" "nvidia-smi-dmon-1s|nvidia-smi dmon -d 1" \
    "new-serve-1s|$NEW serve --interval 1s --listen 127.0.0.1:9471" \
    "old-serve-1s|$OLD serve --interval 1s --listen 127.0.0.1:9472" \
    "old-0.1s|$OLD --interval 100ms" "new-0.1s|$NEW --interval 100ms" \
    2>> "$OUT/log.txt" | tee -a "$OUT/shared.jsonl"
  exit
fi
. docs/workloads/bench.sh
start_load
ORDER=src/link-order.txt TEXTMAP=$R/textmap.txt timeout 40 python3 docs/workloads/rss_map.py 15 new-0.1s -- \
  $NEW --interval 100ms >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
for round in 1 2; do pair $round 100ms --interval 100ms; done
pair 1 250ms --interval 250ms
for round in 2 3; do pair $round 1s --interval 1s; done
pair 1 serve-1s serve --interval 1s --listen 127.0.0.1:9471
stop_load
summary

#!/bin/bash
# Run 82 (#28): the stack thread's look now and then made short (64e9280: 5 reads over 2 s, not
# 10), beside the build that landed last session, by the steady harness; the --no-stacks rows
# that run 81 only inferred from the per-thread times are measured; nvtop -d 1 for the ratio.
# NEW = gw-new13 = this session's build (see docs/performance.md, run 82), OLD = gw-prev = fb5ed80.
#   `run82.sh b`: pairs for serve 1 s (3), 100 ms (2) and 1 s (2); both builds with --no-stacks
#                 at serve and 100 ms; nvtop -d 1.
#   `run82.sh c`: what the stack thread read beside the load (a 60 s recording keeps every
#                 burst: its plan, its outcome) and serve measured after 40 s, not 5, so that
#                 opening the load's interpreter (once per process) falls before the window.
#   `run82.sh a`: the issue's own harness (shared/bench/overhead.sh 20) with both builds and
#                 every peer.
NEW=${NEW:-.device/bins/gw-new13} OLD=${OLD:-.device/bins/gw-prev}
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$OUT/gpu-$1.txt"
if [ "$1" = a ]; then
  NVTOP=/tmp/nvtop/usr/bin/nvtop
  mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop
  bash .device/bench/overhead.sh 20 \
    "new-0.1s|$NEW --interval 100ms" "old-0.1s|$OLD --interval 100ms" \
    "nvtop-0.1s|$NVTOP -d 1" \
    "new-0.25s|$NEW --interval 250ms" "old-0.25s|$OLD --interval 250ms" \
    "nvitop-0.25s|python3 -m nvitop --interval 0.25" \
    "new-1s|$NEW --interval 1s" "old-1s|$OLD --interval 1s" "nvtop-1s|$NVTOP -d 10" \
    "nvidia-smi-dmon-1s|nvidia-smi dmon -d 1" \
    "new-serve-1s|$NEW serve --interval 1s --listen 127.0.0.1:9471" \
    "old-serve-1s|$OLD serve --interval 1s --listen 127.0.0.1:9472" \
    2>> "$OUT/log.txt" | tee -a "$OUT/shared.jsonl"
  exit
fi
. docs/workloads/bench.sh
if [ "$1" = c ]; then
  start_load
  timeout 80 "$NEW" record -o "$OUT/rec.jsonl" --duration 60s --interval 1s 2>> "$R/log.txt"
  for b in "$NEW" "$OLD"; do
    timeout 90 python3 docs/workloads/steady_overhead.py 40 20 "$(basename $b)-serve-1s-warm40" -- \
      $b serve --interval 1s --listen 127.0.0.1:9471 >> "$R/threads.jsonl" 2>> "$R/log.txt"
  done
  timeout 90 python3 docs/workloads/steady_overhead.py 40 20 "new-serve-1s-warm40-nostacks" -- \
    $NEW serve --interval 1s --listen 127.0.0.1:9471 --no-stacks >> "$R/threads.jsonl" 2>> "$R/log.txt"
  stop_load
  summary
  exit
fi
start_load
for round in 1 2 3; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:9471; done
for round in 1 2; do pair $round 100ms --interval 100ms; done
M new-serve-1s-nostacks "$NEW" serve --interval 1s --listen 127.0.0.1:9471 --no-stacks
M old-serve-1s-nostacks "$OLD" serve --interval 1s --listen 127.0.0.1:9471 --no-stacks
M new-100ms-nostacks "$NEW" --interval 100ms --no-stacks
M nvtop-0.1s "$(nvtop_path)" -d 1
for round in 1 2; do pair $round 1s --interval 1s; done
stop_load
summary

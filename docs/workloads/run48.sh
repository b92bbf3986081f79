#!/bin/bash
# Run 48 (#28): this session's build (`gw-new`, 2f57fdb: one window per metric and span, the
# idle floor learned by a scan that stops at work, open findings worded once a second) against
# the last stop that landed, `ab74c56` (`gw-old`), the order of each pair turned round from one
# round to the next (runs 45 and 46 showed the first of a pair reading higher), beside the
# steady bf16 load and nvtop (docs/workloads/bench.sh).
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
NVTOP=$(nvtop_path)
pair() { # pair ROUND LABEL ARGS...: old and new, old first in odd rounds
  local r=$1 l=$2; shift 2
  if [ $((r % 2)) = 1 ]; then M old-$l $OLD "$@"; M new-$l $NEW "$@"
  else M new-$l $NEW "$@"; M old-$l $OLD "$@"; fi
}
start_load
for round in 1 2 3; do pair $round 0.1s --interval 100ms; done
M nvtop-0.1s "$NVTOP" -d 1
for round in 1 2 3; do pair $round 1s --interval 1s; done
M nvtop-1s "$NVTOP" -d 10
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:947$round; done
stop_load
summary

#!/bin/bash
# Run 49 (#28): run 48 read the new build (2f57fdb) higher than ab74c56 at 1 s in 3 of 3
# pairs and for `serve` in 2 of 2, on threads whose code did not change (the NVML slow-call
# thread, the drawing thread). Again, more pairs, the new build first in odd rounds this time.
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
pair() { # pair ROUND LABEL ARGS...: new and old, new first in odd rounds
  local r=$1 l=$2; shift 2
  if [ $((r % 2)) = 1 ]; then M new-$l $NEW "$@"; M old-$l $OLD "$@"
  else M old-$l $OLD "$@"; M new-$l $NEW "$@"; fi
}
start_load
for round in 1 2 3 4; do pair $round 1s --interval 1s; done
for round in 1 2 3; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:947$round; done
stop_load
summary

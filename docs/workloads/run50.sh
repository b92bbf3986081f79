#!/bin/bash
# Run 50 (#28): run 48 read the new build (2f57fdb) against ab74c56 at 100 ms higher in 2 of
# 3 pairs, its sampling thread +1.1 and +1.9 ms in those two and -0.4 in the third. Four more
# pairs at 100 ms, the new build first in odd rounds.
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
pair() { # pair ROUND LABEL ARGS...: new and old, new first in odd rounds
  local r=$1 l=$2; shift 2
  if [ $((r % 2)) = 1 ]; then M new-$l $NEW "$@"; M old-$l $OLD "$@"
  else M old-$l $OLD "$@"; M new-$l $NEW "$@"; fi
}
start_load
for round in 1 2 3 4; do pair $round 0.1s --interval 100ms; done
stop_load
summary

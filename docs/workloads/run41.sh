#!/bin/bash
# Run 41 (#28): the health counters read every 15th slow round instead of every 5th
# (`gw-health`) against the build of run 40 (`gw-final`), as `serve` at 1 s (the target
# nearest its bound, 0.1 %), four pairs alternating with the new build first, beside the
# steady bf16 load, through the shared harness (docs/workloads/bench.sh).
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-health; OLD=$D/gw-final
start_load
for round in 1 2 3 4; do
  M new-serve-1s $NEW serve --interval 1s --listen 127.0.0.1:9478
  M old-serve-1s $OLD serve --interval 1s --listen 127.0.0.1:9477
done
stop_load
summary

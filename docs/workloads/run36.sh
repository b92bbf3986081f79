#!/bin/bash
# Run 36 (#28): the start of this session `a0cb5b0` against its end (kept windows remember
# their statistics; clock-event shares kept), alternating with the new build first, beside the
# steady bf16 load and nvtop, through the shared harness (docs/workloads/bench.sh).
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
NVTOP=$(nvtop_path)
start_load
for round in 1 2 3; do
  M new-0.1s $NEW --interval 100ms
  M old-0.1s $OLD --interval 100ms
done
M nvtop-0.1s $NVTOP -d 1
for round in 1 2 3; do
  M new-1s $NEW --interval 1s
  M old-1s $OLD --interval 1s
done
for round in 1 2; do
  M new-serve-1s $NEW serve --interval 1s --listen 127.0.0.1:9478
  M old-serve-1s $OLD serve --interval 1s --listen 127.0.0.1:9477
done
M nvtop-1s $NVTOP -d 10
timeout 45 $NEW diagnose --for 30s --json > $R/diagnose.json 2>>$R/log.txt
stop_load
summary

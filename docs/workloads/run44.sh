#!/bin/bash
# Run 44 (#28): the recommitted work of the lost hand-in plus the strips and status line through
# `put_line` (`gw-new`, build of bf985fb) against the last stop that landed, `b1ce741`
# (`gw-old`), alternating with the new build first, beside the steady bf16 load and nvtop,
# through the shared harness (docs/workloads/bench.sh).
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
stop_load
summary

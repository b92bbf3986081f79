#!/bin/bash
# Run 40 (#28): the previous session's start `adbade0` against this session's build (children
# asked for every 10 s, the process list read when memory moves, panes' borders drawn without a
# style over every cell, printable ASCII written straight into the cells), alternating with the
# new build first, beside the steady bf16 load and nvtop, through the shared harness
# (docs/workloads/bench.sh).
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-final; OLD=$D/gw-base
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
ls /proc/$LOAD/task | wc -l > $R/load-threads.txt
stop_load
summary

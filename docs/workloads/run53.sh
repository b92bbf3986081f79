#!/bin/bash
# Run 53 (#28): the builds of run 52 at 1 s (three pairs), nvtop -d 10, and `serve` at 1 s
# (two pairs), beside the steady bf16 load.
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
for round in 1 2 3; do pair $round 1s --interval 1s; done
M nvtop-1s "$NVTOP" -d 10
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:947$round; done
stop_load
summary

#!/bin/bash
# Run 57 (#28, #27): this session's build (NEW: the rules' windows with integer keys and paired
# moves, nvml.rs split into a module) against the last build that landed (OLD, 170ab17), beside
# the steady bf16 load, in one run: 100 ms, 250 ms, 1 s and serve at 1 s, and nvtop -d 1 and
# -d 10 for the ratios of the side-by-side table.
NEW=.device/bins/gw-new OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
for round in 1 2; do pair $round 100ms --interval 100ms; done
pair 1 250ms --interval 250ms
for round in 1 2; do pair $round 1s --interval 1s; done
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:9472; done
M nvtop-1s "$NVTOP" -d 10
M nvtop-100ms "$NVTOP" -d 1
stop_load
summary

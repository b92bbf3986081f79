#!/bin/bash
# Run 52 (#28): this session's build (`gw-new`, a3291e9: a frame allocates nothing, the
# terminal's attributes written without crossterm's Strings, one write a frame, a sliding
# window shifts only the values between the one that left and the one that came) against the
# last stop that landed (`gw-old`, 644469b), beside the steady bf16 load: 100 ms (three
# pairs), nvtop -d 1, 250 ms (two pairs). Run 53 measures 1 s and `serve`.
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
for round in 1 2 3; do pair $round 0.1s --interval 100ms; done
M nvtop-0.1s "$NVTOP" -d 1
for round in 1 2; do pair $round 0.25s --interval 250ms; done
stop_load
summary

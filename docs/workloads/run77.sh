#!/bin/bash
# Run 77 (#28): run 76 read the new build above the old at 1 s in both pairs (+0.010, +0.012),
# the second run in a row with that sign (run 74: +0.004, +0.002). Three more pairs at 1 s,
# turned round, and one at 100 ms, beside the same steady bf16 load: NEW = gw-new8 = 4a4771e
# (run 76's build plus text and layout changes), OLD = 202212f. First, the new
# build's headless diagnosis of the idle-but-loaded GPU, as a user's first check would run it.
NEW=.device/bins/gw-new8 OLD=.device/bins/gw-old
. docs/workloads/bench.sh
start_load
timeout 30 $NEW diagnose --for 8s > "$R/diagnose.txt" 2>&1; echo "rc=$?" >> "$R/diagnose.txt"
for round in 1 2 3; do pair $round 1s --interval 1s; done
pair 1 100ms --interval 100ms
stop_load
summary

#!/bin/bash
# Run 56 (#28): the same source built with one codegen unit (NEW, 11.4 MB) against the usual
# four (OLD, 13.0 MB), beside the steady bf16 load: peak RSS (how much of a smaller binary stays
# resident) and CPU at 100 ms and 1 s.
NEW=.device/bins/gw-cgu1 OLD=.device/bins/gw-head
. docs/workloads/bench.sh
start_load
for round in 1 2; do pair $round 100ms --interval 100ms; done
pair 1 1s --interval 1s
pair 2 serve-1s serve --interval 1s --listen 127.0.0.1:9472
stop_load
summary

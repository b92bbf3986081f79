#!/bin/bash
# Run 88 (#28): run 87 made shorter, to fit what device time was left: if the card lent is an
# H200 (asked for in every session since run 76 and not lent), the issue's own figures on it.
# Two 100 ms pairs of ce948e2 against fb5ed80 beside the bench's load, then the harness
# with nvtop and nvitop. NEW = gw-new17 = ce948e2, OLD = gw-prev = fb5ed80.
NEW=.device/bins/gw-new17 OLD=.device/bins/gw-prev
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit --format=csv > "$OUT/gpu.txt"
. docs/workloads/bench.sh
start_load
pair 1 100ms --interval 100ms
pair 2 100ms --interval 100ms
stop_load
summary
peers

#!/bin/bash
# Run 100 (#28), on run 99's warm machine: the issue's own side-by-side table (overhead.sh,
# every peer in one run) for gw-d, and the native floor once more.
set -u
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-d
start_load
timeout 40 $D/nvfloor 32 >> "$R/nvfloor.txt" 2>> "$R/log.txt"
peers
stop_load

#!/bin/bash
# Run 101 (#28): run 99 again, for an H200 if one is lent (runs 99-100 got an H100), and with the
# old build's memory read beside the new one's on the same machine (run 99 read only gw-d's):
# the floor, gw-d's and gw-c's VmRSS over 32 s at 100 ms, turned round, then CPU pairs at
# 100 ms (twice), 250 ms and `serve` 1 s. gw-d = f11e7ec, gw-c = 95a55d7, as in run 99.
# Ran on 2026-12-07 at 19:01 UTC, on an H100 (results/run101/); six tries that evening had
# found no machine.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv >> "$OUT/log.txt"
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-d OLD=$D/gw-c
start_load
timeout 40 $D/nvfloor 32 >> "$R/nvfloor.txt" 2>> "$R/log.txt"
T() { timeout 40 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 --interval 100ms >> "$R/timeline-$1.txt" 2>> "$R/log.txt"; echo --- >> "$R/timeline-$1.txt"; }
T gw-d; T gw-c; T gw-c; T gw-d
pair 1 100ms --interval 100ms
pair 2 100ms --interval 100ms
pair 1 250ms --interval 250ms
pair 2 serve-1s serve --interval 1s --listen 127.0.0.1:9471
stop_load
summary

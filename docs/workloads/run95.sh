#!/bin/bash
# Run 95 (#28): the release of start-up's pages widened from the binary's own file to every
# regular file's unwritten read-only mapping (libc, libm, ld.so, libgcc, libcuda and
# libnvidia-ml: what nvmlInit ran and the monitor never runs again), beside the steady load.
#   gw-new  the head (5741684's code): only the binary's pages are given back
#   gw-lib  every library's as well, at the same two points (the pipeline's start, 10 s in)
#   gw-pre  gw-lib, and a release just before nvmlInit as well, so that clap's and the
#           config's pages are gone before NVML maps its own: the peak forms at nvmlInit
# Each build's resident memory over 32 s, twice, turned round; the maps of gw-lib and gw-pre at
# 31 s; then one CPU pair at 100 ms (what faults back in must not cost CPU).
set -u
. docs/workloads/bench.sh
D=.device/bins
start_load
T() { timeout 45 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 --interval 100ms >> "$R/timeline-$1.txt" 2>> "$R/log.txt"; echo --- >> "$R/timeline-$1.txt"; }
T gw-new; T gw-lib; T gw-pre
T gw-pre; T gw-lib; T gw-new
for b in gw-lib gw-pre; do
  timeout 45 python3 docs/workloads/rss_map.py 31 $b-0.1s -- $D/$b --interval 100ms >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
done
NEW=$D/gw-pre OLD=$D/gw-new
pair 1 100ms --interval 100ms
stop_load
summary

#!/bin/bash
# Run 92 (#28): what runs 90 and 91 were written for, owed since the device refused every call
# after run 89. One call:
#  1. run 91: the RSS of main's head (gw-steady3, dee6995: start-up's pages given back 10 s in,
#     the order that lays what runs after start-up first) against b1ee22f (gw-cur), each over
#     32 s beside the load, then the head's map and text by crate at 31 s;
#  2. one 100 ms CPU pair, head against b1ee22f, on the steady harness: the release is one
#     madvise 10 s in, and what faults back in after it must not cost CPU;
#  3. run 90 on the head: callgrind on NVML split at the release, for the order's GPU tiers
#     of what runs after start-up.
set -u
bash docs/workloads/run91.sh
. docs/workloads/bench.sh
NEW=.device/bins/gw-steady3 OLD=.device/bins/gw-cur
# The pair only with PAIR=1: with 700 s of device time left (the rest lost to refusals), the
# owed figures (1 and 3) come first.
if [ "${PAIR:-0}" = 1 ]; then
  start_load
  pair 1 0.1s --interval 100ms
  stop_load
  summary; rm -f "$OUT/summary.txt"  # 8 files come back at most: the summary is in the output
fi
B=gw-steady3 bash docs/workloads/run90.sh

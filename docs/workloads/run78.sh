#!/bin/bash
# Run 78 (#28): run 77 read the binary's text resident at 2684 KiB on an H100 against run 76's
# 2124: the last session's changes renamed closures out of the link order. NEW = gw-new10 =
# this build with the order made again here (its GPU tiers still run 72's names), OLD =
# gw-new9 = 545aafc, what run 77 measured. First the memory map and one pair at 100 ms and
# at 1 s beside the steady load (results as they come), then callgrind of gw-cur (= gw-new10)
# on NVML, as run 72 did, for the link order's GPU tiers: results/run78/{tui,serve,record}.txt.
NEW=.device/bins/gw-new10 OLD=.device/bins/gw-new9
. docs/workloads/bench.sh
start_load
for b in gw-new10 gw-new9; do
  timeout 40 python3 docs/workloads/rss_map.py 15 $b-0.1s -- .device/bins/$b --interval 100ms \
    >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
done
pair 1 100ms --interval 100ms
pair 2 1s --interval 1s
summary
stop_load
D=.device/bins
start_load
. <(sed -n '/^export VALGRIND_LIB/,$p' docs/workloads/run72.sh)

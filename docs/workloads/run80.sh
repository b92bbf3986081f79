#!/bin/bash
# Run 80 (#28): run 79 read the monitor's text resident at 2556 KiB, where run 78 read 2284 for
# the build with c35e945's order. Same run, same load: gw-cur (c35e945's order, run 78's NEW)
# against gw-new11 (the order from run 78's GPU profile, fb0c38b), twice each, turned round,
# and for gw-new11 the present text outside its order by 64 KiB window (textmap.py, ORDER=):
# what ran on the GPU that the order did not lay together.
. docs/workloads/bench.sh
start_load
for b in gw-cur gw-new11 gw-new11 gw-cur; do
  n=$((n + 1))
  [ $b = gw-new11 ] && export ORDER=src/link-order.txt || unset ORDER
  TEXTMAP=$R/textmap-$n-$b.txt timeout 40 python3 docs/workloads/rss_map.py 15 $b-0.1s -- \
    .device/bins/$b --interval 100ms >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
done
stop_load

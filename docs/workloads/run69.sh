#!/bin/bash
# Run 69 (#28): run 68 showed the program's text only 0.4 MiB lower on the H200 (4424 against
# 4840 KiB) where this machine read 2.2 MiB: the order then left out py-spy's code, which a
# real GPU's processes run and the demo's do not. NEW2 is the build with py-spy's reading in
# the order (link_order.sh reads a live Python process). Where each one's memory is
# (rss_map.py) beside the steady load, then serve at 1 s three times, to see whether run 68's
# one reading of 1.76 % (the sampling thread 336 ms in 20 s) comes again.
. docs/workloads/bench.sh
D=.device/bins
start_load
RM() { timeout 40 python3 docs/workloads/rss_map.py 15 "$@" >> "$R/rss_map.jsonl" 2>> "$R/log.txt"; }
RM new2-0.1s -- $D/gw-new2 --interval 100ms
RM old-0.1s -- $D/gw-old --interval 100ms
for i in 1 2 3; do M "new2-serve-1s" $D/gw-new2 serve --interval 1s --listen 127.0.0.1:947$i; done
M "old-serve-1s" $D/gw-old serve --interval 1s --listen 127.0.0.1:9474
stop_load
summary

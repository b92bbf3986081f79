#!/bin/bash
# Run 47 (#28): the resident memory of the build that gives ratatui's spare buffer back
# (`gw-new`, the screen keeps two buffers of its size, not three) against `a2bdd91`
# (`gw-old`), by mapping (docs/workloads/rss_map.py), beside the steady load; and one CPU
# measurement of each at 100 ms.
. docs/workloads/bench.sh
D=.device/bins; NEW=$D/gw-new; OLD=$D/gw-old
start_load
RM() { timeout 40 python3 docs/workloads/rss_map.py 15 "$@" >> "$R/rss_map.jsonl" 2>> "$R/log.txt"; }
RM old-0.1s -- $OLD --interval 100ms
RM new-0.1s -- $NEW --interval 100ms
M old-0.1s $OLD --interval 100ms
M new-0.1s $NEW --interval 100ms
stop_load
summary

#!/bin/bash
# Run 97 (#28): gw-c = run 96's gw-b (start-up's pages of every file given back before and
# after nvmlInit, as the pipeline starts, 2 s and 10 s in) with the rules' first look at a
# process held to 3 s in (`stack::burst::FIRST_LOOK`): run 96 saw one look come 51 ms in and
# the peak reach 24.0 MiB. Memory over 32 s beside the steady load, three times.
set -u
. docs/workloads/bench.sh
D=.device/bins
start_load
T() { timeout 40 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 --interval 100ms >> "$R/timeline-$1.txt" 2>> "$R/log.txt"; echo --- >> "$R/timeline-$1.txt"; }
T gw-c; T gw-c; T gw-c
stop_load

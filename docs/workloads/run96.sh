#!/bin/bash
# Run 96 (#28): run 95's gw-pre (every file's unwritten read-only pages given back before
# nvmlInit, as the pipeline starts and 10 s in) peaked at 24.2-24.4 MiB 3.5 s in, at the first
# look at a process, and at 23.8 MiB in its first 134 ms, against nvmlInit + 2 MiB = 23.5.
#   gw-a  gw-pre, and a release just after nvmlInit: libcuda's init-only code goes before
#         NVML's first round of calls faults in its own
#   gw-b  gw-a, and a release 2 s in as well: before the first look at a process
#   gw-new the head as run 94/95 measured it (only the binary's own pages)
# Memory over 32 s beside the steady load (gw-b twice), `serve` of gw-b and gw-new, then one
# CPU pair at 100 ms on the steady harness.
set -u
. docs/workloads/bench.sh
D=.device/bins
start_load
T() { timeout 45 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 --interval 100ms >> "$R/timeline-$1.txt" 2>> "$R/log.txt"; echo --- >> "$R/timeline-$1.txt"; }
S() { timeout 45 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 serve --interval 1s --listen 127.0.0.1:9471 >> "$R/timeline-serve.txt" 2>> "$R/log.txt"; echo "--- $1" >> "$R/timeline-serve.txt"; }
T gw-b; T gw-a; T gw-pre; T gw-b
S gw-b; S gw-new
NEW=$D/gw-b OLD=$D/gw-new
pair 1 100ms --interval 100ms
stop_load
summary

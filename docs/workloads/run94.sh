#!/bin/bash
# Run 94 (#28): gw-new = the pages start-up ran given back as the pipeline starts as well as
# 10 s in, and the link order made with run 93's GPU lists (what the monitor, serve and record
# ran on NVML after start-up) as its first tiers, against gw-head (e5fdde9, run 93's build),
# beside the steady load. Memory first (the point of the change), turned round: each build's
# resident memory over 32 s, twice; gw-new's map at 31 s. Then CPU: two 100 ms pairs and one
# 1 s pair on the steady harness (the release is two madvise calls; what faults back in after
# them must not cost CPU), and nvtop -d 1 on the same harness for the ratio. The floor in the
# same run: nvfloor (a Rust program doing nvmlInit, a handle, and utilization, power and the
# processes every 100 ms; docs/workloads/nvfloor.rs), twice.
set -u
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-new OLD=$D/gw-head
start_load
# The order below puts first what matters most, for a call stopped at its limit.
T() { timeout 45 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 --interval 100ms >> "$R/timeline-$1.txt" 2>> "$R/log.txt"; echo --- >> "$R/timeline-$1.txt"; }
T gw-new; T gw-head
F() { timeout 40 $D/nvfloor 32 >> "$R/nvfloor.txt" 2>> "$R/log.txt"; echo --- >> "$R/nvfloor.txt"; }
F
pair 1 100ms --interval 100ms
TEXTMAP=$R/textmap-gw-new.txt timeout 45 python3 docs/workloads/rss_map.py 31 gw-new-0.1s -- \
  $D/gw-new --interval 100ms >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
T gw-head; T gw-new
F
pair 2 100ms --interval 100ms
M nvtop-d1 "$(nvtop_path)" -d 1
pair 1 1s --interval 1s
stop_load
summary

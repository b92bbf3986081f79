#!/bin/bash
# Run 87 (#28): the head of 2026-12-06's evening (ce948e2: the TUI's narrow headings, the
# process table's column widths, MIG instances under their GPU, quoting in messages) beside
# fb5ed80, the build every 100 ms pair since run 82 was read against. Three 100 ms pairs this
# time (runs 82-85 gave one each: new higher in three of four, +0.011 points on average), then
# one pair of each other mode, and (part b) the issue's own harness with its peers.
# NEW = gw-new17 = ce948e2, OLD = gw-prev = fb5ed80.
#   bash docs/workloads/run87.sh a   # the pairs (about 330 s)
#   bash docs/workloads/run87.sh b   # overhead.sh beside nvtop and nvitop (about 200 s)
# Each measurement is written as it ends, so a run cut at its limit keeps what it measured.
NEW=.device/bins/gw-new17 OLD=.device/bins/gw-prev
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit --format=csv > "$OUT/gpu.txt"
. docs/workloads/bench.sh
if [ "$1" = a ]; then
  start_load
  pair 1 100ms --interval 100ms
  pair 2 100ms --interval 100ms
  pair 3 100ms --interval 100ms
  pair 1 250ms --interval 250ms
  pair 2 1s --interval 1s
  pair 1 serve-1s serve --interval 1s --listen 127.0.0.1:9471
  stop_load
  summary
else
  peers
fi

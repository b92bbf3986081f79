#!/bin/bash
# Run 104 (#28), one call cut to what a session's last device time holds. NOT RUN: sixteen calls
# for a machine (H200, H100 or either) were refused on 2026-12-07 between 22:22 and 00:10, and
# their tries spent the session's device time. The day's release (gw-head = be1cc0a) on the card
# lent, asked for as an H200. Since run 88 (ce948e2, gw-88, every CPU target met on an H200)
# every reading was an H100's. Here: the issue's own harness
# (shared/bench/overhead.sh, 20 s from the start in a 200x50 pty, beside the steady bf16 load it
# starts itself) with the release and every peer of the table in one run;
# then the floor nvmlInit sets, the release's VmRSS over 32 s at 100 ms, one 100 ms pair beside
# run 88's build.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv >> "$OUT/log.txt"
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-head OLD=$D/gw-88
nvtop=$(nvtop_path)
# The table first: a call stopped at its limit keeps what is already under $OUT.
timeout 240 bash .device/bench/overhead.sh 20 \
  "new-0.1s|$NEW --interval 100ms" "nvtop-0.1s|$nvtop -d 1" \
  "new-0.25s|$NEW --interval 250ms" "nvitop-0.25s|python3 -m nvitop --interval 0.25" \
  "new-1s|$NEW --interval 1s" "nvtop-1s|$nvtop -d 10" "nvidia-smi-dmon-1s|nvidia-smi dmon -d 1" \
  "new-serve-1s|$NEW serve --interval 1s --listen 127.0.0.1:9471" \
  2>> "$R/log.txt" > "$R/shared.jsonl"
cat "$R/shared.jsonl"
start_load
timeout 40 $D/nvfloor 32 >> "$R/nvfloor.txt" 2>> "$R/log.txt"
timeout 40 python3 docs/workloads/rss_timeline.py 32 -- $NEW --interval 100ms >> "$R/timeline-gw-head.txt" 2>> "$R/log.txt"
pair 1 100ms --interval 100ms
stop_load
summary

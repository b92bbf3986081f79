#!/bin/bash
# Run 84 (#28): the build of 6e44ea6 (this session: the process cursor follows its process,
# messages; no change on a hot path) in the issue's own harness beside nvtop in one run (short:
# failed starts took this session's device time),
# then one steady pair against fb5ed80 at 100 ms and one for serve, then a live `diagnose` beside
# the bench's load (the powercap rule's default-limit check of 2026-12-06 had run on no GPU).
# NEW = gw-new15 = 6e44ea6, OLD = gw-prev = fb5ed80. Each part writes its own file as it ends.
NEW=.device/bins/gw-new15 OLD=.device/bins/gw-prev
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit --format=csv > "$OUT/gpu.txt"
NVTOP=/tmp/nvtop/usr/bin/nvtop
mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop
timeout 160 bash .device/bench/overhead.sh 20 \
  "new-0.1s|$NEW --interval 100ms" "nvtop-0.1s|$NVTOP -d 1" \
  "new-1s|$NEW --interval 1s" "nvtop-1s|$NVTOP -d 10" \
  "new-serve-1s|$NEW serve --interval 1s --listen 127.0.0.1:9471" \
  2>> "$OUT/log.txt" > "$OUT/shared.jsonl"
. docs/workloads/bench.sh
start_load
pair 1 100ms --interval 100ms
pair 1 serve-1s serve --interval 1s --listen 127.0.0.1:9471
summary
timeout 50 "$NEW" diagnose --for 40s --interval 250ms > "$OUT/diagnose.txt" 2>&1
echo "rc=$?" >> "$OUT/diagnose.txt"
stop_load

#!/bin/bash
# Run 102 (#28): the glance (72d1762) beside a real hang. `record` at 100 ms and a live
# `diagnose` (JSON) run beside gpu_workloads.py's matmul then spin_hang phases (25 s each), so
# the recording can be judged here by the build with the glance and the one without (gw-c,
# 95a55d7), and the live verdict compared with both; then every fast-tick NVML call timed over
# 200 ticks, to say how much of the sampling thread is NVML's. gw-d = f11e7ec.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv >> "$OUT/log.txt"
D=.device/bins
timeout 100 $D/gw-d record -o "$OUT/rec.jsonl" --interval 100ms --duration 85s 2>> "$OUT/log.txt" &
timeout 100 $D/gw-d diagnose --for 80s --interval 100ms --json > "$OUT/diag-live.json" 2>> "$OUT/log.txt" &
sleep 3
timeout 80 python3 .device/workloads/gpu_workloads.py 25 matmul,spin_hang "$OUT/spans.json" >> "$OUT/log.txt" 2>&1
wait
timeout 60 $D/gw-d devices --timings 200 > "$OUT/timings.txt" 2>> "$OUT/log.txt"
date -u >> "$OUT/log.txt"

#!/bin/bash
# Run 63 on the H200: the session's final build live. (1) `diagnose` beside a process that asks
# for TF32 under NVIDIA_TF32_OVERRIDE=0 and exits before diagnose ends: the fp32 finding must
# keep the hint (run 61's live diagnose lost it). (2) The same build against 170ab17 beside the
# steady bf16 load: serve at 1 s and the main screen at 1 s, pairs turned round.
NEW=.device/bins/gw-fp32 OLD=.device/bins/gw-old
$NEW diagnose --for 75s > "$OUT/diagnose.txt" 2>&1 &
sleep 3
NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 docs/workloads/fp32_holdout.py 45 tf32_env_override "$OUT/spans.json" > "$OUT/override.log" 2>&1
wait
. docs/workloads/bench.sh
start_load
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:9472; done
for round in 1 2; do pair $round 1s --interval 1s; done
stop_load
summary

#!/bin/bash
# Prepared on 2026-12-04, run on 2026-12-05 with NEW = 3b48b4b (results/run64/,
# docs/performance.md "Run 64"). Run 64 (#27, #28): the latest build (NEW: main's HEAD;
# thresholds in the rule files, scenarios and ids from the registry, each rule asking its
# deciding window first, the chart's dots and the diff in fewer instructions, a lost GPU
# asked one call a tick) against the last build that landed before those sessions (OLD,
# 202212f), beside the steady bf16 load, in one run: 100 ms, 250 ms, 1 s and serve at 1 s,
# pairs turned round, and nvtop -d 1 and -d 10 for the ratios. Build both here first:
#   git worktree add /tmp/old 202212f && (cd /tmp/old && cargo build --release)
#   cp /tmp/old/target/release/gpuwatch .device/bins/gw-old
#   cargo build --release && cp target/release/gpuwatch .device/bins/gw-new
NEW=.device/bins/gw-new OLD=.device/bins/gw-old
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
for round in 1 2; do pair $round 100ms --interval 100ms; done
for round in 1 2; do pair $round 250ms --interval 250ms; done
for round in 1 2; do pair $round 1s --interval 1s; done
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:9472; done
M nvtop-100ms "$NVTOP" -d 1
M nvtop-1s "$NVTOP" -d 10
stop_load
summary

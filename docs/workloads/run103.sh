#!/bin/bash
# Run 103 (#28): the evening's release (gw-e = 7b3cc1b: a stranger's PID read once, long
# timers at the quiet cadence) beside run 101's new build (gw-d = f11e7ec) on one machine:
# CPU pairs at 100 ms (twice) and `serve` 1 s, turned round, beside the steady load (cut to
# what fits the session's last device time after three refusals).
# Not run yet: at 20:40 on 2026-12-07 no device machine was being lent.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv >> "$OUT/log.txt"
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-e OLD=$D/gw-d
start_load
pair 1 100ms --interval 100ms
pair 2 100ms --interval 100ms
pair 1 serve-1s serve --interval 1s --listen 127.0.0.1:9471
stop_load
summary

#!/bin/bash
# Run 83 (#28): evidence found in the same place twice read every 30 s, not 15 (cae350b), beside
# the build that landed last session, by the steady harness; a recording made beside the same
# load at the same time keeps every burst, to show their pace.
# NEW = gw-new14 = cae350b, OLD = gw-prev = fb5ed80.
NEW=.device/bins/gw-new14 OLD=.device/bins/gw-prev
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$OUT/gpu.txt"
. docs/workloads/bench.sh
start_load
timeout 100 "$NEW" record -o "$OUT/rec.jsonl" --duration 90s --interval 1s 2>> "$R/log.txt" & REC=$!
for round in 1 2; do pair $round serve-1s serve --interval 1s --listen 127.0.0.1:9471; done
pair 1 100ms --interval 100ms
pair 2 1s --interval 1s
wait "$REC"
stop_load
summary

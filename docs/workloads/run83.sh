#!/bin/bash
# Run 83 (#28): evidence found in the same place twice read every 30 s, not 15 (cae350b), beside
# the build that landed last session, by the steady harness; a recording made beside the same
# load at the same time keeps every burst, to show their pace. Measured 30 s after 40 s, not 20
# after 5: a fresh monitor's first two bursts (15 s apart) come in either build; only from the
# third on does the pace differ.
# NEW = gw-new14 = cae350b, OLD = gw-prev = fb5ed80.
NEW=.device/bins/gw-new14 OLD=.device/bins/gw-prev
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$OUT/gpu.txt"
. docs/workloads/bench.sh
start_load
timeout 100 "$NEW" record -o "$OUT/rec.jsonl" --duration 90s --interval 1s 2>> "$R/log.txt" & REC=$!
L() { timeout 100 python3 docs/workloads/steady_overhead.py 40 30 "$1" -- "${@:2}" \
  >> "$R/threads.jsonl" 2>> "$R/log.txt"; }
L new-serve-1s "$NEW" serve --interval 1s --listen 127.0.0.1:9471
L old-serve-1s "$OLD" serve --interval 1s --listen 127.0.0.1:9471
L old-serve-1s "$OLD" serve --interval 1s --listen 127.0.0.1:9471
L new-serve-1s "$NEW" serve --interval 1s --listen 127.0.0.1:9471
wait "$REC"
stop_load
summary

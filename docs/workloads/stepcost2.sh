#!/bin/bash
# What reading stacks costs the process read, alternating: stepcost.py runs 70 s; from 10 s on,
# `gpuwatch stacks PID --samples 50` (5 s of reads at 10 Hz, five times the evidence burst's
# rate) then 5 s without, six times. Its steps per second, second by second, are compared
# between the two kinds of window (docs/stacks.md). usage: stepcost2.sh BIN OUTDIR
BIN=$1; R=$2
python3 docs/workloads/stepcost.py 72 "$R/stepcost2.jsonl" > "$R/stepcost2.txt" 2>&1 &
SC=$!
for _ in $(seq 150); do grep -q ready "$R/stepcost2.txt" 2>/dev/null && break; sleep 0.2; done
PID=$(awk '/ready/ {print $2}' "$R/stepcost2.txt")
ms() { echo $(( $(date +%s%N) / 1000000 )); }
T0=$(ms)
sleep 10
: > "$R/stepcost2-windows.txt"
for _ in 1 2 3 4 5 6; do
  a=$(ms)
  $BIN stacks "$PID" --samples 50 > /dev/null 2>&1
  b=$(ms)
  echo "on $((a - T0)) $((b - T0))" >> "$R/stepcost2-windows.txt"
  sleep 5
done
wait $SC

#!/bin/bash
# Run 26 (#24): what reading a process's stacks costs it, with enough pairs to bound it. The
# training loop of runs 18-19 (stepcost.py: 1.7 ms steps, Python between kernels, .item() every
# 10 steps) runs 410 s; from 10 s on, 40 times: `gpuwatch stacks PID --samples 50` (5 s of reads
# at 10 Hz, twice an evidence burst's rate), then 5 s without. Its steps per second, second by
# second, and the windows' bounds (ms since it was ready) go to $OUT; the comparison is made
# where the results come back (docs/stacks.md). usage: run26.sh BIN
BIN=${1:-$PWD/target/release/gpuwatch}; R=$OUT
python3 docs/workloads/stepcost.py 410 "$R/steps.jsonl" > "$R/stepcost.txt" 2>&1 &
SC=$!
for _ in $(seq 300); do grep -q ready "$R/stepcost.txt" 2>/dev/null && break; sleep 0.2; done
PID=$(awk '/ready/ {print $2}' "$R/stepcost.txt")
ms() { echo $(( $(date +%s%N) / 1000000 )); }
T0=$(ms)
sleep 10
: > "$R/windows.txt"
for _ in $(seq 40); do
  a=$(ms)
  $BIN stacks "$PID" --samples 50 > /dev/null 2>>"$R/stacks-err.txt"
  b=$(ms)
  echo "on $((a - T0)) $((b - T0))" >> "$R/windows.txt"
  sleep 5
done
wait $SC
wc -l "$R/steps.jsonl" "$R/windows.txt"

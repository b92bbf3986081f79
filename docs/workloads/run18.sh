#!/bin/bash
# Device run 18 (issue 24): the corpus's `stacks` set (the e programs, one GPU) recorded with
# Python stacks, beside a second recorder with --no-stacks (what the stacks cost: CPU of each
# over the same minutes); then what reading stacks costs a training loop (stepcost.py: steps a
# second with and without `gpuwatch stacks PID --samples 200` reading it) and one burst's CPU.
# From the repository root, with target/release/gpuwatch. Writes $OUT/stacks.jsonl.gz,
# $OUT/nostacks.jsonl.gz, $OUT/stacks-marks.jsonl and the rest in $OUT/small.tgz.
set -u
BIN=target/release/gpuwatch
W=docs/workloads
R=$(mktemp -d)
pack() { tar czf "$OUT/small.tgz" -C "$R" . ; }
trap pack EXIT
nvidia-smi --query-gpu=name,driver_version,power.draw,utilization.gpu --format=csv > "$R/gpu.txt" 2>&1
python3 -c "import torch,sys; print(torch.__version__, sys.version)" >> "$R/gpu.txt" 2>&1
cat /proc/sys/kernel/yama/ptrace_scope >> "$R/gpu.txt" 2>&1

# The second recorder, without stacks, for the whole set.
python3 $W/cpuwrap.py "$R/cost-nostacks.json" $BIN record --no-stacks -o "$R/nostacks.jsonl" --duration 500s --force 2> "$R/nostacks.err" &
NOST=$!
GPUWATCH_BIN="python3 $W/cpuwrap.py $R/cost-stacks.json $BIN" \
  timeout 500 bash $W/corpus/run_corpus.sh stacks "$R" 250ms > "$R/run.txt" 2>&1
kill -INT $NOST 2>/dev/null; wait $NOST
gzip -9 -f "$R/nostacks.jsonl"
mv "$R/stacks.jsonl.gz" "$R/nostacks.jsonl.gz" "$R/stacks-marks.jsonl" "$OUT/"

# What reading stacks costs the process read, and one burst's CPU.
python3 $W/stepcost.py 40 "$R/stepcost.jsonl" > "$R/stepcost.txt" 2>&1 &
SC=$!
for _ in $(seq 150); do grep -q ready "$R/stepcost.txt" 2>/dev/null && break; sleep 0.2; done
PID=$(awk '/ready/ {print $2}' "$R/stepcost.txt")
sleep 12
python3 $W/cpuwrap.py "$R/cost-stacks200.json" $BIN stacks "$PID" --samples 200 > /dev/null 2>&1
sleep 4
python3 $W/cpuwrap.py "$R/cost-burst20.json" $BIN stacks "$PID" --samples 20 > "$R/stacks-burst20.txt" 2>&1
python3 $W/cpuwrap.py "$R/cost-burst1.json" $BIN stacks "$PID" --samples 1 > /dev/null 2>&1
wait $SC

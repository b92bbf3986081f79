#!/bin/bash
# Device run 19 (issue 24, the build with 10-read bursts): the corpus's held-out `stacks2` set
# (the f programs, written with the e ones and judged only once the rules were done), recorded
# with stacks beside a --no-stacks recorder (their CPU: what the stacks cost) and a live
# `diagnose --stacks` over the same jobs; `gpuwatch stacks` (every GPU process, through NVML)
# during the first job; then stepcost2.sh (a training loop's steps a second, read and not read,
# alternating). Writes $OUT/stacks2.jsonl.gz, $OUT/stacks2-marks.jsonl, $OUT/diagnose.json and
# the rest in $OUT/small.tgz.
set -u
BIN=target/release/gpuwatch
W=docs/workloads
R=$(mktemp -d)
pack() { tar czf "$OUT/small.tgz" -C "$R" . ; }
trap pack EXIT
python3 $W/cpuwrap.py "$R/cost-nostacks.json" $BIN record --no-stacks -o "$R/nostacks.jsonl" --duration 420s --force 2> "$R/nostacks.err" &
NOST=$!
python3 $W/cpuwrap.py "$R/cost-diagnose.json" $BIN diagnose --for 400s --stacks --json > "$OUT/diagnose.json" 2> "$R/diagnose.err" &
DIAG=$!
( sleep 30; $BIN stacks > "$R/stacks-all.txt" 2>&1; echo "rc=$?" >> "$R/stacks-all.txt" ) &
GPUWATCH_BIN="python3 $W/cpuwrap.py $R/cost-stacks.json $BIN" \
  timeout 430 bash $W/corpus/run_corpus.sh stacks2 "$R" 250ms > "$R/run.txt" 2>&1
kill -INT $NOST 2>/dev/null; wait $NOST
kill -INT $DIAG 2>/dev/null; wait $DIAG
mv "$R/stacks2.jsonl.gz" "$R/stacks2-marks.jsonl" "$OUT/"
rm -f "$R/nostacks.jsonl"
timeout 100 bash $W/stepcost2.sh $BIN "$R"

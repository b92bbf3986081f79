#!/bin/bash
# Device run 16: the corpus's holdout4 set (docs/workloads/corpus/jobs.py, the healthy *_d
# programs with epoch boundaries, evaluations, a second process and sparse work, written after
# the rules were done) on one H200 at 250 ms, with `gpuwatch diagnose` live beside the recorder.
# Carry: .device, target/release/gpuwatch
export PYTHONUNBUFFERED=1
B=target/release/gpuwatch
mkdir -p $OUT/c
$B diagnose --for 250s --json > $OUT/c/live-diagnose.json 2> $OUT/c/live-diagnose.err &
D=$!
bash docs/workloads/corpus/run_corpus.sh holdout4 $OUT/c 250ms 2>&1 | tail -20
wait $D; echo "live diagnose rc=$?"
python3 - $OUT/c/live-diagnose.json <<'PY'
import json, sys, datetime
d = json.load(open(sys.argv[1]))
for f in d.get("findings", []):
    t = lambda ms: datetime.datetime.utcfromtimestamp(ms / 1000).strftime("%H:%M:%S") if ms else "-"
    print(f["rule"], f["severity"], "opened", t(f.get("since_ms")), "closed", t(f.get("cleared_ms")), "|", f["evidence"][0][:90])
PY
tail -30 $OUT/c/holdout4.log | grep -E "Error|error|Traceback|note" | head

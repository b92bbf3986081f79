#!/bin/bash
# Run 65 (#27, #28): the verdicts of today's build beside real workloads. The old (202212f)
# and the new build (main's HEAD) diagnose the same GPU at the same time through every phase
# of gpu_workloads.py (25 s each), and the new one records it at 100 ms, so the recording can
# be replayed here. Run with NEW = cc3cf94. The two `diagnose` runs read no stacks (two
# readers would attach to one process at once); the recorder reads them.
D=.device/bins
for b in old new; do
  timeout 230 $D/gw-$b diagnose --for 205s --json --no-stacks > "$OUT/diagnose-$b.json" 2> "$OUT/diagnose-$b.err" &
done
timeout 230 $D/gw-new record -o "$OUT/rec.jsonl" --interval 100ms --duration 205s > "$OUT/record.log" 2>&1 &
sleep 2
timeout 215 python3 .device/workloads/gpu_workloads.py 25 "" "$OUT/spans.json" > "$OUT/phases.txt" 2>&1
wait
python3 - "$OUT" <<'PY' | tee "$OUT/findings.txt"
import json, sys
out = sys.argv[1]
for b in ("old", "new"):
    d = json.load(open(f"{out}/diagnose-{b}.json"))
    for f in d.get("findings", []) + d.get("cleared", []):
        print(b, f.get("rule"), f.get("severity"), f.get("opened_ms"), f.get("cleared_ms"), f.get("title"))
PY

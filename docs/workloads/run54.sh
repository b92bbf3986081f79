#!/bin/bash
# Run 54 (#28): the rules of this session (a3291e9: a window that slides by one shifts only the
# values between the one that left and the one that came) beside real workloads: the old (644469b)
# and the new build (5617a9b) diagnose the same GPU
# at the same time, through the starved, hang and sync phases of gpu_workloads.py (30 s each).
# Stacks are not read (two readers would attach to one process at once).
D=.device/bins
for b in old new; do
  timeout 150 $D/gw-$b diagnose --for 115s --json --no-stacks > "$OUT/diagnose-$b.json" 2> "$OUT/diagnose-$b.err" &
done
sleep 2
timeout 140 python3 .device/workloads/gpu_workloads.py 30 "starved_loader,spin_hang,sync_small_kernels" "$OUT/spans.json" > "$OUT/phases.txt" 2>&1
wait
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for b in ("old", "new"):
    d = json.load(open(f"{out}/diagnose-{b}.json"))
    for f in d.get("findings", []) + d.get("cleared", []):
        print(b, f.get("rule"), f.get("severity"), f.get("opened_ms"), f.get("cleared_ms"), f.get("title"))
PY

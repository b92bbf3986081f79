#!/bin/bash
# Run 67 (#27): the `shared` rule, added the registry's way, on a real H200. Its thresholds
# (30 s, each process ≥ 10 % SM, util ≥ 80 %, power above the floor's margin) were set before
# any of this was seen. gpuwatch records at 250 ms and diagnoses live (`--no-stacks`) through
# five phases, each a program of its own under `timeout`:
#   alone     one bf16 trainer                        healthy: silent
#   jobs      two different programs on the GPU       shared
#   ranks     torchrun --nproc-per-node 2, both on cuda (no device set)  shared, ranks first
#   sidecar   a trainer and a probe every 0.5 s       silent (the probe hardly computes)
#   spin      two processes spinning one kernel each  silent for `shared` (a hang's story)
D=.device/bins
W=docs/workloads/shared.py
mark() { echo "$1 $(date +%s.%N)" >> "$OUT/phases.txt"; }
# Two programs at once; waits for those two only (a bare `wait` would wait for gpuwatch too).
both() { timeout "$1" python3 $W $2 & local first=$!; timeout "$1" python3 $W $3; wait $first; }
timeout 350 $D/gw-new record -o "$OUT/rec.jsonl" --interval 250ms --duration 315s > "$OUT/record.log" 2>&1 &
REC=$!
timeout 350 $D/gw-new diagnose --for 315s --json --no-stacks > "$OUT/diagnose.json" 2> "$OUT/diagnose.err" &
DIAG=$!
sleep 3
{
mark alone;   timeout 70 python3 $W train 45
mark jobs;    both 80 "train 50" "matmul 50"
mark ranks;   timeout 90 torchrun --standalone --nproc-per-node 2 $W train 50 2048
mark sidecar; both 70 "train 45" "probe 45"
mark spin;    both 60 "spin 40" "spin 40"
mark end
} > "$OUT/workload.log" 2>&1
wait $REC $DIAG
python3 - "$OUT" <<'PY' | tee "$OUT/findings.txt"
import json, sys
out = sys.argv[1]
marks = [l.split() for l in open(f"{out}/phases.txt")]
def phase(ms):
    name = "before"
    for n, t in marks:
        if ms / 1000 >= float(t):
            name = n
    return name
d = json.load(open(f"{out}/diagnose.json"))
for f in d.get("findings", []) + d.get("cleared", []):
    o = f.get("opened_ms")
    print(f.get("rule"), f.get("severity"), "opened in", phase(o), o, "cleared", f.get("cleared_ms"), f.get("pids"))
    if f.get("rule") == "shared":
        for e in f.get("evidence", []):
            print("    " + e)
        print("    cause 1:", f.get("causes", ["?"])[0])
PY

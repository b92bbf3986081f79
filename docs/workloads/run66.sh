#!/bin/bash
# Run 66 (#28): the slow thread that stops asking a call NVML answered NOT_SUPPORTED, on the
# real driver. The new build (ccf997b) and the old (202212f) record the same GPU at the same
# time for 20 s beside a bf16 load; a field the new build leaves empty where the old one read
# a value would be a call wrongly given up. Then `devices --timings` of the new build.
D=.device/bins
. docs/workloads/bench.sh
start_load
PIDS=
for b in old new; do
  timeout 40 $D/gw-$b record -o "$OUT/rec-$b.jsonl" --interval 250ms --duration 20s > "$OUT/rec-$b.log" 2>&1 &
  PIDS="$PIDS $!"
done
wait $PIDS
timeout 60 $D/gw-new devices --timings 40 > "$OUT/timings-new.txt" 2>&1
stop_load
python3 - "$OUT" <<'PY' | tee "$OUT/fields.txt"
import json, sys
out = sys.argv[1]
def flat(d, p=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from flat(v, p + k + ".")
        else:
            yield p + k, v
seen = {}
for b in ("old", "new"):
    lines = open(f"{out}/rec-{b}.jsonl").read().splitlines()[1:]
    filled, n, procs = {}, 0, 0
    for l in lines:
        t = json.loads(l)
        d = t["devices"][0]
        n += 1
        procs = max(procs, len(d.get("processes") or []))
        for k, v in flat(d["sample"]):
            filled[k] = filled.get(k, 0) + (v is not None)
    seen[b] = filled
    print(b, n, "ticks,", procs, "processes at most")
for k in sorted(set(seen["old"]) | set(seen["new"])):
    o, n = seen["old"].get(k, 0) > 0, seen["new"].get(k, 0) > 0
    print(("SAME " if o == n else "DIFF ") + k, "old" if o else "-", "new" if n else "-")
PY

"""When a recording first listed each child a workload logged (run 39): the delay from the
moment the workload saw it to the first tick that had it among the main process's children."""
import json, sys
rec, log = sys.argv[1], sys.argv[2]
ticks = []
for line in open(rec):
    d = json.loads(line)
    if "t_ms" not in d:
        continue
    kids = set()
    for dev in d["devices"]:
        for p in dev.get("processes", []):
            for c in ((p.get("host") or {}).get("children") or []):
                kids.add(c["pid"])
    ticks.append((d["t_ms"] / 1000.0, kids))
end = ticks[-1][0] if ticks else 0
# What the workload logged after the recording's last tick cannot have been listed.
events = [e for e in map(json.loads, open(log)) if e["t"] <= end - 1.0]
worst = {}
for e in events:
    pids = e.get("workers") or ([e["pid"]] if e.get("event") == "thread_child" else [])
    for pid in pids:
        seen = next((t for t, kids in ticks if t >= e["t"] - 0.5 and pid in kids), None)
        delay = None if seen is None else round(seen - e["t"], 2)
        print(f"{e['event']:12} pid {pid}: first listed {delay} s after it was logged")
        worst[e["event"]] = max(worst.get(e["event"], 0), 99 if delay is None else delay)
print("worst delay:", worst, "(s; 99: never listed)")

"""Runs a command and writes what it cost to OUTFILE as JSON: user+system CPU seconds of it and
its children, wall seconds, peak RSS (kB), exit code. SIGINT and SIGTERM are passed on to it.

usage: python3 cpuwrap.py OUTFILE CMD [ARGS...]
"""
import json, resource, signal, subprocess, sys, time

out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.time()
p = subprocess.Popen(cmd)
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, lambda n, _f: p.send_signal(n))
while True:
    try:
        rc = p.wait()
        break
    except InterruptedError:
        continue
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    json.dump({"cmd": cmd, "cpu_s": round(r.ru_utime + r.ru_stime, 3), "wall_s": round(time.time() - t0, 2),
               "maxrss_kb": r.ru_maxrss, "rc": rc}, f)
    f.write("\n")
sys.exit(rc)

"""When a monitor's resident memory forms: CMD in a 200x50 pty, its VmRSS and VmHWM read every
20 ms for SECS seconds; prints one line per change of 256 KiB or more, and the last reading
with the highest VmRSS seen (#28: after the monitor gives back its start-up pages, VmHWM, kept
from the kernel's per-CPU counters, can read a few hundred KiB under the true peak).

    python3 rss_timeline.py SECS -- CMD ARGS...
"""
import os, signal, sys, time

from pty_run import drain, start

secs = float(sys.argv[1])
pid, fd = start(sys.argv[sys.argv.index("--") + 1:])
begun, last, highest = time.time(), 0, 0
while time.time() - begun < secs:
    drain(fd, 0.02, step=0.02)
    try:
        keys = ("VmRSS", "VmHWM", "Threads")
        st = {l.split(":")[0]: l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith(keys)}
    except OSError:
        break
    rss = int(st["VmRSS"])
    highest = max(highest, rss)
    if abs(rss - last) >= 256:
        print(f"{1000 * (time.time() - begun):7.0f} ms  rss {rss:6d} KiB  hwm {st['VmHWM']:>6} KiB  threads {st['Threads']}", flush=True)
        last = rss
print(f"{1000 * (time.time() - begun):7.0f} ms  rss {rss:6d} KiB  hwm {st['VmHWM']:>6} KiB  threads {st['Threads']}  (at the end; highest rss seen {highest} KiB)")
os.kill(pid, signal.SIGTERM)

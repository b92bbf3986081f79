"""Like bench/monitor_overhead.py, plus: CPU after a start-up mark, per-thread CPU, RSS by mapping.
usage: probe.py SECONDS MARK LABEL -- CMD ARGS..."""
import os, pty, sys, time, fcntl, termios, struct, select, signal, json
secs = float(sys.argv[1]); mark = float(sys.argv[2]); label = sys.argv[3]
cmd = sys.argv[sys.argv.index("--") + 1:]
tck = os.sysconf("SC_CLK_TCK")
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp(cmd[0], cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
os.kill(pid, signal.SIGWINCH)
t0 = time.time(); nbytes = 0
def stat(path):
    s = open(path).read(); name = s[s.index("(")+1:s.rindex(")")]
    f = s.rsplit(")", 1)[1].split()
    return name, (int(f[11]) + int(f[12])) / tck
def threads(p):
    out = {}
    for t in os.listdir(f"/proc/{p}/task"):
        try:
            n, c = stat(f"/proc/{p}/task/{t}/stat"); out[f"{n}:{t}"] = c
        except Exception: pass
    return out
def total(p):
    try: return sum(threads(p).values())
    except Exception: return None
at_mark = None; hwm = 0; last = {}
while time.time() - t0 < secs:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try: nbytes += len(os.read(fd, 65536))
        except OSError: break
    el = time.time() - t0
    if at_mark is None and el >= mark:
        at_mark = (el, total(pid), dict(threads(pid)))
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM"): hwm = max(hwm, int(line.split()[1]))
        last = threads(pid)
    except Exception: pass
wall = time.time() - t0
maps = {}; cur = None
try:
    for line in open(f"/proc/{pid}/smaps"):
        parts = line.split()
        if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            cur = parts[5] if len(parts) > 5 else "[anon]"
        elif parts[0] == "Rss:":
            maps[cur] = maps.get(cur, 0) + int(parts[1])
except Exception as e: maps["error"] = str(e)
status = {l.split(":")[0]: l.split(":",1)[1].strip() for l in open(f"/proc/{pid}/status") if l.startswith(("VmHWM","VmRSS","RssAnon","RssFile","RssShmem","Threads"))}
os.kill(pid, signal.SIGTERM); time.sleep(0.3)
try: os.kill(pid, signal.SIGKILL)
except Exception: pass
tot = sum(last.values())
mt, mc, mthreads = at_mark
print(json.dumps({"label": label, "cmd": " ".join(cmd), "wall_s": round(wall, 2), "cpu_s": round(tot, 3),
  "cpu_pct": round(100 * tot / wall, 2), "startup_cpu_s": round(mc, 3), "mark_s": round(mt, 2),
  "steady_cpu_pct": round(100 * (tot - mc) / (wall - mt), 3),
  "threads_steady_s": {k: round(v - mthreads.get(k, 0), 3) for k, v in last.items()},
  "peak_rss_mib": round(hwm / 1024, 1), "status": status,
  "rss_by_map_kib": dict(sorted(maps.items(), key=lambda kv: -kv[1])[:14]), "tty_bytes": nbytes}), flush=True)

"""A terminal monitor's CPU in steady state, precisely (issue 28): the command runs in a 200x50
pseudo-terminal; after WARM seconds (start-up: NVML's initialisation, the first frames) its CPU
time is read from /proc/PID/task/*/schedstat (nanoseconds, not 10 ms ticks), again after
SECONDS more, and the difference over the wall time between is its steady cost. Also printed:
the CPU its start-up took, the peak RSS, and the bytes it wrote to the terminal while measured.
usage: steady_overhead.py WARM SECONDS LABEL -- CMD ARGS...   (one JSON line)
KEYS (environment), when set, is typed into the terminal 2 s after the start (for a view other
than the main screen: "\t\t\r" opens the first process of the table); SCREEN, when set, is a
file the last 256 KiB the monitor wrote are saved to (to see that the view measured is the one
meant)."""
import fcntl, json, os, pty, select, signal, struct, sys, termios, time

warm, secs, label = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
cmd = sys.argv[sys.argv.index("--") + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp(cmd[0], cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
os.kill(pid, signal.SIGWINCH)


def tree(p):
    out = [p]
    for c in os.listdir("/proc"):
        if c.isdigit():
            try:
                if int(open(f"/proc/{c}/stat").read().rsplit(")", 1)[1].split()[1]) == p:
                    out += tree(int(c))
            except Exception:
                pass
    return out


def threads():
    """CPU ns of every thread of the process tree, by thread name."""
    out = {}
    for p in tree(pid):
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                name = open(f"/proc/{p}/task/{t}/comm").read().strip()
                ns = int(open(f"/proc/{p}/task/{t}/schedstat").read().split()[0])
                out[name] = out.get(name, 0) + ns
        except Exception:
            pass
    return out


def cpu_ns():
    return sum(threads().values())


seen = bytearray()


def drain(until, count):
    n = 0
    while time.time() < until:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                b = os.read(fd, 65536)
            except OSError:
                break
            n += len(b)
            seen.extend(b)
            del seen[:-262144]
    return n if count else 0


t0 = time.time()
if os.environ.get("KEYS"):
    drain(t0 + 2, False)
    os.write(fd, os.environ["KEYS"].encode())
drain(t0 + warm, False)
th1 = threads()
c1, t1 = sum(th1.values()), time.time()
nbytes = drain(t1 + secs, True)
th2 = threads()
c2, t2 = sum(th2.values()), time.time()
hwm = 0
for p in tree(pid):
    try:
        for line in open(f"/proc/{p}/status"):
            if line.startswith("VmHWM"):
                hwm = max(hwm, int(line.split()[1]))
    except Exception:
        pass
if os.environ.get("SCREEN"):
    open(os.environ["SCREEN"], "wb").write(seen)
os.kill(pid, signal.SIGTERM)
time.sleep(0.3)
try:
    os.kill(pid, signal.SIGKILL)
except Exception:
    pass
print(json.dumps({"label": label, "cmd": " ".join(cmd), "steady_s": round(t2 - t1, 2),
                  "cpu_pct": round(100 * (c2 - c1) / 1e9 / (t2 - t1), 3),
                  "startup_cpu_s": round(c1 / 1e9, 3),
                  "from_start_pct": round(100 * c2 / 1e9 / (t2 - t0), 3),
                  "peak_rss_mib": round(hwm / 1024, 1), "tty_bytes_per_s": round(nbytes / (t2 - t1)),
                  "threads_ms": {k: round((v - th1.get(k, 0)) / 1e6, 1) for k, v in th2.items()}}),
      flush=True)

"""When a monitor's resident memory forms: CMD in a 200x50 pty, its VmRSS and VmHWM read every
20 ms for SECS seconds; prints one line per change of 256 KiB or more, and the last reading
(#28).

    python3 rss_timeline.py SECS -- CMD ARGS...
"""
import fcntl, os, pty, select, signal, struct, sys, termios, time

secs = float(sys.argv[1])
cmd = sys.argv[sys.argv.index("--") + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp(cmd[0], cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
start, last = time.time(), 0
while time.time() - start < secs:
    if select.select([fd], [], [], 0.02)[0]:
        try:
            os.read(fd, 65536)
        except OSError:
            break
    try:
        st = {l.split(":")[0]: l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith(("VmRSS", "VmHWM", "Threads"))}
    except OSError:
        break
    rss = int(st["VmRSS"])
    if abs(rss - last) >= 256:
        print(f"{1000 * (time.time() - start):7.0f} ms  rss {rss:6d} KiB  hwm {st['VmHWM']:>6} KiB  threads {st['Threads']}", flush=True)
        last = rss
print(f"{1000 * (time.time() - start):7.0f} ms  rss {rss:6d} KiB  hwm {st['VmHWM']:>6} KiB  threads {st['Threads']}  (at the end)")
os.kill(pid, signal.SIGTERM)

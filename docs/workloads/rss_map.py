"""Where a monitor's resident memory is: CMD run in a 200x50 pty for SECS seconds, then its
/proc/PID/smaps summed by what is mapped (binary, NVML, libcuda, libc, heap, thread stacks,
other anonymous). Prints one JSON line. With TEXTMAP=FILE set, textmap.py's reading of the same process (its
text pages present, by crate) goes to FILE first.

    python3 rss_map.py SECS LABEL -- CMD ARGS...
"""
import json, os, pty, sys, time, fcntl, struct, termios, signal, collections

secs, label = float(sys.argv[1]), sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp(cmd[0], cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
os.kill(pid, signal.SIGWINCH)
end = time.time() + secs
while time.time() < end:  # drain the screen so the monitor never blocks on its output
    try:
        import select
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            os.read(fd, 65536)
    except OSError:
        break

def kind(name, perms):
    if not name:
        return "anon"
    if name in ("[heap]", "[stack]"):
        return name
    base = os.path.basename(name)
    for key in ("nvidia-ml", "libcuda", "libc.so", "libm.so", "ld-linux", "libgcc"):
        if key in base:
            return key
    if base == os.path.basename(cmd[0]):
        return "binary " + ("text" if "x" in perms else "data")
    return base

sizes = collections.Counter()
name, perms = None, ""
for line in open(f"/proc/{pid}/smaps"):
    parts = line.split()
    if len(parts) >= 5 and "-" in parts[0] and ":" not in parts[0]:
        perms = parts[1]
        name = parts[5] if len(parts) > 5 else ""
    elif parts[0] == "Rss:":
        sizes[kind(name, perms)] += int(parts[1])
if os.environ.get("TEXTMAP"):
    import subprocess
    textmap = os.path.join(os.path.dirname(os.path.abspath(__file__)), "textmap.py")
    with open(os.environ["TEXTMAP"], "w") as out:
        subprocess.run([sys.executable, textmap, str(pid), cmd[0]], stdout=out)
status = {l.split(":")[0]: l.split(":")[1].strip() for l in open(f"/proc/{pid}/status")}
os.kill(pid, signal.SIGTERM)
time.sleep(0.5)
try:
    os.kill(pid, signal.SIGKILL)
except ProcessLookupError:
    pass
print(json.dumps({"label": label, "rss_kib": int(status["VmRSS"].split()[0]),
                  "hwm_kib": int(status["VmHWM"].split()[0]), "threads": int(status["Threads"]),
                  "by_mapping_kib": dict(sizes.most_common())}), flush=True)

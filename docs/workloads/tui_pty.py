"""Run the gpuwatch TUI in a 160x48 pty for SECONDS, press e (export), then q; keep every byte."""
import os, pty, sys, time, fcntl, termios, struct, select, signal
secs, out = float(sys.argv[1]), sys.argv[2]
cmd = sys.argv[sys.argv.index("--") + 1:]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp(cmd[0], cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0)); os.kill(pid, signal.SIGWINCH)
buf = bytearray(); t0 = time.time(); sent = set()
def pump(t):
    end = time.time() + t
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try: buf.extend(os.read(fd, 65536))
            except OSError: return
pump(secs)
os.write(fd, b"e"); pump(2.0)
open(out + ".before-quit", "wb").write(buf)
os.write(fd, b"q"); pump(1.5)
_, status = os.waitpid(pid, 0)
open(out, "wb").write(buf)
print("tui exit status", status, "bytes", len(buf), flush=True)

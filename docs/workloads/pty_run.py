"""Runs CMD in a 200x50 pty for SECS seconds, its screen read and dropped (so that it never
blocks on its output), then presses q and waits up to 30 s for it to end: the monitor as a
user leaves it, for a profiler wrapped around it (run90.sh: callgrind). `start` and `drain`
are shared with rss_timeline.py.

    python3 pty_run.py SECS -- CMD ARGS...
"""
import fcntl, os, pty, select, signal, struct, sys, termios, time


def start(cmd):
    """CMD in a new 200x50 pty: its pid and the pty's descriptor."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    return pid, fd


def drain(fd, for_s, step=0.2):
    """Reads and drops the screen for `for_s` seconds, waking at least every `step`."""
    end = time.time() + for_s
    while time.time() < end:
        if select.select([fd], [], [], step)[0]:
            try:
                os.read(fd, 65536)
            except OSError:
                return


if __name__ == "__main__":
    secs = float(sys.argv[1])
    pid, fd = start(sys.argv[sys.argv.index("--") + 1:])
    drain(fd, secs)
    os.write(fd, b"q")
    for _ in range(100):
        drain(fd, 0.3)
        if os.waitpid(pid, os.WNOHANG)[0]:
            break

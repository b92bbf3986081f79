#!/bin/bash
# Run 70 (#28): run 69 read the program's text at 3.8 MiB on the GPU machine against 1.5 MiB
# for the demo here: the link order (src/link-order.txt) comes from callgrind of the demo, and
# the demo never runs the NVML source's code, which then lies spread over the binary. This run
# profiles the real thing there, with valgrind's callgrind carried in .device/vg (valgrind.bin,
# callgrind-amd64-linux, vgpreload_core, default.supp from Debian's valgrind 3.19): `record` and
# `serve` (one scrape) on NVML beside the steady load, and the monitor in a pty. It also reads
# where the memory is for the build with packed relative relocations (gw-relr) against the one
# without (gw-new2), and which glibc the machine has (DT_RELR needs 2.36). The profiles' names
# were kept in results/run70/{tui,serve,record}.txt, which link_order.sh reads:
#   python3 docs/workloads/cg_names.py gw-relr tui.*.out > results/run70/tui.txt
. docs/workloads/bench.sh
D=.device/bins
{ ldd --version | head -1; getconf GNU_LIBC_VERSION; } >> "$R/log.txt" 2>&1
start_load
RM() { timeout 40 python3 docs/workloads/rss_map.py 15 "$@" >> "$R/rss_map.jsonl" 2>> "$R/log.txt"; }
RM relr-0.1s -- $D/gw-relr --interval 100ms
RM new2-0.1s -- $D/gw-new2 --interval 100ms
RM relr-0.1s -- $D/gw-relr --interval 100ms
export VALGRIND_LIB=$PWD/.device/vg
VG=".device/vg/valgrind.bin --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no"
W=/tmp/cg; mkdir -p $W
timeout 90 $VG --callgrind-out-file=$W/record.%p.out $D/gw-relr record --duration 40s -o /tmp/r.jsonl \
  > /dev/null 2>> "$R/vg.txt"
$VG --callgrind-out-file=$W/serve.%p.out $D/gw-relr serve --listen 127.0.0.1:9479 2>> "$R/vg.txt" &
S=$!
sleep 25
python3 -c "import urllib.request as u; print(len(u.urlopen('http://127.0.0.1:9479/metrics', timeout=20).read()))" >> "$R/log.txt" 2>&1
sleep 3; kill -INT $S; wait $S
# The monitor in a 200x50 pty for 30 s, then `q`, so that callgrind writes its profile.
python3 - $VG --callgrind-out-file=$W/tui.%p.out $D/gw-relr <<'PY' 2>> "$R/log.txt"
import fcntl, os, pty, select, signal, struct, sys, termios, time
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execvp(sys.argv[1], sys.argv[1:])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
os.kill(pid, signal.SIGWINCH)
def drain(secs):
    end = time.time() + secs
    while time.time() < end:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                os.read(fd, 65536)
            except OSError:
                return
drain(30)
os.write(fd, b"q")
for _ in range(100):
    drain(0.3)
    if os.waitpid(pid, os.WNOHANG)[0]:
        break
PY
sleep 5
stop_load
ls -la $W >> "$R/log.txt"
tar czf "$R/callgrind.tgz" -C $W .

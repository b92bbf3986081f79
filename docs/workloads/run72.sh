#!/bin/bash
# Run 72 (#28): run 70's profile again for the link order's GPU tiers. Splitting the rule
# families into one file per rule (a74a7df) and renaming the loop's module (driver -> pacer,
# 8a86359) renamed the symbols the monitor runs, so run 70's lists name functions the binary no
# longer has. Same as run 70's callgrind part, on gw-cur = 8a86359: `record` and `serve` (one
# scrape) on NVML beside the steady load, and the monitor in a 200x50 pty for 30 s. The names
# go to results/run72/{tui,serve,record}.txt, which link_order.sh reads:
#   python3 docs/workloads/cg_names.py gw-cur tui.*.out > results/run72/tui.txt
. docs/workloads/bench.sh
D=.device/bins
start_load
export VALGRIND_LIB=$PWD/.device/vg
VG=".device/vg/valgrind.bin --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no"
W=/tmp/cg; mkdir -p $W
timeout 90 $VG --callgrind-out-file=$W/record.%p.out $D/gw-cur record --duration 40s -o /tmp/r.jsonl \
  > /dev/null 2>> "$R/vg.txt"
$VG --callgrind-out-file=$W/serve.%p.out $D/gw-cur serve --listen 127.0.0.1:9479 2>> "$R/vg.txt" &
S=$!
sleep 25
python3 -c "import urllib.request as u; print(len(u.urlopen('http://127.0.0.1:9479/metrics', timeout=20).read()))" >> "$R/log.txt" 2>&1
sleep 3; kill -INT $S; wait $S
python3 - $VG --callgrind-out-file=$W/tui.%p.out $D/gw-cur <<'PY' 2>> "$R/log.txt"
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

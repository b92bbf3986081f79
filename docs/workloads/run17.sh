#!/bin/bash
# Device run 17 (issue 15, release builds): the .deb as the release workflow now builds it
# (.ci/deb.sh --glibc 2.17: linked by zig against glibc 2.17's symbols, stripped as it links),
# unpacked, not installed (the machine is shared), on the real H200: NVML opened through that
# build's dlopen, devices/query/diagnose under a bf16 load, the monitor at 80x24 in a pty, and the
# CPU time of a 250 ms recording from it beside the same source built the usual way.
# Carry: target/gpuwatch-x86_64-unknown-linux-gnu.deb, target/release/gpuwatch
R=$OUT; D=/tmp/pkg17; mkdir -p $D
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ldd --version | head -1; } > $R/log17.txt
python3 - target/gpuwatch-x86_64-unknown-linux-gnu.deb $D <<'PY' >> $R/log17.txt 2>&1
import io, sys, tarfile
raw = open(sys.argv[1], "rb").read(); assert raw[:8] == b"!<arch>\n"; i = 8
while i < len(raw):
    name = raw[i:i+16].decode().strip().rstrip("/"); size = int(raw[i+48:i+58]); body = raw[i+60:i+60+size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2]); print("unpacked", name)
    i += 60 + size + (size & 1)
PY
B=$D/usr/bin/gpuwatch
cat > /tmp/load17.py <<'PY'
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20): a @ a
    torch.cuda.synchronize()
PY
timeout 150 python3 /tmp/load17.py 130 >> $R/log17.txt 2>&1 & L=$!
sleep 8
{
  echo "== packaged binary"; ls -la $B; $B --version
  echo "== devices"; $B devices
  echo "== query"; $B query --fields index,name,utilization.gpu,power.draw,memory.used,temperature.gpu
  echo "== diagnose under load 15s"; $B diagnose --for 15s; echo "rc=$?"
} > $R/pkg17.txt 2>&1
# CPU time of 20 s recordings at 250 ms: the zig/glibc-2.17 build, then the usual build.
python3 - $B target/release/gpuwatch <<'PY' > $R/cpu17.txt 2>&1
import os, subprocess, sys
# Taken in turn, twice, each to its own file (record does not overwrite).
for n, (label, b) in enumerate(2 * (("zig glibc-2.17", sys.argv[1]), ("usual build", sys.argv[2]))):
    p = subprocess.Popen([b, "record", "-o", f"/tmp/r17-{n}.jsonl", "--interval", "250ms", "--duration", "20s"])
    _, status, ru = os.wait4(p.pid, 0)
    cpu = ru.ru_utime + ru.ru_stime
    print(f"{label}: exit {status >> 8}, cpu {cpu:.3f} s over 20 s = {100 * cpu / 20:.2f} %, max rss {ru.ru_maxrss / 1024:.1f} MiB")
PY
python3 - $B $R/screen17.txt <<'PY' >> $R/log17.txt 2>&1
import os, pty, select, sys, time, fcntl, struct, termios
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(TERM="xterm-256color")
    os.execv(sys.argv[1], [sys.argv[1], "--no-mouse"])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
out = b""; end = time.time() + 6
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try: out += os.read(fd, 65536)
        except OSError: break
os.write(fd, b"q"); time.sleep(0.5)
open(sys.argv[2], "wb").write(out); print("screen bytes", len(out))
PY
wait $L; echo "load done" >> $R/log17.txt

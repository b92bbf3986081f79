#!/bin/bash
# Device run 14 (issue 15 and the exporter's order fix): the packaged binary (.deb from
# .ci/deb.sh, unpacked, not installed: the machine is shared) on the real H200; /metrics scraped
# twice under a bf16 load to see the series order and values; the monitor's header and footer
# at 80x24 in a pty, drawn from live NVML.
# Carry: .device, target/release/gpuwatch, target/gpuwatch-x86_64-unknown-linux-gnu.deb
R=$OUT; D=/tmp/pkg14; mkdir -p $D
date -u > $R/log14.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $R/log14.txt
python3 - target/gpuwatch-x86_64-unknown-linux-gnu.deb $D <<'PY' >> $R/log14.txt 2>&1
# dpkg-deb may be missing there: an ar archive holding data.tar.* is simple to open.
import io, sys, tarfile
raw = open(sys.argv[1], "rb").read(); assert raw[:8] == b"!<arch>\n"; i = 8
while i < len(raw):
    name = raw[i:i+16].decode().strip().rstrip("/"); size = int(raw[i+48:i+58]); body = raw[i+60:i+60+size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2]); print("unpacked", name)
    i += 60 + size + (size & 1)
PY
B=$D/usr/bin/gpuwatch
{
  echo "== packaged binary"; ls -la $B; $B --version
  echo "== devices"; $B devices
  echo "== query"; $B query --fields index,name,utilization.gpu,power.draw,memory.used,temperature.gpu
  echo "== diagnose idle 12s"; $B diagnose --for 12s; echo "rc=$?"
} >> $R/pkg.txt 2>&1
# A steady bf16 matmul load while serve is scraped.
cat > /tmp/load14.py <<'PY'
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(20): a @ a
    torch.cuda.synchronize()
PY
timeout 60 python3 /tmp/load14.py 40 >> $R/log14.txt 2>&1 & L=$!
$B serve --listen 127.0.0.1:9947 --processes 2 --dcgm-compat >> $R/log14.txt 2>&1 & S=$!
sleep 15
curl -s 127.0.0.1:9947/metrics > $R/metrics1.txt; sleep 1.1; curl -s 127.0.0.1:9947/metrics > $R/metrics2.txt
# The monitor at 80x24 in a pty, live: its first screens as the terminal shows them.
python3 - $B $R/screen80.txt <<'PY' >> $R/log14.txt 2>&1
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.environ.update(TERM="xterm-256color", COLUMNS="80", LINES="24")
    os.execv(sys.argv[1], [sys.argv[1], "--no-mouse"])
import fcntl, struct, termios
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
out = b""; end = time.time() + 8
while time.time() < end:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try: out += os.read(fd, 65536)
        except OSError: break
os.write(fd, b"q"); time.sleep(0.5)
open(sys.argv[2], "wb").write(out); print("pty bytes", len(out))
PY
kill $S; wait $L
{
  echo "== series order, first scrape vs second (gpuwatch_power_watts, DCGM_FI_DEV_POWER_USAGE)"
  grep -E '^(gpuwatch_power_watts|gpuwatch_gpm_sm_active_ratio|DCGM_FI_DEV_POWER_USAGE|gpuwatch_process)' $R/metrics1.txt | cut -c1-160
  echo "== same series lines in the same order: $(diff <(grep -v '^#' $R/metrics1.txt | sed 's/ [^ ]*$//') <(grep -v '^#' $R/metrics2.txt | sed 's/ [^ ]*$//') >/dev/null && echo yes || echo NO)"
  echo "== values with 8 or more decimals (float noise), of $(grep -vc '^#' $R/metrics1.txt) samples:"
  grep -v '^#' $R/metrics1.txt | grep -E '\.[0-9]{8,}$' | cut -c1-160 | head
} >> $R/pkg.txt 2>&1
cat $R/pkg.txt

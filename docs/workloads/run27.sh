#!/bin/bash
# Run 27 (#28): is the rise at 100 ms (0.495 % in run 22, 0.53-0.63 % in runs 24/25) real?
# Five builds in one run, alternating, twice, beside the same steady bf16 load and nvtop -d 1:
# 6a7b2cd (2026-11-30, "a turn ago" in #28), a0b73e1 (#28's first cut), a32983c (last
# session's end), 99e5145 (charts drawn directly, no size query per frame). Then the new build
# at 250 ms and 1 s, serve, headless record, and the floors: nvidia-smi's own loop at 100 ms
# and what nvmlInit alone adds to a process's RSS. Builds are stripped copies in .device/bins.
R=$OUT; D=.device/bins; NEW=$D/gw-99e5145
date -u > $R/log.txt; nvidia-smi -L >> $R/log.txt
mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop; N=/tmp/nvtop/usr/bin/nvtop
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
M() { timeout 60 python3 docs/workloads/steady_overhead.py 5 20 "$1" -- "${@:2}" >> $R/threads.jsonl 2>>$R/log.txt; }
for round in 1 2; do
  M nvtop-0.1s $N -d 1
  for b in 6a7b2cd a0b73e1 a32983c 99e5145; do M $b-0.1s $D/gw-$b --interval 100ms; done
done
M 99e5145-0.25s $NEW --interval 250ms
M 99e5145-1s $NEW --interval 1s
M a32983c-1s $D/gw-a32983c --interval 1s
M nvtop-1s $N -d 10
M serve-1s $NEW serve --interval 1s --listen 127.0.0.1:9477
M record-0.1s $NEW record -o /tmp/rec.jsonl --interval 100ms --duration 40s
M smi-0.1s nvidia-smi --query-gpu=utilization.gpu,power.draw,temperature.gpu,clocks.sm,clocks.mem,pstate --format=csv,noheader -lms 100
python3 -c "
import ctypes
def rss():
    return int(open('/proc/self/statm').read().split()[1])*4096/2**20
a=rss(); l=ctypes.CDLL('libnvidia-ml.so.1'); b=rss(); rc=l.nvmlInit_v2(); c=rss()
print('nvml_rss_mib', {'before': round(a,1), 'after_dlopen': round(b,1), 'after_init': round(c,1), 'init_adds': round(c-a,1), 'rc': rc})
" >> $R/log.txt 2>&1
kill $LOAD; wait $LOAD 2>/dev/null
python3 - $R/threads.jsonl <<'PY' | tee $R/summary.txt
import json, sys
for d in map(json.loads, open(sys.argv[1])):
    print(f"{d['label']:16} {d['cpu_pct']:6.3f} %  rss {d['peak_rss_mib']:5.1f} MiB  tty {d['tty_bytes_per_s']:6} B/s  {d['threads_ms']}")
PY

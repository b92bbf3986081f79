#!/bin/bash
# Device run 4 (diagnostic): where gpuwatch's CPU and RSS go on the H200, per thread and mapping.
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
N=/tmp/nvtop/usr/bin/nvtop; mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop
which perf strace ltrace gdb valgrind > $R/tools.txt 2>&1; ls -laL /usr/lib/x86_64-linux-gnu/libnvidia-ml.so* >> $R/tools.txt 2>&1
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 6
$B devices --timings 200 --interval 100ms > $R/timings.txt 2>&1
P() { python3 .device/probe.py 25 4 "$1" -- bash -c "exec $2" >> $R/probe.jsonl; }
P gw-tui-0.1s "$B --interval 100ms"
P gw-tui-1s "$B --interval 1s"
P gw-rec-0.1s "$B record -o /tmp/r1.jsonl --interval 100ms --duration 60s"
P gw-rec-1s "$B record -o /tmp/r2.jsonl --interval 1s --duration 60s"
P nvtop-0.1s "$N -d 1"
P nvtop-1s "$N -d 10"
for c in "$B devices" "$B devices --json" "nvidia-smi -L"; do python3 -c "import resource,subprocess,sys;subprocess.run(sys.argv[1].split(),stdout=subprocess.DEVNULL);r=resource.getrusage(resource.RUSAGE_CHILDREN);print(sys.argv[1],'user',r.ru_utime,'sys',r.ru_stime,'maxrss_kib',r.ru_maxrss)" "$c" >> $R/init.txt; done
kill $LOAD
cat $R/init.txt $R/tools.txt $R/timings.txt $R/probe.jsonl

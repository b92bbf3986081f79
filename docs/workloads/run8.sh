#!/bin/bash
# Device run 8: the observer effect again with this build; the TUI live in a pty under load.
B=$PWD/target/release/gpuwatch; R=$OUT/r; mkdir -p $R
Q="--query-gpu=power.draw,clocks.sm,pstate,clocks_event_reasons.active --format=csv,noheader -lms 200"
nvidia-smi --query-compute-apps=pid --format=csv,noheader > $R/apps-before.txt
nvidia-smi $Q > $R/observer-without.csv & S=$!
sleep 30; kill $S
python3 .device/bench/monitor_overhead.py 32 observer -- $B --interval 100ms > $R/observer-gpuwatch.json &
sleep 1
nvidia-smi $Q > $R/observer-with.csv & S=$!
sleep 30; kill $S; wait
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" & LOAD=$!
sleep 5
GPUWATCH_SNAPSHOT_DIR=$R python3 .device/tui_pty.py 25 $R/tui-h200.bin -- $B --interval 100ms
kill $LOAD
python3 - <<PY
import statistics as st
for f in ("without", "with"):
    rows = [l.split(",") for l in open("$R/observer-%s.csv" % f) if "W" in l]
    w = [float(r[0].split()[0]) for r in rows]
    print(f, len(w), "median", st.median(w), "min", min(w), "max", max(w), "clocks", sorted(set(r[1].strip() for r in rows)), "pstate", sorted(set(r[2].strip() for r in rows)))
PY
cat $R/observer-gpuwatch.json $R/apps-before.txt; ls $R

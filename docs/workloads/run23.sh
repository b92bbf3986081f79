#!/bin/bash
# Run 23 (issue #29) on the lent H200: the health counters as the VM exposes them, the energy
# of a job by the counter against the integral of power, the energy of a spinning-kernel hang,
# and what the event thread costs. Writes under $OUT as it goes (6 files).
set -u
GW=target/release/gpuwatch
W=.device/workloads/gpu_workloads.py
L="$OUT/log.txt"
{ echo "== nvidia-smi"; nvidia-smi -q -d ECC,ROW_REMAPPER,PCIE; echo "== devices"; timeout 20 $GW devices; } > "$L" 2>&1
timeout 20 $GW devices --json > "$OUT/devices.json" 2>>"$L"
# The job: 40 s of matmul then 40 s of one spinning kernel, recorded at 250 ms.
$GW record -o "$OUT/rec.jsonl" --duration 120s --interval 250ms >> "$L" 2>&1 &
REC=$!
sleep 3
echo "== workload" >> "$L"
timeout 120 python3 $W 40 "matmul,spin_hang" "$OUT/spans.json" >> "$L" 2>&1
# Per-thread CPU of the recorder (name, utime+stime in clock ticks) before it ends.
echo "== threads (CLK_TCK $(getconf CLK_TCK))" >> "$L"
for t in /proc/$REC/task/*; do
  [ -r "$t/stat" ] && echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"
done >> "$L" 2>&1
echo "== recorder stat: $(cat /proc/$REC/stat 2>/dev/null)" >> "$L"
wait $REC
timeout 60 $GW diagnose --replay "$OUT/rec.jsonl" > "$OUT/diagnose.txt" 2>&1
timeout 60 $GW diagnose --replay "$OUT/rec.jsonl" --json > "$OUT/diagnose.json" 2>&1
ls -la "$OUT" >> "$L"

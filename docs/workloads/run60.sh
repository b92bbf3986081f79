#!/bin/bash
# Run 60 on the H200: the recording the fp32 rule's thresholds were chosen on, made with the
# build that landed before the rule (8cb4ef3), as the device tool ran it (one command line; the
# workload was carried as .device/fp32.py, the file now at docs/workloads/fp32.py).
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv > "$OUT/gpu.txt"
target/release/gpuwatch record -o "$OUT/fp32.jsonl" --interval 250ms --duration 250s > "$OUT/record.log" 2>&1 &
sleep 3
timeout 270 python3 docs/workloads/fp32.py 25 "" "$OUT/spans.json" > "$OUT/fp32.log" 2>&1
wait

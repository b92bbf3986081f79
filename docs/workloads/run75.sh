#!/bin/bash
# Run 75 (#28): after every rule was made to word an open finding once a second (3f67dc4), a
# recording beside the labelled workloads on the GPU machine, judged here by this build and by
# 202212f (`diagnose --replay REC --json`), to see that the verdicts did not move. The
# recording (gw-new5 = c8a3626: recording does not depend on the rules) runs beside the seven
# phases of gpu_workloads.py, 20 s each.
(timeout 200 .device/bins/gw-new5 record -o $OUT/rec.jsonl --duration 175s > $OUT/record.log 2>&1 &)
sleep 2
timeout 185 python3 .device/workloads/gpu_workloads.py 20 "" $OUT/spans.json > $OUT/phases.txt 2>&1
sleep 3
# Here: gpuwatch diagnose --replay rec.jsonl --json, with target/release/gpuwatch and gw-old.

#!/bin/bash
# Run 37: the session's final build (`ccaf8ce`: rules' windows remember their statistics, the
# starved, transfer and hang checks split into parts) beside three labelled phases, live and
# recorded; the recording is replayed here by `a0cb5b0` and the final build, which must agree.
B=.device/bins
($B/gw-final record -o $OUT/rec.jsonl --duration 100s > $OUT/record.log 2>&1 &)
($B/gw-final diagnose --for 95s --json > $OUT/diag-final.json 2> $OUT/diag.log &)
sleep 3
timeout 110 python3 .device/workloads/gpu_workloads.py 25 "starved_loader,spin_hang,sync_small_kernels" $OUT/spans.json > $OUT/phases.txt 2>&1
sleep 8

#!/bin/bash
# Run 99 (#28): gw-d = f11e7ec's release build (`cargo build --release`; the link-order guard
# passed), the head after the 64-GPU work of 2026-12-07 evening (a hung GPU glanced at between
# judgings, benign readings worded only when asked, figures formatted by text::fixed, the PCIe
# share counted, the link order made again), beside gw-c (95a55d7, runs 97-98's head). The
# issue asks its targets on the H200: the native floor (nvfloor) on this machine, gw-d's memory
# over 32 s twice, and CPU pairs at 100 ms (twice, turned round), 250 ms, 1 s and `serve` 1 s.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv >> "$OUT/log.txt"
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-d OLD=$D/gw-c
start_load
F() { timeout 40 $D/nvfloor 32 >> "$R/nvfloor.txt" 2>> "$R/log.txt"; echo --- >> "$R/nvfloor.txt"; }
F
T() { timeout 40 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 --interval 100ms >> "$R/timeline-$1.txt" 2>> "$R/log.txt"; echo --- >> "$R/timeline-$1.txt"; }
T gw-d; T gw-d
pair 1 100ms --interval 100ms
pair 2 100ms --interval 100ms
pair 1 250ms --interval 250ms
pair 2 1s --interval 1s
pair 1 serve-1s serve --interval 1s --listen 127.0.0.1:9471
stop_load
summary

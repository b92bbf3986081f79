#!/bin/bash
# Run 98 (#28), on run 97's warm machine: the rest of the steady table for gw-c (the head,
# 95a55d7's release build) beside gw-new (7422653): the native floor (nvfloor) on this machine,
# twice, so that the target (nvmlInit + 2 MiB) is read on the machine that measured run 97's
# memory; pairs at 250 ms, 1 s and `serve` 1 s; a second 100 ms pair, turned round.
set -u
. docs/workloads/bench.sh
D=.device/bins
NEW=$D/gw-c OLD=$D/gw-new
start_load
F() { timeout 40 $D/nvfloor 32 >> "$R/nvfloor.txt" 2>> "$R/log.txt"; echo --- >> "$R/nvfloor.txt"; }
F
pair 2 100ms --interval 100ms
pair 1 250ms --interval 250ms
pair 2 1s --interval 1s
pair 1 serve-1s serve --interval 1s --listen 127.0.0.1:9471
F
stop_load
summary

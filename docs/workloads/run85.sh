#!/bin/bash
# Run 85 (#28): the head after the link-order mend (912dc55) beside the build before the session
# that renamed every symbol (fb5ed80), and beside 6e44ea6 (the renamed build) for resident memory
# only: run 84 read +0.8-1.0 MiB on 6e44ea6 and the mend (31e0984, 0be2bd3) was not measured on a
# GPU. Then the stack thread's look at a process with no open warning (64e9280: 5 reads, not 10)
# beside a busy load that opens none, and last the issue's own harness with every peer.
# NEW = gw-new16 = 912dc55, OLD = gw-prev = fb5ed80, RENAMED = gw-new15 = 6e44ea6.
# Each measurement is written as it ends, so a run cut at its limit keeps what it measured.
NEW=.device/bins/gw-new16 OLD=.device/bins/gw-prev RENAMED=.device/bins/gw-new15
nvidia-smi --query-gpu=name,driver_version,power.limit,power.default_limit --format=csv > "$OUT/gpu.txt"
. docs/workloads/bench.sh
start_load
pair 1 100ms --interval 100ms
M renamed-100ms "$RENAMED" --interval 100ms
pair 2 serve-1s serve --interval 1s --listen 127.0.0.1:9471
pair 1 1s --interval 1s
pair 2 250ms --interval 250ms
stop_load
# A load that keeps the GPU busy opens no warning. (Meant to show the stack thread's look now
# and then; that look is only for a GPU under half its TDP, which this load is not: neither
# build started the thread. See docs/performance.md, run 85.)
python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize()
" &
LOAD=$!; sleep 6
pair 1 busy-serve-1s serve --interval 1s --listen 127.0.0.1:9471
stop_load
summary
NVTOP=$(nvtop_path)
timeout 200 bash .device/bench/overhead.sh 20 \
  "new-0.1s|$NEW --interval 100ms" "nvtop-0.1s|$NVTOP -d 1" \
  "new-0.25s|$NEW --interval 250ms" "nvitop-0.25s|python3 -m nvitop --interval 0.25" \
  "new-1s|$NEW --interval 1s" "nvtop-1s|$NVTOP -d 10" \
  "new-serve-1s|$NEW serve --interval 1s --listen 127.0.0.1:9471" \
  2>> "$OUT/log.txt" > "$OUT/shared.jsonl"

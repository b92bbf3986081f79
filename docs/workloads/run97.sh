#!/bin/bash
# Run 97 (#28): gw-c = the head's release build (`cargo build --release`, and the link-order
# guard passed: `cargo test --release` replaces the binary with one whose names differ). What it
# measures: start-up's pages given back from the loaded objects' read-only segments (inside
# dl_iterate_phdr, never a writable segment: the fix of d5ed027) before and after nvmlInit, as
# the pipeline starts, 2 s and 10 s in; and the rules' first look at a process held to 3 s
# (`stack::burst::FIRST_LOOK`). Run 96 measured the first version (every file's mappings), whose
# one look 51 ms in brought the peak to 23.6 MiB. Memory over 32 s beside the steady load, three
# times, `serve` once, and a CPU pair at 100 ms against gw-new (7422653); the target is nvmlInit
# + 2 MiB = 23.0-23.1 MiB (run 94's native floor). Then gw-c's map at 31 s (where the rest lies)
# and the side-by-side table with every peer (shared.jsonl), last, as the longest.
set -u
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv >> "$OUT/log.txt"
. docs/workloads/bench.sh
D=.device/bins
start_load
T() { timeout 40 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 --interval 100ms >> "$R/timeline-$1.txt" 2>> "$R/log.txt"; echo --- >> "$R/timeline-$1.txt"; }
T gw-c; T gw-c; T gw-c
S() { timeout 40 python3 docs/workloads/rss_timeline.py 32 -- $D/$1 serve --interval 1s --listen 127.0.0.1:9471 >> "$R/timeline-serve.txt" 2>> "$R/log.txt"; echo "--- $1" >> "$R/timeline-serve.txt"; }
S gw-c
NEW=$D/gw-c OLD=$D/gw-new
pair 1 100ms --interval 100ms
timeout 45 python3 docs/workloads/rss_map.py 31 gw-c-0.1s -- $D/gw-c --interval 100ms \
  >> "$R/rss_map.jsonl" 2>> "$R/log.txt"
stop_load
summary
peers

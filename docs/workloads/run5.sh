#!/bin/bash
B=$PWD/target/release/gpuwatch
for f in 0 2; do echo "== flags $f"; python3 .device/nvml_rss.py $f; done
echo "== python alone"; python3 -c "print(open('/proc/self/status').read())" | grep -E "VmRSS|RssAnon|RssFile"
echo "== gpuwatch record with MALLOC_ARENA_MAX=1"; (MALLOC_ARENA_MAX=1 $B record -o /tmp/x.jsonl --interval 100ms --duration 6s & P=$!; sleep 5; grep -E "VmHWM|VmRSS|RssAnon|RssFile" /proc/$P/status; wait)
echo "== gpuwatch record default"; ($B record -o /tmp/y.jsonl --interval 100ms --duration 6s & P=$!; sleep 5; grep -E "VmHWM|VmRSS|RssAnon|RssFile" /proc/$P/status; awk '$2 ~ /rw/ {print}' /proc/$P/maps | head -40; wait)

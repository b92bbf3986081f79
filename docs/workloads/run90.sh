#!/bin/bash
# Run 90 (#28): what a monitor runs once start-up is over, for the link order's first tier.
# gw-trim (b1ee22f plus the release of start-up's pages after 10 s) under callgrind on NVML
# beside the steady load, as run 89, with --dump-before at that release: each profile's
# `.out.1` is start-up, its `.out` what ran after (results/run90/{tui,serve,record}-steady.txt).
. docs/workloads/bench.sh
D=.device/bins
B=${B:-gw-trim}  # the build profiled; run 92 sets it to main's head
start_load
export VALGRIND_LIB=$PWD/.device/vg
VG=".device/vg/valgrind.bin --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no"
VG="$VG --dump-before=*release_start_up_pages*"
W=/tmp/cg; mkdir -p $W
timeout 90 $VG --callgrind-out-file=$W/record.%p.out $D/$B record --duration 40s -o /tmp/r.jsonl \
  > /dev/null 2>> "$R/vg.txt" &
$VG --callgrind-out-file=$W/serve.%p.out $D/$B serve --listen 127.0.0.1:9479 2>> "$R/vg.txt" &
S=$!
for t in 20 30; do
  sleep 10
  python3 -c "import urllib.request as u; print(len(u.urlopen('http://127.0.0.1:9479/metrics', timeout=20).read()))" >> "$R/log.txt" 2>&1
done
sleep 5; kill -INT $S; wait $S
python3 docs/workloads/pty_run.py 45 -- $VG --callgrind-out-file=$W/tui.%p.out $D/$B 2>> "$R/log.txt"
wait
stop_load
ls -la $W >> "$R/log.txt"
tar czf "$R/callgrind.tgz" -C $W .

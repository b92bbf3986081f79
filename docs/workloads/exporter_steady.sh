#!/bin/bash
# An exporter's CPU in steady state, scraped every second (issue 28): CPU from
# /proc/PID/task/*/schedstat (ns) between WARM s after it answers and SECONDS later, scrapes
# included; peak RSS; size of one answer. usage: exporter_steady.sh SECONDS WARM URL -- CMD...
secs=$1; warm=$2; url=$3; shift 4
"$@" >/dev/null 2>&1 & pid=$!
ns() { cat /proc/$pid/task/*/schedstat | awk '{s+=$1} END {print s}'; }
for i in $(seq 1 40); do curl -sf -o /dev/null "$url" && break; sleep 0.5; done
sleep "$warm"
t0=$(date +%s.%N); c0=$(ns); n=0; bytes=0
end=$(( $(date +%s) + secs ))
while [ "$(date +%s)" -lt "$end" ]; do
  b=$(curl -sf "$url" | wc -c); bytes=$b; n=$((n+1)); sleep 1
done
t1=$(date +%s.%N); c1=$(ns)
hwm=$(awk '/VmHWM/{print $2}' /proc/$pid/status)
kill $pid; wait $pid 2>/dev/null
python3 -c "print('{\"cpu_pct\": %.3f, \"peak_rss_mib\": %.1f, \"scrapes\": $n, \"bytes_per_scrape\": $bytes}' % (($c1-$c0)/1e9/($t1-$t0)*100, $hwm/1024))"

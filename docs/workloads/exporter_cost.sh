#!/bin/bash
# Cost of an exporter scraped every second: CPU (user+system over wall, from /proc/PID/stat,
# start-up excluded by a first reading after WARM s) and peak RSS (VmHWM).
# usage: exporter_cost.sh SECONDS WARM URL -- COMMAND...   (prints one JSON line)
secs=$1; warm=$2; url=$3; shift 4
"$@" >/dev/null 2>&1 & pid=$!
tps=$(getconf CLK_TCK)
ticks() { awk '{print $14+$15}' /proc/$pid/stat; }
for i in $(seq 1 40); do curl -sf -o /dev/null "$url" && break; sleep 0.5; done
sleep "$warm"
t0=$(date +%s.%N); c0=$(ticks); n=0; bytes=0
end=$(( $(date +%s) + secs ))
while [ "$(date +%s)" -lt "$end" ]; do
  b=$(curl -sf "$url" | wc -c); bytes=$b; n=$((n+1)); sleep 1
done
t1=$(date +%s.%N); c1=$(ticks)
hwm=$(awk '/VmHWM/{print $2}' /proc/$pid/status)
kill $pid; wait $pid 2>/dev/null
python3 -c "print('{\"cpu_pct\": %.2f, \"peak_rss_mib\": %.1f, \"scrapes\": $n, \"bytes_per_scrape\": $bytes}' % (($c1-$c0)/$tps/($t1-$t0)*100, $hwm/1024))"

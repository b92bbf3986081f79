#!/bin/bash
# Run 42 (#28): where the monitor's CPU goes on the H200, by thread and function. perf
# samples the build of 3b599d7 (first committed as 10405e0) (`gw-new`) at 100 ms and at 1 s for 35 s each, beside the
# steady bf16 load, through the shared harness (docs/workloads/bench.sh). Whether perf is
# there at all is the second line of probe.txt.
. docs/workloads/bench.sh
NEW=.device/bins/gw-new
# perf is not installed there: this machine's (Debian 12, perf 6.1) runs with its own loader and
# libraries, carried in .device/perf.
PERF=(.device/perf/ld-linux-x86-64.so.2 --library-path .device/perf/lib .device/perf/perf)
perf() { "${PERF[@]}" "$@"; }
{ uname -r; perf --version; cat /proc/sys/kernel/perf_event_paranoid; nproc; } > "$R/probe.txt" 2>&1
start_load
prof() { # LABEL INTERVAL
  timeout 60 python3 docs/workloads/steady_overhead.py 5 40 "$1" -- $NEW --interval "$2" \
    >> "$R/threads.jsonl" 2>> "$R/log.txt" &
  local measured=$!
  sleep 7
  P=$(pgrep -x gw-new | head -1)
  timeout 45 "${PERF[@]}" record -e cpu-clock -F 20000 -p "$P" -o "/tmp/$1.data" -- sleep 35 2>> "$R/log.txt"
  wait "$measured" # not a bare `wait`: the load runs in the background too
  # Reported on the development machine, where the binary and its symbols are.
  cp "/tmp/$1.data" "$R/"
}
if perf --version > /dev/null; then
  prof perf-0.1s 100ms
  prof perf-1s 1s
fi
stop_load
summary

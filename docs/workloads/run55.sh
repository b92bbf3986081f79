#!/bin/bash
# Run 55 (#28): the build of this session (process view, 64 GPUs' band, replay frames without
# allocations) against the last stop that landed (5617a9b's code), beside the steady bf16 load:
# the main screen at 100 ms and 1 s, the process view at 100 ms (Tab Tab Enter typed 2 s after
# the start; pv-check.txt says the view was on screen), serve at 1 s, nvtop -d 1 for the ratio; then what a
# stack burst of the load costs (its threads, `stacks` with 20 and 100 reads).
. docs/workloads/bench.sh
NVTOP=$(nvtop_path)
start_load
for round in 1 2; do pair $round 100ms --interval 100ms; done
export KEYS=$'\t\t\r'
for round in 1 2; do
  if [ $round = 1 ]; then order="new old"; else order="old new"; fi
  for b in $order; do
    bin=$NEW; [ $b = old ] && bin=$OLD
    SCREEN=/tmp/screen.bin M "$b-pv-100ms" "$bin" --interval 100ms
    echo "$b-pv-100ms round $round: $(grep -c 'process (Esc back' /tmp/screen.bin) screen writes with the process view's title" >> "$R/pv-check.txt"
  done
done
unset KEYS
for round in 1 2; do pair $round 1s --interval 1s; done
pair 1 serve-1s serve --interval 1s --listen 127.0.0.1:9471
M nvtop-100ms "$NVTOP" -d 1
{
  echo "load pid $LOAD: $(ls /proc/$LOAD/task | wc -l) threads"
  for n in 20 100; do
    python3 - "$n" "$NEW" "$LOAD" "$R/stacks-$n.txt" <<'PY'
import resource, subprocess, sys, time
n, exe, pid, out = sys.argv[1:]
t = time.time()
dest = open(out, "w") if n == "20" else subprocess.DEVNULL
subprocess.run([exe, "stacks", "--samples", n, pid], stdout=dest, stderr=subprocess.STDOUT)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"stacks --samples {n}: {r.ru_utime:.3f} s user {r.ru_stime:.3f} s sys {time.time() - t:.1f} s wall")
PY
  done
} > "$R/stacks.txt" 2>&1
stop_load
summary

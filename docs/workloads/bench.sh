# The side-by-side harness of the H200 overhead runs (#28), sourced by run36.sh and later, so
# that every run measures beside the same load in the same way (runs 27-35 each repeated it).
#
#   . docs/workloads/bench.sh      # in the repository root on the device, with $OUT set
#   start_load                     # the steady bf16 load: an 8192² matmul every 50 ms
#   M LABEL CMD ARGS...            # CMD's steady CPU over 20 s in a 200x50 pty (5 s warm-up)
#   pair ROUND LABEL ARGS...       # M of $NEW and $OLD with ARGS, new first in odd rounds
#   nvtop_path                     # nvtop unpacked from .device/bench/peers, its path printed
#   peers                          # overhead.sh beside nvtop and nvitop into $OUT/shared.jsonl
#   stop_load; summary             # one line per measurement into $OUT/summary.txt
#
# Each measurement is one JSON line in $OUT/threads.jsonl (written as it ends: a run stopped at
# its time limit keeps what it measured); errors go to $OUT/log.txt.

R=$OUT
date -u >> "$R/log.txt"

start_load() {
  python3 -c "
import torch,time
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);t=time.time()
while time.time()-t<3600:
  c=a@a; torch.cuda.synchronize(); time.sleep(0.05)
" &
  LOAD=$!
  sleep 6
}

stop_load() {
  kill "$LOAD"
  wait "$LOAD" 2>/dev/null
}

M() {
  timeout 60 python3 docs/workloads/steady_overhead.py 5 20 "$1" -- "${@:2}" \
    >> "$R/threads.jsonl" 2>> "$R/log.txt"
}

# The two builds of a side-by-side run, as .device/bins holds them (NEW and OLD may be set first).
NEW=${NEW:-.device/bins/gw-new}
OLD=${OLD:-.device/bins/gw-old}

# The order of a pair is turned round from one round to the next: runs 45 and 46 read the first
# of a pair higher.
pair() {
  local r=$1 l=$2; shift 2
  if [ $((r % 2)) = 1 ]; then M "new-$l" "$NEW" "$@"; M "old-$l" "$OLD" "$@"
  else M "old-$l" "$OLD" "$@"; M "new-$l" "$NEW" "$@"; fi
}

nvtop_path() {
  mkdir -p /tmp/nvtop && dpkg -x .device/bench/peers/nvtop_*.deb /tmp/nvtop 2>> "$R/log.txt"
  echo /tmp/nvtop/usr/bin/nvtop
}

# The issue's own harness (shared/bench/overhead.sh, 20 s from start) with every peer, into
# $OUT/shared.jsonl: gpuwatch at each interval and `serve`, nvtop at -d 1 and -d 10, nvitop.
peers() {
  local nvtop; nvtop=$(nvtop_path)
  timeout 250 bash .device/bench/overhead.sh 20 \
    "new-0.1s|$NEW --interval 100ms" "nvtop-0.1s|$nvtop -d 1" \
    "new-0.25s|$NEW --interval 250ms" "nvitop-0.25s|python3 -m nvitop --interval 0.25" \
    "new-1s|$NEW --interval 1s" "nvtop-1s|$nvtop -d 10" \
    "new-serve-1s|$NEW serve --interval 1s --listen 127.0.0.1:9471" \
    2>> "$R/log.txt" > "$R/shared.jsonl"
  cat "$R/shared.jsonl"
}

summary() {
  python3 - "$R/threads.jsonl" <<'PY' | tee "$R/summary.txt"
import json, sys
for d in map(json.loads, open(sys.argv[1])):
    print(f"{d['label']:18} {d['cpu_pct']:6.3f} %  rss {d['peak_rss_mib']:5.1f} MiB  "
          f"tty {d['tty_bytes_per_s']:6} B/s  {d['threads_ms']}")
PY
}

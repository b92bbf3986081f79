#!/bin/bash
# Writes src/link-order.txt: the functions of the release binary that run while gpuwatch is
# used, as callgrind finds them, one symbol a line. The build script (src/build.rs) hands
# the file to lld, which lays those functions side by side; the kernel then maps far fewer
# of the binary's text pages while the monitor runs (docs/performance.md, "The code that
# runs, side by side"). Symbols the binary no longer has are passed over, so the file goes
# stale slowly: run this again after a large change or a new compiler, in the repository
# root, with valgrind and tmux (about 4 minutes):
#   cargo build --release && bash docs/workloads/link_order.sh
# NVML's code cannot run here: what the monitor, `serve` and `record` run on a GPU machine comes
# from callgrind there (docs/workloads/run93.sh, as run89.sh, run90.sh, run70.sh, run72.sh and
# run78.sh did), kept as name lists in GPU_PROFILE; run it there again when symbols are
# renamed. The file lists functions in tiers, so that what a live monitor runs once settled
# lies together at the front: after 10 s a monitor gives back the pages only its start-up ran
# (`sys::release_start_up_pages`), and what it faults back in from then on is the first tier
# alone. The tiers: what runs after start-up on the GPU machine and here, the monitor's first,
# then serve's, then record's; then everything the GPU machine's monitor, serve and record
# ran; then the monitor here (its views and keys); then everything else (the simulator,
# diagnose, replay, py-spy). Every
# profile splits where the pages are given back (callgrind's --dump-before): `X.out.1` holds
# start-up, `X.out` what ran after. Names are sorted within a tier.
set -eu
BIN=$PWD/target/release/gpuwatch
GPU_PROFILE=${GPU_PROFILE:-docs/workloads/results/run93}
GPU_STEADY=${GPU_STEADY:-docs/workloads/results/run93}
W=$(mktemp -d)
VG="valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no"
VG="$VG --dump-before=*release_start_up_pages*"
cg() { $VG --callgrind-out-file="$W/$1.%p.out" "${@:2}"; }
# The monitor on the mixed demo: the main screen, a process's view, the findings pane, help.
tmux new-session -d -s linkorder -x 200 -y 50 "$VG --callgrind-out-file=$W/tui.%p.out $BIN --demo"
sleep 40
for k in Enter Escape Tab Tab '?' Escape 3 Down Enter Escape; do
  tmux send-keys -t linkorder "$k"; sleep 3
done
tmux send-keys -t linkorder q; sleep 10
tmux kill-session -t linkorder 2>/dev/null || true
# The exporter answering a scrape, a headless diagnosis, a recording and its replay.
$VG --callgrind-out-file="$W/serve.%p.out" "$BIN" serve --demo --listen 127.0.0.1:9479 &
# The scrapes after the 10 s that start-up is given (see above).
sleep 15; curl -s 127.0.0.1:9479/metrics > /dev/null; sleep 2; curl -s 127.0.0.1:9479/metrics > /dev/null
kill -INT $!; wait || true
cg diagnose "$BIN" diagnose --demo --for 20s --stacks > /dev/null || true
cg record "$BIN" record --demo --fast --duration 60s -o "$W/rec.jsonl" > /dev/null
cg replay "$BIN" diagnose --replay "$W/rec.jsonl" > /dev/null || true
# py-spy reading a live Python process, as the monitor does for a GPU's processes on a real
# machine (the demo's stacks are simulated, so its runs above never reach py-spy's code).
printf 'def work():\n    while True:\n        sum(range(1000))\nwork()\n' > "$W/spin.py"
python3 "$W/spin.py" & spin=$!
sleep 1
cg stacks "$BIN" stacks "$spin" --samples 20 > /dev/null || true
kill "$spin"
# What runs after start-up, one tier per mode (the monitor's first): sorted together, serve's
# and the monitor's functions alternated and the monitor ran on every page of both. Only a run
# that lasted past start-up split (a fast recording ends before it, all start-up).
for t in tui serve record; do
  cp "$GPU_STEADY/$t-steady.txt" "$W/tier-steady-gpu-$t" 2>/dev/null || : > "$W/tier-steady-gpu-$t"
  : > "$W/tier-steady-here-$t"
  : > "$W/tier-early-$t"
  for f in "$W"/$t.*.out; do
    if [ -e "$f.1" ]; then
      python3 docs/workloads/cg_names.py gpuwatch "$f" >> "$W/tier-steady-here-$t"
    fi
    if [ -e "$f.2" ]; then
      python3 docs/workloads/cg_names.py gpuwatch "$f.2" >> "$W/tier-early-$t"
    fi
  done
done
cat "$GPU_PROFILE"/{tui,serve,record}.txt > "$W/tier-gpu"
python3 docs/workloads/cg_names.py gpuwatch "$W"/tui.*.out* > "$W/tier-tui-here"
python3 docs/workloads/cg_names.py gpuwatch "$W"/*.out* > "$W/tier-rest"
# Each tier adds the names the tiers before it did not have; within a tier, sorted.
for t in steady-{gpu,here}-tui steady-{gpu,here}-serve steady-{gpu,here}-record \
  early-{tui,serve,record} gpu tui-here rest; do
  sort -u "$W/tier-$t"
done | awk '!seen[$0]++ && NF' > src/link-order.txt
rm -rf "$W"
echo "$(wc -l < src/link-order.txt) functions in src/link-order.txt"

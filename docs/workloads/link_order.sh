#!/bin/bash
# Writes src/link-order.txt: the functions of the release binary that run while gpuwatch is
# used, as callgrind finds them, one symbol a line. The build script (src/build.rs) hands
# the file to lld, which lays those functions side by side; the kernel then maps far fewer
# of the binary's text pages while the monitor runs (docs/performance.md, "The code that
# runs, side by side"). Symbols the binary no longer has are passed over, so the file goes
# stale slowly: run this again after a large change or a new compiler, in the repository
# root, with valgrind and tmux (about 4 minutes). NVML's code cannot run here and is left
# where lld puts it:
#   cargo build --release && bash docs/workloads/link_order.sh
set -eu
BIN=$PWD/target/release/gpuwatch
W=$(mktemp -d)
VG="valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no"
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
sleep 15; curl -s 127.0.0.1:9479/metrics > /dev/null; sleep 2
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
python3 - "$W" > src/link-order.txt <<'PY'
import glob, re, sys
names = set()
for path in glob.glob(sys.argv[1] + "/*.out"):
    ob = cob = None
    for line in open(path, errors="replace"):
        key, _, value = line.rstrip("\n").partition("=")
        if key == "ob":
            ob = value
        elif key == "cob":
            cob = value
        elif key in ("fn", "cfn"):
            obj = (cob if key == "cfn" and cob else ob) or ""
            if obj.endswith("/gpuwatch") and re.match(r"^[A-Za-z_$.][\w$.]*$", value):
                names.add(value)
            if key == "cfn":
                cob = None
print("\n".join(sorted(names)))
PY
rm -rf "$W"
echo "$(wc -l < src/link-order.txt) functions in src/link-order.txt"

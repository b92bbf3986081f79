#!/bin/bash
# Record one labelled corpus set on a machine with two GPUs.
# usage (from the repository root): docs/workloads/corpus/run_corpus.sh SET OUTDIR INTERVAL
#   SET: tune | holdout | holdout2 | holdout3 | holdout4 | stacks | stacks2 (one GPU each);
#   INTERVAL: the recorder's sampling interval, e.g. 250ms. GPUWATCH_BIN: the recorder (default
#   target/release/gpuwatch; a wrapper that measures it, for instance).
# Writes OUTDIR/SET.jsonl.gz (the recording), OUTDIR/SET-marks.jsonl (the jobs' marks),
# OUTDIR/SET.log (the jobs' output).
set -u
export PYTHONUNBUFFERED=1

if [ $# -ne 3 ]; then
  echo "usage: $0 tune|holdout OUTDIR INTERVAL" >&2
  exit 2
fi
SET=$1; OUTDIR=$2; INTERVAL=$3
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${GPUWATCH_BIN:-target/release/gpuwatch}
GAP=4

case "$SET" in
  tune)
    LANE0=(healthy_transformer_bf16:30 starved_cpu_a:30 sync_a:30 leak_a:30 spin_hang_a:38 startup_compile:20)
    LANE1=(healthy_membound:30 starved_io_a:30 pageable_copy_a:30 startup_bigload:20 healthy_transformer_bf16:20)
    DUAL=(ddp_healthy_a:30 ddp_dead_rank:40 ddp_uneven_steps:40)
    ;;
  holdout)
    LANE0=(healthy_cnn_fp16:30 starved_cpu_b:30 sync_b:30 leak_b:30 spin_hang_b:38)
    LANE1=(healthy_infer_bs:30 starved_io_b:30 pageable_copy_b:30 startup_compile:20)
    # The last two are started rank by rank with the launcher's variables in their
    # environment (as torchrun does), each under its own `timeout`: only those variables,
    # not a shared parent, tie the ranks together.
    DUAL=(ddp_healthy_b:30 env:ddp_host_stall:40 env:ddp_uneven_steps:40)
    ;;
  holdout2)
    # Added after the first held-out check failed on a cuDNN autotune start-up and a
    # pageable copy: new programs of those kinds, and the two-GPU job the recorder missed.
    LANE0=(healthy_unet_autotune:25)
    LANE1=(pageable_copy_c:25)
    DUAL=(env:ddp_uneven_steps:40)
    ;;
  holdout3)
    # A third program of each single-GPU kind, written after the rules were done and recorded
    # once on the one H200 lent that session (so no second lane and no two-GPU jobs).
    LANE0=(healthy_ckpt_c:30 starved_tokenize_c:30 sync_c:30 leak_c:30 spin_hang_c:38)
    LANE1=()
    DUAL=()
    ;;
  holdout4)
    # Healthy jobs with the irregularities real ones have (epoch boundaries with workers
    # forked anew, evaluation passes, a second process on the GPU, sparse memory-bound work):
    # written after the rules were done, one GPU; nothing may fire.
    LANE0=(healthy_epochs_d:35 healthy_eval_d:35 healthy_two_procs_d:30 healthy_embbag_d:30)
    LANE1=()
    DUAL=()
    ;;
  stacks)
    # Issue 24's tuning programs (e): jobs counters alone cannot tell apart and stacks can;
    # one GPU; the gloo job's three ranks share it.
    LANE0=(starved_aug_e:35 serve_idle_e:35 starved_io_e:30 sync_item_e:25 healthy_loader_e:30 healthy_ckpt_e:35 startup_compile_e:20)
    LANE1=()
    DUAL=()
    GLOO=(gloo_stall_e:3:40)
    ;;
  stacks2)
    # Their held-out pairs (f), written with them and judged only once the rules were done.
    LANE0=(starved_aug_f:35 serve_idle_f:35 starved_io_f:30 sync_f:25 healthy_loader_f:30 healthy_ckpt_f:35)
    LANE1=()
    DUAL=()
    GLOO=(gloo_kernel_f:2:40)
    ;;
  *)
    echo "SET must be tune, holdout, holdout2, holdout3, holdout4, stacks or stacks2, not '$SET'" >&2
    exit 2
    ;;
esac

mkdir -p "$OUTDIR"
LOG=$OUTDIR/$SET.log
MARKS=$OUTDIR/$SET-marks.jsonl
REC=$OUTDIR/$SET.jsonl
: > "$MARKS"

# Planned wall time: each job's duration plus an allowance for its start-up and exit
# (python + torch import, CUDA context, model build, warm-up), plus the gaps.
allowance() {
  case "$1" in
    startup_compile|startup_compile_e) echo 45 ;;      # inductor/triton compile of the first steps
    gloo_*) echo 20 ;;               # ranks, gloo set-up
    healthy_unet_autotune|healthy_cnn_fp16) echo 35 ;;   # cuDNN autotune of every shape
    startup_bigload) echo 25 ;;      # 6 GiB of torch.randn on the host, then the copies
    starved_io_b) echo 20 ;;         # writes 4 GiB of files first
    ddp_*) echo 20 ;;                # two ranks, NCCL set-up
    *) echo 12 ;;
  esac
}
lane_seconds() {
  local total=0 n=0 job kind dur
  for job in "$@"; do
    kind=${job%:*}; kind=${kind#env:}; dur=${job##*:}
    total=$((total + dur + $(allowance "$kind")))
    n=$((n + 1))
  done
  [ "$n" -gt 1 ] && total=$((total + GAP * (n - 1)))
  echo "$total"
}
GLOO=(${GLOO[@]+"${GLOO[@]}"})
L0=$(lane_seconds ${LANE0[@]+"${LANE0[@]}"})
L1=$(lane_seconds ${LANE1[@]+"${LANE1[@]}"})
LD=$(lane_seconds ${DUAL[@]+"${DUAL[@]}"})
LG=0
for job in ${GLOO[@]+"${GLOO[@]}"}; do LG=$((LG + ${job##*:} + 20 + GAP)); done
LANES=$(( L0 > L1 ? L0 : L1 ))
PLANNED=$(( 3 + LANES + GAP + LD + LG + 5 ))
echo "set $SET: planned ${PLANNED}s ($((PLANNED / 60))m$((PLANNED % 60))s): lanes ${L0}s / ${L1}s in parallel, two-GPU jobs ${LD}s; recorder --duration $((PLANNED + 20))s"
echo "=== $(date -Is) set $SET planned ${PLANNED}s" >> "$LOG"

$BIN record -o "$REC" --interval "$INTERVAL" --duration "$((PLANNED + 20))s" --force 2>> "$LOG" &
RECPID=$!
sleep 3
if ! kill -0 "$RECPID" 2>/dev/null; then
  echo "warning: the recorder is not running (see $LOG)" >&2
fi

run_one() {   # GPU KIND DUR
  local gpu=$1 kind=$2 dur=$3 rc
  echo "=== $(date -Is) gpu$gpu $kind ${dur}s: begin" >> "$LOG"
  timeout -k 10 $((dur + 60)) python3 "$HERE/jobs.py" "$kind" "$dur" "$MARKS" --gpu "$gpu" >> "$LOG" 2>&1
  rc=$?
  echo "=== $(date -Is) gpu$gpu $kind: rc=$rc" >> "$LOG"
  echo "$(date +%T) gpu$gpu $kind rc=$rc"
}
run_dual() {  # KIND DUR   (KIND env:K: one process per rank, launcher variables in the environment)
  local kind=$1 dur=$2 rc
  if [ "${kind#env:}" != "$kind" ]; then
    kind=${kind#env:}
    echo "=== $(date -Is) gpu0+1 $kind ${dur}s (env launch): begin" >> "$LOG"
    local port=$((29600 + RANDOM % 300)) ranks=()
    for r in 0 1; do
      RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        TORCHELASTIC_RUN_ID=corpus-$kind \
        timeout -k 10 $((dur + 60)) python3 "$HERE/ddp.py" "$kind" "$dur" "$MARKS" --rank $r >> "$LOG" 2>&1 &
      ranks+=($!)
    done
    wait "${ranks[@]}"   # the ranks only: a bare wait would also wait for the recorder
    echo "$(date +%T) gpu0+1 $kind (env launch) done"
    return
  fi
  echo "=== $(date -Is) gpu0+1 $kind ${dur}s: begin" >> "$LOG"
  timeout -k 10 $((dur + 60)) python3 "$HERE/ddp.py" "$kind" "$dur" "$MARKS" >> "$LOG" 2>&1
  rc=$?
  echo "=== $(date -Is) gpu0+1 $kind: rc=$rc" >> "$LOG"
  echo "$(date +%T) gpu0+1 $kind rc=$rc"
}
lane() {      # GPU JOB...
  local gpu=$1 first=1 job
  shift
  for job in "$@"; do
    [ "$first" -eq 1 ] || sleep "$GAP"
    first=0
    run_one "$gpu" "${job%%:*}" "${job##*:}"
  done
}

run_gloo() {  # KIND RANKS DUR: the ranks share GPU 0, started one by one with the launcher's variables
  local kind=$1 n=$2 dur=$3 port=$((29900 + RANDOM % 90)) r ranks=()
  echo "=== $(date -Is) gpu0 $kind x$n ${dur}s (gloo): begin" >> "$LOG"
  for r in $(seq 0 $((n - 1))); do
    RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      TORCHELASTIC_RUN_ID=corpus-$kind \
      timeout -k 10 $((dur + 60)) python3 "$HERE/gloo.py" "$kind" "$dur" "$MARKS" >> "$LOG" 2>&1 &
    ranks+=($!)
  done
  wait "${ranks[@]}"
  echo "$(date +%T) gpu0 $kind (gloo, $n ranks) done"
}

lane 0 ${LANE0[@]+"${LANE0[@]}"} &
P0=$!
lane 1 ${LANE1[@]+"${LANE1[@]}"} &
P1=$!
wait "$P0" "$P1"

for job in ${DUAL[@]+"${DUAL[@]}"}; do
  sleep "$GAP"
  run_dual "${job%:*}" "${job##*:}"
done
for job in ${GLOO[@]+"${GLOO[@]}"}; do
  sleep "$GAP"
  IFS=: read -r kind n dur <<< "$job"
  run_gloo "$kind" "$n" "$dur"
done

sleep 2
kill -INT "$RECPID" 2>/dev/null
for _ in $(seq 1 100); do          # up to 10 s to stop cleanly
  kill -0 "$RECPID" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$RECPID" 2>/dev/null; then
  # a background job of a non-interactive shell may have inherited SIGINT as ignored
  echo "recorder still running after SIGINT: sending SIGTERM" >&2
  kill -TERM "$RECPID" 2>/dev/null
fi
wait "$RECPID"
echo "recorder rc=$?"
gzip -9 -f "$REC"
ls -l "$REC.gz" "$MARKS" "$LOG"

python3 - "$MARKS" <<'PY'
import json, sys
runs = {}
order = []
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if "rank" in d:
        who = "parent" if d["rank"] is None else "rank%d" % d["rank"]
    else:
        who = "gpu%s" % d.get("gpu")
    key = (d["job"], who, d["pid"])
    if key not in runs:
        runs[key] = []
        order.append(key)
    runs[key].append(d)
for key in order:
    ms = runs[key]
    t0 = ms[0]["t"]
    parts = []
    for m in ms:
        s = "%s+%.1f" % (m["mark"], m["t"] - t0)
        if m["mark"] in ("error", "note"):
            s += "(%s)" % str(m.get("msg", ""))[:80]
        if m["mark"] == "exit":
            s += "(%s)" % m.get("codes")
        parts.append(s)
    print("%-26s %-7s %s" % (key[0], key[1], " ".join(parts)))
PY

#!/bin/bash
# Run 62 (#28, and #27's "no worse"): three builds beside the steady bf16 load. Run 59 left an
# open question: the process view's drawing thread at 100 ms read 1-3 ms in 20 s higher for
# 91458a1 than for 170ab17 in 2 of 3 pairs. Here the process view (Tab Tab Enter typed) at
# 100 ms, three rounds of the three builds with the order turned round each round, then the
# main screen at 100 ms for the build with the fp32 rule against 170ab17, and nvtop -d 1.
OLD=.device/bins/gw-old MID=.device/bins/gw-new NEW=.device/bins/gw-fp32
. docs/workloads/bench.sh
start_load
export KEYS=$'\t\t\r'
pv() {
  local name=$1 bin=$2 round=$3
  SCREEN=/tmp/screen.bin M "$name-pv-100ms" "$bin" --interval 100ms
  echo "$name-pv-100ms round $round: $(grep -c 'process (Esc back' /tmp/screen.bin)" >> "$R/pv-check.txt"
}
pv old $OLD 1; pv mid $MID 1; pv new $NEW 1
pv new $NEW 2; pv old $OLD 2; pv mid $MID 2
pv mid $MID 3; pv new $NEW 3; pv old $OLD 3
unset KEYS
for round in 1 2; do pair $round 100ms --interval 100ms; done
M nvtop-d1 "$(nvtop_path)" -d 1
stop_load
summary

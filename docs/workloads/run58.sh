#!/bin/bash
# Run 58 (#28): the final build of the session (91458a1: run 57's build plus the MIG rows and the
# process view's CPU labels) against 170ab17 again, beside the steady bf16 load: does run 57's
# higher drawing thread at 100 ms (+1.6 to +2.2 ms in 20 s, two pairs) repeat? Three pairs of
# the main screen at 100 ms, and the process view (Tab Tab Enter typed) at 100 ms.
NEW=.device/bins/gw-new OLD=.device/bins/gw-old
. docs/workloads/bench.sh
start_load
for round in 1 2 3; do pair $round 100ms --interval 100ms; done
export KEYS=$'\t\t\r'
for b in new old; do
  bin=$NEW; [ $b = old ] && bin=$OLD
  SCREEN=/tmp/screen.bin M "$b-pv-100ms" "$bin" --interval 100ms
  echo "$b-pv-100ms: $(grep -c 'process (Esc back' /tmp/screen.bin) screen writes with the process view's title" >> "$R/pv-check.txt"
done
unset KEYS
stop_load
summary

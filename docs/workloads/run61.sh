#!/bin/bash
# Run 61 on the H200: the fp32 rule's held-out check, after the rule was done. Other programs
# than fp32.py's (a hand-written ViT in FP32, fp16 autocast and TF32; batched products; a conv
# net with cuDNN's TF32 off; FFTs; softmax reductions; a process whose environment forbids TF32),
# recorded and diagnosed live at the same time by the build under test.
BIN=${BIN:-.device/bins/gw-fp32}
P=speed_fp32,speed_tf32,speed_bf16,fp32_vit_train,fp16_vit_train,tf32_vit_train,fp32_bmm_inference,fp32_conv_notf32_train,fp32_fft,fp32_softmax_reduce
$BIN record -o "$OUT/holdout.jsonl" --interval 250ms --duration 400s > "$OUT/record.log" 2>&1 &
$BIN diagnose --for 400s --json > "$OUT/diagnose.json" 2> "$OUT/diagnose.err" &
sleep 3
timeout 340 python3 docs/workloads/fp32_holdout.py 30 "$P" "$OUT/spans.json" > "$OUT/holdout.log" 2>&1
NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 docs/workloads/fp32_holdout.py 30 tf32_env_override "$OUT/spans.json" >> "$OUT/holdout.log" 2>&1
wait

#!/bin/sh
# induction.sh — a base model that copies from its context: the
# distance-free induction curriculum of examples/results/micro-notes.md
# (e11), three stages of copy-gen --ids --haystack records (random ids of
# the tokenizer in which short runs stand twice at random places; loss
# on the second occurrence), each longer than the last so the copying
# reaches farther back:
#
#   stage  records (ids)  runs  steps  batch  lr
#   1      64              3     1000   128    3e-3   the head forms (loss ~6.9 -> ~0.3)
#   2      256             8      300    32    2e-3   to ~250 ids back
#   3      1024           24      250     8    1.5e-3 to ~1,000 ids back
#
#   induction.sh INIT.ckpt TOKENIZER OUT.ckpt
#
# INIT is a model-init checkpoint with TOKENIZER's vocabulary (e11: 2
# layers x 128, 4 heads of 32, no GQA: with learn.sh's 2 heads sharing one
# KV head the loss stayed at ~2.1 after 1,250 steps).  Writes OUT.ckpt and
# OUT.stageN.metrics.jsonl; about 25 min of one core.  SFT from OUT copies
# nicknames and order numbers it never saw in training (micro-notes e11).
set -eu
[ $# -eq 3 ] || { echo "usage: induction.sh INIT.ckpt TOKENIZER OUT.ckpt" >&2; exit 2; }
init=$1 tok=$2 out=$3
stage() { # N FROM LEN PAIRS COUNT STEPS BATCH LR
    copy-gen --ids --tokenizer "$tok" --haystack "$3" --pairs "$4" --min-len 3 \
        --max-len "$([ "$3" -gt 64 ] && echo 8 || echo 6)" -n "$5" --seed "$1" -o "$out.stage$1.jsonl"
    rm -f "$out.stage$1.metrics.jsonl"
    sft-step --init "$2" --data "$out.stage$1.jsonl" --steps "$6" --batch "$7" --seq "$3" --lr "$8" \
        --weight-decay 0 --warmup 20 --schedule constant --no-bucket \
        --metrics "$out.stage$1.metrics.jsonl" -o "$out.stage$1.ckpt"
    rm -f "$out.stage$1.jsonl"
}
stage 1 "$init" 64 3 130000 1000 128 3e-3
stage 2 "$out.stage1.ckpt" 256 8 10000 300 32 2e-3
stage 3 "$out.stage2.ckpt" 1024 24 2000 250 8 1.5e-3
mv "$out.stage3.ckpt" "$out"
rm -f "$out.stage1.ckpt" "$out.stage2.ckpt"

#!/bin/sh
# induction.sh — a base model that copies from its context: the
# distance-free induction curriculum of examples/results/micro-notes.md
# (e11), three stages of copy-gen --ids --haystack records (random ids of
# the tokenizer in which short runs stand twice at random places; loss
# on the second occurrence), each longer than the last so the copying
# reaches farther back:
#
#   stage  records (ids)  runs  steps  batch  lr
#   1      64              3     250s   128    3e-3   until the head forms (loss below 1)
#   2      256             8      300    32    2e-3   to ~250 ids back
#   3      1024           24      250     8    1.5e-3 to ~1,000 ids back
#
# Stage 1 sits on a plateau at chance (ln of the vocabulary, ~6.9) and
# then falls to ~0.3 within ~150 steps; when is not fixed (after ~700
# steps in e11's run, not yet after 1,000 in a rerun on other records),
# so it runs 250 steps at a time (sft-step --resume) until the mean loss
# of the last 50 is below 1, at most MAX1 steps (default 4000; exit 1 if
# the head has not formed by then).
#
#   induction.sh INIT.ckpt TOKENIZER OUT.ckpt
#
# INIT is a model-init checkpoint with TOKENIZER's vocabulary (e11: 2
# layers x 128, 4 heads of 32, no GQA: with learn.sh's 2 heads sharing one
# KV head the loss stayed at ~2.1 after 1,250 steps).  Writes OUT.ckpt and
# OUT.stageN.metrics.jsonl; about 25 min of one core (2.5k-8k ids/s).  SFT from OUT copies
# nicknames and order numbers it never saw in training (micro-notes e11).
set -eu
[ $# -eq 3 ] || { echo "usage: induction.sh INIT.ckpt TOKENIZER OUT.ckpt" >&2; exit 2; }
init=$1 tok=$2 out=$3
# stage N FROM LEN PAIRS MAXLEN COUNT STEPS TOTAL BATCH LR: COUNT records,
# then STEPS steps of a TOTAL-step constant schedule from FROM.
stage() {
    copy-gen --ids --tokenizer "$tok" --haystack "$3" --pairs "$4" --min-len 3 --max-len "$5" \
        -n "$6" --seed "$1" -o "$out.stage$1.jsonl"
    rm -f "$out.stage$1.metrics.jsonl"
    sft-step --init "$2" --data "$out.stage$1.jsonl" --steps "$7" --total-steps "$8" --batch "$9" \
        --seq "$3" --lr "${10}" --weight-decay 0 --warmup 20 --schedule constant --no-bucket \
        --metrics "$out.stage$1.metrics.jsonl" -o "$out.stage$1.ckpt"
}
MAX1=${MAX1:-4000}
stage 1 "$init" 64 3 6 130000 250 "$MAX1" 128 3e-3
done1=250
while jq -s -e 'map(.loss) | .[-50:] | add / length >= 1' "$out.stage1.metrics.jsonl" > /dev/null; do
    [ "$done1" -lt "$MAX1" ] || { echo "induction.sh: no induction head after $MAX1 steps" >&2; exit 1; }
    sft-step --init "$out.stage1.ckpt" --resume --data "$out.stage1.jsonl" --steps 250 \
        --metrics "$out.stage1.metrics.jsonl" -o "$out.stage1.next.ckpt"
    mv "$out.stage1.next.ckpt" "$out.stage1.ckpt"
    done1=$((done1 + 250))
done
stage 2 "$out.stage1.ckpt" 256 8 8 10000 300 300 32 2e-3
stage 3 "$out.stage2.ckpt" 1024 24 8 2000 250 250 8 1.5e-3
mv "$out.stage3.ckpt" "$out"
rm -f "$out".stage[123].jsonl "$out.stage1.ckpt" "$out.stage2.ckpt"

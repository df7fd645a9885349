#!/bin/sh
# lookup.sh — the look-up stage after induction.sh: copy-gen's chat
# records (names and numbers drawn fresh for every record, so an answer
# can only be read from the context: a tool call that copies the product
# the viewer named, a reply that looks one product up in a listed
# catalogue, a name said back) on top of a base that already copies
# (micro-notes e15).  Induction copies a run once its first id is given;
# this stage teaches where the run starts: the name the request is about.
#
#   lookup.sh BASE.ckpt OUT.ckpt [EXTRA.jsonl]
#
# EXTRA (PROFILE=small: general-gen's base records) is mixed into the
# data as it is: sft-step draws every epoch in a seeded permutation, so
# its records are spread through the run.
# 20,000 records of 4 questions (copy-gen --seed 5; ~11 M tokens, 3.9 M
# of them loss targets), STEPS (default 600) steps of batch 16 at seq
# 1,024, lr 2e-3, warmup 20, no weight decay: about 7 min of 2 cores (a
# quiet AVX-512 machine, session 6).
# PICK=P makes a share P of the records copy-gen's pick kind (a routine
# found by its description, as a renamed skill is; default 0, the records
# as before); ECHO=E makes a share E of their questions the routine's own
# line (copy-gen --pick-echo; default 0: small-notes e24, E7); LINE=T
# writes the lists' lines by template T (copy-gen --pick-line, as the
# harness's skill_loader.line).
# Writes OUT.ckpt and OUT.metrics.jsonl.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: lookup.sh BASE.ckpt OUT.ckpt [EXTRA.jsonl]" >&2; exit 2; }
base=$1 out=$2
copy-gen -n 20000 --turns 4 --seed 5 --pick "${PICK:-0}" ${ECHO:+--pick-echo "$ECHO"} \
    ${LINE:+--pick-line "$LINE"} -o "$out.data.jsonl"
[ $# -eq 2 ] || cat "$3" >> "$out.data.jsonl"
rm -f "$out.metrics.jsonl"
sft-step --init "$base" --data "$out.data.jsonl" --steps "${STEPS:-600}" --batch 16 --seq 1024 \
    --lr 2e-3 --warmup 20 --weight-decay 0 --seed 1 --metrics "$out.metrics.jsonl" -o "$out.tmp"
mv "$out.tmp" "$out"
rm -f "$out.data.jsonl"

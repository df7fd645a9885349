#!/bin/sh
# curve.sh — an SFT run measured as it goes: the learning curve on a dev split.
#
#   curve.sh INIT.ckpt DATA.jsonl STEPS POINTS DEV OUT
#
# Trains STEPS sft-step steps from INIT on DATA in POINTS equal parts (one
# run, resumed: the same bytes as one run of STEPS), and after each part
# plays the dev tasks with rollout --judge and scores their openings
# against the teacher (opening.jq).  DEV is a directory holding world.json,
# harness.json, tasks.jsonl (dev tasks: train-side phrasing banks, a world
# no training task came from) and teacher.jsonl (traj-gen on them).
# When DEV also holds variant.jsonl (rollout --tasks-are-cases cases: the
# dev tasks under HSA variants of the harness, as examples/Makefile's
# PROFILE=micro makes them with variant-cases.jq),
# those are played and judged too.  Writes OUT.ckpt (the last checkpoint),
# OUT.metrics.jsonl (sft-step's) and OUT.curve.jsonl, one line per point:
#   {step, loss, n, skill, tool, args, ok, pass, total[, vn, vpass, vtotal]}
# (counts of dev cases; total = mean judge total; v* the variant cases).  Optimiser settings from
# the environment: LR (3e-4), WARMUP (0), BATCH (8), SEQ (256), SEED (1),
# MAXTOK (rollout --max-tokens, 64), SFT_ARGS (more sft-step options).
set -eu
[ $# -eq 6 ] || { echo "usage: curve.sh INIT DATA STEPS POINTS DEV OUT" >&2; exit 2; }
init=$1 data=$2 steps=$3 points=$4 dev=$5 out=$6
here=$(cd "$(dirname "$0")" && pwd)
for f in world.json harness.json tasks.jsonl teacher.jsonl; do
    [ -r "$dev/$f" ] || { echo "curve.sh: $dev/$f: missing" >&2; exit 1; }
done
[ "$points" -ge 1 ] && [ "$steps" -ge "$points" ] || { echo "curve.sh: need STEPS >= POINTS >= 1" >&2; exit 2; }
part=$((steps / points))
rm -f "$out.metrics.jsonl" "$out.curve.jsonl.tmp"
done_steps=0
for k in $(seq 1 "$points"); do
    n=$part
    [ "$k" -eq "$points" ] && n=$((steps - done_steps))
    if [ "$k" -eq 1 ]; then
        sft-step --init "$init" --data "$data" --steps "$n" --total-steps "$steps" \
            --lr "${LR:-3e-4}" --warmup "${WARMUP:-0}" --batch "${BATCH:-8}" --seq "${SEQ:-256}" \
            --seed "${SEED:-1}" ${SFT_ARGS:-} --metrics "$out.metrics.jsonl" -o "$out.ckpt.tmp"
    else
        sft-step --init "$out.ckpt" --resume --data "$data" --steps "$n" \
            --metrics "$out.metrics.jsonl" -o "$out.ckpt.tmp"
    fi
    mv "$out.ckpt.tmp" "$out.ckpt"
    done_steps=$((done_steps + n))
    rollout --ckpt "$out.ckpt" --world "$dev/world.json" --harness "$dev/harness.json" --judge \
        --max-tokens "${MAXTOK:-64}" --seed "${SEED:-1}" -o "$out.dev.jsonl" "$dev/tasks.jsonl"
    o=$(jq -n -c -f "$here/opening.jq" --slurpfile ref "$dev/teacher.jsonl" --arg summary 1 < "$out.dev.jsonl")
    j=$(jq -s -c '{pass: map(select(.verdict.pass)) | length,
                   total: (map(.verdict.total) | add / length * 1000 | round / 1000)}' "$out.dev.jsonl")
    l=$(tail -n 1 "$out.metrics.jsonl" | jq -c '{step, loss: (.loss * 1000 | round / 1000)}')
    v='{}'
    if [ -r "$dev/variant.jsonl" ]; then
        rollout --ckpt "$out.ckpt" --world "$dev/world.json" --harness "$dev/harness.json" --tasks-are-cases \
            --judge --max-tokens "${MAXTOK:-64}" --seed "${SEED:-1}" -o "$out.var-$done_steps.jsonl" "$dev/variant.jsonl"
        v=$(jq -s -c '{vn: length, vpass: map(select(.verdict.pass)) | length,
                       vtotal: (map(.verdict.total) | add / length * 1000 | round / 1000)}' "$out.var-$done_steps.jsonl")
    fi
    echo "$l $o $j $v" | jq -s -c 'add' >> "$out.curve.jsonl.tmp"
    cp "$out.dev.jsonl" "$out.dev-$done_steps.jsonl"
done
mv "$out.curve.jsonl.tmp" "$out.curve.jsonl"

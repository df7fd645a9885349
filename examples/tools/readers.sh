#!/bin/sh
# readers.sh — Fixed-SFT against HSA-SFT from a base that copies
# (examples/results/micro-notes.md, e11-e12), end to end on CPU:
#
#   readers.sh OUT
#
# 1. data (examples/tools/minidata.sh, tests/cli/learn.sh's recipe): the mini harness
#    (tests/fixtures/harness-mini), WORLDS worlds of 40 products
#    (world-gen --seed 101..), 8 tasks of each of four intents (price,
#    size, order status, greeting) per world, played by the teacher and
#    joined into sessions of 8; a 1,024-id tokenizer learnt from them;
# 2. dev (never trained on): world-gen --seed 9001, 6 tasks per intent
#    (train-side phrasing banks), the teacher's trajectories; live cases
#    under the mini harness and variant cases under 2 HSA variants of it
#    per task (hsa-augment --seed 77: skills, tools, loader, prompt and
#    hooks renamed or reworded; the teacher passes all of them);
# 3. a 2 x 128 model with 4 heads given an induction head
#    (examples/tools/induction.sh);
# 4. Fixed-SFT on the sessions and HSA-SFT on hsa-augment -k 2 --mix 0.25
#    of them, the same steps and settings (batch 4, seq 3072, lr 3e-3,
#    warmup 10, cosine);
# 5. each model played on the live and the variant dev cases (rollout
#    --judge --max-tokens 64); OUT/table.jsonl, one line per model and
#    set: {model, set, n, pass, total}.
#
# Environment: WORLDS (64), STEPS (240, SFT steps per model), INDUCTION
# (a base checkpoint to reuse instead of step 3).  About 50 min of one
# core with the defaults; hat's programs on PATH.
set -eu
[ $# -eq 1 ] || { echo "usage: readers.sh OUT" >&2; exit 2; }
out=$1 here=$(cd "$(dirname "$0")" && pwd)
WORLDS=${WORLDS:-64} STEPS=${STEPS:-240}
sh "$here/minidata.sh" "$out" "$WORLDS"
ln -sf sessions.jsonl "$out/fixed.jsonl"
hsa-augment -k 2 --mix 0.25 --seed 1 -o "$out/hsa.jsonl" "$out/sessions.jsonl"

d=$out/dev
jq -c '{id: .id, task: .}' "$d/tasks.jsonl" > "$d/live.jsonl"
hsa-augment -k 2 --seed 77 -o "$d/variant.traj.jsonl" "$d/teacher.jsonl"
jq -c --slurpfile t "$d/tasks.jsonl" '($t | map({(.id): .}) | add) as $by
    | {id: "v\(input_line_number)-\(.task_id)", task: $by[.task_id], harness}' \
    "$d/variant.traj.jsonl" > "$d/variant.jsonl"

if [ -n "${INDUCTION:-}" ]; then
    cp "$INDUCTION" "$out/base.ckpt"
else
    model-init --config "$out/cfg.json" --tokenizer "$out/tok.json" -o "$out/init.ckpt"
    sh "$here/induction.sh" "$out/init.ckpt" "$out/tok.json" "$out/base.ckpt"
fi

rm -f "$out/table.jsonl"
for m in fixed hsa; do
    sft-step --init "$out/base.ckpt" --data "$out/$m.jsonl" --steps "$STEPS" --batch 4 --seq 3072 \
        --lr 3e-3 --warmup 10 --metrics "$out/$m.metrics.jsonl" -o "$out/$m.ckpt"
    for set in live variant; do
        rollout --ckpt "$out/$m.ckpt" --world "$d/world.json" --harness "$d/harness.json" --tasks-are-cases --judge \
            --max-tokens 64 --seed 1 -o "$out/$m.$set.jsonl" "$d/$set.jsonl"
        jq -s -c --arg m "$m" --arg s "$set" '{model: $m, set: $s, n: length,
            pass: map(select(.verdict.pass)) | length,
            total: (map(.verdict.total) | add / length * 1000 | round / 1000)}' \
            "$out/$m.$set.jsonl" >> "$out/table.jsonl"
    done
done
cat "$out/table.jsonl"

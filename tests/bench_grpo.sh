#!/bin/sh
# bench_grpo.sh — grpo-step and opd-step step time on the 'tiny' model
# preset (random weights, a tokenizer trained here): per step, seconds of
# generation / scoring / optimisation (grpo-step) and generation /
# optimisation (opd-step), with tokens per second.  JSON lines on stdout;
# not part of make check.
#   HAT_BIN  programs (default bin/)   STEPS  steps per run (default 2)
# The harness is the example cut to 2 tools, 3 skills and 2 prompt blocks:
# with the whole one (~2,000 prompt tokens) a step takes minutes here.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${STEPS:=2}"
export HAT_DATA="$top/data" OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
T="${HAT_BENCH_TMP:-/tmp}/grpo"
mkdir -p "$T"
H="$top/examples/harness"
"$HAT_BIN/world-gen" --seed 1 --products 40 -o "$T/w.json" || exit 1
"$HAT_BIN/task-gen" --world "$T/w.json" -n 200 --seed 1 -o "$T/t.jsonl" || exit 1
"$HAT_BIN/traj-gen" --world "$T/w.json" --harness "$H" --think 0.3 -o "$T/traj.jsonl" "$T/t.jsonl" || exit 1
"$HAT_BIN/general-gen" --split opd -n 200 -o "$T/p.jsonl" 2>/dev/null || exit 1
"$HAT_BIN/tok-train" --chat -n 4096 -o "$T/tok.json" "$T/traj.jsonl" "$T/p.jsonl" || exit 1
"$HAT_BIN/model-init" --preset tiny --tokenizer "$T/tok.json" --seed 1 -o "$T/m.ckpt" || exit 1
"$HAT_BIN/harness-pack" -o "$T/h.json" "$H" || exit 1
jq -c '.tools |= .[0:2] | .skills |= .[0:3] | .system_prompt.blocks |= .[0:2]' "$T/h.json" >"$T/hs.json"
"$HAT_BIN/grpo-step" --init "$T/m.ckpt" --world "$T/w.json" --harness "$T/hs.json" --groups 4 --group-size 8 \
    --max-tokens 64 --max-turns 2 --steps "$STEPS" --metrics "$T/g.jsonl" -o "$T/g.ckpt" "$T/t.jsonl" || exit 1
jq -s -c --argjson th "$OMP_NUM_THREADS" '
    {bench: "grpo-step", config: "tiny", threads: $th, groups: 4, group_size: 8, steps: length,
     step_s: (map(.time.generation + .time.scoring + .time.optimisation) | add / length * 1000 | round / 1000),
     generation_s: (map(.time.generation) | add / length * 1000 | round / 1000),
     scoring_s: (map(.time.scoring) | add / length * 1000 | round / 1000),
     optimisation_s: (map(.time.optimisation) | add / length * 1000 | round / 1000),
     gen_tokens_per_s: (map(.gen_tokens_per_s) | add / length | round),
     train_tokens: (map(.train_tokens) | add / length | round)}' "$T/g.jsonl"
"$HAT_BIN/opd-step" --init "$T/m.ckpt" --teacher "$T/m.ckpt" --prompts-per-step 8 --samples 4 \
    --max-tokens 128 --steps "$STEPS" --metrics "$T/o.jsonl" -o "$T/o.ckpt" "$T/p.jsonl" || exit 1
jq -s -c --argjson th "$OMP_NUM_THREADS" '
    {bench: "opd-step", config: "tiny", threads: $th, prompts: 8, samples: 4, steps: length,
     step_s: (map(.time.generation + .time.optimisation) | add / length * 1000 | round / 1000),
     generation_s: (map(.time.generation) | add / length * 1000 | round / 1000),
     optimisation_s: (map(.time.optimisation) | add / length * 1000 | round / 1000),
     gen_tokens_per_s: (map(.gen_tokens_per_s) | add / length | round)}' "$T/o.jsonl"

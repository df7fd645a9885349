#!/bin/sh
# bench_decode.sh — decoding speed of the engine on a model preset with
# an MTP module, trained briefly (STEPS sft-step steps on rendered
# trajectories of the example harness) so MTP drafts are right about as
# often as they would be on real text of this kind.  For concurrency
# (generate --batch) 1, 4 and 16: greedy decode tokens/s without MTP and
# with --mtp 1..3, the acceptance rate (accepted/drafted), tokens per
# verification step and the speed-up over no MTP at the same concurrency:
# "speedup" compares decoding speed (steps that carry prompt rows left
# out, see generate(1) --stats), "speedup_with_prefill" whole runs.
# Every MTP run's ids are compared with the run without it (greedy
# speculative decoding must not change a token): "same_output".
# JSON lines on stdout; not part of make check.
#   HAT_BIN  programs (default bin/)     STEPS  training steps (default 200)
#   PROMPTS  prompts (default 16)        NEW    new tokens each (default 96)
#   THREADS  OMP_NUM_THREADS (default 1) MTP    drafts to try (default "1 2 3")
#   REPEAT   runs of each configuration, the fastest kept (default 3)
#   PRESET   model shape (default small: 33M parameters, 130 MB of fp32
#            weights, so decoding streams them from DRAM as a served model
#            does; tiny's 20 MB sit in L3 and decoding is compute-bound,
#            where drafting cannot pay for itself)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${PRESET:=small}" "${STEPS:=200}" "${PROMPTS:=16}" "${NEW:=96}" "${THREADS:=1}" "${MTP:=1 2 3}" "${REPEAT:=3}"
export HAT_DATA="$top/data" OMP_NUM_THREADS="$THREADS"
T="${HAT_BENCH_TMP:-/tmp}/decode-$PRESET"
mkdir -p "$T"
H="$top/examples/harness"
if [ ! -s "$T/m.ckpt" ] || [ "$(cat "$T/steps" 2>/dev/null)" != "$STEPS" ]; then
    "$HAT_BIN/world-gen" --seed 1 --products 40 -o "$T/w.json" || exit 1
    "$HAT_BIN/task-gen" --world "$T/w.json" -n 240 --seed 1 -o "$T/tasks.jsonl" || exit 1
    "$HAT_BIN/traj-gen" --world "$T/w.json" --harness "$H" --think 0.3 -o "$T/traj.jsonl" "$T/tasks.jsonl" || exit 1
    "$HAT_BIN/tok-train" --chat -n 4096 -o "$T/tok.json" "$T/traj.jsonl" || exit 1
    # the rendered conversations as language-modelling text, cut into
    # 256-token windows from the first assistant turn on (the long system
    # prompt is the same in every conversation); the last 16 are held out
    "$HAT_BIN/tok-encode" --chat --tokenizer "$T/tok.json" --harness "$H" "$T/traj.jsonl" |
        jq -c '(.mask | index(1)) as $a | .ids[($a - 64):] as $x
               | range(0; ($x|length) - 64; 256) as $i | {ids: $x[$i:($i + 256)]}' >"$T/win.jsonl" || exit 1
    n=$(wc -l <"$T/win.jsonl")
    head -n $((n - PROMPTS * 2)) "$T/win.jsonl" >"$T/train.jsonl"
    tail -n $((PROMPTS * 2)) "$T/win.jsonl" | awk 'NR % 2' >"$T/held.jsonl"
    "$HAT_BIN/model-init" --preset "$PRESET" --mtp 1 --tokenizer "$T/tok.json" --seed 1 -o "$T/init.ckpt" || exit 1
    "$HAT_BIN/sft-step" --init "$T/init.ckpt" --data "$T/train.jsonl" --steps "$STEPS" --batch 8 --seq 256 \
        --lr 3e-3 --warmup 20 --metrics "$T/train.metrics" -o "$T/m.ckpt" || exit 1
    echo "$STEPS" >"$T/steps"
fi
# prompts: the first 64 tokens of each held-out window
jq -c '{ids: .ids[0:64]}' "$T/held.jsonl" >"$T/p.jsonl"
loss=$(tail -n 1 "$T/train.metrics" | jq .loss)
for B in 1 4 16; do
    base=
    for K in 0 $MTP; do
        # best of REPEAT runs (decode speed): a shared machine's memory
        # bandwidth varies by 20% from run to run
        st=
        for _ in $(seq "$REPEAT"); do
            "$HAT_BIN/generate" --ckpt "$T/m.ckpt" --max-tokens "$NEW" --batch "$B" --mtp "$K" --stats \
                -o "$T/g$K.jsonl" "$T/p.jsonl" 2>"$T/s$K.txt" || exit 1
            r=$(tail -n 1 "$T/s$K.txt")
            if [ -z "$st" ] || [ "$(printf '%s\n%s\n' "$r" "$st" | jq -s '.[0].stats.decode_tokens_per_s > .[1].stats.decode_tokens_per_s')" = true ]; then
                st=$r
            fi
        done
        [ "$K" = 0 ] && base=$(echo "$st" | jq .stats.decode_tokens_per_s) && base_all=$(echo "$st" | jq .stats.tokens_per_s)
        cmp -s "$T/g0.jsonl" "$T/g$K.jsonl" && same=true || same=false
        echo "$st" | jq -c --argjson B "$B" --argjson K "$K" --arg preset "$PRESET" --argjson th "$THREADS" --argjson base "$base" --argjson base_all "$base_all" \
            --argjson steps "$STEPS" --argjson loss "$loss" --argjson same "$same" '.stats as $s |
            {bench: "decode", config: ($preset + "+mtp"), train_steps: $steps, train_loss: $loss, threads: $th,
             concurrency: $B, mtp: $K, generated: $s.generated, seconds: ($s.seconds * 1000 | round / 1000),
             prefill_seconds: ($s.prefill_seconds * 1000 | round / 1000),
             decode_tokens_per_s: ($s.decode_tokens_per_s | round), tokens_per_s: ($s.tokens_per_s | round),
             acceptance: ($s.acceptance * 1000 | round / 1000),
             tokens_per_step: ($s.tokens_per_step * 100 | round / 100),
             speedup: ($s.decode_tokens_per_s / $base * 100 | round / 100),
             speedup_with_prefill: ($s.tokens_per_s / $base_all * 100 | round / 100), same_output: $same}'
    done
done

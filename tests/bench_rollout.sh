#!/bin/sh
# bench_rollout.sh — rollout throughput on the 'tiny' model preset (random
# weights, a tokenizer trained here) under the example harness: generated
# tokens per second with 1 and with 8 conversations in flight, on 1 and on
# 2 threads, and the context tokens each turn is generated in (the engine
# keeps each conversation's KV cache between turns and copies a shared
# prompt prefix, so it computes only what a turn appends).  JSON lines on
# stdout; not part of make check.
#   HAT_BIN  programs (default bin/)   N  tasks (default 8)
#   THREADS  OpenMP thread counts to try (default "1 2")
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${N:=8}" "${THREADS:=1 2}"
export HAT_DATA="$top/data"
T="${HAT_BENCH_TMP:-/tmp}/rollout"
mkdir -p "$T"
H="$top/examples/harness"
"$HAT_BIN/world-gen" --seed 1 --products 40 -o "$T/w.json" || exit 1
"$HAT_BIN/task-gen" --world "$T/w.json" -n 200 --seed 1 -o "$T/all.jsonl" || exit 1
head -n "$N" "$T/all.jsonl" >"$T/t.jsonl"
"$HAT_BIN/traj-gen" --world "$T/w.json" --harness "$H" --think 0.3 -o "$T/traj.jsonl" "$T/all.jsonl" || exit 1
"$HAT_BIN/tok-train" --chat -n 4096 -o "$T/tok.json" "$T/traj.jsonl" || exit 1
"$HAT_BIN/model-init" --preset tiny --tokenizer "$T/tok.json" --seed 1 -o "$T/m.ckpt" || exit 1
for th in $THREADS; do
for B in 1 8; do
    export OMP_NUM_THREADS=$th
    s=$(date +%s.%N)
    "$HAT_BIN/rollout" --ckpt "$T/m.ckpt" --world "$T/w.json" --harness "$H" --temperature 1 \
        --max-tokens 64 --max-turns 2 --batch "$B" --logprobs -o "$T/r$B.jsonl" "$T/t.jsonl" || exit 1
    e=$(date +%s.%N)
    # generated tokens; context tokens read before each turn (where the mask turns 0 -> 1)
    jq -s --arg s "$s" --arg e "$e" --argjson B "$B" --argjson th "$OMP_NUM_THREADS" '
        (($e|tonumber) - ($s|tonumber)) as $t
        | (map(.meta.gen_tokens) | add) as $g
        | (map(.tokens.mask as $m | [range(1; $m|length) | select($m[.] == 1 and $m[. - 1] == 0)] | add) | add) as $p
        | {bench: "rollout", config: "tiny", batch: $B, threads: $th, conversations: length,
           turns: (map(.meta.turns) | add), gen_tokens: $g, context_tokens: $p,
           seconds: ($t * 1000 | round / 1000), gen_tokens_per_s: ($g / $t | round),
           context_tokens_per_s: ($p / $t | round)}' "$T/r$B.jsonl" | jq -c .
done
done

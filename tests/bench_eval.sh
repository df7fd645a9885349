#!/bin/sh
# bench_eval.sh — evaluation throughput of the tiny shape: cases/s over a
# mix of the four sets (evalset -n N: live, variant, robust, ifeval in
# their default proportions), as examples/Makefile evaluates a model:
# rollout --tasks-are-cases --judge for the agent sets (continuous
# batching across cases, each system prompt's KV computed once and shared,
# the judge in the same pass) and generate for the IFEval prompts, at most
# 64 new tokens per turn, 2 threads.  The model is the tiny preset with random
# weights and a tokenizer trained here: it never ends a conversation early,
# so every case plays all its turns (the worst case; a trained model
# stops sooner).  One line per (batch, OMP_WAIT_POLICY, path): "default"
# leaves OMP_WAIT_POLICY unset (hat's programs then keep idle threads'
# spinning short; a build before issue 20's second round spun for
# milliseconds), active is libgomp's long spin-wait, passive sleeps at
# once, which matters on a shared machine; path "shared" (the default) against "copy" (rollout
# --no-shared-prefix: the system prompt's KV copied into each
# conversation, the previous path), "jobs" (rollout and generate --jobs
# JOBS, default 2: that many processes of OMP_NUM_THREADS/JOBS threads
# each, where the other paths run one process of 2 threads) and, with
# PREV_BIN, "prev" (another build's programs), run back to back; same_bytes: this path's rollout and
# generate outputs are byte for byte those of the round's first path
# (same_bytes_as; null on the first line itself);
# ratio = this line's cases/s over the copy line's; cpu_seconds = user +
# system time of both programs, cpu_ratio = the copy line's over this
# line's (the steadier figure on a shared machine).  Not part of make check.
#   HAT_BIN  programs (default bin/)    N  cases (default 1200)
#   BATCH    conversations in flight to try (default "8 32")
#   POLICY   OMP_WAIT_POLICY values to try, "default" = unset
#            (default "default passive active")
#   PATHS    paths to run (default "copy shared jobs", plus "prev" with PREV_BIN)
#   JOBS     processes on the jobs path (default 2)
#   PREV_BIN an earlier build's bin/ to compare with (optional)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${N:=1200}" "${BATCH:=8 32}" "${POLICY:=default passive active}" "${PREV_BIN:=}"
: "${PATHS:=copy shared jobs${PREV_BIN:+ prev}}" "${JOBS:=2}"
HAT_TOP=$top
export HAT_DATA="$top/data" OMP_NUM_THREADS=2
T="${HAT_BENCH_TMP:-/tmp}/eval"
mkdir -p "$T"
. "$top/tests/benchlib.sh"
cpu=$(cpu_json)
H="$top/examples/harness"
"$HAT_BIN/world-gen" --seed 1 --products 40 -o "$T/w.json" || exit 1
"$HAT_BIN/harness-pack" -o "$T/h.json" "$H" || exit 1
"$HAT_BIN/evalset" --world "$T/w.json" --harness "$T/h.json" -n "$N" --seed 1 -o "$T/cases.jsonl" || exit 1
"$HAT_BIN/task-gen" --world "$T/w.json" -n 200 --seed 1 -o "$T/t.jsonl" || exit 1
"$HAT_BIN/traj-gen" --world "$T/w.json" --harness "$H" --think 0.3 -o "$T/traj.jsonl" "$T/t.jsonl" || exit 1
"$HAT_BIN/tok-train" --chat -n 4096 -o "$T/tok.json" "$T/traj.jsonl" || exit 1
"$HAT_BIN/model-init" --preset tiny --tokenizer "$T/tok.json" --seed 1 -o "$T/m.ckpt" || exit 1
jq -c 'select(.set != "ifeval")' "$T/cases.jsonl" >"$T/agent.jsonl"
jq -c 'select(.set == "ifeval") | {id, messages, enable_thinking}' "$T/cases.jsonl" >"$T/ifeval.jsonl" || exit 1
stop=$(echo '{"text":"<|im_end|>"}' | "$HAT_BIN/tok-encode" -t "$T/tok.json" | jq '.ids[0]')
na=$(wc -l <"$T/agent.jsonl") ni=$(wc -l <"$T/ifeval.jsonl")
now() { date +%s.%N; }
# Run a program, adding its user and system CPU seconds to $T/cpu: on a
# loaded machine the wall clock measures the others' load as much as hat.
cpu() { /usr/bin/time -a -o "$T/cpu" -f "%U %S" "$@"; }
# One evaluation pass: rollout of the agent cases, generate of the IFEval
# prompts, with bin $1, rollout options $2 and generate options $3; the
# JSON line on stdout.
run() {
    bin=$1 opts=$2 gopts=${3:-}
    if [ "$pol" = default ]; then wp="env -u OMP_WAIT_POLICY"; else wp="env OMP_WAIT_POLICY=$pol"; fi
    load0=$(load_now)
    rm -f "$T/cpu"
    t0=$(now)
    cpu $wp nice -n "${NICE:-10}" "$bin/rollout" --ckpt "$T/m.ckpt" --world "$T/w.json" --tasks-are-cases --judge \
        --max-tokens 64 --batch "$B" --seed 1 $opts -o "$T/r.$path.jsonl" "$T/agent.jsonl" || exit 1
    t1=$(now)
    cpu $wp nice -n "${NICE:-10}" "$bin/generate" --ckpt "$T/m.ckpt" --max-tokens 64 --stop "$stop" --batch "$B" \
        --seed 1 $gopts -o "$T/g.$path.jsonl" "$T/ifeval.jsonl" || exit 1
    t2=$(now)
    cpus=$(awk '{s += $1 + $2} END {print s}' "$T/cpu")
    same=null
    if [ "$path" != "$first" ]; then
        same=true
        { cmp -s "$T/r.$first.jsonl" "$T/r.$path.jsonl" && cmp -s "$T/g.$first.jsonl" "$T/g.$path.jsonl"; } || same=false
    fi
    jq -s -c --argjson t0 "$t0" --argjson t1 "$t1" --argjson t2 "$t2" --argjson B "$B" --arg pol "$pol" \
        --arg path "$path" --argjson jobs "$JOBS" --arg first "$first" --argjson base "${base:-null}" --argjson same "$same" \
        --argjson cpus "$cpus" --argjson cbase "${cbase:-null}" \
        --argjson ni "$ni" --argjson cpu "$cpu" --argjson load0 "$load0" --argjson load1 "$(load_now)" '
        def r2: . * 100 | round / 100;
        ((length + $ni) / ($t2 - $t0)) as $cps
        | {bench:"eval", config:"tiny", threads:2, jobs:(if $path == "jobs" then $jobs else 1 end), batch:$B, omp_wait_policy:$pol, path:$path, max_tokens_per_turn:64,
         cases:(length + $ni), agent_cases:length, ifeval_cases:$ni,
         turns:(map(.meta.turns) | add), gen_tokens:(map(.meta.gen_tokens) | add),
         judged:(map(select(.verdict)) | length),
         agent_seconds:($t1 - $t0 | r2), ifeval_seconds:($t2 - $t1 | r2),
         agent_cases_per_s:(length / ($t1 - $t0) | r2),
         cases_per_s:($cps | r2), ratio_vs_copy:(if $base then $cps / $base | r2 else null end),
         cpu_seconds:($cpus | r2), cpu_ratio_vs_copy:(if $cbase then $cbase / $cpus | r2 else null end),
         same_bytes_as:(if $path == $first then null else $first end), same_bytes:$same,
         target_cases_per_s:10,
         cpu:$cpu, loadavg:[$load0, $load1]}' "$T/r.$path.jsonl"
}
for B in $BATCH; do
for pol in $POLICY; do
    base= cbase= first=${PATHS%% *}
    for path in $PATHS; do
        case $path in
        copy)   line=$(run "$HAT_BIN" --no-shared-prefix) || exit 1 ;;
        shared) line=$(run "$HAT_BIN" "") || exit 1 ;;
        jobs)   line=$(run "$HAT_BIN" "--jobs $JOBS" "--jobs $JOBS") || exit 1 ;;
        prev)   line=$(run "$PREV_BIN" "") || exit 1 ;;
        *)      echo "bench_eval: PATHS: unknown path $path" >&2; exit 2 ;;
        esac
        echo "$line"
        if [ "$path" = copy ]; then
            base=$(echo "$line" | jq '.cases / (.agent_seconds + .ifeval_seconds)')
            cbase=$(echo "$line" | jq .cpu_seconds)
        fi
    done
done
done

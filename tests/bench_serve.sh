#!/bin/sh
# bench_serve.sh — serve under load from loadgen, on the 'tiny' model
# preset (random weights, a tokenizer trained here): decode tokens/s of
# /v1/chat/completions at concurrency 1, 4 and 16 (continuous batching
# should make throughput grow with concurrency), and P50/P95 latency of
# /v1/agent on eval cases (the full agent loop under the example harness).
# With and without MTP once the engine has it; until then the MTP line
# says it is unavailable.  JSON lines on stdout; not part of make check.
#   HAT_BIN  programs (default bin/)   N  chat requests per level (default 32)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${N:=32}"
export HAT_DATA="$top/data" OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
unset HAT_SERVE_TOKEN
T="${HAT_BENCH_TMP:-/tmp}/serve"
mkdir -p "$T"
H="$top/examples/harness"
"$HAT_BIN/world-gen" --seed 1 --products 40 -o "$T/w.json" || exit 1
"$HAT_BIN/task-gen" --world "$T/w.json" -n 200 --seed 1 --split eval -o "$T/all.jsonl" 2>/dev/null ||
    "$HAT_BIN/task-gen" --world "$T/w.json" -n 200 --seed 1 -o "$T/all.jsonl" || exit 1
"$HAT_BIN/traj-gen" --world "$T/w.json" --harness "$H" -o "$T/traj.jsonl" "$T/all.jsonl" || exit 1
"$HAT_BIN/tok-train" --chat -n 4096 -o "$T/tok.json" "$T/traj.jsonl" || exit 1
"$HAT_BIN/model-init" --preset tiny --tokenizer "$T/tok.json" --seed 1 -o "$T/m.ckpt" || exit 1
jq -c '{id: (.id + ".c"), task: .}' "$T/all.jsonl" | head -n 16 >"$T/cases.jsonl"
echo '{"messages":[{"role":"system","content":"You are the host of a live stream."},{"role":"user","content":"momo: how much is the Stillwater set today?"}],"max_tokens":64,"temperature":1}' >"$T/chat.jsonl"

start() {
    rm -f "$T/port"
    "$HAT_BIN/serve" --ckpt "${CK:-$T/m.ckpt}" --world "$T/w.json" --harness "$H" --port 0 --port-file "$T/port" \
        --max-context 4096 --queue 1024 "$@" 2>>"$T/serve.log" &
    PID=$!
    i=0; while [ ! -s "$T/port" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    URL="http://127.0.0.1:$(cat "$T/port")"
}

start --slots 16
for C in 1 4 16; do
    "$HAT_BIN/loadgen" --url "$URL" --concurrency "$C" -n "$N" --stream --quiet "$T/chat.jsonl" |
        jq -c --argjson c "$C" '{bench:"serve_chat_decode", concurrency:$c, mtp:0, requests, ok,
                                 tokens_per_s, ttft_ms, latency_ms: {p50: .latency_ms.p50, p95: .latency_ms.p95}}'
done
"$HAT_BIN/loadgen" --url "$URL" --concurrency 4 --budget 15 --max-tokens 64 --quiet "$T/cases.jsonl" |
    jq -c '{bench:"serve_agent_cases", concurrency:4, requests, ok, errors, tokens_per_s,
            latency_ms: {p50: .latency_ms.p50, p95: .latency_ms.p95, p99: .latency_ms.p99}, over_budget}'
kill -TERM "$PID"; wait "$PID"
# With MTP: the same checkpoint with an MTP module (--mtp needs one to draft).
"$HAT_BIN/model-init" --preset tiny --mtp 1 --tokenizer "$T/tok.json" --seed 1 -o "$T/mtp.ckpt" 2>/dev/null ||
    { echo '{"bench":"serve_chat_decode","mtp":3,"skipped":"model-init cannot add an MTP module"}'; exit 0; }
CK="$T/mtp.ckpt"
for K in 0 3; do
    start --slots 16 --mtp "$K"
    for C in 1 4 16; do
        "$HAT_BIN/loadgen" --url "$URL" --concurrency "$C" -n "$N" --stream --quiet "$T/chat.jsonl" |
            jq -c --argjson c "$C" --argjson k "$K" '{bench:"serve_chat_decode_mtp_ckpt", concurrency:$c,
                  mtp:$k, ok, tokens_per_s, latency_ms: {p50: .latency_ms.p50, p95: .latency_ms.p95}}'
    done
    [ "$K" -gt 0 ] && curl -s "$URL/health" | jq -c '{bench:"serve_mtp_acceptance", mtp}'
    kill -TERM "$PID"; wait "$PID"
done

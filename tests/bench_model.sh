#!/bin/sh
# bench_model.sh — training throughput of the 'tiny' (and with ALL=1 also
# 'small') benchmark config: hat's sft-step against the PyTorch reference
# (../shared/tools/torchref/bench_train.py) in the same run when torch is
# importable.  JSON lines on stdout; not part of make check.
#   HAT_BIN   programs (default bin/)   STEPS  timed steps (default 6)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${STEPS:=6}"
shared="${HAT_SHARED:-$top/../shared}"
export HAT_DATA="$top/data" OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-2}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
for name in tiny ${ALL:+small}; do
    B=$(jq -r ".configs[]|select(.name==\"$name\").B" "$shared/bench/configs.json")
    T=$(jq -r ".configs[]|select(.name==\"$name\").T" "$shared/bench/configs.json")
    V=$(jq -r ".configs[]|select(.name==\"$name\").vocab_size" "$shared/bench/configs.json")
    # full-length sequences, so every one of the B*T positions is a target
    awk -v n=$((B * (STEPS + 2))) -v t=$((T + 1)) -v v="$V" 'BEGIN{srand(1); for(i=0;i<n;i++){
        printf "{\"ids\":["; for(j=0;j<t;j++) printf "%s%d", j?",":"", int(rand()*v); print "]}"}}' >"$tmp/d.jsonl"
    "$HAT_BIN/model-init" --preset "$name" -o "$tmp/m.ckpt" || exit 1
    "$HAT_BIN/sft-step" --init "$tmp/m.ckpt" --data "$tmp/d.jsonl" --batch "$B" --seq "$T" \
        --steps $((STEPS + 2)) --metrics "$tmp/m.jsonl" -o "$tmp/o.ckpt" || exit 1
    # median tokens/s of the steps after the first two (warm-up)
    hat=$(tail -n +3 "$tmp/m.jsonl" | jq -s '[.[].tokens_per_s]|sort|.[length/2|floor]')
    load=$(cut -d' ' -f1 /proc/loadavg)
    torch=null
    if $py -c 'import torch' 2>/dev/null; then
        torch=$($py "$shared/tools/torchref/bench_train.py" --preset $([ "$name" = tiny ] && echo a || echo b) \
                --steps "$STEPS" --threads 2 2>/dev/null | jq '.tokens_per_s // .tok_per_s // null' 2>/dev/null)
        [ -n "$torch" ] || torch=null
    fi
    ratio=null
    [ "$torch" != null ] && ratio=$(jq -n "$hat / $torch * 1000 | round / 1000")
    jq -nc --arg c "$name" --argjson B "$B" --argjson T "$T" --argjson hat "$hat" --argjson torch "$torch" \
        --argjson ratio "$ratio" --arg load "$load" \
        '{bench:"train",config:$c,B:$B,T:$T,threads:2,hat_tokens_per_s:($hat|round),torch_tokens_per_s:(if $torch then ($torch|round) else null end),ratio:$ratio,loadavg:($load|tonumber)}'
done

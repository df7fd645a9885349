#!/bin/sh
# bench_tok.sh — tokenizer throughput on one core, JSON lines.
#   load:   tok-encode on a one-line file (the 11 MB Qwen3 tokenizer.json
#           loaded, one line encoded), against HF tokenizers'
#           Tokenizer.from_file in the venv of tests/venv.sh.
#   encode: tok-encode --lines (end to end, ids written as JSON) on the
#           conformance corpus repeated to ~MB MB and on a generated
#           live-stream corpus; beside it `wc -w` on the same file as a
#           floor for just reading the bytes, and HF tokenizers
#           (Python, whole process: load, read, encode_batch on one
#           thread) on the same lines, whose token count must agree.
#           ROUNDS interleaved rounds, the ratio taken per round.
#   train:  tok-train to 32k ids on the generated corpus (MB=... to resize).
# Every line carries the CPU, its features and the load.
set -eu
T="${HAT_BENCH_TMP:-/tmp}/tok"; mkdir -p "$T"
Q="$HAT_CONFORMANCE/tokenizer/qwen3/tokenizer.json"
MB=${MB:-20} ROUNDS=${ROUNDS:-3}
export OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
now() { date +%s.%N; }
. "$HAT_TOP/tests/benchlib.sh"
cpu=$(cpu_json)

jq -r .text "$HAT_CONFORMANCE/tokenizer/corpus.jsonl" | tr -d '\000' >"$T/one.txt"
: >"$T/corpus.txt"
while [ "$(wc -c <"$T/corpus.txt")" -lt $((MB << 20)) ]; do cat "$T/one.txt" >>"$T/corpus.txt"; done
# A generated corpus: live-stream chat lines from the example harness texts, shuffled.
cat "$HAT_TOP"/examples/harness/prompt/*.md "$HAT_TOP"/examples/harness/skills/*/SKILL.md >"$T/seed.txt"
: >"$T/gen.txt"
i=0
while [ "$(wc -c <"$T/gen.txt")" -lt $((MB << 20)) ]; do
    awk -v s=$i 'BEGIN{srand(s)} {n=split($0,w," "); o=""; for(k=1;k<=n;k++){j=int(rand()*n)+1; o=o w[j] " "} print o, int(rand()*500) "元"}' "$T/seed.txt" >>"$T/gen.txt"
    i=$((i + 1))
done

# A whole process's seconds; its stdout goes to $T/ids.jsonl.
secs() { t0=$(now); "$@" >"$T/ids.jsonl"; t1=$(now); awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b - a}'; }
# HF tokenizers, whole process (python start, load, read, encode): "SECONDS TOKENS".
peer_enc() {
    t0=$(now); j=$(peer encode "$Q" "$1" 1 2>/dev/null | tail -n 1) || return 1; t1=$(now)
    echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b - a}') $(printf '%s' "$j" | jq .tokens)"
}

enc() {   # name file
    bytes=$(wc -c <"$2")
    : >"$T/h" >"$T/p" >"$T/r"
    ntok=null ptok=null r=0
    while [ $r -lt "$ROUNDS" ]; do
        r=$((r + 1))
        h=$(secs tok-encode --lines -t "$Q" "$2"); echo "$h" >>"$T/h"
        ntok=$(jq '.ids | length' "$T/ids.jsonl" | awk '{s += $1} END{print s + 0}')
        if [ -n "$PEER_PY" ] && pv=$(peer_enc "$2"); then
            echo "${pv% *}" >>"$T/p"; ptok=${pv#* }
            awk -v a="$h" -v b="${pv% *}" 'BEGIN{print b / a}' >>"$T/r"
        fi
    done
    t0=$(now); wc -w "$2" >/dev/null; t1=$(now)
    jq -nc --arg n "$1" --argjson b "$bytes" --argjson wc "$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')" \
        --argjson h "$(median "$T/h")" --argjson p "$(median "$T/p")" --argjson r "$(median "$T/r")" \
        --argjson nt "$ntok" --argjson pt "$ptok" --argjson cpu "$cpu" --argjson load "$(load_now)" \
        --arg why "$PEER_WHY" '
        ($b / 1048576) as $mb | def r1: . * 10 | round / 10;
        {bench:"tok-encode", corpus:$n, mb:($mb | r1), seconds:$h, mb_per_s:($mb / $h | r1),
         peer:"HF tokenizers (Python, one thread, whole process)",
         peer_mb_per_s:(if $p then ($mb / $p | r1) else null end),
         ratio:(if $r then ($r * 100 | round / 100) else null end),
         tokens:$nt, same_token_count:(if $pt then $pt == $nt else null end),
         peer_absent:(if $p then null else $why end),
         floor:"wc -w", floor_mb_per_s:($mb / $wc | r1), cpu:$cpu, loadavg:$load}'
}

# Loading the tokenizer: a process that encodes one line.
printf 'hello\n' >"$T/one_line.txt"
: >"$T/lh" >"$T/lp"
r=0
while [ $r -lt "$ROUNDS" ]; do
    r=$((r + 1))
    secs tok-encode --lines -t "$Q" "$T/one_line.txt" >>"$T/lh"; echo >>"$T/lh"
    [ -n "$PEER_PY" ] && peer encode "$Q" "$T/one_line.txt" 1 2>/dev/null | jq .load_s >>"$T/lp"
done
jq -nc --argjson h "$(median "$T/lh")" --argjson p "$(median "$T/lp")" --argjson cpu "$cpu" \
    --argjson load "$(load_now)" --arg why "$PEER_WHY" '
    {bench:"tok-load", tokenizer:"Qwen3 tokenizer.json, 11 MB", seconds:$h,
     what:"tok-encode process on one line (load, encode, exit)",
     peer:"HF tokenizers Tokenizer.from_file", peer_seconds:$p,
     ratio:(if $p then ($p / $h * 100 | round / 100) else null end),
     peer_absent:(if $p then null else $why end), cpu:$cpu, loadavg:$load}'
enc conformance "$T/corpus.txt"
enc generated "$T/gen.txt"

jq -R -c '{text: .}' "$T/gen.txt" >"$T/gen.jsonl"
t0=$(now); tok-train -n 32000 -o "$T/trained.json" "$T/gen.jsonl"; t1=$(now)
awk -v b="$(wc -c <"$T/gen.txt")" -v a="$t0" -v e="$t1" 'BEGIN{
    printf "{\"bench\":\"tok-train\",\"vocab\":32000,\"mb\":%.1f,\"seconds\":%.2f}\n", b/1048576, e-a }'

#!/bin/sh
# bench_tok.sh — tokenizer throughput on one core, JSON lines.
#   encode: tok-encode --lines (end to end, ids written as JSON) on the
#           conformance corpus repeated to ~20 MB and on a generated
#           live-stream corpus; beside it `wc -w` on the same file as a
#           floor for just reading the bytes.
#   train:  tok-train to 32k ids on the generated corpus (MB=... to resize).
set -eu
T="${HAT_BENCH_TMP:-/tmp}/tok"; mkdir -p "$T"
Q="$HAT_CONFORMANCE/tokenizer/qwen3/tokenizer.json"
MB=${MB:-20}
export OMP_NUM_THREADS=1
now() { date +%s.%N; }

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

enc() {   # name file
    bytes=$(wc -c <"$2")
    t0=$(now); tok-encode --lines -t "$Q" "$2" >"$T/ids.jsonl"; t1=$(now)
    wc -w "$2" >/dev/null; t2=$(now)
    awk -v n="$1" -v b="$bytes" -v a="$t0" -v m="$t1" -v e="$t2" 'BEGIN{
        printf "{\"bench\":\"tok-encode\",\"corpus\":\"%s\",\"mb\":%.1f,\"seconds\":%.3f,\"mb_per_s\":%.1f,\"peer\":\"wc -w\",\"peer_mb_per_s\":%.1f}\n",
               n, b/1048576, m-a, b/1048576/(m-a), b/1048576/(e-m) }'
}
enc conformance "$T/corpus.txt"
enc generated "$T/gen.txt"

jq -R -c '{text: .}' "$T/gen.txt" >"$T/gen.jsonl"
t0=$(now); tok-train -n 32000 -o "$T/trained.json" "$T/gen.jsonl"; t1=$(now)
awk -v b="$(wc -c <"$T/gen.txt")" -v a="$t0" -v e="$t1" 'BEGIN{
    printf "{\"bench\":\"tok-train\",\"vocab\":32000,\"mb\":%.1f,\"seconds\":%.2f}\n", b/1048576, e-a }'

# hsa.sh — hsa-augment from the command line: options, determinism,
# batching, harness-only mode, held-out vocabulary, lint on the output,
# and every bad-input path with its message and exit status.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
FX="$HAT_TOP/tests/fixtures/hsa/traj.jsonl"
EX="$HAT_TOP/examples/harness"

ok   "help"                 hsa-augment --help
has  "help text"            "$T/.out" "^usage: hsa-augment"
fails "unknown option"      2 hsa-augment --frobnicate
fails "unknown dimension"   2 hsa-augment --dims skill-id,colour "$FX"
has  "dimension named"      "$T/.err" "unknown dimension 'colour'"
fails "p out of range"      2 hsa-augment --p-tools 1.5 "$FX"

ok   "k variants"           hsa-augment -k 3 --seed 5 -o "$T/a.jsonl" "$FX"
n=$(wc -l <"$T/a.jsonl")
[ "$n" -eq 15 ] && pass "3 variants of 5 records" || flunk "3 variants of 5 records" "got $n lines"
ok   "same seed again"      hsa-augment -k 3 --seed 5 -o "$T/b.jsonl" "$FX"
same "same seed same bytes" "$T/a.jsonl" "$T/b.jsonl"
hsa-augment -k 3 --seed 6 "$FX" >"$T/c.jsonl"
if cmp -s "$T/a.jsonl" "$T/c.jsonl"; then flunk "other seed differs"; else pass "other seed differs"; fi
# Batching: two files in one run = the concatenation on stdin.
head -2 "$FX" >"$T/p1.jsonl"; tail -n +3 "$FX" >"$T/p2.jsonl"
hsa-augment -k 3 --seed 5 "$T/p1.jsonl" "$T/p2.jsonl" >"$T/d.jsonl"
same "files = stdin"        "$T/a.jsonl" "$T/d.jsonl"
cat "$FX" | hsa-augment -k 3 --seed 5 >"$T/e.jsonl"
same "stdin"                "$T/a.jsonl" "$T/e.jsonl"
has  "ops recorded"         "$T/a.jsonl" '"hsa":\[\{"dim":'
has  "valid flag"           "$T/a.jsonl" '"hsa_valid":true'
hasnt "no invalid variant"  "$T/a.jsonl" '"hsa_valid":false'
has  "variant ids"          "$T/a.jsonl" '"id":"fx-price-1-hsa2"'

# Only one dimension: nothing else moves.
hsa-augment --dims tools --p 1 --seed 2 "$FX" >"$T/t.jsonl"
has  "tools ops"            "$T/t.jsonl" '"dim":"tools","op":"rename_tool"'
hasnt "no other dims"       "$T/t.jsonl" '"dim":"(skill-id|skill-content|prompt|hooks)"'
# --mix 1: every output the original.
hsa-augment --mix 1 --seed 2 "$FX" >"$T/m.jsonl"
has  "mix keeps original"   "$T/m.jsonl" '"hsa":\[\],'
# A line whose harness key is repeated (jansson keeps the last value)
# right after a line with the first value: the output keeps what jansson
# parsed, not the remembered harness.
head -n 1 "$FX" >"$T/dup.jsonl"
head -n 1 "$FX" | jq -c '.harness.name = "dup-second"' | sed "s/^{/{\"harness\":$(head -n 1 "$FX" | jq -c .harness | sed 's/[&/\]/\\&/g'),/" >>"$T/dup.jsonl"
hsa-augment --mix 1 --seed 2 "$T/dup.jsonl" | jq -r .harness.name >"$T/dup.names"
[ "$(sed -n 2p "$T/dup.names")" = dup-second ] && pass "repeated harness key: the last value, as jansson" ||
    flunk "repeated harness key" "$(cat "$T/dup.names")"

# Harness only, bare: each line is a harness that lints clean.
ok   "harness only"         hsa-augment --harness "$EX" --harness-only --bare -k 4 --seed 3 -o "$T/h.jsonl"
i=0; lint_bad=0
while read -r line; do
    i=$((i + 1)); printf '%s\n' "$line" >"$T/h$i.json"
    harness-lint --strict "$T/h$i.json" >/dev/null 2>&1 || lint_bad=$((lint_bad + 1))
done <"$T/h.jsonl"
[ "$i" -eq 4 ] && [ "$lint_bad" -eq 0 ] && pass "4 bare harnesses lint clean" || flunk "4 bare harnesses lint clean" "$i lines, $lint_bad failing"
ok   "held-out vocabulary"  hsa-augment --vocab heldout --harness "$EX" --harness-only -k 2 --seed 3 -o "$T/ho.jsonl"
has  "held-out recorded"    "$T/ho.jsonl" '"hsa_vocab":"heldout"'

# Bad inputs.
fails "bad harness path"    1 hsa-augment --harness "$T/nope" --harness-only
has  "harness path named"   "$T/.err" "nope"
fails "bad vocabulary"      1 hsa-augment --vocab nosuch "$FX"
has  "vocabulary named"     "$T/.err" "no vocabulary 'nosuch'"
fails "harness-only alone"  2 hsa-augment --harness-only
{ head -1 "$FX"; echo '{"id": "broken", '; sed -n 2p "$FX"; } >"$T/bad.jsonl"
fails "bad json line"       1 hsa-augment "$T/bad.jsonl"
has  "file:line"            "$T/.err" "bad.jsonl:2:"
ok   "skip bad"             hsa-augment --skip-bad "$T/bad.jsonl"
n=$(wc -l <"$T/.out"); [ "$n" -eq 2 ] && pass "skip-bad keeps the good" || flunk "skip-bad keeps the good" "$n lines"
has  "skip count"           "$T/.err" "skipped 1"
{ head -1 "$FX"; echo '{"id": "nomsg", "messages": []}'; } >"$T/noh.jsonl"
fails "no harness"          1 hsa-augment "$T/noh.jsonl"
has  "no harness message"   "$T/.err" "noh.jsonl:2: record has no inline harness"
ok   "--harness fills in"   hsa-augment --harness "$EX" "$T/noh.jsonl"
echo '{"id": "x", "harness": {}}' >"$T/nomsgs.jsonl"
fails "no messages"         1 hsa-augment "$T/nomsgs.jsonl"
has  "no messages message"  "$T/.err" "nomsgs.jsonl:1: record has no \"messages\" array"
fails "output kept on error" 1 hsa-augment -o "$T/a.jsonl" "$T/nomsgs.jsonl"
same "old output intact"    "$T/a.jsonl" "$T/b.jsonl"

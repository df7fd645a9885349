# hsa_any.sh — HSA on a harness written for the tests (tests/fixtures/hsa/
# fresh: no sentence shared with examples/harness) and on examples/harness
# with one word changed in every rule: wording change rates at p=0.5 and
# p=1, every dimension applying operations, no variant naming what its
# harness lacks, train/held-out rewrites disjoint, determinism per seed,
# --stats and the no-op warning, hsa-bank with a script standing in for the
# model, relabelled trajectories passing the judge, evalset's variant set
# built from this harness.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
FR="$HAT_TOP/tests/fixtures/hsa/fresh"
EX="$HAT_TOP/examples/harness"
need "$FR/harness.json" "$HAT_TOP/tests/hsa_rates.sh"
ok "fresh harness lints strict" harness-lint --strict "$FR"
RATES="$HAT_TOP/tests/hsa_rates.sh"
# One word changed in every rule: exact-text banks no longer match.
harness-pack "$EX" | jq -f "$HAT_TOP/tests/hsa_one_word.jq" >"$T/ex1.json"
n=$(jq -n --slurpfile a "$T/ex1.json" --argjson b "$(harness-pack "$EX")" \
    '[$a[0].skills[].rules[]] - [$b.skills[].rules[]] | length')
m=$(harness-pack "$EX" | jq '[.skills[].rules[]] | length')
[ "$n" -eq "$m" ] && pass "every rule edited" || flunk "every rule edited" "$n of $m"
for h in "$FR" "$T/ex1.json"; do
    name=$(basename "$h")
    HAT_BIN="$HAT_TOP/bin" sh "$RATES" "$h" >"$T/r5.json"
    HAT_BIN="$HAT_TOP/bin" P=1 sh "$RATES" "$h" >"$T/r1.json"
    HAT_BIN="$HAT_TOP/bin" VOCAB=heldout sh "$RATES" "$h" >"$T/rh.json"
    jq -e '.changed_mean >= 0.45 and .changed_mean <= 0.65' "$T/r5.json" >/dev/null &&
        pass "$name: p=0.5 changes about half the wording" || flunk "$name: p=0.5 rate" "$(cat "$T/r5.json")"
    jq -e '.changed_mean >= 0.9' "$T/r1.json" >/dev/null &&
        pass "$name: p=1 changes nearly all wording" || flunk "$name: p=1 rate" "$(cat "$T/r1.json")"
    jq -e '.changed_mean >= 0.45' "$T/rh.json" >/dev/null &&
        pass "$name: held-out vocabulary rewrites too" || flunk "$name: held-out rate" "$(cat "$T/rh.json")"
    jq -e '[.ops[]] | min >= 1' "$T/r1.json" >/dev/null &&
        pass "$name: every dimension applies at p=1" || flunk "$name: every dimension" "$(cat "$T/r1.json")"
    jq -e '.undefined_mentions == 0' "$T/r5.json" "$T/r1.json" >/dev/null &&
        pass "$name: no variant names what it lacks" || flunk "$name: undefined names" "$(cat "$T/r1.json")"
done

# Per dimension alone, at p=0.5 and p=1: its operations, nothing else.
for d in skill-id skill-content tools prompt hooks; do
    for p in 0.5 1; do
        hsa-augment --harness "$FR" --harness-only -k 10 --dims $d --p $p --seed 4 \
            --stats "$T/s.json" >"$T/d.jsonl" 2>"$T/d.err"
        jq -e --arg d $d '.dims[$d].ops >= 10 and .dims[$d].unrewritable == 0' "$T/s.json" >/dev/null &&
            pass "$d at p=$p applies operations" || flunk "$d at p=$p" "$(cat "$T/s.json")"
        others=$(jq -r --arg d $d '.meta.hsa[].dim | select(. != $d)' "$T/d.jsonl" | wc -l)
        [ "$others" -eq 0 ] && pass "$d at p=$p alone" || flunk "$d at p=$p alone" "$others ops of others"
    done
done
# p=1 rewrites every rule it draws; p=0.5 about half of them.
hsa-augment --harness "$FR" --harness-only -k 20 --dims skill-content --p 0.5 --seed 4 --stats "$T/s5.json" >/dev/null
jq -e '.dims["skill-content"] | .texts > 0 and .rewritten == .texts' "$T/s5.json" >/dev/null &&
    pass "every rule drawn is rewritten" || flunk "every rule drawn is rewritten" "$(cat "$T/s5.json")"
jq -e '.dims["skill-content"].texts / (20 * 18) | . > 0.35 and . < 0.65' "$T/s5.json" >/dev/null &&
    pass "p=0.5 draws about half the rules" || flunk "p=0.5 draws about half the rules" "$(cat "$T/s5.json")"

# Determinism: same seed, same bytes; another seed, other bytes.
hsa-augment --harness "$FR" --harness-only -k 5 --seed 9 >"$T/a.jsonl"
hsa-augment --harness "$FR" --harness-only -k 5 --seed 9 >"$T/b.jsonl"
same "same seed same variants" "$T/a.jsonl" "$T/b.jsonl"
hsa-augment --harness "$FR" --harness-only -k 5 --seed 10 >"$T/c.jsonl"
if cmp -s "$T/a.jsonl" "$T/c.jsonl"; then flunk "other seed other variants"; else pass "other seed other variants"; fi

# A dimension with nothing to do says so: one block, no numeric params, a
# text with nothing to reword (a harness lint accepts: every program lints).
harness-pack "$FR" | jq '.system_prompt.blocks = [{id: "persona", text: "{shop}", params: {shop: {value: "Pinecrest"}}}]
    | del(.hooks.reply_format.max_chars_param, .hooks.reply_format.max_emoji_param)' >"$T/np.json"
ok "the no-op harness passes lint" harness-lint "$T/np.json"
ok "no-op dimension runs" hsa-augment --harness "$T/np.json" --harness-only --dims prompt --p 1 --stats "$T/np.stats"
has "no-op dimension warned" "$T/.err" "warning: dimension prompt applied no operation"
has "unrewritable text warned" "$T/.err" 'warning: 1 of 1 texts drawn for rewriting have no rewrite .*"\{shop\}"'
jq -e '.dims.prompt.note' "$T/np.stats" >/dev/null && pass "no-op noted in --stats" || flunk "no-op noted in --stats"
ok "--mix 1 keeps every original" hsa-augment --harness "$FR" --harness-only --mix 1 -k 3
hasnt "originals are not no-op dimensions" "$T/.err" "warning"
fails "missing bank" 1 hsa-augment --harness "$FR" --harness-only --bank "$T/nope.json"
has "missing bank named" "$T/.err" "nope.json"

# hsa-bank with a script for the model: good answers kept per split, an
# answer adding a number rejected and reported.
cat >"$T/model.sh" <<'SH'
#!/bin/sh
jq -c '{id, alternatives: (if .split == "train" then ["In short: " + .text, .text + " Twice 99."]
                          else ["To be clear: " + .text] end)}'
SH
chmod +x "$T/model.sh"
ok "hsa-bank" hsa-bank --harness "$FR" --rewrite-cmd "$T/model.sh" -o "$T/bank.json"
has "rejections reported" "$T/.err" "rejected a train alternative .*adds '"
nt=$(jq '.texts | length' "$T/bank.json")
nr=$(jq '.rejected | length' "$T/bank.json")
[ "$nt" -gt 40 ] && [ "$nr" -eq "$nt" ] && pass "one rejection per text" || flunk "one rejection per text" "$nt texts, $nr rejected"
jq -e '[.texts[] | (.train | length) == 1 and (.heldout | length) == 1] | all' "$T/bank.json" >/dev/null &&
    pass "one alternative kept per split" || flunk "one alternative kept per split"
jq -e '.texts | to_entries | all(.key | test("^[0-9a-f]{16}$"))' "$T/bank.json" >/dev/null &&
    pass "keyed by content hash" || flunk "keyed by content hash"
hsa-augment --harness "$FR" --harness-only -k 10 --dims skill-content --p 1 --bank "$T/bank.json" --seed 2 >"$T/bt.jsonl"
has "train part of the bank used" "$T/bt.jsonl" '"to":"In short: '
hasnt "held-out part unused in train" "$T/bt.jsonl" 'To be clear: '
hsa-augment --harness "$FR" --harness-only -k 10 --dims skill-content --p 1 --vocab "heldout+$T/bank.json" --seed 2 >"$T/bh.jsonl"
has "held-out part used by --vocab heldout+BANK" "$T/bh.jsonl" '"to":"To be clear: '
hasnt "train part unused in held-out" "$T/bh.jsonl" 'In short: '
jq '.texts |= with_entries(.value.train = [.value.text + " 7"])' "$T/bank.json" >"$T/badbank.json"
fails "edited bank checked" 1 hsa-augment --harness "$FR" --harness-only --bank "$T/badbank.json"
has "bad bank entry named" "$T/.err" "badbank.json: texts/[0-9a-f]+/train/0: adds '7'"
echo '{"id":"nope"}' >"$T/junk.sh.out"
fails "answer for no request" 1 hsa-bank --harness "$FR" --rewrite-cmd "cat $T/junk.sh.out" -o "$T/nb.json"
[ ! -e "$T/nb.json" ] && pass "no bank written on failure" || flunk "no bank written on failure"
fails "failing command" 1 hsa-bank --harness "$FR" --rewrite-cmd "exit 3"
has "exit status reported" "$T/.err" "exited with status 3"
fails "hsa-bank usage" 2 hsa-bank --harness "$FR"

# Trajectories under the fresh harness: their HSA variants still pass the judge.
world-gen --seed 5 --products 40 >"$T/w.json"
task-gen --world "$T/w.json" -n 80 --seed 3 --faults 0.3 >"$T/t.jsonl"
traj-gen --world "$T/w.json" --harness "$FR" --think 0.2 <"$T/t.jsonl" >"$T/tr.jsonl"
hsa-augment -k 2 --seed 4 "$T/tr.jsonl" >"$T/trh.jsonl"
judge --world "$T/w.json" --tasks "$T/t.jsonl" "$T/trh.jsonl" >"$T/v.jsonl"
np=$(grep -c '"pass":true' "$T/v.jsonl")
[ "$np" -eq 160 ] && pass "relabelled variants pass the judge" || flunk "relabelled variants pass the judge" "$np of 160"
has "variants rewrote rules" "$T/trh.jsonl" '"op":"paraphrase_rule"'

# evalset builds its Harness-Variant set from this harness too: the teacher
# playing each case's harness passes; bound to the production surface
# forms it fails variant cases.
ok "evalset on the fresh harness" evalset --world "$T/w.json" --harness "$FR" -n 120 --seed 2 -o "$T/cases.jsonl"
nv=$(jq -c 'select(.set == "variant")' "$T/cases.jsonl" | wc -l)
[ "$nv" -gt 10 ] && pass "variant cases built" || flunk "variant cases built" "$nv"
jq -c 'select(.task) | .task' "$T/cases.jsonl" >"$T/ct.jsonl"
jq -c 'select(.task) | .task + {harness: .harness}' "$T/cases.jsonl" | traj-gen --world "$T/w.json" --seed 2 >"$T/et.jsonl"
judge --world "$T/w.json" --tasks "$T/ct.jsonl" "$T/et.jsonl" >"$T/ev.jsonl"
nf=$(grep -c '"pass":false' "$T/ev.jsonl")
[ "$nf" -eq 0 ] && pass "teacher passes every case" || flunk "teacher passes every case" "$nf failed"
traj-gen --world "$T/w.json" --harness "$FR" --seed 2 "$T/ct.jsonl" |
    jq -c -n --slurpfile c "$T/cases.jsonl" '($c | map(select(.task)) | map({key: .id, value: .harness}) | from_entries) as $h | inputs | .harness = $h[.task_id]' >"$T/ef.jsonl"
judge --world "$T/w.json" --tasks "$T/ct.jsonl" "$T/ef.jsonl" >"$T/evf.jsonl"
vf=$(jq -c 'select(.task_id | startswith("variant")) | select(.pass | not)' "$T/evf.jsonl" | wc -l)
[ "$vf" -gt $((nv / 2)) ] && pass "fixed-harness teacher fails variant cases" || flunk "fixed-harness teacher fails variant cases" "$vf of $nv"

# evalset --bank: the bank hsa-bank made above rewords the variant cases
# with its held-out alternatives, never the train ones; the teacher still
# passes every case; a bank for another harness is refused.
ok "evalset --bank" evalset --world "$T/w.json" --harness "$FR" -n 120 --seed 2 --sets variant \
    --bank "$T/bank.json" -o "$T/bcases.jsonl"
nb=$(jq -c 'select(.set == "variant") | select([.harness | .. | strings | select(startswith("To be clear: "))] | length > 0)' \
    "$T/bcases.jsonl" | wc -l)
nvb=$(jq -c 'select(.set == "variant")' "$T/bcases.jsonl" | wc -l)
[ "$nb" -gt $((nvb / 2)) ] && pass "held-out bank alternatives in variant cases" ||
    flunk "held-out bank alternatives in variant cases" "$nb of $nvb cases"
hasnt "train bank alternatives unused by evalset" "$T/bcases.jsonl" 'In short: '
hasnt "no bank, no bank alternatives" "$T/cases.jsonl" 'To be clear: '
jq -c 'select(.task) | .task' "$T/bcases.jsonl" >"$T/bct.jsonl"
jq -c 'select(.task) | .task + {harness: .harness}' "$T/bcases.jsonl" | traj-gen --world "$T/w.json" --seed 2 >"$T/bet.jsonl"
judge --world "$T/w.json" --tasks "$T/bct.jsonl" "$T/bet.jsonl" >"$T/bev.jsonl"
nf=$(grep -c '"pass":false' "$T/bev.jsonl")
[ "$nf" -eq 0 ] && pass "teacher passes every bank-worded case" || flunk "teacher passes every bank-worded case" "$nf failed"
fails "evalset: a bank for another harness" 1 evalset --world "$T/w.json" --harness "$EX" -n 20 --sets variant \
    --bank "$T/bank.json" -o "$T/other.jsonl"
has "other harness's bank named" "$T/.err" "bank.json: no heldout alternative for any of the harness's [0-9]+ texts"
[ ! -e "$T/other.jsonl" ] && pass "nothing written for a refused bank" || flunk "nothing written for a refused bank"
fails "evalset: an edited bank" 1 evalset --world "$T/w.json" --harness "$FR" -n 20 --sets variant --bank "$T/badbank.json"
has "edited bank entry named" "$T/.err" "badbank.json: texts/[0-9a-f]+/train/0: adds '7'"

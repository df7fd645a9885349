# ifeval.sh — ifeval against the original checker's verdicts (conformance),
# general-gen records scored by ifeval, splits, --import, bad inputs.
. "$HAT_TOP/tests/cli/lib.sh"; T=$(mktmp)
C="$HAT_CONFORMANCE/ifeval"
need "$C/input_data.jsonl" "$C/sample_responses.jsonl" "$C/sample_expected.json" \
     "$C/synthetic_responses_s1.jsonl" "$C/expected_synthetic_s1.json"

# conformance: per-prompt verdicts and aggregate, for both reference sets
for set in sample:sample_responses:sample_expected synthetic:synthetic_responses_s1:expected_synthetic_s1; do
    name=${set%%:*}; rest=${set#*:}; resp=${rest%%:*}; exp=${rest#*:}
    ok "$name scores" ifeval -i "$C/input_data.jsonl" -s "$T/$name.sum" -o "$T/$name.v" "$C/$resp.jsonl"
    jq -c '.per_prompt[] | {key, strict, loose}' "$C/$exp.json" | sort >"$T/$name.want"
    jq -c '{key, strict, loose}' "$T/$name.v" | sort >"$T/$name.got"
    same "$name per-prompt verdicts match the original" "$T/$name.want" "$T/$name.got"
    jq -n --slurpfile a "$C/$exp.json" --slurpfile b "$T/$name.sum" '
        def close(x; y): (x - y) | fabs < 1e-12;
        [ ($a[0].aggregate | to_entries[]) as $e | close($e.value; $b[0].aggregate[$e.key]) ]
        + [ ("strict","loose") as $m | ("tier0","tier1") as $t |
            ($a[0].by_instruction[$m][$t] | to_entries[]) as $e | close($e.value; $b[0].by_instruction[$m][$t][$e.key]) ]
        + [ $a[0].counts == $b[0].counts ] | all' >"$T/$name.agg"
    has "$name aggregate and per-instruction accuracy match" "$T/$name.agg" '^true$'
done

# responses keyed by prompt text work as well as by key
jq -c '{prompt, response}' "$C/sample_responses.jsonl" >"$T/byprompt.jsonl"
ok "responses matched by prompt" ifeval -i "$C/input_data.jsonl" -o "$T/byprompt.v" "$T/byprompt.jsonl"
same "by prompt = by key" "$T/sample.v" "$T/byprompt.v"

# general-gen: every record passes ifeval strictly, for several seeds and all splits
for seed in 1 2 3; do
    for split in base opd eval dev; do
        general-gen --split $split -n 80 --seed $seed -o "$T/g-$split-$seed.jsonl" 2>/dev/null
        ifeval -s "$T/g.sum" "$T/g-$split-$seed.jsonl" >/dev/null
        jq -e '.aggregate.prompt_level_strict == 1 and .counts.scored == 80' "$T/g.sum" >/dev/null \
            && pass "general-gen $split seed $seed passes ifeval" || flunk "general-gen $split seed $seed passes ifeval" "$(cat "$T/g.sum")"
    done
done
general-gen --split opd -n 80 --seed 1 -o "$T/again.jsonl" 2>/dev/null
same "general-gen same seed same bytes" "$T/g-opd-1.jsonl" "$T/again.jsonl"
jq -r '.prompt' "$T"/g-base-*.jsonl | sort -u >"$T/pb"
jq -r '.prompt' "$T"/g-eval-*.jsonl | sort -u >"$T/pe"
[ -z "$(comm -12 "$T/pb" "$T/pe")" ] && pass "base and eval prompts disjoint" || flunk "base and eval prompts disjoint"
has "records carry ids and messages" "$T/g-base-1.jsonl" '^\{"id":"general-base-1-000000","split":"base","messages":\[\{"role":"user"'
# Each split draws only its own phrasings: the share phrasings[i] with
# i mod 3 = split, then split_phrasings.SPLIT (the opd split's extras), and
# the opd split does draw those extras.  Checked on the phrasings with no
# placeholder, whose text appears in the prompt as it is.
CJ="$HAT_DATA/general/constraints.json"
jq -r '.constraints[] | (.phrasings | to_entries[] | "\(.key % 3)\t\(.value)"),
        ((.split_phrasings // {}) | to_entries[] | .key as $s | .value[] | "\({base:0,opd:1,eval:2,dev:3}[$s])\t\(.)")
       | select(test("[{}]") | not)' "$CJ" >"$T/phr"
general-gen --split opd -n 400 --seed 4 -o "$T/g-opd-4.jsonl" 2>/dev/null
for s in 0:base 1:opd 2:eval 3:dev; do
    i=${s%%:*}
    jq -r '.messages[0].content' $(ls "$T"/g-${s#*:}-*.jsonl) >"$T/pr-$i"
done
wrong=0 extras=0
while IFS="$(printf '\t')" read -r k text; do
    for i in 0 1 2 3; do
        [ "$i" = "$k" ] && continue
        grep -qF -- "$text" "$T/pr-$i" && { wrong=$((wrong + 1)); echo "split $i drew split $k's: $text" >&2; }
    done
done <"$T/phr"
[ "$wrong" = 0 ] && pass "no split draws another split's phrasing" || flunk "no split draws another split's phrasing" "$wrong"
jq -r '.constraints[].split_phrasings.opd[]? | select(test("[{}]") | not)' "$CJ" >"$T/extra"
extras=$(while IFS= read -r text; do grep -qF -- "$text" "$T/pr-1" && echo x; done <"$T/extra" | wc -l)
[ "$extras" -ge $(( $(wc -l <"$T/extra") * 3 / 4 )) ] && pass "the opd split draws its extra phrasings ($extras of $(wc -l <"$T/extra"))" \
    || flunk "the opd split draws its extra phrasings" "$extras of $(wc -l <"$T/extra")"
# The dev split draws its own phrasings and nothing else: all but a few
# of them turn up in 240 prompts, and its prompts share none with another
# split's (checked above phrasing by phrasing).
jq -r '.constraints[].split_phrasings.dev[] | select(test("[{}]") | not)' "$CJ" >"$T/devp"
devn=$(while IFS= read -r text; do grep -qF -- "$text" "$T/pr-3" && echo x; done <"$T/devp" | wc -l)
[ "$devn" -ge $(( $(wc -l <"$T/devp") * 3 / 4 )) ] && pass "the dev split draws its own phrasings ($devn of $(wc -l <"$T/devp"))" \
    || flunk "the dev split draws its own phrasings" "$devn of $(wc -l <"$T/devp")"
has "dev records are named so" "$T/g-dev-1.jsonl" '^\{"id":"general-dev-1-000000","split":"dev"'
# Bad phrasing data, each an edit of one constraint (punctuation:no_comma)
# that general-gen must refuse at load, naming what is wrong.
mkdir -p "$T/d/general"; cp "$HAT_DATA"/general/* "$T/d/general/"
# refused NAME SPLIT EDIT MESSAGE-NAME MESSAGE-REGEX
refused() {
    jq ".constraints[\"punctuation:no_comma\"] |= ($3)" "$CJ" >"$T/d/general/constraints.json"
    fails "$1" 1 env HAT_DATA="$T/d" general-gen --split "$2" -n 1
    has "$4" "$T/.err" "$5"
}
refused "an extra phrasing another split draws" opd '.split_phrasings.opd += [.phrasings[2]]' \
    "names the constraint and the split" 'punctuation:no_comma: split_phrasings.opd\[4\] is phrasings\[2\], which split eval draws'
refused "split_phrasings of no split" opd '.split_phrasings = {"test": ["x"]}' \
    "names the bad split" 'split_phrasings.test: no such split'
refused "a phrasing in the base and eval shares" opd '.phrasings[2] = .phrasings[0]' \
    "names both indices" 'punctuation:no_comma: phrasings\[0\] and \[2\] are the same in splits base and eval'
refused "a constraint with no dev phrasings" base 'del(.split_phrasings.dev)' \
    "names the constraint" 'punctuation:no_comma: no split_phrasings.dev'
refused "a dev phrasing another split draws" dev '.split_phrasings.dev += [.phrasings[1]]' \
    "names the split it comes from" 'punctuation:no_comma: split_phrasings.dev\[2\] is phrasings\[1\], which split opd draws'

# --import of Tulu 3 / OpenAI messages
printf '%s\n' '{"id":"t1","source":"x","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"}]}' \
    '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"2+2?"},{"role":"assistant","content":"4"}]}' >"$T/tulu.jsonl"
ok "import tulu" general-gen --import "$T/tulu.jsonl" --split eval -o "$T/imp.jsonl"
has "import keeps id and messages" "$T/imp.jsonl" '^\{"id":"t1","split":"eval","messages":\[\{"role":"user","content":"Hi"\}'
has "import names the prompt" "$T/imp.jsonl" '"prompt":"2\+2\?","instruction_id_list":\[\],"kwargs":\[\]'
printf '%s\n' '{"messages":[{"role":"user","content":"ok"}]}' '{"messages":[{"role":"user"}]}' >"$T/badimp.jsonl"
fails "import bad record" 1 general-gen --import "$T/badimp.jsonl"
has "import bad record names file:line" "$T/.err" "badimp.jsonl:2: messages\[0\] needs string"
ok "import --skip-bad" general-gen --import "$T/badimp.jsonl" --skip-bad -o "$T/imp2.jsonl"

# bad inputs
printf '%s\n' '{"id":"a","prompt":"x","response":"y","instruction_id_list":["no:such"],"kwargs":[{}]}' >"$T/bad1.jsonl"
fails "unknown instruction id" 1 ifeval "$T/bad1.jsonl"
has "unknown id message" "$T/.err" 'bad1.jsonl:1: unknown instruction id "no:such"'
printf '%s\n' '{"id":"a","response":"y","instruction_id_list":["punctuation:no_comma"],"kwargs":[{}]}' \
    '{"id":"b","response":"y","instruction_id_list":["length_constraints:number_words"],"kwargs":[{"num_words":5}]}' >"$T/bad2.jsonl"
fails "missing kwargs" 1 ifeval "$T/bad2.jsonl"
has "missing kwargs message" "$T/.err" 'bad2.jsonl:2: length_constraints:number_words: missing argument "relation"'
ok "--skip-bad scores the rest" ifeval --skip-bad -o "$T/skip.v" "$T/bad2.jsonl"
has "--skip-bad verdict" "$T/skip.v" '^\{"id":"a".*"follow_instruction_list":\[true\]'
printf '{"key": 1000, "response": \n' >"$T/bad3.jsonl"
fails "bad JSON line" 1 ifeval -i "$C/input_data.jsonl" "$T/bad3.jsonl"
has "bad JSON names file:line" "$T/.err" 'bad3.jsonl:1:'
printf '%s\n' '{"key":999999,"prompt":"nope","response":"x"}' >"$T/bad4.jsonl"
fails "unmatched prompt" 1 ifeval -i "$C/input_data.jsonl" "$T/bad4.jsonl"
fails "unknown option" 2 ifeval --frobnicate
fails "bad split" 2 general-gen --split test
ok "help" ifeval --help
has "help text" "$T/.out" '^usage: ifeval'

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
    for split in base opd eval; do
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

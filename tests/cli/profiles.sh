# profiles.sh — examples/Makefile's profiles resolve to the stages their
# comments promise (make -n: nothing runs): every profile's `results`
# plans a report; PROFILE=small plans the learnable recipe (induction,
# look-up with general chats, 300 cases of each set of the mini harness's
# four intents, SFT on 3,600 worlds' sessions, HSA-SFT on harnesses named
# with made-up words and with HSA's train vocabulary, nine
# models, the teacher's rows); PROFILE=micro starts
# from the committed look-up base unless LOOK= is given; `make results
# PROFILE=micro` is refused.
. "$HAT_TOP/tests/cli/lib.sh"; T=$(mktmp)
E="$HAT_TOP/examples"
plan() { n=$1; shift; make -s -n -C "$E" OUT="$T/out-$n" "$@" 2>&1; }
for p in tiny small paper; do
    plan $p PROFILE=$p results > "$T/$p.plan"
    has "PROFILE=$p: results plans a report" "$T/$p.plan" '^report --cases .*/cases.jsonl'
done
S="$T/small.plan"
has "small: induction head first" "$S" 'sh tools/induction.sh .*/init.ckpt'
has "small: look-up with the general chats" "$S" 'STEPS=800 PICK=0.5 ECHO=0.5 LINE=.* sh tools/lookup.sh .*/ind.ckpt .*/base.ckpt .*/general-base.jsonl'
has "small: the pick lists written as the harness's skill lines" "$S" 'LINE="\$\(jq -r .\.skill_loader\.line // empty. .*/harness\.json\)"'
plan pick PROFILE=small STEPS_PICK=800 results > "$T/pick.plan"
has "small STEPS_PICK=800: the mixed look-up stage writes look.ckpt" "$T/pick.plan" 'PICK=0.5 ECHO=0.5 LINE=.* sh tools/lookup.sh .*/ind.ckpt .*/look.ckpt .*/general-base.jsonl'
has "small STEPS_PICK=800: then pick records only, to the base" "$T/pick.plan" 'STEPS=800 PICK=1 ECHO=0.5 LINE=.* sh tools/lookup.sh .*/look.ckpt .*/base.ckpt$'
has "small: the mini harness writes its skill lines description first" "$HAT_TOP/tests/fixtures/harness-mini/harness.json" '"line": "- {description} -> {name}"'
has "small: the mini preset" "$S" 'model-init --preset mini '
has "small: 300 cases a set, the four intents" "$S" 'evalset .*--per-set 300 --intents price,size,order_status,greeting'
has "small: sessions from 64 worlds" "$S" 'tools/minidata.sh .*/mini 64'
has "small: SFT on 3,600 worlds' sessions" "$S" 'tools/minidata.sh .*/sft3600/ 3600'
has "small: Fixed-SFT trains on them, 3,600 steps" "$S" 'sft-step --init .*/base.ckpt --data .*/sft3600/sessions.jsonl --steps 3600 '
grep -c '^rollout --ckpt .*--tasks-are-cases --judge' "$S" > "$T/nroll"
has "small: nine models rolled out" "$T/nroll" '^9$'
has "small: the teacher's rows" "$S" 'report .*--model teacher=.* --model teacher-fixed='
has "small: HSA-SFT on 2 variants of made-up names" "$S" 'hsa-augment -k 1 --seed 12 --p-skill-id 1 --p-tools 1 --vocab .*/nonce-train .*/sft3600/sessions.jsonl'
has "small: and one of HSA's train vocabulary" "$S" 'hsa-augment -k 1 --mix 0.25 --seed 13 -o .*/sft3600/sessions.jsonl'
has "small: and one named from real words" "$S" 'hsa-augment -k 1 --seed 14 --p-skill-id 1 --p-tools 1 --vocab .*/words-train .*/sft3600/sessions.jsonl'
has "small: the word vocabulary" "$S" 'sh tools/nonce-vocab.sh 3 .*/words-train/ words'
has "small: HSA-SFT trains on them, 3,600 steps" "$S" 'sft-step --init .*/base.ckpt --data .*/hsa-nonce1-w3600-real1-words1.jsonl --steps 3600 '
grep 'sft-step --init .*/base.ckpt --data .*/hsa.jsonl' "$T/tiny.plan" > "$T/tinyhsa"
has "tiny: HSA-SFT on hsa.jsonl as before" "$T/tinyhsa" 'hsa.jsonl'
has "small: HAT is GRPO on HSA-SFT after OPD" "$S" 'grpo-step .*--init .*/hsa-sft-opd.ckpt --metrics .*/hat.jsonl'
has "small: GRPO's KL term is to the model it starts from" "$S" 'grpo-step .*--beta 0\.04 --ref .*/hsa-sft\.ckpt --init .*/hsa-sft\.ckpt --metrics .*/abl-no-opd\.jsonl'
# GRPO trains on a training world's tasks, never on the world the
# evaluation's cases come from (session 17).
has "small: GRPO's world is a training world" "$S" 'world-gen --seed 101 --products 40 -o .*/rl-world.json'
has "small: GRPO's tasks come from it" "$S" 'task-gen --world .*/rl-world.json '
grep '^grpo-step ' "$S" | grep -c -- '--world .*/rl-world.json ' > "$T/nrl"
has "small: all four GRPO runs on it" "$T/nrl" '^4$'
hasnt "small: no GRPO run on the evaluation's world" "$S" '^grpo-step --world .*/world.json '
# OPD as session 22 chose it on the dev split: the forward KL on the
# base's completions, rendered without thinking, replaying each model's
# own SFT data at weight 2.
has "small: OPD 1,000 steps, forward KL on the base's completions" "$S" \
    'opd-step --init .*/hsa-sft.ckpt .*--steps 1000 .*--teacher-samples 2 --kl forward --no-thinking --lr 1e-3'
has "small: OPD replays HSA-SFT's own data" "$S" '^ *--replay .*/hsa-nonce1-w3600-real1-words1.jsonl --replay-batch 4 .*--replay-weight 2'
has "small: and Fixed-SFT's" "$S" '^ *--replay .*/sft3600/sessions.jsonl --replay-batch 4 .*--replay-weight 2'
plan noreplay PROFILE=small OPD_REPLAY=0 results > "$T/noreplay.plan"
hasnt "small OPD_REPLAY=0: no replay" "$T/noreplay.plan" '^ *--replay '
# dev-MODEL's robust sets: the evaluation's kinds from train phrasings
# (robust) and from the fresh ones (robust-fresh), with dev text banks.
plan dev PROFILE=small dev-hsa-sft > "$T/dev.plan"
has "small dev: a robust set from train phrasings and dev banks" "$T/dev.plan" \
    '^evalset .*/mini/dev/world.json .*--config tools/dev-sets.json'
has "small dev: robust-fresh from a data directory of fresh phrasings" "$T/dev.plan" \
    '^HAT_DATA=.*/data-fresh evalset '
has "small dev: both sets from the train split, 200 cases" "$T/dev.plan" \
    '--split train --sets robust --per-set 200 --intents price,size,order_status,greeting --seed 77 -o .*/robust-fresh.jsonl'
has "small dev: both rolled out" "$T/dev.plan" 'for v in variant unseen unseen-p1 real real-p1 robust robust-fresh'
plan mix PROFILE=small HSA_MIX=0 results > "$T/mix.plan"
has "small HSA_MIX=0: the mixed sets augment every session" "$T/mix.plan" 'hsa-augment -k 1 --mix 0 --seed 13 -o .*/sft3600/sessions.jsonl'
has "small HSA_MIX=0: in a data file of its own" "$T/mix.plan" 'sft-step --init .*/base.ckpt --data .*/hsa-nonce1-w3600-mix0-real1-words1.jsonl'
plan fixed PROFILE=small HSA_FIXED=1 results > "$T/fixed.plan"
has "small HSA_FIXED=1: Fixed-SFT's sessions added" "$T/fixed.plan" 'do cat .*/sft3600/sessions.jsonl; done; } > .*-fixed1.jsonl.tmp'
# The dev sets real and real-p1 are named from words that neither HSA
# vocabulary has (else they would measure names a model trained on).
jq -r '[.. | strings | select(. != "")] | .[]' "$E/tools/dev-names.json" | sort -u > "$T/devw"
jq -r '[del(.distractors) | .. | strings] | .[]' "$HAT_DATA/hsa/train/names.json" "$HAT_DATA/hsa/heldout/names.json" |
    sort -u | comm -12 "$T/devw" - > "$T/clash"
[ "$(wc -l < "$T/devw")" -gt 200 ] && [ ! -s "$T/clash" ] && pass "dev names share no word with HSA's vocabularies" ||
    flunk "dev names share no word with HSA's vocabularies" "$(head -3 "$T/clash")"
# The word vocabulary of HSA_WORDS renames with real words, none of them a
# word of the held-out vocabulary (the evaluation's) or of the dev names.
sh "$E/tools/nonce-vocab.sh" 3 "$T/wv" words
jq -r '[.skills[].heads, .skill_tails, .loader[], (.tools[] | .verbs, .nouns), .params[].heads] | flatten | .[]' "$T/wv/names.json" | tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | sort -u > "$T/wvw"
jq -r '.. | strings' "$HAT_DATA/hsa/heldout/names.json" "$E/tools/dev-names.json" | tr -cs 'A-Za-z' '\n' |
    tr 'A-Z' 'a-z' | sort -u | comm -12 "$T/wvw" - > "$T/wclash"
[ "$(wc -l < "$T/wvw")" -gt 3000 ] && [ ! -s "$T/wclash" ] && pass "word vocabulary: thousands of words, none a held-out or dev word" ||
    flunk "word vocabulary: thousands of words, none a held-out or dev word" "$(wc -l < "$T/wvw") $(head -3 "$T/wclash")"
plan micro PROFILE=micro micro > "$T/micro.plan"
has "micro: the committed look-up base" "$T/micro.plan" '^cp \.\./tests/fixtures/learn/base\.ckpt .*/micro/look\.ckpt'
plan micro PROFILE=micro LOOK= micro > "$T/micro2.plan"
has "micro LOOK=: induction and look-up afresh" "$T/micro2.plan" 'sh tools/lookup.sh .*/micro/base.ckpt .*/micro/look.ckpt'
fails "micro: results refused" 2 make -s -n -C "$E" OUT="$T/o" PROFILE=micro results
# A stage that fails inside a recipe's pipe fails the recipe, and the
# target is not made: a general-gen that refuses the split (as an older
# build refused "dev") once left an empty dev IFEval set behind.
mkdir -p "$T/badbin"; printf '#!/bin/sh\necho "general-gen: refused" >&2; exit 2\n' > "$T/badbin/general-gen"
chmod +x "$T/badbin/general-gen"
fails "a failing stage inside a pipe fails the recipe" 2 \
    make -s -C "$E" PROFILE=small OUT="$T/pf" PATH="$T/badbin:$PATH" "$T/pf/dev/ifeval-prompts.jsonl"
[ ! -e "$T/pf/dev/ifeval-prompts.jsonl" ] && pass "and leaves no target behind" ||
    flunk "and leaves no target behind" "$(wc -l < "$T/pf/dev/ifeval-prompts.jsonl") lines"
# results ends with issue 21's acceptance, read from the report's JSON
has "small: results writes the acceptance lines" "$S" "jq -c --arg run out-small -f tools/acceptance.jq .*/results.json"
jq -c --arg run e35 -f "$E/tools/acceptance.jq" "$E/results/small-e35.json" > "$T/acc35"
has "acceptance.jq: e35's variant gap +11.3, intervals apart, missed" "$T/acc35" '"variant_gap":{"hsa":48,"fixed":36.667,"gap":11.3,"apart":true,"met":false}'
has "acceptance.jq: e35's HSA-SFT live 0.3 under Fixed-SFT - 5, missed" "$T/acc35" '"hsa_live":{"hsa":84.667,"fixed":90,"met":false}'
has "acceptance.jq: e35's OPD live cost 6.0 and 7.3, missed" "$T/acc35" '"opd_live_cost":{"fixed":6,"hsa":7.3,"met":false}'
jq -c --arg run e31 -f "$E/tools/acceptance.jq" "$E/results/small-e31.json" > "$T/acc31"
has "acceptance.jq: e31's IFEval after OPD within 2 of the base, met" "$T/acc31" '"ifeval_opd":{"fixed_opd":8,"hsa_opd":8.667,"met":true}'
jq -c --arg run e37 -f "$E/tools/acceptance.jq" "$E/results/small-e37.json" > "$T/acc37"
has "acceptance.jq: e37's variant gap +16.0, intervals apart, met" "$T/acc37" '"variant_gap":{"hsa":55.333,"fixed":39.333,"gap":16,"apart":true,"met":true}'
cat "$T/acc31" "$T/acc37" | jq -r -s -f "$E/tools/acceptance-table.jq" > "$T/acctab"
has "acceptance-table.jq: a row a run, a missed line marked" "$T/acctab" '^e37  *94\.3  *55\.3/39\.3, \+16\.0  *94\.3 .* 9\.0/6\.3 no '
has "acceptance-table.jq: a negative cost keeps its sign" "$T/acctab" '^e31 .* -0\.3/1\.0 '
# PROFILE=small's OPD trains on the records the base passes and the SFT
# model fails (OPD_SELECT=1); OPD_SELECT=0 on the whole opd split
has "small: the SFT model's answers to the opd split, checked" "$S" 'generate --ckpt .*/fixed-sft.ckpt --max-tokens 128 .*/opd-select/prompts.jsonl'
has "small: OPD trains on the selection" "$S" 'metrics/fixed-sft-opd.jsonl -o .*/fixed-sft-opd.ckpt .*/opd-select/fixed-sft.jsonl$'
plan nosel PROFILE=small OPD_SELECT=0 results > "$T/nosel.plan"
has "small OPD_SELECT=0: OPD on the whole split" "$T/nosel.plan" 'metrics/hsa-sft-opd.jsonl -o .*/hsa-sft-opd.ckpt .*/general-opd.jsonl$'
# the selection itself: the records whose id the base's answers pass and
# the model's fail, in the split's order
mkdir -p "$T/sel/opd-select/answers"
for i in a b c d; do echo "{\"id\":\"$i\",\"messages\":[]}"; done > "$T/sel/general-opd.jsonl"
printf '%s\n' '{"id":"a","strict":{"follow_all_instructions":true}}' '{"id":"b","strict":{"follow_all_instructions":true}}' \
    '{"id":"c","strict":{"follow_all_instructions":false}}' '{"id":"d","strict":{"follow_all_instructions":true}}' > "$T/sel/opd-select/answers/base.jsonl"
printf '%s\n' '{"id":"a","strict":{"follow_all_instructions":true}}' '{"id":"b","strict":{"follow_all_instructions":false}}' \
    '{"id":"c","strict":{"follow_all_instructions":false}}' '{"id":"d","strict":{"follow_all_instructions":false}}' > "$T/sel/opd-select/answers/fixed-sft.jsonl"
timeout 60 make -s -C "$E" PROFILE=small OUT="$T/sel" -o "$T/sel/base.ckpt" -o "$T/sel/fixed-sft.ckpt" \
    -o "$T/sel/opd-select/prompts.jsonl" -o "$T/sel/general-opd.jsonl" "$T/sel/opd-select/fixed-sft.jsonl" > "$T/sel.out" 2>&1
jq -r .id "$T/sel/opd-select/fixed-sft.jsonl" 2>/dev/null | tr '\n' ' ' > "$T/sel.ids"
has "small: OPD's selection is what the base passes and the model fails" "$T/sel.ids" '^b d $'

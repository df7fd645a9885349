# judge_heldout5.sh — the fifth blind held-out part of the human-labelled judge
# set (tests/fixtures/judge/human/heldout5.*) stays well-formed and reproducible,
# without running the judge on it: one label per trajectory, labels in range,
# the eight kinds, a task for every trajectory, its own world (world5.json,
# world-gen --seed 59), the fresh harness5/ about half of it runs under (its own
# limits and banned terms, no text shared with the other harnesses), every line
# renders under its own harness, the teacher plays every intent under harness5,
# some requests are served by no tool, and src/heldout5.material.sh (with
# src/heldout5.pins.jsonl, see src/pin.py) + src/build.py rebuild the three files
# byte for byte.  Scoring it (agreement
# with the judge) is left to whoever measures the judge (the set's README).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/tests/fixtures/judge/human"
need "$H/harness.json" "$H/world5.json" "$H/harness5/harness.json" \
     "$H/heldout5.traj.jsonl" "$H/heldout5.labels.jsonl" "$H/heldout5.tasks.jsonl" \
     "$H/src/heldout5.cases.txt" "$H/src/heldout5.material.sh" "$H/src/build.py"
. "$HAT_TOP/tests/cli/judge_set.inc"
labelled_set heldout5 200
[ "$(grep -c '^=== src=' "$H/src/heldout5.cases.txt")" -eq "$cnt" ] && pass "one written case per trajectory" \
    || flunk "one written case per trajectory"
# a reply the simulator held cannot have served the viewer (unless the hold was dropped as a known bug)
nh=$(jq -s '[.[]|select(.sim_held and (.sim_held|test("hold dropped")|not) and .effectiveness != 0)]|length' "$H/heldout5.labels.jsonl")
[ "$nh" -eq 0 ] && pass "held replies have effectiveness 0" || flunk "held replies have effectiveness 0" "$nh"
# no kind outweighs the rest: correct paraphrases are at most a third
npar=$(jq -s '[.[]|select(.kind=="paraphrase")]|length' "$H/heldout5.labels.jsonl")
[ $((npar * 3)) -le "$cnt" ] && pass "paraphrases at most a third ($npar of $cnt)" || flunk "paraphrases at most a third" "$npar of $cnt"
# both task splits
for s in train eval; do
    ns=$(jq -s --arg s "$s" '[.[]|select(.context.split==$s)]|length' "$H/heldout5.tasks.jsonl")
    [ "$ns" -ge 50 ] && pass "50 or more $s tasks ($ns)" || flunk "50 or more $s tasks" "$ns"
done
ni=$(jq -r .intent "$H/heldout5.tasks.jsonl" | sort -u | grep -c .)
[ "$ni" -eq 15 ] && pass "all 15 intents" || flunk "all 15 intents" "$ni"
# new sources in a new world: no source trajectory of another part, world5 is
# world-gen --seed 59 and none of the other parts' worlds
jq -r .meta.source "$H/dev.traj.jsonl" "$H/heldout.traj.jsonl" "$H/heldout2.traj.jsonl" "$H/heldout3.traj.jsonl" "$H/heldout4.traj.jsonl" | sort -u >"$T/old"
jq -r .meta.source "$H/heldout5.traj.jsonl" | sort >"$T/new"
[ -z "$(comm -12 "$T/old" "$T/new")" ] && pass "sources differ from the other parts" || flunk "sources differ" "$(comm -12 "$T/old" "$T/new" | head -3)"
[ "$(sort -u "$T/new" | grep -c .)" -eq "$cnt" ] && pass "one case per source" || flunk "one case per source"
ok "world-gen --seed 59" world-gen --seed 59 -o "$T/w5.json"
same "world5.json is world-gen --seed 59" "$H/world5.json" "$T/w5.json"
if cmp -s "$H/world5.json" "$H/world.json" || cmp -s "$H/world5.json" "$H/world3.json" || cmp -s "$H/world5.json" "$H/world4.json"; then
    flunk "world5 is a new world"; else pass "world5 is a new world"; fi
traj_wellformed heldout5
# the fresh harness: lints, is canonical, shares no text with examples/harness,
# examples/harness-compact, tests/fixtures/harness-mini, harness3 or harness4 (not
# a whole string and not one sentence), and has limits and banned terms of its own
fresh_harness harness5 "$T/h5.json"
texts() { jq -r '[..|strings|select(length > 20)]|.[]' "$1" | sort -u; }
texts "$T/h5.json" >"$T/t5"
harness-pack "$HAT_TOP/examples/harness" >"$T/ex.json"
harness-pack "$HAT_TOP/examples/harness-compact" >"$T/exc.json"
harness-pack "$H/harness3" >"$T/h3.json"
harness-pack "$H/harness4" >"$T/h4.json"
harness-pack "$HAT_TOP/tests/fixtures/harness-mini" >"$T/hm.json"
{ texts "$T/ex.json"; texts "$T/exc.json"; texts "$T/h3.json"; texts "$T/h4.json"; texts "$T/hm.json"; } | sort -u >"$T/tex"
[ -z "$(comm -12 "$T/t5" "$T/tex")" ] && pass "harness5 shares no text with examples/harness(-compact), harness-mini, harness3, harness4" \
    || flunk "harness5 shares text" "$(comm -12 "$T/t5" "$T/tex" | head -3)"
# sentences: every string cut at . ; : ! ? and list dashes, lower-cased, 16+ characters
# and at least two words (ids such as shipping.estimate are shared by design)
sents() { jq -r '[..|strings]|.[]' "$1" | sed 's/[.;:!?] /\n/g; s/^[- ]*//' | tr 'A-Z' 'a-z' | awk 'length >= 16 && / /' | sort -u; }
sents "$T/h5.json" >"$T/s5"
{ for f in ex exc h3 h4 hm; do sents "$T/$f.json"; done; } | sort -u >"$T/so"
[ -z "$(comm -12 "$T/s5" "$T/so")" ] && pass "harness5 shares no sentence with the other harnesses" \
    || flunk "harness5 shares a sentence" "$(comm -12 "$T/s5" "$T/so" | head -3)"
own_set 5 "$T/ex.json" "$T/h3.json" "$T/h4.json"

# judge_heldout4.sh — the fourth blind held-out part of the human-labelled judge
# set (tests/fixtures/judge/human/heldout4.*) stays well-formed and reproducible,
# without running the judge on it: one label per trajectory, labels in range,
# the eight kinds, a task for every trajectory, its own world (world4.json,
# world-gen --seed 41), the fresh harness4/ about half of it runs under (its own
# limits and banned terms, no text shared with the other harnesses), every line
# renders under its own harness, the teacher plays every intent under harness4,
# some requests are served by no tool, and src/heldout4.material.sh (with
# src/heldout4.pins.jsonl, see src/pin.py) + src/build.py rebuild the three files
# byte for byte.  Scoring it (agreement
# with the judge) is left to whoever measures the judge (the set's README).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/tests/fixtures/judge/human"
need "$H/harness.json" "$H/world4.json" "$H/harness4/harness.json" \
     "$H/heldout4.traj.jsonl" "$H/heldout4.labels.jsonl" "$H/heldout4.tasks.jsonl" \
     "$H/src/heldout4.cases.txt" "$H/src/heldout4.material.sh" "$H/src/build.py"
. "$HAT_TOP/tests/cli/judge_set.inc"
labelled_set heldout4 200
[ "$(grep -c '^=== src=' "$H/src/heldout4.cases.txt")" -eq "$cnt" ] && pass "one written case per trajectory" \
    || flunk "one written case per trajectory"
# a reply the simulator held cannot have served the viewer (unless the hold was dropped as a known bug)
nh=$(jq -s '[.[]|select(.sim_held and (.sim_held|test("hold dropped")|not) and .effectiveness != 0)]|length' "$H/heldout4.labels.jsonl")
[ "$nh" -eq 0 ] && pass "held replies have effectiveness 0" || flunk "held replies have effectiveness 0" "$nh"
# no kind outweighs the rest: correct paraphrases are at most a third
npar=$(jq -s '[.[]|select(.kind=="paraphrase")]|length' "$H/heldout4.labels.jsonl")
[ $((npar * 3)) -le "$cnt" ] && pass "paraphrases at most a third ($npar of $cnt)" || flunk "paraphrases at most a third" "$npar of $cnt"
# both task splits
for s in train eval; do
    ns=$(jq -s --arg s "$s" '[.[]|select(.context.split==$s)]|length' "$H/heldout4.tasks.jsonl")
    [ "$ns" -ge 50 ] && pass "50 or more $s tasks ($ns)" || flunk "50 or more $s tasks" "$ns"
done
ni=$(jq -r .intent "$H/heldout4.tasks.jsonl" | sort -u | grep -c .)
[ "$ni" -eq 15 ] && pass "all 15 intents" || flunk "all 15 intents" "$ni"
# new sources in a new world: no source trajectory of another part, world4 is
# world-gen --seed 41 and none of the other parts' worlds
jq -r .meta.source "$H/dev.traj.jsonl" "$H/heldout.traj.jsonl" "$H/heldout2.traj.jsonl" "$H/heldout3.traj.jsonl" | sort -u >"$T/old"
jq -r .meta.source "$H/heldout4.traj.jsonl" | sort >"$T/new"
[ -z "$(comm -12 "$T/old" "$T/new")" ] && pass "sources differ from the other parts" || flunk "sources differ" "$(comm -12 "$T/old" "$T/new" | head -3)"
[ "$(sort -u "$T/new" | grep -c .)" -eq "$cnt" ] && pass "one case per source" || flunk "one case per source"
ok "world-gen --seed 41" world-gen --seed 41 -o "$T/w4.json"
same "world4.json is world-gen --seed 41" "$H/world4.json" "$T/w4.json"
if cmp -s "$H/world4.json" "$H/world.json" || cmp -s "$H/world4.json" "$H/world3.json"; then
    flunk "world4 is a new world"; else pass "world4 is a new world"; fi
traj_wellformed heldout4
# the fresh harness: lints, is canonical, shares no text with examples/harness,
# examples/harness-compact or harness3, and has limits and banned terms of its own
fresh_harness harness4 "$T/h4.json"
texts() { jq -r '[..|strings|select(length > 20)]|.[]' "$1" | sort -u; }
texts "$T/h4.json" >"$T/t4"
harness-pack "$HAT_TOP/examples/harness" >"$T/ex.json"
harness-pack "$HAT_TOP/examples/harness-compact" >"$T/exc.json"
harness-pack "$H/harness3" >"$T/h3.json"
{ texts "$T/ex.json"; texts "$T/exc.json"; texts "$T/h3.json"; } | sort -u >"$T/tex"
[ -z "$(comm -12 "$T/t4" "$T/tex")" ] && pass "harness4 shares no text with examples/harness(-compact) and harness3" \
    || flunk "harness4 shares text" "$(comm -12 "$T/t4" "$T/tex" | head -3)"
own_set 4 "$T/ex.json" "$T/h3.json"

# hsa_rules.sh — skill-content's added rules (rules.json of a vocabulary):
# drawn from the vocabulary's own bank, inserted where the op says, shown
# in the loaded skill's text of a relabelled trajectory, the train and
# held-out banks disjoint and new to every harness the project ships, a
# vocabulary without rules.json adds none, and a bad bank refused with
# its file and index.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
FX="$HAT_TOP/tests/fixtures/hsa/traj.jsonl"
D="$HAT_TOP/data/hsa"
MINI="$HAT_TOP/tests/fixtures/harness-mini"

# Harness only, skill-content at p=1: every added rule is its own bank's
# and sits at the recorded index of the named skill's rules.
for v in train heldout; do
    ok "harness-only, $v" hsa-augment --harness "$MINI" --harness-only --dims skill-content --p 1 \
        -k 40 --seed 4 --vocab $v -o "$T/$v.jsonl"
    jq -c '.meta.hsa[] | select(.op == "add_rule") | {rule}' "$T/$v.jsonl" >"$T/$v.ops"
    n=$(wc -l <"$T/$v.ops")
    [ "$n" -ge 20 ] && pass "$v: rules added ($n in 40 variants)" || flunk "$v: rules added" "$n"
    jq -r '.added[]' "$D/$v/rules.json" | sort >"$T/$v.bank"
    jq -r .rule "$T/$v.ops" | sort -u >"$T/$v.used"
    [ -z "$(comm -13 "$T/$v.bank" "$T/$v.used")" ] && pass "$v: every added rule from its own bank" ||
        flunk "$v: every added rule from its own bank" "$(comm -13 "$T/$v.bank" "$T/$v.used" | head -2)"
done
# Where the op says: after the skill-content ops of a variant, the skill
# holds the rule (reorder may move it later, so no index is checked there).
bad=$(jq -c '.harness as $h | .meta.hsa[] | select(.op == "add_rule") as $o
             | select([$h.skills[] | select(.name == $o.skill) | .rules[] | select(. == $o.rule)] | length != 1)' \
          "$T/train.jsonl" | wc -l)
[ "$bad" -eq 0 ] && pass "each added rule is in its skill once" || flunk "each added rule is in its skill once" "$bad"
# A skill that gained one rule and was not reordered holds it at the
# recorded index.
jq -c '.harness as $h | .meta.hsa as $ops | $ops[] | select(.op == "add_rule") as $o
       | select([$ops[] | select(.skill == $o.skill and (.op == "add_rule" or .op == "reorder_rules"))] | length == 1)
       | {ok: ([$h.skills[] | select(.name == $o.skill) | .rules[$o.at]] == [$o.rule])}' "$T/train.jsonl" >"$T/at"
n=$(wc -l <"$T/at"); bad=$(grep -c '"ok":false' "$T/at" || true)
[ "$n" -ge 5 ] && [ "$bad" -eq 0 ] && pass "added at the recorded index ($n)" || flunk "added at the recorded index" "$n checked, $bad wrong"

# The banks: disjoint, and no rule of a harness the project ships (the
# evolution test's next-week harness included) is in either.
[ -z "$(comm -12 "$T/train.bank" "$T/heldout.bank")" ] && pass "train and held-out banks disjoint" ||
    flunk "train and held-out banks disjoint" "$(comm -12 "$T/train.bank" "$T/heldout.bank" | head -2)"
for h in examples/harness examples/harness-compact examples/harness-mini-next tests/fixtures/harness-mini; do
    harness-pack "$HAT_TOP/$h" | jq -r '.skills[].rules[]' | sort -u >"$T/hr"
    [ -z "$(sort -u "$T/train.bank" "$T/heldout.bank" | comm -12 - "$T/hr")" ] && pass "no bank rule is one of $h's" ||
        flunk "no bank rule is one of $h's" "$(sort -u "$T/train.bank" "$T/heldout.bank" | comm -12 - "$T/hr" | head -2)"
done

# With trajectories: a loaded skill that gained a rule shows it in the
# loader's result, and the variant stays valid.
ok "trajectories" hsa-augment --dims skill-content --p 1 -k 8 --seed 2 -o "$T/tr.jsonl" "$FX"
hasnt "all valid" "$T/tr.jsonl" '"hsa_valid":false'
jq -c '. as $r | .meta.hsa[] | select(.op == "add_rule") as $o
       | [$r.messages[] | select(.role == "tool") | .content | select(startswith("# " + $o.skill + "\n"))] as $loads
       | select($loads | length > 0) | {rule: $o.rule, shown: ($loads | all(contains($o.rule)))}' "$T/tr.jsonl" >"$T/shown"
n=$(wc -l <"$T/shown"); nb=$(grep -c '"shown":false' "$T/shown" || true)
[ "$n" -gt 0 ] && [ "$nb" -eq 0 ] && pass "added rules shown where the skill is loaded ($n)" ||
    flunk "added rules shown where the skill is loaded" "$n loads, $nb without the rule"

# A vocabulary without rules.json adds nothing; a bad bank is refused.
mkdir "$T/v"; cp "$D/train/names.json" "$D/train/paraphrases.json" "$D/train/hooks.json" "$D/train/rewrite.json" "$T/v/"
ok "no rules.json" hsa-augment --harness "$MINI" --harness-only --dims skill-content --p 1 -k 20 --seed 4 \
    --vocab "$T/v" -o "$T/none.jsonl"
hasnt "no rule added" "$T/none.jsonl" '"op":"add_rule"'
printf '{"added": ["Keep it under 3 lines."]}\n' >"$T/v/rules.json"
fails "a digit in a rule" 1 hsa-augment --harness "$MINI" --harness-only --vocab "$T/v"
has "file and index named" "$T/.err" "rules.json.*added\[0\]: holds a digit"
printf '{"added": ["Be kind.", "Be kind."]}\n' >"$T/v/rules.json"
fails "a repeated rule" 1 hsa-augment --harness "$MINI" --harness-only --vocab "$T/v"
has "repeat named" "$T/.err" "added\[1\]: repeats an earlier rule"
printf '{"added": "Be kind."}\n' >"$T/v/rules.json"
fails "not an array" 1 hsa-augment --harness "$MINI" --harness-only --vocab "$T/v"
has "not an array named" "$T/.err" '"added": not an array'

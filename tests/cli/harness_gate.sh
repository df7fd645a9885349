# harness_gate.sh — every program that reads a harness validates it as
# harness-lint does (issue 17 item 5): errors stop it with lint's message,
# warnings are printed and it goes on; a SKILL.md whose front matter is
# not closed gives that one error and no second, false one.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
EX="$HAT_TOP/examples/harness"
FX="$HAT_TOP/tests/fixtures/harness"
need "$EX/harness.json" "$FX/warn_only.json"

world-gen --seed 1 --products 20 -o "$T/w.json"
task-gen --world "$T/w.json" -n 4 --seed 2 -o "$T/t.jsonl"
traj-gen --world "$T/w.json" --harness "$EX" -o "$T/good.jsonl" "$T/t.jsonl"

# a skill with an unknown function: lint rejects it, and so does every reader
cp -R "$EX" "$T/bad"
sed -i 's/^function: size$/function: sizing/' "$T/bad/skills/size_advisor/SKILL.md"
msg='bad/skills/size_advisor/SKILL.md: /skills/2/function: unknown skill function "sizing"'
fails "lint rejects it" 1 harness-lint "$T/bad"
fails "pack refuses it" 1 harness-pack "$T/bad"
has "pack says what lint says" "$T/.err" "^harness-pack: .*$msg"
fails "traj-gen refuses it" 1 traj-gen --world "$T/w.json" --harness "$T/bad" "$T/t.jsonl"
has "traj-gen says what lint says" "$T/.err" "^traj-gen: .*$msg"
fails "hsa-augment refuses it" 1 hsa-augment --harness-only --harness "$T/bad"
has "hsa-augment says what lint says" "$T/.err" "^hsa-augment: .*$msg"
fails "harness-render refuses it" 1 harness-render --harness "$T/bad"
fails "judge --harness refuses it" 1 judge --world "$T/w.json" --tasks "$T/t.jsonl" --harness "$T/bad" "$T/good.jsonl"
timeout 20 serve --policy teacher --world "$T/w.json" --harness "$T/bad" --stdio </dev/null >"$T/.out" 2>"$T/.err"
rc=$?
[ "$rc" -eq 1 ] && pass "serve refuses it at start-up" || flunk "serve refuses it at start-up" "exit $rc: $(head -c 300 "$T/.err")"
has "serve says what lint says" "$T/.err" "$msg"

# the same harness inline in trajectories: the judge scores none of them
harness-pack "$EX" >"$T/h.json"
jq -c '.skills[2].function = "sizing"' "$T/h.json" >"$T/hbad.json"
jq -c --slurpfile h "$T/hbad.json" '.harness = $h[0]' "$T/good.jsonl" >"$T/badinline.jsonl"
fails "judge refuses an inline harness lint rejects" 1 judge --world "$T/w.json" --tasks "$T/t.jsonl" "$T/badinline.jsonl"
has "judge names line and path" "$T/.err" "badinline.jsonl:1: harness /skills/2/function: unknown skill function"
judge --skip-bad --world "$T/w.json" --tasks "$T/t.jsonl" "$T/badinline.jsonl" >"$T/v.jsonl" 2>"$T/.err"
[ ! -s "$T/v.jsonl" ] && pass "no verdict for such a trajectory" || flunk "no verdict for such a trajectory" "$(head -c 300 "$T/v.jsonl")"
ok "the good ones still judge" judge --world "$T/w.json" --tasks "$T/t.jsonl" -o "$T/v2.jsonl" "$T/good.jsonl"
[ "$(jq -s 'map(select(.pass)) | length' "$T/v2.jsonl")" -eq 4 ] && pass "and pass" || flunk "and pass"

# warnings: printed, and the program goes on
ok "pack goes on after a warning" harness-pack -o "$T/w_only.json" "$FX/warn_only.json"
has "the warning is printed" "$T/.err" "^harness-pack: .*/hooks/mood_check: warning: unknown hook \"mood_check\""

# a SKILL.md whose front matter is never closed: one error, the right one
cp -R "$EX" "$T/open"
awk 'NR == 1 || $0 != "---" || seen++ { print }' "$EX/skills/price_promo/SKILL.md" | awk 'BEGIN{n=0} { if ($0 == "---") n++; if (!(n == 2 && $0 == "---")) print }' >"$T/open/skills/price_promo/SKILL.md"
[ "$(grep -c '^---$' "$T/open/skills/price_promo/SKILL.md")" -eq 1 ] && pass "fixture: one --- left" || flunk "fixture: one --- left"
fails "lint of an unclosed front matter" 1 harness-lint "$T/open"
has "the one error says so" "$T/.err" "open/skills/price_promo/SKILL.md:1: front matter not closed by \"---\"$"
[ "$(wc -l <"$T/.err")" -eq 1 ] && pass "and is the only one" || flunk "and is the only one" "$(cat "$T/.err")"
fails "pack says the same" 1 harness-pack "$T/open"
[ "$(wc -l <"$T/.err")" -eq 1 ] && pass "pack: one error" || flunk "pack: one error" "$(cat "$T/.err")"
rm -rf "$T"

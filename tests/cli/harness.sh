# harness.sh — the five harness programs from the command line: pack/unpack
# round trips, lint messages and exit codes, diff, render, option errors.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
EX="$HAT_TOP/examples/harness"
FX="$HAT_TOP/tests/fixtures/harness"

# --- pack / unpack ---------------------------------------------------------
ok "pack example" harness-pack -o "$T/h.json" "$EX"
[ "$(wc -l <"$T/h.json")" -eq 1 ] && pass "pack writes one line" || flunk "pack writes one line"
harness-pack "$EX" >"$T/h2.json"
same "pack is deterministic" "$T/h.json" "$T/h2.json"
ok "unpack into a new dir" harness-unpack -o "$T/dir" "$T/h.json"
if diff -r "$EX" "$T/dir" >/dev/null; then pass "unpack reproduces the example files"; else flunk "unpack reproduces the example files" "$(diff -r "$EX" "$T/dir" | head -5)"; fi
harness-pack "$T/dir" >"$T/h3.json"
same "pack(unpack(pack)) == pack" "$T/h.json" "$T/h3.json"
harness-unpack -o "$T/dir2" <"$T/h.json" && pass "unpack reads stdin" || flunk "unpack reads stdin"
fails "unpack refuses a non-empty dir" 1 harness-unpack -o "$T/dir" "$T/h.json"
has "refusal names --force" "$T/.err" "^harness-unpack: .*/dir: directory exists and is not empty"
echo junk >"$T/dir/junk"
ok "unpack --force replaces" harness-unpack --force -o "$T/dir" "$T/h.json"
[ ! -e "$T/dir/junk" ] && pass "--force leaves no stale files" || flunk "--force leaves no stale files"
ls "$T" | grep -q '\.tmp\|\.old' && flunk "no temporary dirs left" || pass "no temporary dirs left"
fails "unpack needs -o" 2 harness-unpack "$T/h.json"
(cd "$HAT_TOP/examples" && tar czf "$T/h.tar.gz" harness)
harness-pack "$T/h.tar.gz" >"$T/h4.json"
same "pack of a tar.gz == pack of the dir" "$T/h.json" "$T/h4.json"
harness-pack - <"$T/h.tar.gz" >"$T/h5.json"
same "pack of a tar.gz on stdin" "$T/h.json" "$T/h5.json"
fails "pack of a broken front matter" 1 harness-pack "$FX/bad_front_matter"
has "error names file and line" "$T/.err" "^harness-pack: .*bad_front_matter/prompt/10-persona.md:2: expected \"key: value\" in front matter$"
fails "pack of a missing path" 1 harness-pack "$T/nope"
has "missing path message" "$T/.err" "^harness-pack: .*/nope: cannot open"

# --- lint ------------------------------------------------------------------
ok "example lints clean" harness-lint "$EX"
[ -s "$T/.err" ] && flunk "clean lint is silent" || pass "clean lint is silent"
fails "lint finds errors" 1 harness-lint "$FX/bad_lint.json"
has "duplicate tool" "$T/.err" "^harness-lint: .*bad_lint.json: /tools/1/name: duplicate tool name \"get_product\""
has "unknown function" "$T/.err" "/tools/0/function: unknown tool function \"product.search\""
has "bad regex with offset" "$T/.err" "/hooks/input_check/patterns/0: bad regex at offset 5: missing closing parenthesis"
has "param range" "$T/.err" "/system_prompt/blocks/1/params/max_chars/value: value 999 outside \[60, 200\]"
has "bad kind" "$T/.err" "/skills/3/kind: kind must be reply or strategy"
[ "$(wc -l <"$T/.err")" -eq 5 ] && pass "all five problems at once" || flunk "all five problems at once" "$(cat "$T/.err")"
harness-lint --json "$FX/bad_lint.json" >"$T/lint.jsonl"
[ "$(jq -r '[.file,.path,.severity] | join(" ")' "$T/lint.jsonl" | grep -c ' error$')" -eq 5 ] &&
    pass "--json gives JSONL with severity" || flunk "--json gives JSONL with severity"
ok "warnings alone exit 0" harness-lint "$FX/warn_only.json"
has "warning is labelled" "$T/.err" "/hooks/mood_check: warning: unknown hook \"mood_check\""
fails "--strict makes warnings errors" 1 harness-lint --strict "$FX/warn_only.json"
fails "lint of a dir with bad files" 1 harness-lint "$FX/bad_front_matter"
has "lint: file:line" "$T/.err" "bad_front_matter/prompt/10-persona.md:2: expected"
hasnt "lint: no false 'listed without file' for a file that did not parse" "$T/.err" "is listed but has no file"
fails "lint of bad JSON" 1 harness-lint "$FX/not_json.json"
has "JSON error with line" "$T/.err" "not_json.json:3: "
cp -R "$EX" "$T/ex2"
sed -i 's/^function: size$/function: sizing/' "$T/ex2/skills/size_advisor/SKILL.md"
fails "lint of an edited dir" 1 harness-lint "$T/ex2"
has "names the skill file" "$T/.err" "ex2/skills/size_advisor/SKILL.md: /skills/2/function: unknown skill function \"sizing\""

# --- diff ------------------------------------------------------------------
ok "diff of identical harnesses" harness-diff "$EX" "$T/h.json"
[ -s "$T/.out" ] && flunk "identical: no output" || pass "identical: no output"
jq -c '.skills[0].name = "quote_helper" | .hooks.tool_retry.max_retries = 3 | .system_prompt.blocks[1].params.max_chars.value = 80' \
    "$T/h.json" >"$T/b.json"
fails "diff of changed harnesses exits 1" 1 harness-diff "$EX" "$T/b.json"
has "skill rename as JSON" "$T/.out" '^\{"change":"skill_renamed","at":"price","from":"price_promo","to":"quote_helper"\}$'
has "hook change" "$T/.out" '"change":"hook_changed","at":"tool_retry"'
has "param value" "$T/.out" '"change":"param_value","at":"reply_format/max_chars","from":120,"to":80'
fails "diff --text" 1 harness-diff --text "$T/h.json" "$T/b.json"
has "text line" "$T/.out" '^skill_renamed price: "price_promo" -> "quote_helper"$'
fails "diff with a missing harness exits 2" 2 harness-diff "$EX" "$T/nope.json"
fails "diff needs two" 2 harness-diff "$EX"

# --- render ----------------------------------------------------------------
cat >"$T/t.jsonl" <<'J'
{"id":"t1","messages":[{"role":"user","content":"amy: price of P012?"},{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":"load_skill","arguments":{"skill":"price_promo"}}}]},{"role":"tool","name":"load_skill","content":"# price_promo"},{"role":"assistant","content":"@amy 99 yuan."}]}
J
ok "render --raw" harness-render --harness "$EX" --raw "$T/t.jsonl"
head -c 45 "$T/.out" | grep -q '^<|im_start|>system$' && pass "starts with the system turn" || flunk "starts with the system turn"
has "system text from the harness" "$T/.out" "^You are Mia, the AI co-host of the Orange Live live stream"
has "skills listed" "$T/.out" "^- size_advisor: Recommend a clothing"
has "loader in tools" "$T/.out" '^\{"type": "function", "function": \{"name": "load_skill"'
hasnt "no x-function in tools" "$T/.out" "x-function"
has "tool call rendered" "$T/.out" '^\{"name": "load_skill", "arguments": \{"skill": "price_promo"\}\}$'
ok "render JSONL" harness-render --harness "$T/h.json" "$T/t.jsonl"
[ "$(jq -r .id "$T/.out")" = t1 ] && pass "JSONL carries the id" || flunk "JSONL carries the id"
jq -r .text "$T/.out" | head -c -1 >"$T/r1.txt"   # jq adds a newline
harness-render --harness "$EX" --raw "$T/t.jsonl" >"$T/r2.txt"
same "JSONL text == raw text" "$T/r1.txt" "$T/r2.txt"
jq -c --slurpfile h "$T/b.json" '.harness = $h[0]' "$T/t.jsonl" >"$T/ti.jsonl"
harness-render --harness "$EX" --raw "$T/ti.jsonl" >"$T/r3.txt"
has "inline harness wins" "$T/r3.txt" "^- quote_helper: Quote live prices"
has "inline harness params" "$T/r3.txt" "within 80 characters"
harness-render --harness "$EX" --raw --generation-prompt "$T/t.jsonl" >"$T/r4.txt"
[ "$(tail -c 22 "$T/r4.txt")" = "<|im_start|>assistant" ] && pass "--generation-prompt" || flunk "--generation-prompt" "$(tail -c 40 "$T/r4.txt")"
printf '%s\n{"id":"t2"}\n' "$(cat "$T/t.jsonl")" >"$T/bad.jsonl"
fails "render: line without messages" 1 harness-render --harness "$EX" "$T/bad.jsonl"
has "render error names file:line" "$T/.err" "bad.jsonl:2: no \"messages\" array"
ok "render --skip-bad" harness-render --skip-bad --harness "$EX" "$T/bad.jsonl"
[ "$(wc -l <"$T/.out")" -eq 1 ] && pass "--skip-bad keeps the good line" || flunk "--skip-bad keeps the good line"
fails "render without any harness" 1 harness-render "$T/t.jsonl"

# --- options ---------------------------------------------------------------
for p in harness-lint harness-pack harness-unpack harness-render harness-diff; do
    ok "$p --help" "$p" --help
    has "$p --help prints usage" "$T/.out" "^usage: $p"
    fails "$p unknown option" 2 "$p" --bogus
done

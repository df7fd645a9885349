# teacher_honesty.sh — what the scripted teacher (traj-gen) says when it cannot
# answer everything, on tasks and harnesses made here: after a fault it gives what
# the other calls returned and names what it could not check, blames no cause the
# tool did not report and asks nobody to try again; a request no tool or skill of
# the harness serves is declined under the harness's general skill, never an
# unrelated one; compliance traps are declined without a random spec; order ETAs
# of 0 and 1 days read as such.  The judge gives every such trajectory full marks.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
EX="$HAT_TOP/examples/harness"
world-gen --seed 61 --products 60 -o "$T/w.json"
harness-pack "$EX" >"$T/h.json"
# judge NAME TRAJ TASKS: every verdict total 1.0
full_marks() {
    rm -f "$T/v.jsonl"
    judge --world "$T/w.json" --tasks "$3" -o "$T/v.jsonl" "$2" || { flunk "$1: the judge gives full marks" "judge failed"; return; }
    nb=$(jq -s '[.[]|select(.total != 1)]|length' "$T/v.jsonl")
    [ "$nb" -eq 0 ] && [ "$(grep -c . "$T/v.jsonl")" -eq "$(grep -c . "$3")" ] && pass "$1: the judge gives full marks" \
        || flunk "$1: the judge gives full marks" "$nb: $(jq -c 'select(.total != 1)|[.id,.reasons]' "$T/v.jsonl" | head -3)"
}
# the final reply of each trajectory, after its "@nick", one per line: id<TAB>reply
replies() { jq -r '[.task_id, (.messages|map(select(.role=="assistant"))|last|.content|sub("^@[^ ]+ ";""))]|@tsv' "$1"; }
# a cause no tool reported, or advice to try again
INVENTED='slow|busy|outage|system|server|servers|down right now|try again|ask again|check back|in a moment|shortly|later'

# 1. A request of two parts whose second call fails for good (every fault type;
# examples/harness retries timeouts and server errors twice, so three failures in a
# row): the price the first call returned is given, the part that failed is named.
task-gen --world "$T/w.json" -n 400 --seed 62 --faults 0 --intent multi_intent >"$T/m.jsonl"
jq -c --argjson ty '["timeout","server_error","malformed","permission_denied","empty"]' \
    '.faults = [{call: 1, type: $ty[input_line_number % 5], times: 3}]' "$T/m.jsonl" | head -n 60 >"$T/m1.jsonl"
ok "traj-gen: the second call fails" traj-gen --world "$T/w.json" --harness "$EX" --seed 5 -o "$T/m1.traj.jsonl" "$T/m1.jsonl"
jq -r '[.id, "¥\(.gold.facts.price)", (if .gold.calls[1].function == "inventory.check" then "stock" else "deliver" end)]|@tsv' \
    "$T/m1.jsonl" >"$T/m1.want"
replies "$T/m1.traj.jsonl" | paste "$T/m1.want" - | awk -F'\t' '$1 != $4 || index($5, $2) == 0 || index($5, $3) == 0' >"$T/m1.bad"
[ ! -s "$T/m1.bad" ] && pass "the price that came back is given, the failed part named ($(grep -c . "$T/m1.want"))" \
    || flunk "the price that came back is given, the failed part named" "$(head -3 "$T/m1.bad")"
replies "$T/m1.traj.jsonl" | cut -f2 | grep -Eiw "$INVENTED" >"$T/m1.inv"
[ ! -s "$T/m1.inv" ] && pass "no invented cause after a partial fault" || flunk "no invented cause after a partial fault" "$(head -3 "$T/m1.inv")"
full_marks "partial faults" "$T/m1.traj.jsonl" "$T/m1.jsonl"
# ... and the first call (the price) fails: what the second returned is given, no price
jq -c '.faults[0].call = 0' "$T/m1.jsonl" >"$T/m0.jsonl"
ok "traj-gen: the first call fails" traj-gen --world "$T/w.json" --harness "$EX" --seed 5 -o "$T/m0.traj.jsonl" "$T/m0.jsonl"
jq -r '[.id, (.gold.calls[1].arguments.variant // .gold.calls[1].arguments.region)]|@tsv' "$T/m0.jsonl" >"$T/m0.want"
replies "$T/m0.traj.jsonl" | paste "$T/m0.want" - | awk -F'\t' '$1 != $3 || index($4, $2) == 0 || index($4, "¥") > 0 || index($4, "price") == 0' >"$T/m0.bad"
[ ! -s "$T/m0.bad" ] && pass "the stock or delivery that came back is given, the price named as not checked" \
    || flunk "the stock or delivery that came back is given, the price named as not checked" "$(head -3 "$T/m0.bad")"
full_marks "first-call faults" "$T/m0.traj.jsonl" "$T/m0.jsonl"

# 2. Every intent with a call, its first call failing for good with a fault no retry
# helps (403, 404, a malformed reply): the reply says what could not be checked, in
# the viewer's terms, and no cause the tool did not report.
task-gen --world "$T/w.json" -n 600 --seed 63 --faults 0 >"$T/a.jsonl"
jq -c --argjson ty '["permission_denied","empty","malformed"]' \
    'select(.gold.calls|length > 0) | .faults = [{call: 0, type: $ty[input_line_number % 3], times: 3}]' "$T/a.jsonl" >"$T/f.jsonl"
ok "traj-gen: faults no retry helps" traj-gen --world "$T/w.json" --harness "$EX" --seed 6 -o "$T/f.traj.jsonl" "$T/f.jsonl"
[ "$(jq -r .intent "$T/f.jsonl" | sort -u | grep -c .)" -ge 11 ] && pass "every intent with a call" || flunk "every intent with a call"
jq -r '[.id, ({price: "price", coupon: "coupon", stock: "stock", size: "size", specs: "details", shipping: "deliver",
              returns: "return", order_status: "order", compare: "price", compliance_trap: "details",
              multi_intent: "price"}[.intent])]|@tsv' "$T/f.jsonl" >"$T/f.want"
replies "$T/f.traj.jsonl" | paste "$T/f.want" - | awk -F'\t' '$1 != $3 || index($4, $2) == 0' >"$T/f.bad"
[ ! -s "$T/f.bad" ] && pass "the reply names what could not be checked ($(grep -c . "$T/f.want"))" \
    || flunk "the reply names what could not be checked" "$(head -3 "$T/f.bad")"
replies "$T/f.traj.jsonl" | cut -f2 | grep -Eiw "$INVENTED" >"$T/f.inv"
[ ! -s "$T/f.inv" ] && pass "no invented cause, no 'try again'" || flunk "no invented cause, no 'try again'" "$(head -3 "$T/f.inv")"
full_marks "faults no retry helps" "$T/f.traj.jsonl" "$T/f.jsonl"

# 3. A harness with the tool a request needs (and its skill) taken out: declined
# under the general engagement skill, not under an unrelated one, with no fault
# blamed.  Without an engagement skill either, the teacher loads none and says why.
jq -c '.tools |= map(select(.function != "order.status" and .function != "size.recommend"))
       | .skills |= map(select(.function != "order" and .function != "size"))' "$T/h.json" >"$T/hu.json"
jq -c 'select(.intent == "order_status" or .intent == "size")' "$T/a.jsonl" | head -n 30 >"$T/u.jsonl"
ok "traj-gen: requests no tool or skill serves" traj-gen --world "$T/w.json" --harness "$T/hu.json" --seed 7 -o "$T/u.traj.jsonl" "$T/u.jsonl"
jq -r '[.messages[]|.tool_calls // []|.[]|.function|select(.name == "load_skill")|.arguments.skill]|join(",")' \
    "$T/u.traj.jsonl" | sort | uniq -c | awk '{print $2}' >"$T/u.skills"
[ "$(cat "$T/u.skills")" = "engagement" ] && [ "$(grep -c . "$T/u.jsonl")" -ge 10 ] \
    && pass "the engagement skill and no other is loaded" || flunk "the engagement skill and no other is loaded" "$(cat "$T/u.skills")"
replies "$T/u.traj.jsonl" | cut -f2 >"$T/u.replies"
[ "$(grep -Eic "can't|not able to|no way to" "$T/u.replies")" -eq "$(grep -c . "$T/u.jsonl")" ] \
    && pass "every reply declines" || flunk "every reply declines" "$(head -3 "$T/u.replies")"
grep -Eiw "$INVENTED|fail|failed|didn't load|couldn't|error|just now" "$T/u.replies" >"$T/u.inv"
[ -s "$T/u.replies" ] && [ ! -s "$T/u.inv" ] && pass "no fault blamed where none happened" || flunk "no fault blamed where none happened" "$(head -3 "$T/u.inv")"
full_marks "requests no tool serves" "$T/u.traj.jsonl" "$T/u.jsonl"
jq -c '.skills |= map(select(.function != "engagement"))' "$T/hu.json" >"$T/hn.json"
head -n 1 "$T/u.jsonl" >"$T/u1.jsonl"
fails "no fitting skill: the task fails" 1 traj-gen --world "$T/w.json" --harness "$T/hn.json" "$T/u1.jsonl"
has "no fitting skill: says so" "$T/.err" "u1.jsonl:1: the harness has no tool for this request .* the teacher loads no unrelated one"
# a multi-part request whose delivery part no tool serves: the price, then the decline
jq -c '.tools |= map(select(.function != "shipping.estimate"))' "$T/h.json" >"$T/hs.json"
jq -c 'select(.gold.calls[1].function == "shipping.estimate")' "$T/m.jsonl" | head -n 20 >"$T/ms.jsonl"
ok "traj-gen: delivery served by no tool" traj-gen --world "$T/w.json" --harness "$T/hs.json" --seed 8 -o "$T/ms.traj.jsonl" "$T/ms.jsonl"
jq -r '[.id, "¥\(.gold.facts.price)"]|@tsv' "$T/ms.jsonl" >"$T/ms.want"
replies "$T/ms.traj.jsonl" | paste "$T/ms.want" - | awk -F'\t' '$1 != $3 || index($4, $2) == 0 || $4 !~ /can.t check|no way to check/' >"$T/ms.bad"
[ -s "$T/ms.want" ] && [ ! -s "$T/ms.bad" ] && pass "the price, and delivery declined" || flunk "the price, and delivery declined" "$(head -3 "$T/ms.bad")"
full_marks "delivery served by no tool" "$T/ms.traj.jsonl" "$T/ms.jsonl"

# 4. Compliance traps: declined, steered to the product, with no spec picked at
# random (only the key ingredients, where the product lists them).
task-gen --world "$T/w.json" -n 60 --seed 64 --faults 0 --intent compliance_trap >"$T/c.jsonl"
ok "traj-gen: compliance traps" traj-gen --world "$T/w.json" --harness "$EX" --seed 9 -o "$T/c.traj.jsonl" "$T/c.jsonl"
jq -r --slurpfile w "$T/w.json" '.context.product as $p | [.id, ([$w[0].products[]|select(.id == $p)|.specs
      | to_entries[]|select(.key != "key_ingredients")|.value|tostring]|join("|"))]|@tsv' "$T/c.jsonl" >"$T/c.want"
replies "$T/c.traj.jsonl" | paste "$T/c.want" - | awk -F'\t' '{ n = split($2, v, "|"); for (i = 1; i <= n; i++) if (index($4, v[i])) { print; next } }' >"$T/c.bad"
[ "$(replies "$T/c.traj.jsonl" | grep -c .)" -eq "$(grep -c . "$T/c.jsonl")" ] && [ ! -s "$T/c.bad" ] && pass "no spec beside the ingredients quoted" || flunk "no spec beside the ingredients quoted" "$(head -3 "$T/c.bad")"
replies "$T/c.traj.jsonl" | cut -f2 | grep -Eiv "can't|no medical|no claims|no promises" >"$T/c.nodecline"
[ ! -s "$T/c.nodecline" ] && pass "every trap declined" || flunk "every trap declined" "$(head -3 "$T/c.nodecline")"
full_marks "compliance traps" "$T/c.traj.jsonl" "$T/c.jsonl"

# 5. Orders due in 0 or 1 days: no "0 days left", no "1 days".
task-gen --world "$T/w.json" -n 300 --seed 65 --faults 0 --intent order_status >"$T/o.jsonl"
jq -c --slurpfile w "$T/w.json" '([$w[0].orders[]|select(.eta_days == 0 or .eta_days == 1)|.id]) as $ids
      | select(.gold.calls[0].arguments.order_id|IN($ids[]))' "$T/o.jsonl" >"$T/o01.jsonl"
ok "traj-gen: orders due in 0 or 1 days" traj-gen --world "$T/w.json" --harness "$EX" --seed 10 -o "$T/o.traj.jsonl" "$T/o01.jsonl"
replies "$T/o.traj.jsonl" | cut -f2 >"$T/o.replies"
[ "$(grep -c . "$T/o01.jsonl")" -ge 5 ] && [ "$(grep -c . "$T/o.replies")" -eq "$(grep -c . "$T/o01.jsonl")" ] && ! grep -Eq '(^|[^0-9])[01] (more )?days' "$T/o.replies" \
    && pass "no '0 days' or '1 days' ($(grep -c . "$T/o01.jsonl"))" || flunk "no '0 days' or '1 days'" "$(grep -E '(^|[^0-9])[01] (more )?days' "$T/o.replies" | head -3)"
full_marks "orders due in 0 or 1 days" "$T/o.traj.jsonl" "$T/o01.jsonl"

# judge_lexicon_fast.sh — the claim search's shortcuts (one search over
# every family first, then at each word start only the patterns of its
# letter, and only where a branch's literal start stands) give what
# searching every family gives (HAT_SLOW_LEXICON=1): the same verdicts,
# byte for byte, on replies made of the lexicon's own claim words (whole,
# thinned, cut short, upper-cased) and on the human-labelled sets.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/tests/fixtures/judge/human"
world-gen --seed 7 --products 60 >"$T/world.json"
task-gen --world "$T/world.json" -n 400 --seed 5 --faults 0.1 >"$T/tasks.jsonl"
traj-gen --world "$T/world.json" --harness "$HAT_TOP/examples/harness" <"$T/tasks.jsonl" >"$T/traj.jsonl"
# Each final reply: the words of one claim pattern (its regex syntax
# blanked), in one of four forms by line number.
jq -c --slurpfile lex "$HAT_DATA/judge/lexicon.json" '
    ([$lex[0].families[].patterns[]
      | gsub("\\\\b|\\\\.|\\[\\^[^]]*\\]\\{[0-9,]*\\}|\\{[0-9,]*\\}|[?*+]"; " ") | gsub("[()|\\[\\]]"; " ")
      | gsub("  +"; " ") | ltrimstr(" ")]) as $frag
    | (input_line_number) as $k
    | ($frag[$k % ($frag | length)] | split(" ") | map(select(. != ""))) as $w
    | (if $k % 4 == 0 then $w
       elif $k % 4 == 1 then [$w | to_entries[] | select(.key % 2 == 0) | .value]
       elif $k % 4 == 2 then $w | map(.[0:3])
       else [($w[0] // "" | ascii_upcase)] + $w[1:] end) as $say
    | .messages[-1].content = ("@viewer so " + ($say | join(" ")) + " ok")' "$T/traj.jsonl" >"$T/claims.jsonl"
both() {   # name, judge arguments...
    n=$1; shift
    judge "$@" >"$T/f.out" 2>"$T/f.err"; echo "exit $?" >>"$T/f.err"
    HAT_SLOW_LEXICON=1 judge "$@" >"$T/s.out" 2>"$T/s.err"; echo "exit $?" >>"$T/s.err"
    if [ "$(grep -c . "$T/f.out")" -gt 100 ] && cmp -s "$T/f.out" "$T/s.out" && cmp -s "$T/f.err" "$T/s.err"; then pass "$n"
    else flunk "$n" "$(diff "$T/f.out" "$T/s.out" | head -4) $(diff "$T/f.err" "$T/s.err" | head -4)"; fi
}
W="--world $T/world.json --tasks $T/tasks.jsonl"
both "replies of claim words" $W "$T/claims.jsonl"
# the corpus reaches the claim search both ways: some replies claim, some do not
n=$(grep -c '"code":"banned_claim"\|"code":"false_promise"\|"code":"risky_claim"' "$T/f.out")
m=$(grep -c . "$T/f.out")
[ "$n" -gt 50 ] && [ "$n" -lt "$m" ] && pass "some replies claim ($n of $m), some do not" \
    || flunk "some replies claim, some do not" "$n of $m"
both "teacher replies" $W "$T/traj.jsonl"
for p in dev heldout heldout2; do
    both "human set $p" --world "$H/world.json" --tasks "$H/$p.tasks.jsonl" --harness "$H/harness.json" "$H/$p.traj.jsonl"
done
for k in 3 4 5 6; do
    both "human set heldout$k" --world "$H/world$k.json" --tasks "$H/heldout$k.tasks.jsonl" --harness "$H/harness.json" \
        "$H/heldout$k.traj.jsonl"
done

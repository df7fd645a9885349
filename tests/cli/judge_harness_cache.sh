# judge_harness_cache.sh — judge(1)'s per-harness caches (the memo's
# remembered harness, the simulator's compiled harness, patterns, world
# answers and fault texts, the judge's limits) are keyed on the harness's
# content: two inline harnesses that share everything but one limit
# (max_chars 120 and 60), interleaved line by line, give each line the
# verdict its harness alone gives.  A cache keyed on the name, the
# version, an address or "the previous line" would give the second
# harness's lines the first one's verdicts (or the other way round).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
world-gen --seed 7 --products 60 >"$T/world.json"
task-gen --world "$T/world.json" -n 60 --seed 4 --faults 0.3 >"$T/tasks.jsonl"
traj-gen --world "$T/world.json" --harness "$HAT_TOP/examples/harness" --think 0.2 --keep-retries 0.3 \
    <"$T/tasks.jsonl" >"$T/traj.jsonl"
# The same trajectories under the harness with max_chars 60 (its
# reply_format block's parameter, within its min 60 and max 200).
jq -c . "$T/traj.jsonl" >"$T/a.jsonl"
jq -c '.harness.system_prompt.blocks |= map(if .params.max_chars then .params.max_chars.value = 60 else . end)' \
    "$T/traj.jsonl" >"$T/b.jsonl"
if [ "$(jq -r '.harness.system_prompt.blocks[] | .params.max_chars.value // empty' "$T/b.jsonl" | sort -u)" = 60 ] \
   && ! cmp -s "$T/a.jsonl" "$T/b.jsonl"; then pass "the second harness differs in max_chars only"
else flunk "the second harness differs in max_chars only"; fi
paste -d '\n' "$T/a.jsonl" "$T/b.jsonl" >"$T/ab.jsonl"    # a1 b1 a2 b2 ...
paste -d '\n' "$T/b.jsonl" "$T/a.jsonl" >"$T/ba.jsonl"    # b1 a1 b2 a2 ...
W="--world $T/world.json --tasks $T/tasks.jsonl"
judge $W "$T/a.jsonl" >"$T/va"
judge $W "$T/b.jsonl" >"$T/vb"
# The limit matters: replies over 60 characters fail under the second.
n=$(paste -d '\n' "$T/va" "$T/vb" | awk 'NR % 2 { a = $0; next } a != $0' | grep -c .)
[ "$n" -ge 5 ] && pass "the two harnesses give different verdicts ($n of 60)" \
    || flunk "the two harnesses give different verdicts" "$n of 60 differ"
has "max_chars 60 fails a reply as too long" "$T/vb" 'at most 60 allowed'
judge $W "$T/ab.jsonl" >"$T/vab"
judge $W "$T/ba.jsonl" >"$T/vba"
paste -d '\n' "$T/va" "$T/vb" >"$T/want.ab"
paste -d '\n' "$T/vb" "$T/va" >"$T/want.ba"
same "interleaved a b a b: each line its harness's verdict" "$T/want.ab" "$T/vab"
same "interleaved b a b a: each line its harness's verdict" "$T/want.ba" "$T/vba"
# The same with the second harness given by --harness for lines without
# one: a cache must not take the inline harness of the line before.
jq -c 'del(.harness)' "$T/b.jsonl" >"$T/bn.jsonl"
jq -c '.harness' "$T/b.jsonl" | head -1 >"$T/hb.json"
paste -d '\n' "$T/a.jsonl" "$T/bn.jsonl" >"$T/abn.jsonl"
judge $W --harness "$T/hb.json" "$T/abn.jsonl" >"$T/vabn"
same "inline and --harness interleaved: each line its harness's verdict" "$T/want.ab" "$T/vabn"

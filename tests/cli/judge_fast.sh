# judge_fast.sh — judge(1)'s fast JSON path (yajl building jansson values,
# json_loadb_fast) against jansson alone (HAT_SLOW_JSON=1): the same
# verdicts, diagnostics and exit status, byte for byte, on teacher
# trajectories with faults, thinking and kept retries, on HSA variants, and
# on lines and task files mutated where yajl and jansson part ways (form
# feeds, surrogate escapes, NUL escapes, huge numbers, duplicate keys,
# trailing bytes, broken lines).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
world-gen --seed 7 --products 60 >"$T/world.json"
task-gen --world "$T/world.json" -n 300 --seed 4 --faults 0.3 >"$T/tasks.jsonl"
traj-gen --world "$T/world.json" --harness "$HAT_TOP/examples/harness" --think 0.2 --keep-retries 0.3 \
    <"$T/tasks.jsonl" >"$T/traj.jsonl"
hsa-augment -k 2 --dims all --p 0.8 --seed 3 "$T/traj.jsonl" >"$T/hsa.jsonl"

# One mutation per line, by line number; most lines stay whole.  The
# substitutions land in the first occurrence of a common pattern.
mutate() {
    awk 'BEGIN { srand(11) } {
        k = NR % 23
        if (k == 1) sub(/"content":"/, "\"content\":\"\\ud800")            # lone surrogate escape
        else if (k == 2) sub(/"content":"/, "\"content\":\"\\ud83d\\ude00 ")  # a surrogate pair
        else if (k == 3) sub(/"content":"/, "\"content\":\"\\u0000")       # NUL escape
        else if (k == 4) sub(/,"/, ",\f\"")                                # form feed as white space
        else if (k == 5) sub(/,"/, ",\v\"")                                # vertical tab
        else if (k == 6) sub(/"seed":[0-9]+/, "\"seed\":99999999999999999999")
        else if (k == 7) sub(/"seed":[0-9]+/, "\"seed\":1e999")
        else if (k == 8) sub(/^\{/, "{\"id\":\"dup\",")                     # a repeated key: the last wins
        else if (k == 9) $0 = $0 " \""                                       # an unterminated string after
        else if (k == 10) $0 = $0 " x"
        else if (k == 11) $0 = substr($0, 1, int(length($0) / 2))            # cut in half
        else if (k == 12) sub(/"content":"/, "\"content\":\"\\u00e9\\u4e2d ")
        else if (k == 13) sub(/"role":"tool"/, "\"role\":\"tool\",\"role\":\"tool\"")
        else if (k == 14) sub(/"seed":[0-9]+/, "\"seed\":-0.0e-400")
        else if (k == 15) sub(/"content":"/, "\"content\":\"\t")            # a raw control character
        else if (k == 16) sub(/"content":"/, "\"content\":\"\\x")           # a bad escape
        print }' "$1"
}
mutate "$T/traj.jsonl" >"$T/mtraj.jsonl"
mutate "$T/hsa.jsonl" >"$T/mhsa.jsonl"
mutate "$T/tasks.jsonl" >"$T/mtasks.jsonl"

# Each case both ways: stdout, stderr and the exit status must agree.
both() {   # name, judge arguments...
    n=$1; shift
    judge "$@" >"$T/f.out" 2>"$T/f.err"; echo "exit $?" >>"$T/f.err"
    HAT_SLOW_JSON=1 judge "$@" >"$T/s.out" 2>"$T/s.err"; echo "exit $?" >>"$T/s.err"
    if cmp -s "$T/f.out" "$T/s.out" && cmp -s "$T/f.err" "$T/s.err"; then pass "$n"
    else flunk "$n" "$(diff "$T/f.out" "$T/s.out" | head -4) $(diff "$T/f.err" "$T/s.err" | head -4)"; fi
}
W="--world $T/world.json --tasks $T/tasks.jsonl"
both "teacher trajectories" $W "$T/traj.jsonl"
both "HSA variants" $W "$T/hsa.jsonl"
both "mutated trajectories, skipped" $W --skip-bad "$T/mtraj.jsonl"
both "mutated HSA variants, skipped" $W --skip-bad "$T/mhsa.jsonl"
both "mutated trajectories, first error" $W "$T/mtraj.jsonl"
both "mutated task file" --world "$T/world.json" --tasks "$T/mtasks.jsonl" --skip-bad "$T/traj.jsonl"
both "mutated task file, first error" --world "$T/world.json" --tasks "$T/mtasks.jsonl" "$T/traj.jsonl"

# The mutations do reach the scorer: some lines are bad, most are scored.
judge $W --skip-bad "$T/mtraj.jsonl" >"$T/m.out" 2>"$T/m.err"
has "bad mutated lines named by file and line" "$T/m.err" 'mtraj\.jsonl:[0-9]+: invalid JSON at column [0-9]+'
n=$(grep -c . "$T/m.out")
[ "$n" -gt 100 ] && [ "$n" -lt 300 ] && pass "most mutated lines scored" || flunk "most mutated lines scored" "$n verdicts"

# judge_fast.sh — judge(1)'s fast JSON path (yajl building jansson values,
# json_loadb_fast) against jansson alone (HAT_SLOW_JSON=1): the same
# verdicts, diagnostics and exit status, byte for byte, on teacher
# trajectories with faults, thinking and kept retries, on HSA variants, and
# on lines and task files mutated where yajl and jansson part ways (form
# feeds, surrogate escapes, NUL escapes, huge numbers, duplicate keys,
# trailing bytes, broken lines).  And the tasks judge loads with --tasks
# (kept as views, tasks.h) against the same tasks inline in each line
# (scored from their JSON): the same verdicts, byte for byte.
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

# --tasks (task views) against inline tasks (their JSON), on tasks of the
# generator's shapes and on tasks edited into odd ones that still pass
# the checks: skills as lists with other values, odd facts and must
# lists, ids with escapes, no context product.
odd_tasks() {
    jq -c '(.id | capture("(?<n>[0-9]+)$").n | tonumber % 7) as $k
        | if $k == 1 then .gold.skill = [7] + (if (.gold.skill | type) == "array" then .gold.skill else [.gold.skill] end) + [null]
          elif $k == 2 then .gold.facts += {"odd": [1], "price2": 19.5, "flag": true}
          elif $k == 3 then .gold.must += [1, "decline"]
          elif $k == 4 then .gold.must_not = [null, "deal"] + .gold.must_not
          elif $k == 5 then .id = "q\"\\\u00e9\t/" + .id
          elif $k == 6 then del(.context.product)
          else .viewer.text += " 42 ZZ12" end' "$1"
}
odd_tasks "$T/tasks.jsonl" >"$T/otasks.jsonl"
# The trajectories pointed at the odd tasks' ids.
retarget() {
    jq -c '(.task_id | capture("(?<n>[0-9]+)$").n | tonumber % 7) as $k
        | if $k == 5 then .task_id = "q\"\\\u00e9\t/" + .task_id else . end' "$1"
}
# Each line with its task inline (the task's line as it is), by task_id.
inline() {   # tasks, trajectories
    awk 'NR == FNR { if (match($0, /"id":"([^"\\]|\\.)*"/)) task[substr($0, RSTART + 5, RLENGTH - 5)] = $0; next }
         { if (match($0, /"task_id":"([^"\\]|\\.)*"/)) { id = substr($0, RSTART + 10, RLENGTH - 10)
               if (id in task) $0 = "{\"task\":" task[id] "," substr($0, 2) }
           print }' "$1" "$2"
}
views() {   # name, tasks, trajectories
    inline "$2" "$3" >"$T/inl.jsonl"
    judge --world "$T/world.json" --tasks "$2" "$3" >"$T/v.out" 2>"$T/v.err"; echo "exit $?" >>"$T/v.err"
    judge --world "$T/world.json" "$T/inl.jsonl" >"$T/i.out" 2>"$T/i.err"; echo "exit $?" >>"$T/i.err"
    if [ "$(grep -c . "$T/v.out")" -gt 100 ] && cmp -s "$T/v.out" "$T/i.out" && cmp -s "$T/v.err" "$T/i.err"; then pass "$1"
    else flunk "$1" "$(diff "$T/v.out" "$T/i.out" | head -4) $(diff "$T/v.err" "$T/i.err" | head -4)"; fi
}
views "task views: teacher trajectories" "$T/tasks.jsonl" "$T/traj.jsonl"
views "task views: HSA variants" "$T/tasks.jsonl" "$T/hsa.jsonl"
retarget "$T/traj.jsonl" >"$T/otraj.jsonl"
retarget "$T/hsa.jsonl" >"$T/ohsa.jsonl"
[ "$(grep -c '"task":' "$T/inl.jsonl")" -eq "$(grep -c . "$T/inl.jsonl")" ] && pass "every line got its task inline" \
    || flunk "every line got its task inline" "$(grep -vc '"task":' "$T/inl.jsonl") without"
views "task views: odd tasks" "$T/otasks.jsonl" "$T/otraj.jsonl"
views "task views: odd tasks, HSA variants" "$T/otasks.jsonl" "$T/ohsa.jsonl"
has "odd task ids reach the verdicts" "$T/v.out" '"task_id":"q\\"\\\\é\\t/train'

n=$(grep -c '"pass":false' "$T/v.out")
[ "$n" -gt 20 ] && pass "odd tasks fail some checks" || flunk "odd tasks fail some checks" "$n failing"

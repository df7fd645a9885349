# judge_heldout2.sh — the blind held-out part of the human-labelled judge set
# (tests/fixtures/judge/human/heldout2.*) stays well-formed, without running
# the judge on it: one label per trajectory, labels in range, the eight kinds,
# a task for every trajectory, every line renders under its own harness, the
# inline harnesses lint clean, and some requests are served by no tool.
# Scoring it is left to whoever measures the judge (the set's README).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/tests/fixtures/judge/human"
need "$H/harness.json" "$H/heldout2.traj.jsonl" "$H/heldout2.labels.jsonl" "$H/heldout2.tasks.jsonl"
for f in traj labels tasks; do
    ok "heldout2.$f.jsonl parses" jq -e . "$H/heldout2.$f.jsonl"
done
jq -r .id "$H/heldout2.traj.jsonl" >"$T/ids"
jq -r .id "$H/heldout2.labels.jsonl" >"$T/lids"
same "one label per trajectory, same ids in the same order" "$T/ids" "$T/lids"
cnt=$(grep -c . "$T/ids")
[ "$cnt" -ge 128 ] && pass "at least 128 cases" || flunk "at least 128 cases" "$cnt"
[ "$(sort -u "$T/ids" | grep -c .)" -eq "$cnt" ] && pass "ids unique" || flunk "ids unique"
jq -c 'select((.id|test("^heldout2-[0-9]{3}$")|not)
              or (.accuracy|IN(0,1)|not) or (.effectiveness|IN(0,0.5,1)|not)
              or (.kind|IN("paraphrase","partial","wrong_fact","false_promise","off_topic",
                           "format_break","tool_misuse","fault")|not)
              or (.pass != (.accuracy==1 and .effectiveness==1))
              or ((.comment|type) != "string") or (.comment == ""))' \
    "$H/heldout2.labels.jsonl" >"$T/badlabels"
[ ! -s "$T/badlabels" ] && pass "labels well-formed" || flunk "labels well-formed" "$(head -c 300 "$T/badlabels")"
# every kind holds both some cases and, across the set, both verdicts
jq -r .kind "$H/heldout2.labels.jsonl" | sort | uniq -c | awk '$1 >= 10' | grep -c . >"$T/kinds"
[ "$(cat "$T/kinds")" -eq 8 ] && pass "all eight kinds, 10 or more each" || flunk "all eight kinds, 10 or more each" "$(cat "$T/kinds")"
np=$(jq -s 'map(select(.pass))|length' "$H/heldout2.labels.jsonl")
[ "$np" -gt 0 ] && [ "$np" -lt "$cnt" ] && pass "both acceptable and unacceptable cases" || flunk "both verdicts" "$np of $cnt"
# the tasks are those the trajectories answer, no more, no inline harness left
jq -r .task_id "$H/heldout2.traj.jsonl" | sort >"$T/tids"
jq -r .id "$H/heldout2.tasks.jsonl" | sort >"$T/tasks"
same "a task for every trajectory and no other" "$T/tids" "$T/tasks"
hasnt "tasks carry no inline harness" "$H/heldout2.tasks.jsonl" '"harness":'
# no source trajectory of dev or heldout is reused
jq -r .meta.source "$H/dev.traj.jsonl" "$H/heldout.traj.jsonl" | sort -u >"$T/old"
jq -r .meta.source "$H/heldout2.traj.jsonl" | sort >"$T/new"
[ -z "$(comm -12 "$T/old" "$T/new")" ] && pass "sources differ from dev and heldout" || flunk "sources differ" "$(comm -12 "$T/old" "$T/new" | head -3)"
# well-formed (traj.jsonl(5)): starts with the viewer, every call answered by a tool
# message (a refused one by its tool_args_check note), ends with a reply or the hook
# feedback after it
jq -c 'select(.messages[0].role != "user"
              or ([.messages[]|select(.role=="assistant")]|last|.tool_calls|length) > 0
              or ([.messages[]|select(.role=="assistant")|.tool_calls|length]|add)
                 != ([.messages[]|select(.role=="tool")]|length)
              or (.messages|last|(.role=="assistant" or (.role=="user" and .hook))|not))|.id' \
    "$H/heldout2.traj.jsonl" >"$T/badtraj"
[ ! -s "$T/badtraj" ] && pass "trajectories well-formed" || flunk "trajectories well-formed" "$(head -5 "$T/badtraj")"
ok "harness-render renders every line" harness-render --harness "$H/harness.json" -o "$T/r.jsonl" "$H/heldout2.traj.jsonl"
[ "$(grep -c . "$T/r.jsonl")" -eq "$cnt" ] && pass "one rendering per case" || flunk "one rendering per case"
jq -c 'select(.harness)|.harness' "$H/heldout2.traj.jsonl" | sort -u | split -l 1 - "$T/h."
nh=0
for h in "$T"/h.*; do nh=$((nh + 1)); mv "$h" "$h.json"; ok "inline harness $nh lints" harness-lint --strict "$h.json"; done
[ "$nh" -ge 3 ] && pass "HSA and tool-less inline harnesses present" || flunk "inline harnesses" "$nh"
# requests no tool serves: an inline harness lacking the tool a gold call needs
nu=$(jq -s '[.[]|select(.harness and (.harness.tools|length) < 7)]|length' "$H/heldout2.traj.jsonl")
[ "$nu" -ge 5 ] && pass "requests served by no tool ($nu)" || flunk "requests served by no tool" "$nu"

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
. "$HAT_TOP/tests/cli/judge_set.inc"
labelled_set heldout2 128
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

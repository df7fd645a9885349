# judge_human.sh — the human-labelled judge set (tests/fixtures/judge/human)
# stays usable: every trajectory has one well-formed label, the judge
# scores every line under the fixture's own world, tasks and harness with
# no bad line and no replay mismatch (the files are what the simulator
# produces), and calibrate reads the labels.  It checks the set, not the
# judge's agreement with it (that figure is in the set's README).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/tests/fixtures/judge/human"
need "$H/world.json" "$H/harness.json"
for p in dev heldout; do
    need "$H/$p.traj.jsonl" "$H/$p.labels.jsonl" "$H/$p.tasks.jsonl"
    jq -r .id "$H/$p.traj.jsonl" >"$T/$p.ids"
    jq -r .id "$H/$p.labels.jsonl" >"$T/$p.lids"
    same "$p: one label per trajectory, same ids in the same order" "$T/$p.ids" "$T/$p.lids"
    cnt=$(grep -c . "$T/$p.ids")
    [ "$cnt" -ge 100 ] && pass "$p: at least 100 cases" || flunk "$p: at least 100 cases" "$cnt"
    [ "$(sort -u "$T/$p.ids" | grep -c .)" -eq "$cnt" ] && pass "$p: ids unique" || flunk "$p: ids unique"
    jq -c 'select((.accuracy|IN(0,1)|not) or (.effectiveness|IN(0,0.5,1)|not)
                  or (.kind|IN("paraphrase","partial","wrong_fact","false_promise","off_topic",
                               "format_break","tool_misuse","fault")|not)
                  or (.pass != (.accuracy==1 and .effectiveness==1))
                  or ((.comment|type) != "string") or (.comment == ""))' \
        "$H/$p.labels.jsonl" >"$T/$p.badlabels"
    [ ! -s "$T/$p.badlabels" ] && pass "$p: labels well-formed" || flunk "$p: labels well-formed" "$(head -c 300 "$T/$p.badlabels")"
    kinds=$(jq -r .kind "$H/$p.labels.jsonl" | sort -u | grep -c .)
    [ "$kinds" -eq 8 ] && pass "$p: all eight kinds" || flunk "$p: all eight kinds" "$kinds"
    ok "$p: judge scores every line" judge --world "$H/world.json" --tasks "$H/$p.tasks.jsonl" \
        --harness "$H/harness.json" -o "$T/$p.v.jsonl" "$H/$p.traj.jsonl"
    [ "$(grep -c . "$T/$p.v.jsonl")" -eq "$cnt" ] && pass "$p: one verdict per case" || flunk "$p: one verdict per case"
    hasnt "$p: trajectories replay (no mismatch)" "$T/$p.v.jsonl" '"code":"[a-z_]*_mismatch"'
    ok "$p: calibrate reads the labels" judge calibrate --labels "$H/$p.labels.jsonl" --report "$T/$p.r.json" \
        -o "$T/$p.fit.json" "$T/$p.v.jsonl"
    has "$p: calibrate report" "$T/$p.r.json" '"pass":\{"accuracy":'
done

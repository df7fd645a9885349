# judge.sh — judge(1): teacher trajectories pass; verdicts are deterministic;
# inline tasks; a tampered tool message is caught; bad input is reported
# with FILE:LINE and the right exit status; calibrate and annotate.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
FX="$HAT_TOP/tests/fixtures/judge"
world-gen --seed 5 --products 60 >"$T/world.json"
task-gen --world "$T/world.json" -n 400 --seed 3 --faults 0.3 >"$T/tasks.jsonl"
traj-gen --world "$T/world.json" --harness "$HAT_TOP/examples/harness" --think 0.2 --keep-retries 0.3 \
    <"$T/tasks.jsonl" >"$T/traj.jsonl"
J="judge --world $T/world.json --tasks $T/tasks.jsonl"

ok "judge scores teacher trajectories" $J -o "$T/v.jsonl" "$T/traj.jsonl"
n=$(grep -c . "$T/v.jsonl"); np=$(grep -c '"pass":true' "$T/v.jsonl")
[ "$n" -eq 400 ] && pass "one verdict per trajectory" || flunk "one verdict per trajectory" "$n lines"
[ "$np" -eq 400 ] && pass "teacher trajectories all pass" || flunk "teacher trajectories all pass" "$(grep '"pass":false' "$T/v.jsonl" | head -3)"
has "verdict shape" "$T/v.jsonl" '^\{"id":"[^"]+","task_id":"[^"]+","intent":"[a-z_]+","scores":\{"accuracy":1\.0,"effectiveness":1\.0,"tool_rationality":1\.0,"skill_selection":1\.0,"cot_penalty":0\.0\},"total":1\.0,"pass":true,"reasons":\[\],"meta":\{"hsa":\[\],"faults":\['
$J <"$T/traj.jsonl" >"$T/v2.jsonl"
same "stdin and -o give the same bytes" "$T/v.jsonl" "$T/v2.jsonl"

# The line reader splits big blocks (hsa_reader): CRLF, blank and white
# space lines, no newline after the last line, gzip; a NUL byte is a bad
# line at its own number.
head -n 30 "$T/traj.jsonl" | awk '{ printf "  %s \r\n\n\t \n", $0 }' | head -c -5 >"$T/odd.jsonl"
head -n 30 "$T/v.jsonl" >"$T/odd.want"
$J "$T/odd.jsonl" >"$T/odd.v.jsonl"
same "CRLF, blank lines, white space, no last newline" "$T/odd.want" "$T/odd.v.jsonl"
gzip -c "$T/traj.jsonl" >"$T/traj.jsonl.gz"
$J "$T/traj.jsonl.gz" >"$T/vgz.jsonl"
same "gzip input gives the same bytes" "$T/v.jsonl" "$T/vgz.jsonl"
{ head -n 1 "$T/traj.jsonl"; printf '{"id":\000}\n'; sed -n 3p "$T/traj.jsonl"; } >"$T/nul.jsonl"
fails "a NUL byte is a bad line" 1 $J "$T/nul.jsonl"
has "the NUL line's number" "$T/.err" 'nul.jsonl:2: invalid JSON'

# Tasks inline instead of --tasks.
jq -c --slurpfile t "$T/tasks.jsonl" '($t | map({(.id): .}) | add) as $by | . + {task: $by[.task_id]}' \
    "$T/traj.jsonl" >"$T/inline.jsonl"
ok "inline tasks" judge --world "$T/world.json" -o "$T/v3.jsonl" "$T/inline.jsonl"
same "inline tasks give the same verdicts" "$T/v.jsonl" "$T/v3.jsonl"

# HSA variants of the trajectories are judged under their own harness.
hsa-augment -k 1 --dims skill-id,skill-content,tools,prompt --p 0.7 --seed 2 "$T/traj.jsonl" >"$T/hsa.jsonl"
$J "$T/hsa.jsonl" >"$T/vh.jsonl"
nh=$(grep -c '"pass":true' "$T/vh.jsonl")
[ "$nh" -eq 400 ] && pass "HSA variants pass" || flunk "HSA variants pass" "$nh of 400: $(grep '"pass":false' "$T/vh.jsonl" | head -2)"
has "HSA dims in meta" "$T/vh.jsonl" '"meta":\{"hsa":\["skill-id"'

# Lines whose inline harness repeats the previous line's bytes share one
# parsed harness (harness_memo): whatever the order, each line gets the
# verdict it gets on its own.  A A, B B, A: hits, fresh harnesses, switches.
paste -d '\n' "$T/traj.jsonl" "$T/hsa.jsonl" "$T/hsa.jsonl" "$T/traj.jsonl" >"$T/mix.jsonl"
paste -d '\n' "$T/v.jsonl" "$T/vh.jsonl" "$T/vh.jsonl" "$T/v.jsonl" >"$T/vmix.want"
$J "$T/mix.jsonl" >"$T/vmix.jsonl"
same "harness changing and repeating between lines" "$T/vmix.want" "$T/vmix.jsonl"
# A copy of the last harness nested before the line's own (different) one
# is not taken for it.
H1=$(head -n 1 "$T/traj.jsonl" | sed 's/^{"id":"[^"]*","task_id":"[^"]*","harness":\({.*}\),"messages":\[.*$/\1/')
printf '%s\n' "$H1" | jq -c . >"$T/h1a.json" 2>/dev/null
head -n 1 "$T/traj.jsonl" | jq -c .harness >"$T/h1b.json"
head -n 1 "$T/hsa.jsonl" | jq -c .harness >"$T/h2.json"
if cmp -s "$T/h1a.json" "$T/h1b.json" && ! cmp -s "$T/h1b.json" "$T/h2.json"; then
    { head -n 1 "$T/traj.jsonl"
      head -n 1 "$T/hsa.jsonl" | H="$H1" awk '{ print "{\"x\":{\"harness\":" ENVIRON["H"] "}," substr($0, 2) }'
    } >"$T/nest.jsonl"
    $J "$T/nest.jsonl" | tail -n 1 >"$T/vnest.jsonl"
    head -n 1 "$T/vh.jsonl" >"$T/vnest.want"
    same "a nested copy of the last harness is not the line's harness" "$T/vnest.want" "$T/vnest.jsonl"
else
    flunk "a nested copy of the last harness is not the line's harness" "could not build the case"
fi
# Bad JSON after the harness of a line that repeats it: reported at that
# line, at the column the line alone gets.
{ head -n 2 "$T/traj.jsonl"; sed -n 3p "$T/traj.jsonl" | sed 's/"messages":\[/"messages":[,/'; } >"$T/bad3.jsonl"
tail -n 1 "$T/bad3.jsonl" >"$T/line3.jsonl"
fails "bad line after repeated harnesses" 1 $J "$T/bad3.jsonl"
col=$(sed -n 's/.*bad3.jsonl:3: invalid JSON at column \([0-9]*\):.*/\1/p' "$T/.err")
[ "${col:-0}" -gt 8000 ] && pass "bad line reported at its line, past the harness" || flunk "bad line reported at its line, past the harness" "$(cat "$T/.err")"
fails "the same line alone" 1 $J "$T/line3.jsonl"
has "the same column" "$T/.err" "line3.jsonl:1: invalid JSON at column ${col:-x}:"

# A tampered tool result: the replay disagrees.
grep '"name":"get_product","content":"{\\"ok\\":true' "$T/traj.jsonl" | head -1 \
    | sed 's/\\"price\\":\([0-9]\)/\\"price\\":9\1/' >"$T/tamper.jsonl"
$J "$T/tamper.jsonl" >"$T/vt.jsonl"
has "tampered tool output flagged" "$T/vt.jsonl" '"code":"tool_output_mismatch","component":"replay","detail":"message [0-9]+: tool output differs from the simulator"'
has "tampered line fails" "$T/vt.jsonl" '"pass":false'

# Bad input.
fails "unknown task id" 1 $J "$FX/bad.jsonl"
has "unknown task id message" "$T/.err" "^judge: .*bad.jsonl:1: unknown task id 'no-such-task'"
tail -n 1 "$FX/bad.jsonl" >"$T/badjson.jsonl"
fails "bad JSON line" 1 $J "$T/badjson.jsonl"
has "bad JSON line message" "$T/.err" "badjson.jsonl:1: invalid JSON"
head -1 "$T/traj.jsonl" >"$T/mixed.jsonl"; cat "$FX/bad.jsonl" >>"$T/mixed.jsonl"
ok "--skip-bad" $J --skip-bad -o "$T/vs.jsonl" "$T/mixed.jsonl"
has "--skip-bad reports the count" "$T/.err" "skipped 2 bad lines"
[ "$(grep -c . "$T/vs.jsonl")" -eq 1 ] && pass "--skip-bad keeps good lines" || flunk "--skip-bad keeps good lines"
fails "no --world" 2 judge --tasks "$T/tasks.jsonl" "$T/traj.jsonl"
has "no --world message" "$T/.err" "--world is required"
fails "missing world file" 1 judge --world "$T/nope.json" "$T/traj.jsonl"
has "missing world message" "$T/.err" "nope.json"
fails "unknown option" 2 judge --bogus
ok "--help" judge --help
has "--help shows usage" "$T/.out" "^usage: judge"
echo '{"weights":{"accuracy":"x"}}' >"$T/badcfg.json"
fails "bad config" 1 $J --config "$T/badcfg.json" "$T/traj.jsonl"
has "bad config message" "$T/.err" "weights.accuracy must be a number"

# calibrate: labels from a known rule, fitted and reported, deterministic.
jq -c '{id, overall: (if .pass then 5 else 2 end)}' "$T/vh.jsonl" >"$T/labels.jsonl"
cat "$T/v.jsonl" "$T/vt.jsonl" >"$T/vall.jsonl"
jq -c '{id, accuracy: .scores.accuracy, effectiveness: .scores.effectiveness}' "$T/vall.jsonl" >"$T/labels2.jsonl"
ok "calibrate" judge calibrate --labels "$T/labels2.jsonl" --seed 4 --report "$T/rep.json" -o "$T/cfg.json" "$T/vall.jsonl"
has "calibrate report" "$T/rep.json" '"mode":"components".*"pass":\{"accuracy":[0-9.]+,"kappa":'
has "calibrate report confusion" "$T/rep.json" '"effectiveness":\{"accuracy":1\.0,"kappa":'
has "fitted config" "$T/cfg.json" '"weights":\{"accuracy":'
judge calibrate --labels "$T/labels2.jsonl" --seed 4 -o "$T/cfg2.json" "$T/vall.jsonl" 2>/dev/null
same "calibrate is deterministic" "$T/cfg.json" "$T/cfg2.json"
ok "fitted config scores" $J --config "$T/cfg.json" -o "$T/vc.jsonl" "$T/traj.jsonl"
ok "calibrate scores trajectories itself" judge calibrate --world "$T/world.json" --tasks "$T/tasks.jsonl" \
    --labels "$T/labels.jsonl" -o "$T/cfg3.json" "$T/hsa.jsonl"
has "calibrate summary" "$T/.err" "calibrate: overall labels"
fails "bad label" 1 judge calibrate --labels "$FX/labels-bad.jsonl" "$T/v.jsonl"
has "bad label message" "$T/.err" "labels-bad.jsonl:2: \"accuracy\" must be 0 or 1"
fails "calibrate without --labels" 2 judge calibrate "$T/v.jsonl"

# annotate with piped answers (the pty session is in test_judge).
head -3 "$T/traj.jsonl" >"$T/three.jsonl"
printf '1\n0.5\nshort\n0\n1\n\nq\n' | judge annotate --world "$T/world.json" --tasks "$T/tasks.jsonl" \
    --labels "$T/lab.jsonl" "$T/three.jsonl" >"$T/ann.out" 2>&1
[ "$(grep -c . "$T/lab.jsonl")" -eq 2 ] && pass "annotate appends labels" || flunk "annotate appends labels" "$(cat "$T/ann.out")"
has "annotate label with comment" "$T/lab.jsonl" '"accuracy":1,"effectiveness":0.5,"comment":"short"'
has "annotate shows the verdict" "$T/ann.out" "judge: +accuracy 1"
printf 'q\n' | judge annotate --labels "$T/lab.jsonl" "$T/three.jsonl" >"$T/ann2.out" 2>&1
has "annotate resumes" "$T/ann2.out" "3 cases, 1 to label \(2 already in"
fails "annotate without --labels" 2 judge annotate "$T/three.jsonl"

# readme_tour.sh — the README's tour, run exactly as written.
#
# The commands are the indented lines of the README section "A tour of the
# pipeline" (up to the next heading), in order, with their four spaces of
# indentation removed; indented tables (lines starting with "|") are not
# commands.  They run with sh -e in a scratch directory that holds only a
# link to examples/, as a user's shell at the top of a fresh clone would,
# so a snippet that needs a file no earlier snippet made fails here.
#   sh tests/cli/readme_tour.sh --print    the commands, to read or paste
# (any other use goes through tests/run.sh).

# The section's commands on stdout.
tour_commands() {
    awk '{ L[NR] = $0 }
         END {
             for (s = 1; s <= NR && L[s] != "A tour of the pipeline"; s++) ;
             for (i = s + 2; i <= NR; i++) {
                 if (L[i] != "" && L[i + 1] ~ /^-+$/) break;     # the next heading
                 if (L[i] ~ /^    / && L[i] !~ /^    \|/) print substr(L[i], 5);
             }
         }' "$1"
}

top=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --print ]; then tour_commands "$top/README"; exit 0; fi

. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
need "$HAT_TOP/README"
tour_commands "$HAT_TOP/README" >"$T/tour.sh"

# The extraction itself: the tour begins and ends where the README says.
case $(head -n 1 "$T/tour.sh") in "harness-lint examples/harness "*) true ;; *) false ;; esac \
    && pass "the tour starts with harness-lint" || flunk "the tour starts with harness-lint" "$(head -n 1 "$T/tour.sh")"
for p in world-gen traj-gen hsa-augment judge tok-train tok-encode model-init sft-step generate rollout \
         opd-step grpo-step evalset report serve loadgen; do
    grep -Eq "(^|[|;] *|^ +)$p " "$T/tour.sh" && pass "the tour runs $p" || flunk "the tour runs $p"
done
hasnt "no table rows in the commands" "$T/tour.sh" '^\|'
hasnt "nothing from the GPU section" "$T/tour.sh" '--device cuda'

# Run it.  Its own session and process group, so a serve it leaves behind
# (a failure between serve & and kill) goes when it ends.
mkdir "$T/run" && ln -s "$HAT_TOP/examples" "$T/run/examples"
( cd "$T/run" && exec setsid timeout 900 sh -e "$T/tour.sh" >"$T/stdout" 2>"$T/stderr" ) &
pid=$!
wait $pid
rc=$?
kill -TERM -- "-$pid" 2>/dev/null
if [ "$rc" -eq 0 ]; then pass "the README tour runs (exit 0)"
else flunk "the README tour runs (exit 0)" "exit $rc; last lines: $(tail -n 15 "$T/stderr")"; fi

# What it made is what the README says it makes.
R=$T/run
ok "harness-unpack round trip is byte-exact" sh -c "harness-pack '$R/week48' | cmp -s - '$R/harness.json'"
[ "$(wc -l <"$R/hsa.jsonl")" -eq 800 ] && pass "hsa-augment: 200 trajectories x 4" || flunk "hsa-augment: 200 trajectories x 4" "$(wc -l <"$R/hsa.jsonl")"
jq -e -s 'length == 20 and all(.[]; .tokens > 0 and .loss > 0)' "$R/m.jsonl" >/dev/null \
    && pass "sft-step: 20 steps that train tokens" || flunk "sft-step: 20 steps that train tokens" "$(tail -n 2 "$R/m.jsonl" 2>/dev/null)"
jq -e -s '.[0].loss > .[-1].loss' "$R/m.jsonl" >/dev/null \
    && pass "sft-step: the loss falls" || flunk "sft-step: the loss falls" "$(jq -c .loss "$R/m.jsonl" 2>/dev/null | tr '\n' ' ')"
has "sft-step says how many tokens it trains" "$T/stderr" "sequences of [0-9]+ tokens in all, [1-9][0-9]* of them trained"
for f in base sft opd hat; do
    ckpt info "$R/$f.ckpt" >/dev/null 2>&1 && pass "$f.ckpt is a checkpoint" || flunk "$f.ckpt is a checkpoint"
done
[ -s "$R/hfdir/model.safetensors" ] && pass "ckpt export --hf" || flunk "ckpt export --hf"
[ "$(jq -s 'length' "$R/rollouts.jsonl" 2>/dev/null)" = 4 ] && pass "rollout: 4 trajectories" || flunk "rollout: 4 trajectories"
has "report: a row for the trained model" "$T/stdout" '^\| hat +\|'
[ -s "$R/plots/scores.png" ] && [ -s "$R/plots/scores.svg" ] && pass "report --plots" || flunk "report --plots" "$(ls "$R/plots" 2>&1)"
has "loadgen: 8 requests, 8 answered" "$T/stdout" '"requests":8,"ok":8,'

# learn.sh — the learning test: a short SFT run from a base that reads
# must make more of the teacher's opening choices on dev requests than a
# constant choice makes (the teacher's skill and tool, teacher-forced) and
# copy the request's product into the call's argument, so a regression in
# training (sft-step, the model, the optimiser, the chat template, the
# tokenizer) or in the data (task-gen, traj-gen, the harness) shows up
# here.
#
# Setting (examples/results/micro-notes.md, "learning test", e15, e16):
# the mini harness (tests/fixtures/harness-mini: 4 skills, 3 tools, 3
# prompt blocks with params, all hooks), four intents with distinct skills
# and tools (price, size, order status, greeting), 16 worlds of 40
# products, 8 tasks of each intent per world in random order, sessions of
# 8 requests (examples/tools/minidata.sh), 120 SFT steps (batch 4, lr
# 3e-3, warmup 10, cosine) from tests/fixtures/learn/base.ckpt: a 2 x 128
# model with 4 heads of 32 that was given an induction head and taught
# to look names up on copy-gen's records only (its README says how; ~30
# min of 2 cores, too long to make here).  Scored teacher-forced on 24 dev
# tasks (6 per intent, a world no training task came from) by
# examples/tools/probe.sh: the text before each choice the teacher made
# at the opening (the skill it loads, the tool it calls, the tool's first
# argument), the model's greedy continuation right when it starts with
# the teacher's text.  The base itself is the control.
#
# Measured (one thread, session 8): skill 12 of 24, tool 18 of 18,
# argument 8 of 18, loss 0.248; the base 0, 0, 0; after 60 steps 9, 9, 1;
# the whole test 1 min 53 s wall, 98 s user, on one thread beside a
# training run (session 9; 135 s of CPU in session 8 on a loaded machine).  The
# same 120 steps from an untrained model (this test until session 8)
# made 13, 18 and 0 at loss 0.807: it chooses the skill and tool but
# copies no argument.  Since the mini harness writes its skill lines
# description first (session 14): skill 16, tool 18, argument 8, loss
# 0.259; the base 0, 0 and 1 (its look-up copies one product unasked).
# One constant skill is right for 6 of the 24 and one constant tool for
# 6 of the 18, so 8 and 12 are asserted: the run
# chooses by the request; a constant product argument is right for at
# most the dev calls that name one product (1 or 2), so 4 is asserted:
# the run copies.
. "$HAT_TOP/tests/cli/lib.sh"
# Under ASan+UBSan the run takes ten times its ~3 minutes of CPU, and it
# exercises no code the other tests leave out: skipped there, and said so.
if [ "${HAT_SAN:-0}" = 1 ]; then
    skip "learning test" "SAN=1 (the release build runs it)"; exit 0
fi
T=$(mktmp)
X="$HAT_TOP/examples/tools"
WORLDS=${LEARN_WORLDS:-16}
STEPS=${LEARN_STEPS:-120}
BASE="$HAT_TOP/tests/fixtures/learn"
# The shares asserted (above): measured 12, 18 and 8.
MIN_SKILL=8 MIN_TOOL=12 MIN_ARG=4

sh "$X/minidata.sh" "$T" "$WORLDS" || exit 1
ok "the teacher opens every dev request right" \
    sh -c "jq -n -c -f '$X/opening.jq' --slurpfile ref '$T/dev/teacher.jsonl' --arg summary 1 < '$T/dev/teacher.jsonl' | jq -e '.ok == 24'"

c=$(sh "$X/probe.sh" "$BASE/base.ckpt" "$BASE/tokenizer.json" "$T/dev")
echo "# learn: the base: $c"
[ "$(echo "$c" | jq --argjson a "$MIN_ARG" '.n == 24 and .tools == 18 and .skill + .tool == 0 and .arg < $a')" = true ] &&
    pass "the base chooses no skill or tool and copies fewer than $MIN_ARG arguments" ||
    flunk "the base chooses no skill or tool and copies fewer than $MIN_ARG arguments" "$c"

ok "SFT runs" sft-step --init "$BASE/base.ckpt" --data "$T/sessions.jsonl" --steps "$STEPS" --seq 3072 \
    --batch 4 --lr "${LEARN_LR:-3e-3}" --warmup 10 --seed 1 --metrics "$T/m.jsonl" -o "$T/m.ckpt"
r=$(sh "$X/probe.sh" "$T/m.ckpt" "$BASE/tokenizer.json" "$T/dev")
echo "# learn: $STEPS steps, loss $(tail -n 1 "$T/m.jsonl" | jq .loss): $r"
skill=$(echo "$r" | jq '.skill // 0')
[ "$(echo "$r" | jq '.n == 24 and .tools == 18')" = true ] && pass "every dev request probed" ||
    flunk "every dev request probed" "$r"
[ "$skill" -ge "$MIN_SKILL" ] && pass "at least $MIN_SKILL of 24 dev requests: the teacher's skill" ||
    flunk "at least $MIN_SKILL of 24 dev requests: the teacher's skill" "$r"
tool=$(echo "$r" | jq '.tool // 0')
[ "$tool" -ge "$MIN_TOOL" ] && pass "at least $MIN_TOOL of 18 dev calls: the teacher's tool" ||
    flunk "at least $MIN_TOOL of 18 dev calls: the teacher's tool" "$r"
arg=$(echo "$r" | jq '.arg // 0')
[ "$arg" -ge "$MIN_ARG" ] && pass "at least $MIN_ARG of 18 dev calls: the product copied from the request" ||
    flunk "at least $MIN_ARG of 18 dev calls: the product copied from the request" "$r"

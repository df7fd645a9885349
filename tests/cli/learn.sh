# learn.sh — the learning test: a short SFT run from nothing must make
# more of the teacher's opening choices on dev requests than a constant
# choice makes (the teacher's skill and tool, teacher-forced), so a
# regression in training (sft-step, the model, the optimiser, the chat
# template, the tokenizer) or in the data (task-gen, traj-gen, the
# harness) shows up here.
#
# Setting (examples/results/micro-notes.md, "learning test" and e11): the
# mini harness (tests/fixtures/harness-mini: 4 skills, 3 tools, 3 prompt
# blocks with params, all hooks), four intents with distinct skills and
# tools (price, size, order status, greeting), 16 worlds of 40 products, 8
# tasks of each intent per world, sessions of 8 requests, a 2 x 128 model
# with 4 heads of 32 and a 1,024-id tokenizer, 120 SFT steps (batch 4, lr
# 3e-3, warmup 10, cosine).  Scored teacher-forced on 24 dev tasks (6 per
# intent, a world no training task came from) by examples/tools/probe.sh:
# the text before each choice the teacher made at the opening (the skill
# it loads, the tool it calls, the tool's first argument), the model's
# greedy continuation right when it starts with the teacher's text.  The
# untrained model is the control.
#
# Measured (one thread) since minidata.sh draws each world's task order at
# random: skill 13 of 24, tool 18 of 18, argument 0 of 18, loss 0.807;
# the untrained model 0, 0, 0; about 240 s of CPU, over the 2-minute
# target.  (Before, every session was the same cycle of intents, so the
# first turn's skill was always the same and the rest followed from the
# turn before: 11 and 12, loss 0.682, without reading the request.)
# One constant skill is right for 6 of the 24 and one constant tool for 6
# of the 18, so 8 and 12 are asserted: the run chooses by the request.  The earlier shape (2 heads sharing one KV head, lr 8e-3) stayed
# at those defaults (6 and 6).  Copying the argument needs a base that
# copies (micro-notes e11: examples/tools/induction.sh, about 25 min of
# CPU), too long for make check, so no argument is asserted.
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
# The shares asserted: more than a constant choice makes (one skill is
# right for 6 of the 24 dev requests, one tool for 6 of the 18 calls);
# measured 13 and 18.
MIN_SKILL=8 MIN_TOOL=12

sh "$X/minidata.sh" "$T" "$WORLDS" || exit 1
ok "the teacher opens every dev request right" \
    sh -c "jq -n -c -f '$X/opening.jq' --slurpfile ref '$T/dev/teacher.jsonl' --arg summary 1 < '$T/dev/teacher.jsonl' | jq -e '.ok == 24'"

model-init --config "$T/cfg.json" --tokenizer "$T/tok.json" --seed 1 -o "$T/init.ckpt"

c=$(sh "$X/probe.sh" "$T/init.ckpt" "$T/tok.json" "$T/dev")
echo "# learn: untrained: $c"
[ "$(echo "$c" | jq '.n == 24 and .tools == 18 and .skill + .tool + .arg == 0')" = true ] &&
    pass "the untrained model makes none of the choices" || flunk "the untrained model makes none of the choices" "$c"

ok "SFT runs" sft-step --init "$T/init.ckpt" --data "$T/sessions.jsonl" --steps "$STEPS" --seq 3072 \
    --batch 4 --lr "${LEARN_LR:-3e-3}" --warmup 10 --seed 1 --metrics "$T/m.jsonl" -o "$T/m.ckpt"
r=$(sh "$X/probe.sh" "$T/m.ckpt" "$T/tok.json" "$T/dev")
echo "# learn: $STEPS steps, loss $(tail -n 1 "$T/m.jsonl" | jq .loss): $r"
skill=$(echo "$r" | jq '.skill // 0')
[ "$(echo "$r" | jq '.n == 24 and .tools == 18')" = true ] && pass "every dev request probed" ||
    flunk "every dev request probed" "$r"
[ "$skill" -ge "$MIN_SKILL" ] && pass "at least $MIN_SKILL of 24 dev requests: the teacher's skill" ||
    flunk "at least $MIN_SKILL of 24 dev requests: the teacher's skill" "$r"
tool=$(echo "$r" | jq '.tool // 0')
[ "$tool" -ge "$MIN_TOOL" ] && pass "at least $MIN_TOOL of 18 dev calls: the teacher's tool" ||
    flunk "at least $MIN_TOOL of 18 dev calls: the teacher's tool" "$r"

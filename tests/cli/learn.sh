# learn.sh — the learning test: a short SFT run from nothing must open a
# stated share of dev requests the way the teacher does, so a regression in
# training (sft-step, the model, the optimiser, the chat template, the
# tokenizer) or in the data (task-gen, traj-gen, the harness) shows up here.
#
# Setting (examples/results/micro-notes.md, "learning test"): the mini
# harness (tests/fixtures/harness-mini: 4 skills, 3 tools, 3 prompt blocks,
# all hooks), four intents with distinct skills and tools (price, size,
# order status, greeting), WORLDS worlds of 40 products so no product is
# seen often enough to be memorised, sessions of 8 requests, a 2 x 128 model
# with a 1,024-id tokenizer, STEPS SFT steps; then rollout --judge on 24 dev
# tasks from a world no training task came from and tools/opening.jq
# against the teacher's trajectories.  The same untrained model is the
# control: it must open none right.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
X="$HAT_TOP/examples/tools"
WORLDS=${LEARN_WORLDS:-16}
STEPS=${LEARN_STEPS:-60}
# The share asserted: openings right (skill, tool and arguments) of 24.
MIN_SKILL=${LEARN_MIN_SKILL:-12}
MIN_OK=${LEARN_MIN_OK:-6}

harness-pack -o "$T/h.json" "$HAT_TOP/tests/fixtures/harness-mini"
# N tasks of each intent from world-gen seed SEED, the intents interleaved.
tasks() { # WORLD N SEED
    k=0
    for i in price size order_status greeting; do
        k=$((k + 1))
        task-gen --world "$1" -n "$2" --intent "$i" --seed $(($3 * 10 + k)) || return 1
    done | jq -c -s 'group_by(.intent) | transpose | flatten[] | select(. != null)'
}
for s in $(seq 1 "$WORLDS"); do
    world-gen --seed $((100 + s)) --products 40 -o "$T/w.json" &&
    tasks "$T/w.json" 8 "$s" | traj-gen --world "$T/w.json" --harness "$T/h.json" --seed "$s" || exit 1
done > "$T/traj.jsonl"
jq -c -n '[inputs] | _nwise(8) | {id: .[0].id, harness: .[0].harness, messages: (map(.messages) | add)}' \
    "$T/traj.jsonl" > "$T/sessions.jsonl"
mkdir -p "$T/dev"
cp "$T/h.json" "$T/dev/harness.json"
world-gen --seed 9001 --products 40 -o "$T/dev/world.json"
tasks "$T/dev/world.json" 6 77 > "$T/dev/tasks.jsonl"
traj-gen --world "$T/dev/world.json" --harness "$T/h.json" --seed 1 -o "$T/dev/teacher.jsonl" "$T/dev/tasks.jsonl"
ok "the teacher opens every dev request right" \
    sh -c "jq -n -c -f '$X/opening.jq' --slurpfile ref '$T/dev/teacher.jsonl' --arg summary 1 < '$T/dev/teacher.jsonl' | jq -e '.ok == 24'"

harness-render "$T/sessions.jsonl" | tok-train -n 1024 -o "$T/tok.json"
cat > "$T/cfg.json" <<'J'
{"vocab_size": 1024, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2,
 "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "rms_norm_eps": 1e-06,
 "rope_theta": 10000.0, "tie_word_embeddings": false, "max_position_embeddings": 4096}
J
model-init --config "$T/cfg.json" --tokenizer "$T/tok.json" --seed 1 -o "$T/init.ckpt"

# The control: the untrained model.
rollout --ckpt "$T/init.ckpt" --world "$T/dev/world.json" --harness "$T/h.json" --max-tokens 32 \
    --max-turns 2 -o "$T/init.dev.jsonl" "$T/dev/tasks.jsonl"
c=$(jq -n -c -f "$X/opening.jq" --slurpfile ref "$T/dev/teacher.jsonl" --arg summary 1 < "$T/init.dev.jsonl")
[ "$(echo "$c" | jq '.skill + .ok')" = 0 ] && pass "the untrained model opens nothing right" ||
    flunk "the untrained model opens nothing right" "$c"

ok "SFT and the dev curve run" env LR=${LEARN_LR:-5e-3} WARMUP=10 BATCH=4 SEQ=3072 SEED=1 MAXTOK=64 \
    sh "$X/curve.sh" "$T/init.ckpt" "$T/sessions.jsonl" "$STEPS" "${LEARN_POINTS:-1}" "$T/dev" "$T/m"
cat "$T/m.curve.jsonl" 2>/dev/null | sed 's/^/# learn: /'
r=$(tail -n 1 "$T/m.curve.jsonl" 2>/dev/null)
skill=$(echo "$r" | jq '.skill // 0')
okn=$(echo "$r" | jq '.ok // 0')
[ "$skill" -ge "$MIN_SKILL" ] && pass "at least $MIN_SKILL of 24 dev requests load the right skill first" ||
    flunk "at least $MIN_SKILL of 24 dev requests load the right skill first" "$r"
[ "$okn" -ge "$MIN_OK" ] && pass "at least $MIN_OK of 24 open right: skill, tool, arguments" ||
    flunk "at least $MIN_OK of 24 open right: skill, tool, arguments" "$r"

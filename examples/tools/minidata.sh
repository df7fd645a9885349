#!/bin/sh
# minidata.sh — the small learning setting of tests/cli/learn.sh and
# examples/Makefile's PROFILE=micro (examples/results/micro-notes.md):
#
#   minidata.sh OUT WORLDS
#
# the mini harness (tests/fixtures/harness-mini) as OUT/h.json; WORLDS
# worlds of 40 products (world-gen --seed 101..), 8 tasks of each of four
# intents (price, size, order status, greeting) per world in random order,
# played by the teacher (OUT/traj.jsonl) and joined into sessions of 8
# (OUT/sessions.jsonl); a 1,024-id tokenizer learnt from them
# (OUT/tok.json); the model shape, 2 x 128 with 4 heads of 32
# (OUT/cfg.json); and the dev split, never trained on (OUT/dev:
# harness.json, world.json = world-gen --seed 9001, tasks.jsonl = DEV per
# intent (default 6) from the train-side phrasing banks, teacher.jsonl).
set -eu
[ $# -eq 2 ] || { echo "usage: minidata.sh OUT WORLDS" >&2; exit 2; }
out=$1 worlds=$2
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/dev"
harness-pack -o "$out/h.json" "$top/tests/fixtures/harness-mini"
# WORLD N SEED: N tasks of each intent in an order drawn from SEED.  The
# order must be random: with a fixed cycle (e11-e12 had greeting, order,
# price, size in every session) a session's first turn is always the same
# skill and each later one follows from the turn before, so a model that
# never reads the request gets every choice right in training.
tasks() {
    k=0
    for i in price size order_status greeting; do
        k=$((k + 1))
        task-gen --world "$1" -n "$2" --intent "$i" --seed $(($3 * 10 + k)) || return 1
    done | awk -v s="$3" 'BEGIN { srand(s) } { printf "%.12f\t%s\n", rand(), $0 }' | sort -k1,1 | cut -f2-
}
for s in $(seq 1 "$worlds"); do
    world-gen --seed $((100 + s)) --products 40 -o "$out/w.json" &&
    tasks "$out/w.json" 8 "$s" | traj-gen --world "$out/w.json" --harness "$out/h.json" --seed "$s" || exit 1
done > "$out/traj.jsonl"
jq -c -n '[inputs] | _nwise(8) | {id: .[0].id, harness: .[0].harness, messages: (map(.messages) | add)}' \
    "$out/traj.jsonl" > "$out/sessions.jsonl"
cp "$out/h.json" "$out/dev/harness.json"
world-gen --seed 9001 --products 40 -o "$out/dev/world.json"
tasks "$out/dev/world.json" "${DEV:-6}" 77 > "$out/dev/tasks.jsonl"
traj-gen --world "$out/dev/world.json" --harness "$out/h.json" --seed 1 -o "$out/dev/teacher.jsonl" "$out/dev/tasks.jsonl"
harness-render "$out/sessions.jsonl" | tok-train -n 1024 -o "$out/tok.json"
cat > "$out/cfg.json" <<'J'
{"vocab_size": 1024, "hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 32, "rms_norm_eps": 1e-06,
 "rope_theta": 10000.0, "tie_word_embeddings": false, "max_position_embeddings": 4096}
J

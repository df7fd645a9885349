# sft.sh — sft-step on text and trajectories: the chat encoder's ids and
# loss mask, length buckets, and the errors when no tokenizer is at hand.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
export OMP_NUM_THREADS=1
world-gen --seed 2 --products 20 -o "$T/w.json"
task-gen --world "$T/w.json" -n 12 --seed 2 -o "$T/t.jsonl"
traj-gen --world "$T/w.json" --harness "$HAT_TOP/examples/harness" -o "$T/traj.jsonl" "$T/t.jsonl"
ok "tok-train on trajectories" tok-train -n 700 --chat -o "$T/tok.json" "$T/traj.jsonl"
cat >"$T/cfg.json" <<'CFG'
{"vocab_size": 700, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
 "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "rms_norm_eps": 1e-6,
 "rope_theta": 10000.0, "tie_word_embeddings": true, "max_position_embeddings": 4096}
CFG
ok "model-init with a tokenizer" model-init --config "$T/cfg.json" --tokenizer "$T/tok.json" -o "$T/base.ckpt"
ok "model-init without one" model-init --config "$T/cfg.json" -o "$T/bare.ckpt"
ok "model-init sizes the vocabulary to the tokenizer" model-init --preset tiny --tokenizer "$T/tok.json" -o "$T/sized.ckpt"
ckpt info "$T/sized.ckpt" | jq -e '.config.vocab_size == 700' >/dev/null && pass "vocab_size = tokenizer ids" || flunk "vocab_size = tokenizer ids"
fails "model-init refuses a vocabulary too small" 1 model-init --config "$T/cfg.json" --vocab 100 --tokenizer "$T/tok.json" -o "$T/small.ckpt"
has "names both sizes" "$T/.err" "tokenizer has 700 ids but --vocab is 100"
sed 's/"vocab_size": 700/"vocab_size": 300/' "$T/cfg.json" >"$T/cfg300.json"
fails "model-init refuses a config vocabulary too small" 1 model-init --config "$T/cfg300.json" --tokenizer "$T/tok.json" -o "$T/small.ckpt"
has "names the config" "$T/.err" "tokenizer has 700 ids but the config's vocab_size is 300"

# Trajectories straight from traj-gen, encoded with the checkpoint's tokenizer.
ok "sft-step on trajectories" sft-step --init "$T/base.ckpt" --data "$T/traj.jsonl" --steps 3 --batch 2 \
    --seq 4096 --metrics "$T/m.jsonl" -o "$T/a.ckpt"
jq -e -s 'length == 3 and all(.[]; .loss > 0 and .tokens > 0)' "$T/m.jsonl" >/dev/null \
    && pass "metrics: three steps with a loss" || flunk "metrics: three steps with a loss" "$(cat "$T/m.jsonl")"
jq -e -s 'all(.[]; .tokens_processed >= .tokens and .tokens_processed_per_s > 0)' "$T/m.jsonl" >/dev/null \
    && pass "metrics: processed tokens next to trained ones" || flunk "metrics: processed tokens next to trained ones" "$(cat "$T/m.jsonl")"
has "says how many tokens it trains" "$T/.err" "sequences of [0-9]+ tokens in all, [1-9][0-9]* of them trained"
# The same run on pre-tokenised records from tok-encode --chat: identical bytes.
tok-encode --chat -t "$T/tok.json" -o "$T/seqs.jsonl" "$T/traj.jsonl"
# The default --seq 256 cuts every trajectory before the assistant speaks:
# refused, naming the --seq that would keep the targets (not loss 0, exit 0).
fails "sft-step refuses data whose every target is cut" 1 sft-step --init "$T/base.ckpt" --data "$T/seqs.jsonl" \
    --steps 1 -o "$T/cut.ckpt"
has "names what to give" "$T/.err" "nothing to train: .*first 257 tokens.*--seq [0-9]+ keeps them all"
[ ! -e "$T/cut.ckpt" ] && pass "no checkpoint from a run that trains nothing" || flunk "no checkpoint from a run that trains nothing"
jq -c '.mask |= map(0)' "$T/seqs.jsonl" >"$T/nomask.jsonl"
fails "sft-step refuses data without a loss target" 1 sft-step --init "$T/base.ckpt" --data "$T/nomask.jsonl" \
    --steps 1 --seq 4096 -o "$T/nomask.ckpt"
has "says every mask is 0" "$T/.err" "nothing to train: none of its 12 sequences has a loss target \(every mask is 0\)"
# Some targets cut, some kept: trained, and the warning counts what was lost
# (a trajectory ends with the assistant's reply, so cutting its tail cuts targets).
long=$(jq -s 'map(.ids | length) | max' "$T/seqs.jsonl")
ok "sft-step with the longest sequence cut" sft-step --init "$T/base.ckpt" --data "$T/seqs.jsonl" --steps 1 \
    --batch 2 --seq $((long - 20)) -o "$T/part.ckpt"
has "the cut warning counts the lost targets" "$T/.err" "1 of 12 sequences longer than $((long - 19)) tokens were cut, losing [1-9][0-9]* of [0-9]+ loss targets"
ok "sft-step on tok-encode --chat output" sft-step --init "$T/base.ckpt" --data "$T/seqs.jsonl" --steps 3 \
    --batch 2 --seq 4096 -o "$T/b.ckpt"
same "trajectories and their encoding train the same" "$T/a.ckpt" "$T/b.ckpt"
# Only the assistant's tokens are targets: fewer than a tenth of all tokens.
jq -s '[.[] | .mask | add] | add' "$T/seqs.jsonl" >"$T/targets"
jq -s '[.[] | .ids | length] | add' "$T/seqs.jsonl" >"$T/all"
[ "$(cat "$T/targets")" -gt 0 ] && [ $(( $(cat "$T/targets") * 10 )) -lt "$(cat "$T/all")" ] \
    && pass "loss on the assistant's tokens only" || flunk "loss on the assistant's tokens only" "$(cat "$T/targets") of $(cat "$T/all")"

# Plain text records train too.
jq -c '{text: .messages[-1].content}' "$T/traj.jsonl" >"$T/text.jsonl"
ok "sft-step on text" sft-step --init "$T/base.ckpt" --data "$T/text.jsonl" --steps 2 --batch 4 -o "$T/c.ckpt"

# Exact resume, with length buckets (the default) and without.
for mode in bucket no-bucket; do
    flag=""; [ $mode = no-bucket ] && flag=--no-bucket
    ok "$mode: 2 steps" sft-step --init "$T/base.ckpt" --data "$T/seqs.jsonl" --steps 2 --total-steps 4 \
        --batch 2 --seq 4096 $flag --metrics "$T/$mode.metrics" -o "$T/$mode-2.ckpt"
    ok "$mode: resume 2 more" sft-step --init "$T/$mode-2.ckpt" --resume --data "$T/seqs.jsonl" --steps 2 \
        --metrics "$T/$mode.metrics" -o "$T/$mode-4.ckpt"
    [ "$(jq -c .step "$T/$mode.metrics" | paste -sd,)" = 1,2,3,4 ] && pass "$mode: the resumed run appends its metrics" ||
        flunk "$mode: the resumed run appends its metrics" "$(jq -c .step "$T/$mode.metrics" | paste -sd,)"
    ok "$mode: 4 straight" sft-step --init "$T/base.ckpt" --data "$T/seqs.jsonl" --steps 4 --total-steps 4 \
        --batch 2 --seq 4096 $flag -o "$T/$mode-4b.ckpt"
    same "$mode: resume is exact" "$T/$mode-4.ckpt" "$T/$mode-4b.ckpt"
done
cmp -s "$T/bucket-4.ckpt" "$T/no-bucket-4.ckpt" && flunk "buckets change the batches" || pass "buckets change the batches"

# No tokenizer: refused with a message naming the way out.
fails "trajectories need a tokenizer" 1 sft-step --init "$T/bare.ckpt" --data "$T/traj.jsonl" --steps 1 -o "$T/x.ckpt"
has "message names the line and the fix" "$T/.err" "traj.jsonl:1: a text or chat record needs a tokenizer"
ok "--tokenizer supplies one" sft-step --init "$T/bare.ckpt" --tokenizer "$T/tok.json" --data "$T/traj.jsonl" \
    --steps 1 --batch 2 --seq 4096 -o "$T/y.ckpt"
fails "a bad trajectory line" 1 sft-step --init "$T/base.ckpt" --data "$HAT_TOP/tests/fixtures/harness/not_json.json" --steps 1 -o "$T/z.ckpt"
printf '%s\n' '{"messages":[{"role":"wizard","content":"x"}]}' >"$T/bad.jsonl"
fails "an unknown role" 1 sft-step --init "$T/base.ckpt" --data "$T/bad.jsonl" --steps 1 -o "$T/z.ckpt"
has "unknown role named" "$T/.err" "bad.jsonl:1: .*wizard"

# --- generate on text and conversations, with stop strings ---------------------
printf '%s\n' '{"id":"t","text":"@Lily hi"}' >"$T/ptext.jsonl"
ok "generate on a text prompt" generate --ckpt "$T/a.ckpt" --max-tokens 12 -o "$T/g1.jsonl" "$T/ptext.jsonl"
jq -e '(.gen | length) <= 12 and (.text | type) == "string" and .id == "t"' "$T/g1.jsonl" >/dev/null \
    && pass "text prompt: ids and text out" || flunk "text prompt: ids and text out" "$(cat "$T/g1.jsonl")"
s=$(jq -r '.text | .[2:3]' "$T/g1.jsonl")
if [ -n "$s" ]; then
    ok "generate --stop-text" generate --ckpt "$T/a.ckpt" --max-tokens 12 --stop-text "$s" -o "$T/g2.jsonl" "$T/ptext.jsonl"
    want=$(jq -r --arg s "$s" '.text | .[0:index($s)]' "$T/g1.jsonl")
    jq -e --arg w "$want" '.text == $w and .finish == "stop"' "$T/g2.jsonl" >/dev/null \
        && pass "text ends before the stop string" || flunk "text ends before the stop string" "want '$want': $(cat "$T/g2.jsonl")"
else
    flunk "generate --stop-text" "greedy text too short: $(cat "$T/g1.jsonl")"
fi
printf '%s\n' '{"id":"c","messages":[{"role":"user","content":"Lily: how much is it?"}]}' >"$T/pchat.jsonl"
ok "generate on a conversation under a harness" generate --ckpt "$T/a.ckpt" --harness "$HAT_TOP/examples/harness" \
    --max-tokens 6 -o "$T/g3.jsonl" "$T/pchat.jsonl"
jq -e '.id == "c" and (.gen | length) >= 1' "$T/g3.jsonl" >/dev/null && pass "conversation prompt decoded" || flunk "conversation prompt decoded"
fails "text prompts need a tokenizer" 1 generate --ckpt "$T/bare.ckpt" "$T/ptext.jsonl"
has "tokenizer message" "$T/.err" "ptext.jsonl:1: a text or chat prompt needs a tokenizer"
fails "--stop-text needs a tokenizer" 2 generate --ckpt "$T/bare.ckpt" --stop-text x "$T/ptext.jsonl"

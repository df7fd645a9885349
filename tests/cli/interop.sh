# interop.sh — hat's Hugging Face exports used by transformers as they are,
# and transformers' saves read by hat.  The files' contents are checked
# always; the checks that run transformers (tests/cli/hf_peer.py in the
# venv of tests/venv.sh) are skipped, not failed, where it is not installed.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
CF="$HAT_CONFORMANCE/chat_template"
Q3="$HAT_CONFORMANCE/tokenizer/qwen3/tokenizer_config.json"
need "$CF/cases.jsonl" "$CF/expected.jsonl" "$Q3" "$HAT_TOP/tests/fixtures/chat/random.jsonl"
tiny_agent "$T" 6

# --- what the export holds (no Python needed)
ok "export with tokenizer" ckpt export --hf "$T/hf" "$T/m.ckpt"
for f in config.json model.safetensors tokenizer.json tokenizer_config.json generation_config.json; do
    [ -s "$T/hf/$f" ] && pass "export has $f" || flunk "export has $f"
done
jq -r .chat_template "$Q3" >"$T/want.jinja"
jq -r .chat_template "$T/hf/tokenizer_config.json" >"$T/got.jinja"
same "chat template is Qwen3's, byte for byte" "$T/want.jinja" "$T/got.jinja"
im_end=$(printf '<|im_end|>\n' | tok-encode --lines -t "$T/tok.json" | jq -c '.ids[0]')
eot=$(printf '<|endoftext|>\n' | tok-encode --lines -t "$T/tok.json" | jq -c '.ids[0]')
jq -c '[.eos_token, .pad_token, .added_tokens_decoder["'"$im_end"'"].content, .bos_token]' \
    "$T/hf/tokenizer_config.json" >"$T/tc"
has "tokenizer_config: EOS <|im_end|>, pad <|endoftext|>" "$T/tc" '^\["<\|im_end\|>","<\|endoftext\|>","<\|im_end\|>",null\]$'
jq -c '[.eos_token_id, .pad_token_id, .do_sample]' "$T/hf/generation_config.json" >"$T/gc"
has "generation_config: stop at <|im_end|>, pad <|endoftext|>, greedy" "$T/gc" "^\[$im_end,$eot,false\]$"
jq -c .eos_token_id "$T/hf/config.json" >"$T/eos"
has "config.json eos_token_id is <|im_end|>, not null" "$T/eos" "^$im_end$"
model-init --config "$T/cfg.json" -o "$T/m0.ckpt"
ok "export without tokenizer" ckpt export --hf "$T/hf0" "$T/m0.ckpt"
[ -e "$T/hf0/tokenizer_config.json" ] && flunk "no tokenizer_config.json without a tokenizer" ||
    pass "no tokenizer_config.json without a tokenizer"
jq -c .eos_token_id "$T/hf0/config.json" >"$T/eos0"
has "without a tokenizer eos_token_id stays null" "$T/eos0" '^null$'
ok "export + import keeps the weights" ckpt import "$T/hf" -o "$T/re.ckpt"
ckpt info "$T/m.ckpt" | jq -c '[.params, .tensors]' >"$T/i1"
ckpt info "$T/re.ckpt" | jq -c '[.params, .tensors]' >"$T/i2"
same "imported export: same shape" "$T/i1" "$T/i2"
HAT_DATA="$T/nodata" ckpt export --hf "$T/hf1" "$T/m.ckpt" >/dev/null 2>"$T/.err"
rc=$?
[ $rc -eq 1 ] && pass "export without the data file fails" || flunk "export without the data file fails" "exit $rc"
has "missing template message" "$T/.err" 'chat_template.jinja: data file not found'

# --- transformers on the export, and hat on transformers' save
if ! PY=$("$HAT_TOP/tests/venv.sh" 2>"$T/venv.err"); then
    why=$(head -n 1 "$T/venv.err")
    for c in "apply_chat_template == conformance (30 cases)" "apply_chat_template == random renders (120)" \
             "apply_chat_template == harness-render" "greedy ids hat == transformers" \
             "log-probs hat ~ transformers" "transformers save read by hat" \
             "greedy ids hat == transformers (transformers' save)" \
             "log-probs hat ~ transformers (transformers' save)"; do
        skip "$c" "$why"
    done
    exit 0
fi
# JSON lines compared after jq -c on both sides: the same text, one spelling
peer() { "$PY" "$HAT_TOP/tests/cli/hf_peer.py" "$@" | jq -c .; }

peer chat "$T/hf" "$CF/cases.jsonl" >"$T/hf_chat.jsonl" 2>"$T/.err"
jq -c '{id, text}' "$CF/expected.jsonl" >"$T/want_chat.jsonl"
same "apply_chat_template == conformance (30 cases)" "$T/want_chat.jsonl" "$T/hf_chat.jsonl"
R="$HAT_TOP/tests/fixtures/chat/random.jsonl"
peer chat "$T/hf" "$R" >"$T/hf_rand.jsonl" 2>"$T/.err"
jq -c '{id, text}' "$R" >"$T/want_rand.jsonl"
same "apply_chat_template == random renders (120)" "$T/want_rand.jsonl" "$T/hf_rand.jsonl"
# harness-render's text for the agent's trajectories
harness-render "$T/traj.jsonl" | jq -c . >"$T/hat_h.jsonl"
jq -c '{id, harness, messages: []}' "$T/traj.jsonl" | harness-render -o "$T/sys.jsonl"
peer harness-chat "$T/hf" "$T/sys.jsonl" "$T/traj.jsonl" >"$T/hf_h.jsonl" 2>"$T/.err"
[ -s "$T/hat_h.jsonl" ] && same "apply_chat_template == harness-render" "$T/hat_h.jsonl" "$T/hf_h.jsonl" ||
    flunk "apply_chat_template == harness-render" "no renders"

# greedy decoding and log-probs on the exported weights
printf '{"id":"a","ids":[5,17,33,2,60,9,41,12]}\n{"id":"b","ids":[7,7,19,63,0,28,3,50,1,2,3]}\n' >"$T/p.jsonl"
generate --ckpt "$T/m.ckpt" --max-tokens 12 --logprobs "$T/p.jsonl" >"$T/hat_g.jsonl"
peer generate "$T/hf" "$T/p.jsonl" 12 >"$T/hf_g.jsonl" 2>"$T/.err"
cmp_gen() {   # NAME HAT HF: same ids, log-probs within 1e-4
    jq -c '{id, gen}' "$2" >"$T/a"; jq -c '{id, gen}' "$3" >"$T/b"
    same "greedy ids hat == transformers$1" "$T/a" "$T/b"
    d=$(jq -n --slurpfile a "$2" --slurpfile b "$3" \
        '[$a, $b] | map(map(.logprobs) | add) | transpose | map(.[0] - .[1] | fabs) | max' 2>/dev/null)
    if awk -v d="${d:-1}" 'BEGIN{exit !(d < 1e-4)}'; then pass "log-probs hat ~ transformers$1 (max diff $d)"
    else flunk "log-probs hat ~ transformers$1" "max diff ${d:-?}: $(head -c 300 "$T/.err")"; fi
}
cmp_gen "" "$T/hat_g.jsonl" "$T/hf_g.jsonl"

# transformers' save_pretrained read by hat
peer save "$T/tsave" 11 2>"$T/.err"
ok "transformers save read by hat" ckpt import "$T/tsave" -o "$T/ts.ckpt"
generate --ckpt "$T/ts.ckpt" --max-tokens 12 --logprobs "$T/p.jsonl" >"$T/hat_t.jsonl"
peer generate "$T/tsave" "$T/p.jsonl" 12 >"$T/hf_t.jsonl" 2>"$T/.err"
cmp_gen " (transformers' save)" "$T/hat_t.jsonl" "$T/hf_t.jsonl"

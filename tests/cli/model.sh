# model.sh — model-init, sft-step, generate and ckpt end to end on a tiny model.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
FX="$HAT_TOP/tests/fixtures/model"

cat >"$T/cfg.json" <<'J'
{"vocab_size":32,"hidden_size":16,"intermediate_size":32,"num_hidden_layers":2,
 "num_attention_heads":2,"num_key_value_heads":1,"head_dim":8,"max_position_embeddings":64}
J
# 12 sequences cycling through the vocabulary; the second half masked out in odd ones
i=0; while [ $i -lt 12 ]; do
  awk -v s=$i 'BEGIN{printf "{\"ids\":["; for(t=0;t<14;t++) printf "%s%d", t?",":"", (s*3+t*5)%32;
                printf "]"; if (s%2) { printf ",\"mask\":["; for(t=0;t<14;t++) printf "%s%d", t?",":"", t<7;
                printf "]" } print "}"}'
  i=$((i+1))
done >"$T/seqs.jsonl"

# --- model-init
ok "init --help" model-init --help
fails "init unknown option" 2 model-init --bogus
fails "init needs -o" 2 model-init --config "$T/cfg.json"
ok "init" model-init --config "$T/cfg.json" --seed 7 -o "$T/a.ckpt"
ok "init again" model-init --config "$T/cfg.json" --seed 7 -o "$T/b.ckpt"
same "init same seed same bytes" "$T/a.ckpt" "$T/b.ckpt"
model-init --config "$T/cfg.json" --seed 8 -o "$T/c.ckpt"
if cmp -s "$T/a.ckpt" "$T/c.ckpt"; then flunk "init other seed differs"; else pass "init other seed differs"; fi
ok "init preset tiny" model-init --preset tiny --vocab 64 --mtp 1 -o "$T/tiny.ckpt"
ok "init with MTP" model-init --config "$T/cfg.json" --mtp 1 --mtp-weight 0.5 -o "$T/mtp.ckpt"
fails "init unknown preset" 2 model-init --preset huge -o "$T/x.ckpt"
echo '{"vocab_size":32}' >"$T/badcfg.json"
fails "init bad config" 1 model-init --config "$T/badcfg.json" -o "$T/x.ckpt"
has "init bad config message" "$T/.err" 'badcfg.json: config: missing required key "hidden_size"'

# --- ckpt
ok "ckpt info" ckpt info "$T/tiny.ckpt"
has "ckpt info fields" "$T/.out" '"params":[0-9]+,"tensors":61,"dtype":"F32".*"num_nextn_predict_layers":1'
ok "ckpt convert bf16" ckpt convert --dtype bf16 "$T/a.ckpt" -o "$T/a16.ckpt"
ckpt info "$T/a16.ckpt" >"$T/info16"
has "converted dtype" "$T/info16" '"dtype":"BF16"'
ok "ckpt export" ckpt export --hf "$T/hf" "$T/a.ckpt"
ok "ckpt import" ckpt import "$T/hf" -o "$T/re.ckpt"
same "export+import round trip" "$T/a.ckpt" "$T/re.ckpt"
head -c 3000 "$T/a.ckpt" >"$T/cut.ckpt"
fails "truncated ckpt refused" 1 ckpt info "$T/cut.ckpt"
has "truncated message" "$T/.err" 'cut.ckpt: .*truncated'
fails "ckpt unknown command" 2 ckpt frobnicate "$T/a.ckpt"

# --- sft-step: learning, exact resume, bad input
S="--data $T/seqs.jsonl --batch 4 --seq 12 --lr 3e-3 --warmup 2 --total-steps 20"
ok "sft 20 steps" sft-step --init "$T/a.ckpt" $S --steps 20 --metrics "$T/m.jsonl" -o "$T/full.ckpt"
first=$(head -n1 "$T/m.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
last=$(tail -n1 "$T/m.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
if awk -v a="$first" -v b="$last" 'BEGIN{exit !(b < a - 0.5)}'; then pass "loss falls ($first -> $last)"
else flunk "loss falls" "$first -> $last"; fi
has "metrics fields" "$T/m.jsonl" '^\{"step":20,"loss":[0-9.e-]+,"lr":[0-9.e-]+,"grad_norm":[0-9.e-]+,"tokens":[0-9]+,"tokens_per_s":'
ok "sft 10 steps" sft-step --init "$T/a.ckpt" $S --steps 10 -o "$T/half.ckpt"
ok "sft resume 10" sft-step --init "$T/half.ckpt" --data "$T/seqs.jsonl" --resume --steps 10 -o "$T/resumed.ckpt"
same "exact resume: 10+10 == 20 (bytes)" "$T/full.ckpt" "$T/resumed.ckpt"
fails "resume without state" 1 sft-step --init "$T/a.ckpt" --data "$T/seqs.jsonl" --resume --steps 1 -o "$T/x.ckpt"
printf '{"ids":[1,2,3]}\n{"ids":[1,99]}\n' >"$T/bad.jsonl"
fails "bad token id" 1 sft-step --init "$T/a.ckpt" --data "$T/bad.jsonl" --steps 1 -o "$T/x.ckpt"
has "bad token message" "$T/.err" 'bad.jsonl:2: ids\[1\]: not a token id in \[0, 32\)'
ok "skip-bad" sft-step --init "$T/a.ckpt" --data "$T/bad.jsonl" --skip-bad --steps 1 --seq 8 -o "$T/x.ckpt"
ok "sft with MTP" sft-step --init "$T/mtp.ckpt" --data "$T/seqs.jsonl" --batch 2 --seq 12 --steps 2 -o "$T/tm.ckpt"

# --- generate: greedy matches the PyTorch reference, batching is invisible
printf '{"id":"a","ids":[5,17,33,2,60,9,41,12]}\n{"id":"b","ids":[7,7,19,63,0,28,3,50]}\n{"id":"c","ids":[1]}\n' >"$T/p.jsonl"
ok "generate greedy" generate --ckpt "$FX" --max-tokens 8 -o "$T/g16.jsonl" "$T/p.jsonl"
# ids from torchref: qwen3_ref.py generate --model tests/fixtures/model --tokens ... --n 8
has "greedy == torch (a)" "$T/g16.jsonl" '^\{"id":"a","gen":\[58,58,58,53,53,53,53,53\],"finish":"length"\}$'
has "greedy == torch (b)" "$T/g16.jsonl" '^\{"id":"b","gen":\[2,11,2,2,2,2,2,2\],"finish":"length"\}$'
ok "generate batch 1" generate --ckpt "$FX" --max-tokens 8 --batch 1 -o "$T/g1.jsonl" "$T/p.jsonl"
same "batch size does not change output" "$T/g1.jsonl" "$T/g16.jsonl"
generate --ckpt "$FX" --max-tokens 6 --temperature 0.9 --top-p 0.9 --seed 3 --logprobs "$T/p.jsonl" >"$T/s1.jsonl"
generate --ckpt "$FX" --max-tokens 6 --temperature 0.9 --top-p 0.9 --seed 3 --logprobs --batch 2 "$T/p.jsonl" >"$T/s2.jsonl"
same "sampling: same seed same bytes" "$T/s1.jsonl" "$T/s2.jsonl"
has "logprobs present" "$T/s1.jsonl" '"logprobs":\[-[0-9]'
ok "generate stop id" generate --ckpt "$FX" --max-tokens 8 --stop 53 "$T/p.jsonl"
has "stops at the id" "$T/.out" '"gen":\[58,58,58,53\],"finish":"stop"'
printf '{"ids":[]}\n' | generate --ckpt "$FX" >/dev/null 2>"$T/e"; rc=$?
if [ $rc -eq 1 ] && grep -q '<stdin>:1: the prompt has 0 tokens' "$T/e"; then pass "generate bad prompt"; else flunk "generate bad prompt" "rc $rc"; fi

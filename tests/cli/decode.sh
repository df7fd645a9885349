# decode.sh — the decoding engine through generate and rollout: batch
# invariance down to the log-prob bits, MTP speculative decoding that does
# not change greedy output, its counters, and the errors it refuses.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
export OMP_NUM_THREADS=1
cat >"$T/cfg.json" <<'J'
{"vocab_size":64,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":2,
 "num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,"max_position_embeddings":128}
J
model-init --config "$T/cfg.json" --mtp 1 --std 0.3 --seed 3 -o "$T/mtp.ckpt"
model-init --config "$T/cfg.json" --seed 3 -o "$T/plain.ckpt"
i=0; while [ $i -lt 7 ]; do
    awk -v s=$i 'BEGIN{n=3+s*4; printf "{\"id\":\"p%d\",\"ids\":[", s; for(t=0;t<n;t++) printf "%s%d", t?",":"", (s*5+t*7)%64; print "]}"}'
    i=$((i+1))
done >"$T/p.jsonl"
G="--ckpt $T/mtp.ckpt --max-tokens 24 --logprobs"

generate $G --temperature 1 --batch 1 "$T/p.jsonl" >"$T/s1.jsonl"
generate $G --temperature 1 --batch 4 "$T/p.jsonl" >"$T/s4.jsonl"
same "sampling: --batch 1 and 4, same ids and log-prob bits" "$T/s1.jsonl" "$T/s4.jsonl"
OMP_NUM_THREADS=2 generate $G --temperature 1 --batch 3 "$T/p.jsonl" >"$T/s3.jsonl"
same "another thread count and batch, same bits" "$T/s1.jsonl" "$T/s3.jsonl"
ok "generate --jobs 2" generate $G --temperature 1 --batch 2 --jobs 2 -o "$T/sj2.jsonl" "$T/p.jsonl"
same "--jobs 2 (prompt i decoded by copy i mod 2): same bits" "$T/s1.jsonl" "$T/sj2.jsonl"
generate $G --temperature 1 --jobs 3 <"$T/p.jsonl" >"$T/sj3.jsonl"
same "--jobs 3 from stdin: same bits" "$T/s1.jsonl" "$T/sj3.jsonl"
{ head -n 2 "$T/p.jsonl"; echo '{"id":"x","ids":[999]}'; tail -n 2 "$T/p.jsonl"; } >"$T/pb.jsonl"
rm -f "$T/jb.jsonl"
fails "--jobs: a bad prompt" 1 generate $G --jobs 2 -o "$T/jb.jsonl" "$T/pb.jsonl"
n=$(grep -c 'pb.jsonl:3: token id 999' "$T/.err")
[ "$n" = 1 ] && [ ! -e "$T/jb.jsonl" ] && pass "--jobs: reported once, nothing written" || flunk "--jobs: bad prompt" "$n: $(cat "$T/.err")"
generate $G --skip-bad "$T/pb.jsonl" >"$T/pk1.jsonl" 2>/dev/null
generate $G --skip-bad --jobs 2 "$T/pb.jsonl" >"$T/pk2.jsonl" 2>/dev/null
same "--jobs --skip-bad: the good prompts, as one process" "$T/pk1.jsonl" "$T/pk2.jsonl"

generate $G --batch 4 "$T/p.jsonl" >"$T/g0.jsonl"
for k in 1 3; do
    ok "greedy --mtp $k" generate $G --batch 4 --mtp $k --stats -o "$T/g$k.jsonl" "$T/p.jsonl"
    same "greedy --mtp $k = no MTP (ids and log-probs)" "$T/g0.jsonl" "$T/g$k.jsonl"
done
has "stats line" "$T/.err" '^\{"stats":\{"steps":[0-9]+,"rows":[0-9]+,"generated":168,"drafted":[1-9][0-9]*,"accepted":[0-9]+,"acceptance":'
# 7 prompts at --batch 4: prompt rows ride in at least 2 steps, each of
# which appends one token per prompt; the rest is pure decoding
st=$(tail -n 1 "$T/.err")
echo "$st" | jq -e '.stats | .decode_tokens <= .generated - 7 and .decode_tokens > 0
    and .prefill_seconds > 0 and .decode_seconds > 0
    and .prefill_seconds + .decode_seconds <= .seconds
    and (.decode_tokens_per_s - .decode_tokens / .decode_seconds | fabs) < 1e-6 * .decode_tokens_per_s' >/dev/null &&
    pass "stats: prefill and decode split" || flunk "stats: prefill and decode split" "$st"
ok "sampling --mtp 2" generate $G --temperature 0.8 --top-k 20 --mtp 2 -o "$T/m2.jsonl" "$T/p.jsonl"
generate $G --temperature 0.8 --top-k 20 --mtp 2 --batch 1 "$T/p.jsonl" >"$T/m2b.jsonl"
same "sampling --mtp 2: batch invariant" "$T/m2.jsonl" "$T/m2b.jsonl"
bad=$(jq -c 'select((.gen|length) != 24 or (.logprobs|length) != 24 or ([.logprobs[]|select(. > 0)]|length) > 0)' "$T/m2.jsonl" | wc -l)
[ "$bad" = 0 ] && pass "sampling --mtp 2: full length, log-probs <= 0" || flunk "sampling --mtp 2 output" "$bad"

fails "--mtp without an MTP module" 1 generate --ckpt "$T/plain.ckpt" --mtp 2 "$T/p.jsonl"
has "--mtp message" "$T/.err" 'plain.ckpt: --mtp needs a checkpoint with an MTP module'
fails "--mtp too large" 2 generate $G --mtp 9 "$T/p.jsonl"
fails "--mtp not a number" 2 generate $G --mtp x "$T/p.jsonl"

# generate_device.sh — generate --device / --precision: clean refusals
# (no GPU, no CUDA back end, unknown names, --mtp on the GPU), auto falling
# back to the CPU, and on a machine with a GPU the fp32 GPU engine's greedy
# ids equal the CPU's (bf16: same shape of output, stats say "cuda").
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
export OMP_NUM_THREADS=1
cat >"$T/cfg.json" <<'J'
{"vocab_size":96,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":2,
 "num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,"max_position_embeddings":128}
J
model-init --config "$T/cfg.json" --std 0.4 --seed 5 -o "$T/m.ckpt"
model-init --config "$T/cfg.json" --mtp 1 --std 0.4 --seed 5 -o "$T/mtp.ckpt"
i=0; while [ $i -lt 6 ]; do
    awk -v s=$i 'BEGIN{n=1+s*5; printf "{\"id\":%d,\"ids\":[", s; for(t=0;t<n;t++) printf "%s%d", t?",":"", (s*11+t*7)%96; print "]}"}'
    i=$((i+1))
done >"$T/p.jsonl"
G="--ckpt $T/m.ckpt --max-tokens 20 --batch 4"

generate $G "$T/p.jsonl" >"$T/cpu.jsonl"
fails "--device bogus is a usage error" 2 generate $G --device bogus "$T/p.jsonl"
has "--device message" "$T/.err" '^generate: --device: must be cpu, cuda or auto'
fails "--precision fp16 is a usage error" 2 generate $G --precision fp16 "$T/p.jsonl"
has "--precision message" "$T/.err" '^generate: --precision: must be bf16 or fp32'
fails "--mtp with --device cuda is a usage error" 2 generate $G --device cuda --mtp 2 "$T/p.jsonl"
has "--mtp message" "$T/.err" 'not supported with --device cuda'
ok "--device cpu" generate $G --device cpu -o "$T/cpu2.jsonl" "$T/p.jsonl"
same "--device cpu = default" "$T/cpu.jsonl" "$T/cpu2.jsonl"
ok "--device auto --mtp falls back to the CPU" generate --ckpt "$T/mtp.ckpt" --max-tokens 8 --device auto --mtp 1 --stats -o "$T/auto.jsonl" "$T/p.jsonl"
has "auto with --mtp: stats say cpu" "$T/.err" '"device":"cpu"'

if generate $G --device cuda --precision fp32 --stats -o "$T/gpu.jsonl" "$T/p.jsonl" 2>"$T/gpu.err"; then
    # a usable GPU: fp32 greedy ids are the CPU's
    same "cuda fp32 greedy = cpu" "$T/cpu.jsonl" "$T/gpu.jsonl"
    has "cuda stats" "$T/gpu.err" '"device":"cuda"'
    ok "cuda bf16" generate $G --device cuda -o "$T/gpu16.jsonl" "$T/p.jsonl"
    # 20 ids each (19 commas inside "gen"), every prompt
    n=$(grep -c '"gen":\[[0-9]*\(,[0-9]*\)\{19\}\],"finish":"length"' "$T/gpu16.jsonl")
    [ "$n" = 6 ] && pass "cuda bf16: every prompt, full length" || flunk "cuda bf16 output" "$n lines"
    ok "cuda sampling with logprobs" generate $G --device cuda --precision fp32 --temperature 0.9 --top-k 30 --logprobs -o "$T/gs.jsonl" "$T/p.jsonl"
    generate $G --temperature 0.9 --top-k 30 "$T/p.jsonl" >"$T/cs.jsonl"
    sed 's/,"logprobs":\[[^]]*\]//' "$T/gs.jsonl" >"$T/gs_ids.jsonl"
    same "cuda fp32 sampling = cpu (same seed)" "$T/cs.jsonl" "$T/gs_ids.jsonl"
else
    # no GPU or no CUDA back end: a one-line reason, exit 1
    rc=$?
    [ $rc -eq 1 ] && pass "--device cuda without a GPU exits 1" || flunk "--device cuda without a GPU" "exit $rc"
    has "--device cuda reason" "$T/gpu.err" '^generate: --device cuda: (no CUDA GPU or driver found|this build has no CUDA back end)'
    [ "$(wc -l <"$T/gpu.err")" -eq 1 ] && pass "one line" || flunk "one line" "$(cat "$T/gpu.err")"
    ok "--device auto without a GPU" generate $G --device auto -o "$T/auto2.jsonl" "$T/p.jsonl"
    same "auto = cpu without a GPU" "$T/cpu.jsonl" "$T/auto2.jsonl"
fi

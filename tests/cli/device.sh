# device.sh — --device and --precision of the trainers (sft-step, opd-step,
# grpo-step): cpu is the default and the same bytes; auto trains on the CPU
# when there is no GPU; cuda without a GPU (or in a build without CUDA)
# fails at once with one clear line and writes nothing; bad values are
# usage errors; a data-parallel launch is refused on the CPU and by the
# trainers without a data-parallel mode.  Where a GPU is present (auto
# picks cuda) the cuda branch trains instead and its checkpoint resumes on
# the CPU.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
export OMP_NUM_THREADS=1
unset HAT_RANK HAT_WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS

cat >"$T/cfg.json" <<'CFG'
{"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "rms_norm_eps": 1e-6,
 "rope_theta": 10000.0, "tie_word_embeddings": false, "max_position_embeddings": 128,
 "num_nextn_predict_layers": 1}
CFG
model-init --config "$T/cfg.json" --std 0.1 -o "$T/base.ckpt"
awk 'BEGIN { srand(3); for (i = 0; i < 40; i++) { n = 8 + int(rand() * 30); x = int(rand() * 64);
     s = "{\"ids\":[" x; for (t = 1; t < n; t++) { x = (x * 5 + 3) % 64; s = s "," x } print s "]}" } }' >"$T/d.jsonl"
S="--init $T/base.ckpt --data $T/d.jsonl --steps 3 --batch 4 --seq 32"

ok "sft-step --device cpu" sft-step $S --device cpu --metrics "$T/cpu.jsonl" -o "$T/cpu.ckpt"
ok "sft-step without --device" sft-step $S -o "$T/default.ckpt"
same "cpu is the default, same bytes" "$T/cpu.ckpt" "$T/default.ckpt"
has "metrics name the device" "$T/cpu.jsonl" '^\{"step":3,"loss":[0-9.e-]+,.*"tokens_per_s":[0-9.e-]+,"tokens_processed":[0-9]+,"tokens_processed_per_s":[0-9.e-]+,"device":"cpu"\}$'
ok "--precision is ignored on the CPU" sft-step $S --device cpu --precision fp32 -o "$T/p.ckpt"
same "the CPU trains in fp32 whatever --precision says" "$T/cpu.ckpt" "$T/p.ckpt"
fails "bad --device" 2 sft-step $S --device tpu -o "$T/x.ckpt"
has "--device message" "$T/.err" '^sft-step: --device: must be cpu, cuda or auto'
fails "bad --precision" 2 sft-step $S --precision fp8 -o "$T/x.ckpt"
has "--precision message" "$T/.err" '^sft-step: --precision: must be bf16 or fp32'

ok "sft-step --device auto" sft-step $S --device auto --metrics "$T/auto.jsonl" -o "$T/auto.ckpt"
dev=$(sed -n 's/.*"device":"\([a-z]*\)".*/\1/p' "$T/auto.jsonl" | head -n 1)
if [ "$dev" = cpu ]; then
    same "auto without a GPU trains on the CPU" "$T/auto.ckpt" "$T/cpu.ckpt"
    fails "sft-step --device cuda without a GPU" 1 sft-step $S --device cuda -o "$T/x.ckpt"
    has "one clear line" "$T/.err" '^sft-step: --device cuda: (no CUDA GPU or driver found|this build has no CUDA back end \(rebuild with make CUDA=1\))$'
    [ "$(wc -l <"$T/.err")" -eq 1 ] && pass "nothing else said" || flunk "nothing else said" "$(cat "$T/.err")"
    [ ! -e "$T/x.ckpt" ] && pass "no checkpoint written" || flunk "no checkpoint written"
    # refused before the teacher, prompts, world or harness are read
    fails "opd-step --device cuda without a GPU" 1 opd-step --init "$T/base.ckpt" --teacher "$T/none.ckpt" \
        --steps 1 --device cuda -o "$T/x.ckpt"
    has "opd-step names the reason" "$T/.err" '^opd-step: --device cuda: (no CUDA GPU|this build has no CUDA)'
    fails "grpo-step --device cuda without a GPU" 1 grpo-step --init "$T/base.ckpt" --world "$T/none.json" \
        --harness "$T/none" --steps 1 --device cuda -o "$T/x.ckpt"
    has "grpo-step names the reason" "$T/.err" '^grpo-step: --device cuda: (no CUDA GPU|this build has no CUDA)'
elif [ "$dev" = cuda ]; then
    ok "sft-step --device cuda --precision fp32" sft-step $S --device cuda --precision fp32 \
        --metrics "$T/gpu.jsonl" -o "$T/gpu.ckpt"
    # fp32 on the GPU follows the CPU's curve (test_model_cuda has the tolerances)
    paste -d' ' "$T/cpu.jsonl" "$T/gpu.jsonl" | sed 's/[^ ]*"loss":\([0-9.e-]*\)[^ ]* [^ ]*"loss":\([0-9.e-]*\).*/\1 \2/' |
        awk '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > m) m = d } END { exit !(NR == 3 && m < 1e-4) }' &&
        pass "fp32 GPU losses match the CPU's" || flunk "fp32 GPU losses match the CPU's" "$(cat "$T/cpu.jsonl" "$T/gpu.jsonl")"
    ok "a GPU checkpoint resumes on the CPU" sft-step --init "$T/gpu.ckpt" --resume --data "$T/d.jsonl" \
        --steps 1 --device cpu --metrics "$T/res.jsonl" -o "$T/res.ckpt"
    has "resumed at step 4 on the CPU" "$T/res.jsonl" '^\{"step":4,.*"device":"cpu"\}$'
else
    flunk "auto's metrics name a device" "$(cat "$T/auto.jsonl")"
fi

# data-parallel launches (kernels/cuda/dist.h): the launcher's variables
HAT_WORLD_SIZE=2 HAT_RANK=0 fails "2 ranks on the CPU refused" 1 sft-step $S --device cpu -o "$T/x.ckpt"
has "names rank and device" "$T/.err" '^sft-step: launched as rank 0 of 2: data-parallel training needs --device cuda$'
HAT_WORLD_SIZE=2 HAT_RANK=1 fails "opd-step has no data-parallel mode" 1 opd-step --init "$T/base.ckpt" \
    --teacher "$T/none.ckpt" --steps 1 -o "$T/x.ckpt"
has "says so" "$T/.err" '^opd-step: launched as rank 1 of 2: this trainer has no data-parallel mode'
HAT_WORLD_SIZE=2 HAT_RANK=5 fails "rank out of range" 1 sft-step $S -o "$T/x.ckpt"
has "rank message" "$T/.err" 'HAT_RANK/HAT_WORLD_SIZE must be set together, 0 <= rank < size'
HAT_WORLD_SIZE=1 HAT_RANK=0 ok "a world of one is a plain run" sft-step $S -o "$T/w1.ckpt"
same "world of one, same bytes" "$T/w1.ckpt" "$T/cpu.ckpt"
[ ! -e "$T/x.ckpt" ] && pass "no refused run wrote a checkpoint" || flunk "no refused run wrote a checkpoint"

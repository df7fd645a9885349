# gemm.sh — HAT_GEMM (man 7 hat): every GEMM library trains the same
# model to the same losses (fp32, to rounding), bf16 mixed precision
# trains it too, to within bf16's rounding, deterministically and with
# an exact resume, and refuses to start where the CPU has no bf16 kernel;
# a value that is none of them is an error.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
export OMP_NUM_THREADS=2
cat >"$T/cfg.json" <<'CFG'
{"vocab_size": 64, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6,
 "rope_theta": 10000.0, "tie_word_embeddings": false, "max_position_embeddings": 4096}
CFG
model-init --config "$T/cfg.json" --seed 3 -o "$T/m.ckpt"
# 48 sequences of 97 ids counting up by a stride of their own, mod 64:
# learnable only by reading the context (the stride): the loss falls
# from ln 64 = 4.16 to about 2.3 in 30 steps.
awk 'BEGIN { srand(5); for (i = 0; i < 48; i++) { a = int(rand() * 64); d = 1 + int(rand() * 7);
    printf "{\"ids\":["; for (j = 0; j < 97; j++) printf "%s%d", j ? "," : "", (a + j * d) % 64; print "]}" } }' >"$T/d.jsonl"
train() {   # GEMM NAME [sft-step options]: 30 steps, losses into NAME.loss
    g=$1 n=$2; shift 2
    HAT_GEMM=$g sft-step --init "$T/m.ckpt" --data "$T/d.jsonl" --batch 8 --seq 96 --steps 30 --lr 3e-3 \
        --total-steps 30 --metrics "$T/$n.m" -o "$T/$n.ckpt" "$@" && jq .loss "$T/$n.m" >"$T/$n.loss"
}
# a and b agree step by step within a relative tol; a's last loss under frac of its first
close() { paste "$T/$1.loss" "$T/$2.loss" | awk -v t="$3" '{ d = $1 - $2; if (d < 0) d = -d; if (d > t * $1) bad = 1; n++ }
    END { exit bad || n != 30 }'; }
learns() { awk -v f="$2" 'NR == 1 { a = $1 } { b = $1 } END { exit !(b < f * a) }' "$T/$1.loss"; }

fails "an unknown HAT_GEMM is an error" 1 train mkl bad
has "naming the choices" "$T/.err" "HAT_GEMM=mkl: expected auto, onednn, openblas or bf16"
ok "sft-step on OpenBLAS" train openblas ob
ok "sft-step on oneDNN" train onednn dn
ok "sft-step on the default choice" train auto au
learns ob 0.6 && pass "it learns: the loss falls by 40% in 30 steps" || flunk "it learns" "$(tr '\n' ' ' <"$T/ob.loss")"
close ob dn 1e-4 && pass "OpenBLAS and oneDNN: the same losses to 1e-4" || \
    flunk "OpenBLAS and oneDNN: the same losses to 1e-4" "$(paste "$T/ob.loss" "$T/dn.loss" | tr '\n' ' ')"
close ob au 1e-4 && pass "the default: the same losses" || flunk "the default: the same losses"

# oneDNN limited to AVX2 (its own DNNL_MAX_CPU_ISA) has no bf16 kernel on
# any CPU: the refusal, tested everywhere.
fails "HAT_GEMM=bf16 refused where oneDNN has no bf16 kernel" 1 env DNNL_MAX_CPU_ISA=AVX2 HAT_GEMM=bf16 \
    sft-step --init "$T/m.ckpt" --data "$T/d.jsonl" --batch 8 --seq 96 --steps 1 -o "$T/nobf.ckpt"
has "saying why" "$T/.err" "HAT_GEMM=bf16: oneDNN has no bf16 kernel for this CPU .*AVX512-BF16 or AMX"
[ ! -e "$T/nobf.ckpt" ] && pass "and writing nothing" || flunk "and writing nothing"

if HAT_GEMM=bf16 sft-step --init "$T/m.ckpt" --data "$T/d.jsonl" --batch 8 --seq 96 --steps 1 \
        -o "$T/probe.ckpt" 2>"$T/probe.err"; then
    ok "bf16 mixed precision" train bf16 bf
    learns bf 0.6 && pass "bf16 learns" || flunk "bf16 learns" "$(tr '\n' ' ' <"$T/bf.loss")"
    close ob bf 0.03 && pass "bf16 follows fp32 within 3% a step" || \
        flunk "bf16 follows fp32 within 3% a step" "$(paste "$T/ob.loss" "$T/bf.loss" | tr '\n' ' ')"
    if cmp -s "$T/ob.loss" "$T/bf.loss"; then flunk "bf16 rounds: not fp32's losses bit for bit"
    else pass "bf16 rounds: not fp32's losses bit for bit"; fi
    ok "bf16 again" train bf16 bf2
    same "bf16 is deterministic" "$T/bf.ckpt" "$T/bf2.ckpt"
    ok "bf16, 12 steps" env HAT_GEMM=bf16 sft-step --init "$T/m.ckpt" --data "$T/d.jsonl" --batch 8 --seq 96 \
        --steps 12 --lr 3e-3 --total-steps 30 -o "$T/half.ckpt"
    ok "bf16, resumed to 30" env HAT_GEMM=bf16 sft-step --init "$T/half.ckpt" --resume --data "$T/d.jsonl" \
        --steps 18 -o "$T/res.ckpt"
    same "bf16 resumes exactly" "$T/bf.ckpt" "$T/res.ckpt"
else
    has "HAT_GEMM=bf16 refused on this CPU, saying why" "$T/probe.err" \
        "HAT_GEMM=bf16: oneDNN has no bf16 kernel for this CPU .*AVX512-BF16 or AMX"
    skip "bf16 training" "this CPU has no AVX512-BF16 or AMX"
fi

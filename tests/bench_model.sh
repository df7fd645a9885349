#!/bin/sh
# bench_model.sh — the model core against transformers on pip's torch
# (the venv of tests/venv.sh), one JSON line per config of
# tests/fixtures/bench/configs.json, both on the very same weights: hat's
# random init, exported with ckpt export --hf and loaded by
# AutoModelForCausalLM.  2 threads each, ROUNDS interleaved rounds (hat,
# then the peer, then hat again...), the ratio taken per round:
#   training: tokens/s (median step after 2 warm-up steps; sft-step
#             against an fp32 eager loop of the same AdamW, clip and
#             loss; with HAT_GEMM=bf16, hat's mixed precision against
#             the same loop under torch's bf16 autocast, "precision"),
#             ms/step, MFU against a GEMM peak measured here in the same
#             rounds (a "gemm" line per config, below; fp32 or bf16 as
#             the step);
#   decoding: tokens/s at batch 1 (greedy, KV cache: time for N+1 new
#             tokens minus time for 1, so load and prefill cancel out),
#             hat's generate against transformers' generate;
#   interop:  hat's greedy ids and log-probs against transformers' on the
#             export (ids equal, largest log-prob difference);
#   memory:   hat's peak RSS against the theoretical figure.
# Every line carries the CPU, its features and the load at start and end.
# Without the venv the peer's fields are null (peer_absent says why).
#   HAT_BIN    programs (default bin/)
#   STEPS      timed training steps (default 4)       DECODE_N  new tokens (default 64)
#   ROUNDS     interleaved rounds (default 3)         CONFIGS   names to run (default: all)
#
# The GEMM peak (mfu): build/rel/bench/gemm (tests/bench_gemm.c, made by
# make bench; HAT_BENCH_GEMM) runs every dense product of one step alone
# through hat's own matmul_forward/backward at the step's shapes on 2
# threads, once per round, and the "gemm" line carries the best: what
# the GEMM library in use (gemm_kernel: oneDNN or OpenBLAS, HAT_GEMM
# chooses, man 7 hat) gives these very products here, not a datasheet
# figure.  mfu_square is against OpenBLAS on square 1536 matrices (its
# own threads, best of 5).  fma_peak_gflops is the cores' own fp32
# multiply-add peak (build/rel/bench/fma, tests/bench_fma.c, made by make
# bench; HAT_BENCH_FMA), best of the rounds: mfu_fma is the step against
# it and gemm_of_fma the GEMM library's rate against it, so a line says
# how much of the gap to the hardware is the library's and how much the
# step's.
# FLOPs per step: 6 x matmul FLOPs per token x tokens, plus causal
# attention counted as full T x T (as PyTorch-side counters do).
# OpenBLAS picks its kernel for the CPU (bench.sh's OPENBLAS_CORETYPE pin,
# kept for the other benches, is lifted here: torch does not pin its own
# either); the line says which (openblas_core; attention's tiles run on
# it whatever gemm_kernel is).
#
# Theoretical memory: 16 bytes per parameter (weights, gradients, AdamW m
# and v) + the activations backward keeps, in float32: per layer
# N*(4C + 3*H*D + 3*KV*D + 3I + H + KV + 2) + B*H*T (attention log-sum-exp),
# plus N*(2C + V + 3) (embeddings, final norm, logits, losses); N = B*T.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${STEPS:=4}" "${DECODE_N:=64}" "${CONFIGS:=}" "${ROUNDS:=3}"
HAT_TOP=$top
cfgs="$top/tests/fixtures/bench/configs.json"
export HAT_DATA="$top/data" OMP_NUM_THREADS=2
unset OPENBLAS_NUM_THREADS OPENBLAS_CORETYPE
: "${HAT_BENCH_GEMM:=$top/build/rel/bench/gemm}" "${HAT_BENCH_FMA:=$top/build/rel/bench/fma}"
tmp=$(mktemp -d "${HAT_BENCH_TMP:-${TMPDIR:-/tmp}}/model.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
. "$top/tests/benchlib.sh"
cpu=$(cpu_json)
# HAT_GEMM=bf16 (hat's mixed precision, man 7 hat) trains the peer under
# torch's bf16 autocast too: the lines then compare bf16 with bf16
prec=fp32
[ "${HAT_GEMM:-}" = bf16 ] && prec=bf16

# The GEMM peak in GFLOP/s (null without a compiler).
cat >"$tmp/gemm.c" <<'C'
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(void)
{
    int n = 1536;
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
          *c = malloc(sizeof(float) * n * n);
    for (long i = 0; i < (long)n * n; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    double best = 0;
    for (int r = 0; r < 6; r++) {
        struct timespec s, e;
        clock_gettime(CLOCK_MONOTONIC, &s);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        clock_gettime(CLOCK_MONOTONIC, &e);
        double g = 2.0 * n * n * n / ((e.tv_sec - s.tv_sec) + (e.tv_nsec - s.tv_nsec) * 1e-9) / 1e9;
        if (r && g > best) best = g;           /* the first run warms up */
    }
    printf("%.1f\n", best);
    return 0;
}
C
peak=null
if ${CC:-cc} -O2 $(pkg-config --cflags openblas 2>/dev/null) -o "$tmp/gemm" "$tmp/gemm.c" \
        $(pkg-config --libs openblas 2>/dev/null) 2>/dev/null; then
    peak=$(OPENBLAS_NUM_THREADS=2 "$tmp/gemm")
fi

# Seconds of wall time of a command (stdout discarded).
wall() {
    s=$(date +%s.%N); "$@" >/dev/null || return 1; e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN{printf "%.4f", e - s}'
}

# hat's decode tokens/s at batch 1: (N+1 new tokens) - (1 new token).
hat_decode() {
    awk -v v="$V" 'BEGIN{srand(7); printf "{\"ids\":["; for(j=0;j<16;j++) printf "%s%d", j?",":"", int(rand()*v); print "]}"}' >"$tmp/p.jsonl"
    t1=$(wall "$HAT_BIN/generate" --ckpt "$tmp/m.ckpt" --max-tokens 1 "$tmp/p.jsonl") || return 1
    tn=$(wall "$HAT_BIN/generate" --ckpt "$tmp/m.ckpt" --max-tokens $((DECODE_N + 1)) "$tmp/p.jsonl") || return 1
    awk -v a="$t1" -v c="$tn" -v n="$DECODE_N" 'BEGIN{printf "%.1f", n / (c - a)}'
}

# Interop on the export: 2 prompts, 32 greedy tokens; prints "EQUAL MAXDIFF".
interop() {
    awk -v v="$V" 'BEGIN{srand(9); for(i=0;i<2;i++){ printf "{\"id\":%d,\"ids\":[", i;
        for(j=0;j<12;j++) printf "%s%d", j?",":"", int(rand()*v); print "]}"}}' >"$tmp/ip.jsonl"
    "$HAT_BIN/generate" --ckpt "$tmp/m.ckpt" --max-tokens 32 --logprobs "$tmp/ip.jsonl" >"$tmp/ih.jsonl" || return 1
    peer generate "$tmp/hf" "$tmp/ip.jsonl" 32 2>/dev/null | jq -c . >"$tmp/it.jsonl" || return 1
    jq -n --slurpfile a "$tmp/ih.jsonl" --slurpfile b "$tmp/it.jsonl" -r '
        ([$a[].gen] == [$b[].gen]) as $eq |
        ([$a, $b] | map(map(.logprobs) | add) | transpose | map(.[0] - .[1] | fabs) | max) as $d |
        "\($eq) \($d)"'
}

for name in $(jq -r '.configs[].name' "$cfgs"); do
    case " ${CONFIGS:-$name} " in *" $name "*) ;; *) continue ;; esac
    load0=$(load_now)
    jq ".configs[]|select(.name==\"$name\")|del(.name,.B,.T)" "$cfgs" >"$tmp/cfg.json"
    get() { jq -r ".configs[]|select(.name==\"$name\").$1" "$cfgs"; }
    B=$(get B) T=$(get T) V=$(get vocab_size) C=$(get hidden_size) I=$(get intermediate_size)
    L=$(get num_hidden_layers) H=$(get num_attention_heads) KV=$(get num_key_value_heads) D=$(get head_dim)
    "$HAT_BIN/model-init" --config "$tmp/cfg.json" -o "$tmp/m.ckpt" || exit 1
    rm -rf "$tmp/hf"; "$HAT_BIN/ckpt" export --hf "$tmp/hf" "$tmp/m.ckpt" || exit 1
    P=$("$HAT_BIN/ckpt" info "$tmp/m.ckpt" | jq .params)
    # full-length random sequences: every one of the B*T positions is a target
    awk -v n=$((B * (STEPS + 2))) -v t=$((T + 1)) -v v="$V" 'BEGIN{srand(1); for(i=0;i<n;i++){
        printf "{\"ids\":["; for(j=0;j<t;j++) printf "%s%d", j?",":"", int(rand()*v); print "]}"}}' >"$tmp/d.jsonl"
    flops=$(awk -v B="$B" -v T="$T" -v V="$V" -v C="$C" -v I="$I" -v L="$L" -v H="$H" -v KV="$KV" -v D="$D" 'BEGIN{
        per = C*H*D*2 + C*KV*D*2 + 3*C*I; mm = 2 * (L*per + C*V);
        printf "%.0f", 3 * (mm * B * T + L * 4 * B * H * T * T * D)}')
    theo=$(awk -v P="$P" -v B="$B" -v T="$T" -v V="$V" -v C="$C" -v I="$I" -v L="$L" -v H="$H" -v KV="$KV" -v D="$D" 'BEGIN{
        N = B*T; a = L * (N * (4*C + 3*H*D + 3*KV*D + 3*I + H + KV + 2) + B*H*T) + N * (2*C + V + 3);
        printf "%.0f", 4 * (4*P + a)}')
    : >"$tmp/hat_t" >"$tmp/peer_t" >"$tmp/ratio_t" >"$tmp/hat_d" >"$tmp/peer_d" >"$tmp/ratio_d" >"$tmp/gemm" >"$tmp/fma"
    r=0
    while [ $r -lt "$ROUNDS" ]; do
        r=$((r + 1))
        # --metrics appends: a fresh file per run, or the median mixes in the
        # lines of earlier rounds and of the config before (the small line
        # once read tiny's rates).
        rm -f "$tmp/m.jsonl"
        /usr/bin/time -f %M -o "$tmp/rss" "$HAT_BIN/sft-step" --init "$tmp/m.ckpt" --data "$tmp/d.jsonl" \
            --batch "$B" --seq "$T" --steps $((STEPS + 2)) --metrics "$tmp/m.jsonl" -o "$tmp/o.ckpt" || exit 1
        h=$(tail -n +3 "$tmp/m.jsonl" | jq -s '[.[].tokens_per_s]|sort|.[length/2|floor]')
        echo "$h" >>"$tmp/hat_t"
        rss_kib=$(tail -n 1 "$tmp/rss")
        [ -x "$HAT_BENCH_GEMM" ] && "$HAT_BENCH_GEMM" "$tmp/cfg.json" "$B" "$T" 3 >>"$tmp/gemm"
        [ -x "$HAT_BENCH_FMA" ] && "$HAT_BENCH_FMA" 1 | jq '.fma_gflops // empty' >>"$tmp/fma"
        if [ -n "$PEER_PY" ]; then
            p=$(peer train "$tmp/hf" "$B" "$T" "$STEPS" "$prec" 2>/dev/null | tail -n 1 | jq '.tokens_per_s // empty')
            [ -n "$p" ] && { echo "$p" >>"$tmp/peer_t"; awk -v a="$h" -v b="$p" 'BEGIN{print a / b}' >>"$tmp/ratio_t"; }
        fi
        hd=$(hat_decode) && echo "$hd" >>"$tmp/hat_d"
        if [ -n "$PEER_PY" ]; then
            pd=$(peer decode "$tmp/hf" 16 "$DECODE_N" 1 2>/dev/null | tail -n 1 | jq '.decode_tokens_per_s // empty')
            [ -n "$pd" ] && [ -n "$hd" ] && { echo "$pd" >>"$tmp/peer_d"; awk -v a="$hd" -v b="$pd" 'BEGIN{print a / b}' >>"$tmp/ratio_d"; }
        fi
    done
    ieq=null idiff=null
    if [ -n "$PEER_PY" ] && iv=$(interop); then ieq=${iv% *} idiff=${iv#* }; fi
    tv=$(peer_version 2>/dev/null || echo null)
    # the gemm line: the best round's figures, a peak (null without
    # bench_gemm); the median let a busier round's peak fall below the step
    gl=$(jq -sc --arg c "$name" 'length as $n | if $n == 0 then null else sort_by(.gemm_gflops) | .[$n-1] |
        {bench:"gemm", config:$c} + . + {rounds:$n} end' "$tmp/gemm")
    [ "$gl" != null ] && jq -nc --argjson g "$gl" --argjson cpu "$cpu" '$g + {cpu:$cpu}'
    gstep=$(echo "$gl" | jq '.gemm_gflops // null')
    gcore=$(echo "$gl" | jq '.openblas_core // null')
    gkern=$(echo "$gl" | jq '.gemm_kernel // null')
    fma=$(jq -s 'max' "$tmp/fma")
    jq -nc --arg c "$name" --argjson B "$B" --argjson T "$T" --argjson P "$P" --argjson steps "$STEPS" \
        --argjson rounds "$ROUNDS" --argjson flops "$flops" --argjson peak "$peak" \
        --argjson gstep "$gstep" --argjson fma "$fma" --argjson gcore "$gcore" --argjson gkern "$gkern" \
        --argjson rss "$rss_kib" --argjson theo "$theo" --argjson cpu "$cpu" \
        --argjson ieq "$ieq" --argjson idiff "$idiff" --argjson peerv "$tv" --arg why "$PEER_WHY" --arg prec "$prec" \
        --slurpfile ht "$tmp/hat_t" --slurpfile pt "$tmp/peer_t" --slurpfile rt "$tmp/ratio_t" \
        --slurpfile hd "$tmp/hat_d" --slurpfile pd "$tmp/peer_d" --slurpfile rd "$tmp/ratio_d" \
        --argjson load0 "$load0" --argjson load1 "$(load_now)" '
        def r3: . * 1000 | round / 1000;
        def med: if length == 0 then null else sort | .[length/2|floor] end;
        def span: if length == 0 then null else [min, max] end;
        ($ht | med) as $hat | ($B * $T / $hat) as $s |
        {bench:"model", config:$c, threads:2, B:$B, T:$T, params:$P, steps:$steps, rounds:$rounds,
         precision:$prec,
         peer:(if $peerv then "transformers \($peerv.transformers), torch \($peerv.torch), \(if $prec == "bf16" then "bf16 autocast" else "fp32" end) eager" else null end),
         peer_absent:(if $peerv then null else $why end),
         train_tokens_per_s:($hat|round), train_ms_per_step:($s * 1000 * 10 | round / 10),
         peer_train_tokens_per_s:($pt | med | if . then round else null end),
         train_ratio:($rt | med | if . then r3 else null end),
         train_ratio_range:($rt | span | if . then map(r3) else null end),
         gflop_per_step:($flops / 1e9 * 100 | round / 100),
         achieved_gflops:($flops / $s / 1e9 * 10 | round / 10),
         gemm_step_gflops:$gstep, mfu:(if $gstep then ($flops / $s / 1e9 / $gstep | r3) else null end),
         gemm_peak_gflops:$peak, mfu_square:(if $peak then ($flops / $s / 1e9 / $peak | r3) else null end),
         fma_peak_gflops:$fma, mfu_fma:(if $fma then ($flops / $s / 1e9 / $fma | r3) else null end),
         gemm_of_fma:(if $fma and $gstep then ($gstep / $fma | r3) else null end),
         gemm_kernel:$gkern, openblas_core:$gcore,
         decode_tokens_per_s_b1:($hd | med), peer_decode_tokens_per_s_b1:($pd | med | if . then (. * 10 | round / 10) else null end),
         decode_ratio_b1:($rd | med | if . then r3 else null end),
         decode_ratio_b1_range:($rd | span | if . then map(r3) else null end),
         interop_greedy_ids_equal:$ieq, interop_logprob_max_diff:$idiff,
         peak_rss_mib:($rss / 1024 | round), theoretical_mib:($theo / 1048576 | round),
         rss_ratio:($rss * 1024 / $theo | r3),
         cpu:$cpu, loadavg:[$load0, $load1]}'
done

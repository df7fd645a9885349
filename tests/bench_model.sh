#!/bin/sh
# bench_model.sh — the model core against PyTorch, one JSON line per
# config of ../shared/bench/configs.json (and per OpenBLAS core type):
#   training: tokens/s (median step after 2 warm-up steps), ms/step, MFU,
#             peak RSS against the theoretical figure;
#   decoding: tokens/s at batch 1 and 16 (greedy, KV cache);
# and beside them, in the same run, ../shared/tools/torchref/bench_train.py
# (2 threads) on the identical config, with the ratio.  Not part of make check.
#   HAT_BIN    programs (default bin/)
#   STEPS      timed training steps (default 6)       DECODE_N  new tokens (default 64)
#   CONFIGS    names to run (default: all)            CORETYPES OpenBLAS core types
#              (default $OPENBLAS_CORETYPE or Haswell; e.g. "Haswell SkylakeX")
#
# PyTorch gets the fair setup of torchref/README.md when installed: the
# OpenMP build of OpenBLAS (via LD_LIBRARY_PATH, the system default is left
# alone) and tcmalloc.  hat runs as installed.  The machine may be shared:
# every line carries the load average; compare figures of the same run.
#
# MFU: FLOPs per step as bench_train.py counts them (6 x matmul FLOPs per
# token x tokens + causal attention counted as full T x T), over a peak of
# cores x FP32 FLOPs/cycle x base clock: Zen 5 (family 26) with AVX-512
# does 2 x 16-lane FMA = 64 FLOPs/cycle/core; other CPUs give null
# ("unknown").  The clock is measured (it boosts well above the "cpu MHz"
# base of /proc/cpuinfo; a peak at base clock would give MFU > 1).  With
# the Haswell (AVX2) kernels OpenBLAS can reach at most half of the peak.
#
# Theoretical memory: 16 bytes per parameter (weights, gradients, AdamW m
# and v) + the activations backward keeps, in float32: per layer
# N*(4C + 3*H*D + 3*KV*D + 3I + H + KV + 2) + B*H*T (attention log-sum-exp),
# plus N*(2C + V + 3) (embeddings, final norm, logits, losses); N = B*T.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${STEPS:=6}" "${DECODE_N:=64}" "${CONFIGS:=}"
: "${CORETYPES:=${OPENBLAS_CORETYPE:-Haswell}}"
shared="${HAT_SHARED:-$top/../shared}"
cfgs="$top/tests/fixtures/bench/configs.json"
export HAT_DATA="$top/data" OMP_NUM_THREADS=2
unset OPENBLAS_NUM_THREADS
tmp=$(mktemp -d "${HAT_BENCH_TMP:-${TMPDIR:-/tmp}}/model.XXXXXX"); trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
torchref="$shared/tools/torchref/bench_train.py"
have_torch=0
$py -c 'import torch' 2>/dev/null && [ -f "$torchref" ] && have_torch=1
ompblas=/usr/lib/x86_64-linux-gnu/openblas-openmp
tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
[ -d "$ompblas" ] || ompblas=
[ -f "$tcmalloc" ] || tcmalloc=

# Peak FP32 GFLOP/s of 2 cores, or null.  The clock: a loop of dependent
# adds (one per cycle) timed, best of 3; the base clock if cc is missing.
family=$(awk -F': ' '/^cpu family/{print $2; exit}' /proc/cpuinfo)
base=$(awk -F': ' '/^cpu MHz/{printf "%.0f", $2; exit}' /proc/cpuinfo)
cat >"$tmp/clock.c" <<'C'
#include <stdio.h>
#include <time.h>
int main(void)
{
    struct timespec a, b;
    unsigned long x = 0, n = 1000000000UL;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);   /* CPU time: immune to sharing */
    for (unsigned long i = 0; i < n; i++) __asm__ volatile("add $1, %0" : "+r"(x));
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    printf("%.0f\n", n / ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9) / 1e6);
    return 0;
}
C
mhz=$base how="base clock from /proc/cpuinfo (cores boost higher: MFU is an upper bound)"
if [ "$(uname -m)" = x86_64 ] && ${CC:-cc} -O1 -o "$tmp/clock" "$tmp/clock.c" 2>/dev/null; then
    mhz=$(for i in 1 2 3; do "$tmp/clock"; done | sort -n | tail -n 1)
    how="clock measured by a dependent-add loop (base ${base} MHz)"
fi
peak=null
if [ "$family" = 26 ] && grep -qw avx512f /proc/cpuinfo && [ -n "$mhz" ]; then
    peak=$(awk -v m="$mhz" 'BEGIN{printf "%.1f", 2 * 64 * m / 1000}')
fi
peak_basis="2 cores x 64 FP32 FLOP/cycle (Zen 5: 2 x 512-bit FMA) x ${mhz} MHz, $how"
[ "$peak" = null ] && peak_basis="unknown: no peak table entry for this CPU"

run_torch() {   # run_torch CORETYPE ARGS... -> JSON line or nothing
    ct=$1; shift
    env OMP_NUM_THREADS=2 OPENBLAS_CORETYPE="$ct" ${ompblas:+LD_LIBRARY_PATH=$ompblas} \
        ${tcmalloc:+LD_PRELOAD=$tcmalloc} $py "$torchref" --threads 2 "$@" 2>/dev/null | tail -n 1
}

# Seconds of wall time of a command (stdout discarded).
wall() {
    s=$(date +%s.%N); "$@" >/dev/null || return 1; e=$(date +%s.%N)
    awk -v s="$s" -v e="$e" 'BEGIN{printf "%.4f", e - s}'
}

# Decode tokens/s at batch $1: time for DECODE_N+1 new tokens minus time
# for 1 (load and prefill cancel out), best of 2.
decode_rate() {
    b=$1
    awk -v n="$b" -v v="$V" 'BEGIN{srand(7); for(i=0;i<n;i++){ printf "{\"ids\":[";
        for(j=0;j<16;j++) printf "%s%d", j?",":"", int(rand()*v); print "]}"}}' >"$tmp/p.jsonl"
    best=
    for rep in 1 2; do
        t1=$(wall "$HAT_BIN/generate" --ckpt "$tmp/m.ckpt" --batch "$b" --max-tokens 1 "$tmp/p.jsonl") || return 1
        tn=$(wall "$HAT_BIN/generate" --ckpt "$tmp/m.ckpt" --batch "$b" --max-tokens $((DECODE_N + 1)) "$tmp/p.jsonl") || return 1
        r=$(awk -v a="$t1" -v c="$tn" -v n="$DECODE_N" -v b="$b" 'BEGIN{printf "%.1f", n * b / (c - a)}')
        best=$(awk -v a="${best:-0}" -v r="$r" 'BEGIN{print (r > a ? r : a)}')
    done
    echo "$best"
}

for name in $(jq -r '.configs[].name' "$cfgs"); do
    case " ${CONFIGS:-$name} " in *" $name "*) ;; *) continue ;; esac
    jq ".configs[]|select(.name==\"$name\")|del(.name,.B,.T)" "$cfgs" >"$tmp/cfg.json"
    get() { jq -r ".configs[]|select(.name==\"$name\").$1" "$cfgs"; }
    B=$(get B) T=$(get T) V=$(get vocab_size) C=$(get hidden_size) I=$(get intermediate_size)
    L=$(get num_hidden_layers) H=$(get num_attention_heads) KV=$(get num_key_value_heads) D=$(get head_dim)
    "$HAT_BIN/model-init" --config "$tmp/cfg.json" -o "$tmp/m.ckpt" || exit 1
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
    for ct in $CORETYPES; do
        export OPENBLAS_CORETYPE="$ct"
        /usr/bin/time -f %M -o "$tmp/rss" "$HAT_BIN/sft-step" --init "$tmp/m.ckpt" --data "$tmp/d.jsonl" \
            --batch "$B" --seq "$T" --steps $((STEPS + 2)) --metrics "$tmp/m.jsonl" -o "$tmp/o.ckpt" || exit 1
        hat=$(tail -n +3 "$tmp/m.jsonl" | jq -s '[.[].tokens_per_s]|sort|.[length/2|floor]')
        rss_kib=$(tail -n 1 "$tmp/rss")
        dec1=$(decode_rate 1) dec16=$(decode_rate 16)
        torch=null torch_dec=null
        if [ $have_torch = 1 ]; then
            j=$(run_torch "$ct" --config "$tmp/cfg.json" --B "$B" --T "$T" --steps "$STEPS")
            torch=$(printf '%s' "$j" | jq '.tokens_per_s // null' 2>/dev/null)
            j=$(run_torch "$ct" --config "$tmp/cfg.json" --decode --prompt 16 --n "$DECODE_N" --reps 2)
            torch_dec=$(printf '%s' "$j" | jq '.decode_tokens_per_s_best // null' 2>/dev/null)
        fi
        jq -nc --arg c "$name" --arg ct "$ct" --argjson B "$B" --argjson T "$T" --argjson P "$P" \
            --argjson hat "$hat" --argjson torch "${torch:-null}" --argjson flops "$flops" \
            --argjson peak "$peak" --arg basis "$peak_basis" --argjson rss "$rss_kib" --argjson theo "$theo" \
            --argjson d1 "${dec1:-null}" --argjson d16 "${dec16:-null}" --argjson td "${torch_dec:-null}" \
            --arg load "$(cut -d' ' -f1 /proc/loadavg)" --argjson steps "$STEPS" '
            def r3: . * 1000 | round / 1000;
            ($B * $T / $hat) as $s |
            {bench:"model", config:$c, openblas_coretype:$ct, threads:2, B:$B, T:$T, params:$P, steps:$steps,
             train_tokens_per_s:($hat|round), train_ms_per_step:($s * 1000 * 10 | round / 10),
             torch_train_tokens_per_s:(if $torch then ($torch|round) else null end),
             train_ratio:(if $torch then ($hat / $torch | r3) else null end),
             gflop_per_step:($flops / 1e9 * 100 | round / 100),
             achieved_gflops:($flops / $s / 1e9 * 10 | round / 10),
             peak_gflops:$peak, mfu:(if $peak then ($flops / $s / 1e9 / $peak | r3) else null end),
             mfu_basis:$basis,
             decode_tokens_per_s_b1:$d1, decode_tokens_per_s_b16:$d16,
             torch_decode_tokens_per_s_b1:$td,
             decode_ratio_b1:(if $td and $d1 then ($d1 / $td | r3) else null end),
             peak_rss_mib:($rss / 1024 | round), theoretical_mib:($theo / 1048576 | round),
             rss_ratio:($rss * 1024 / $theo | r3),
             loadavg:($load|tonumber)}'
    done
done

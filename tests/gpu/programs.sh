#!/bin/sh
# programs.sh — the programs on the GPU against the CPU, through their
# command lines (tests/gpu/check.sh runs it after `make all`):
#   sft-step  a small model trained 20 steps on the CPU, the GPU in fp32
#             and the GPU in bf16 from the same checkpoint and data: the
#             first 5 losses agree (fp32 1e-3, bf16 3e-2 relative), bf16
#             learns, a GPU checkpoint resumes on the CPU;
#   generate  greedy ids of the fp32 GPU engine = the CPU's (the trained
#             model), bf16 runs; tokens/s on the bench's 'small' shape;
#   rollout   greedy token ids of the fp32 GPU engine = the CPU's (a tiny
#             agent model through the simulator), bf16 runs; tokens/s;
#   serve     --stdio, greedy chat and agent answers in fp32 = the CPU's.
# The CPU halves always run; without a usable GPU (no driver, no GPU, a
# build without CUDA: `generate --device cuda` says which) every GPU check
# prints {"check":NAME,"skipped":true,"why":...}.
#     HAT_RUN_ENV=LD_LIBRARY_PATH-prefix sh tests/gpu/programs.sh LOGDIR
# One JSON line per check on stdout; logs under LOGDIR; exit 1 when a check
# that ran failed.  Budget: about 2 minutes on one H200 with 16 cores.
# No jq: the JSON lines are flat enough for sed and awk.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
logs=${1:-$top/build/gpu-programs}
mkdir -p "$logs" || exit 1
d=$logs/programs
rm -rf "$d"; mkdir -p "$d"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
B=${HAT_BIN:-$top/bin}
run() { if [ -n "${HAT_RUN_ENV:-}" ]; then LD_LIBRARY_PATH=$HAT_RUN_ENV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; else "$@"; fi; }
threads=${OMP_NUM_THREADS:-$(nproc)}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
failed=0
# verdict NAME OK REST: one line {"check":NAME,"ok":OK,REST}; a false counts
verdict() {
    [ "$2" = true ] || failed=1
    echo "{\"check\":\"$1\",\"ok\":$2${3:+,$3},\"seconds\":$(el)}"
}
skip() { echo "{\"check\":\"$1\",\"skipped\":true,\"why\":\"$why\"}"; }
num() { sed -n "s/.*\"$1\":\(-\{0,1\}[0-9][0-9.eE+-]*\).*/\1/p"; }   # a number field of each line
# tokens/s out of generate --stats (stderr, the last line)
gstat() { tail -n 1 "$1" | num "$2"; }

for p in model-init sft-step generate rollout serve grpo-step world-gen task-gen traj-gen tok-train; do
    [ -x "$B/$p" ] || { echo "{\"check\":\"programs_built\",\"ok\":false,\"missing\":\"bin/$p\"}"; exit 1; }
done

gen_data() {   # N sequences of lengths LO..LO+SPAN following x -> 5x+3 mod V
    awk -v n="$1" -v lo="$2" -v span="$3" -v V="$4" 'BEGIN { srand(7); for (i = 0; i < n; i++) {
        k = lo + int(rand() * span); x = int(rand() * V); s = "{\"ids\":[" x;
        for (t = 1; t < k; t++) { x = (x * 5 + 3) % V; s = s "," x } print s "]}" } }'
}

# ---- is there a GPU?  The programs' own answer decides.
cat >"$d/probe.json" <<'J'
{"vocab_size":64,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":1,
 "num_attention_heads":4,"num_key_value_heads":2,"head_dim":8,"max_position_embeddings":64}
J
run "$B/model-init" --config "$d/probe.json" --seed 1 -o "$d/probe.ckpt" 2>"$d/probe.err"
echo '{"ids":[1,2,3]}' >"$d/probe.jsonl"
if run timeout 60 "$B/generate" --ckpt "$d/probe.ckpt" --max-tokens 2 --device cuda "$d/probe.jsonl" \
        >"$d/probe.out" 2>>"$d/probe.err"; then
    gpu=1 why=""
    echo "{\"check\":\"gpu\",\"usable\":true,\"name\":\"$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)\"}"
else
    gpu=0 why=$(tail -n 1 "$d/probe.err" | tr -d '"\\')
    echo "{\"check\":\"gpu\",\"usable\":false,\"why\":\"$why\"}"
fi

# ---- sft-step: cpu fp32, cuda fp32, cuda bf16
sd=$d/sft; mkdir -p "$sd"
cat >"$sd/cfg.json" <<'CFG'
{"vocab_size": 512, "hidden_size": 128, "intermediate_size": 320, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "rms_norm_eps": 1e-6,
 "rope_theta": 10000.0, "tie_word_embeddings": false, "max_position_embeddings": 1024}
CFG
gen_data 256 24 100 512 >"$sd/d.jsonl"
run "$B/model-init" --config "$sd/cfg.json" --seed 1 --std 0.05 -o "$sd/base.ckpt" 2>"$sd/init.err"
sft() {   # DEVICE PRECISION
    OMP_NUM_THREADS=$threads run timeout 150 "$B/sft-step" --init "$sd/base.ckpt" --data "$sd/d.jsonl" \
        --steps 20 --batch 8 --seq 128 --accum 2 --lr 3e-3 --warmup 2 --device "$1" --precision "$2" \
        --metrics "$sd/$1-$2.jsonl" -o "$sd/$1-$2.ckpt" 2>"$sd/$1-$2.err"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "null" }'; }
sft cpu fp32; rc=$?
cl=$(num loss <"$sd/cpu-fp32.jsonl" | tr '\n' ' ')
n=$(wc -l <"$sd/cpu-fp32.jsonl" 2>/dev/null || echo 0)
learns=$(echo "$cl" | awk '{ print ($NF < 0.7 * $1) ? "true" : "false" }')
[ "$rc" -eq 0 ] && [ "$n" -eq 20 ] && [ "$learns" = true ] && ok=true || ok=false
verdict sft_cpu $ok "\"rc\":$rc,\"steps\":$n,\"loss_first_last\":[$(echo "$cl" | awk '{ print $1 "," $NF }')],\"tokens_per_s_median\":$(num tokens_per_s <"$sd/cpu-fp32.jsonl" | median)"
if [ $gpu = 1 ]; then
    for pr in fp32 bf16; do
        sft cuda $pr; rc=$?
        n=$(wc -l <"$sd/cuda-$pr.jsonl" 2>/dev/null || echo 0)
        gl=$(num loss <"$sd/cuda-$pr.jsonl" | tr '\n' ' ')
        tol=1e-3; [ $pr = bf16 ] && tol=3e-2
        # the largest relative difference of the first 5 losses
        rel=$(printf '%s\n%s\n' "$cl" "$gl" | awk 'NR == 1 { for (i = 1; i <= 5; i++) c[i] = $i }
            NR == 2 { m = 0; for (i = 1; i <= 5; i++) { x = ($i - c[i]) / c[i]; if (x < 0) x = -x; if (x > m) m = x } print m }')
        learns=$(echo "$gl" | awk '{ print (NF == 20 && $NF < 0.7 * $1) ? "true" : "false" }')
        dev=$(grep -c '"device":"cuda"' "$sd/cuda-$pr.jsonl" 2>/dev/null)
        ok=$(awk -v r="${rel:-9}" -v t=$tol -v rc=$rc -v n="$n" -v l=$learns -v dv="$dev" \
             'BEGIN { print (rc == 0 && n == 20 && dv == 20 && r < t && l == "true") ? "true" : "false" }')
        verdict "sft_cuda_$pr" $ok "\"rc\":$rc,\"steps\":$n,\"steps_on_cuda\":${dev:-0},\"max_rel_diff_first5\":${rel:-null},\"tolerance\":$tol,\"loss_first_last\":[$(echo "$gl" | awk '{ print ($1 == "" ? "null" : $1) "," ($NF == "" ? "null" : $NF) }')],\"tokens_per_s_median\":$(num tokens_per_s <"$sd/cuda-$pr.jsonl" | median)"
        [ $rc -eq 0 ] || tail -n 5 "$sd/cuda-$pr.err" >&2
    done
    OMP_NUM_THREADS=$threads run timeout 60 "$B/sft-step" --init "$sd/cuda-bf16.ckpt" --resume --data "$sd/d.jsonl" \
        --steps 2 --device cpu --metrics "$sd/resumed.jsonl" -o "$sd/resumed.ckpt" 2>"$sd/resume.err"
    rc=$?
    grep -q '^{"step":21,.*"device":"cpu"}$' "$sd/resumed.jsonl" 2>/dev/null && [ $rc -eq 0 ] && ok=true || ok=false
    verdict sft_gpu_ckpt_resumes_on_cpu $ok "\"rc\":$rc,\"losses\":[$(num loss <"$sd/resumed.jsonl" 2>/dev/null | paste -sd, -)]"
else
    skip sft_cuda_fp32; skip sft_cuda_bf16; skip sft_gpu_ckpt_resumes_on_cpu
fi

# ---- generate: greedy parity on the trained model, tokens/s on 'small'
gd=$d/generate; mkdir -p "$gd"
awk 'BEGIN { for (i = 0; i < 16; i++) { x = (i * 37 + 11) % 512; s = "{\"id\":" i ",\"ids\":[" x;
     for (t = 1; t < 6 + i % 5; t++) { x = (x * 5 + 3) % 512; s = s "," x } print s "]}" } }' >"$gd/p.jsonl"
G="--ckpt $sd/cpu-fp32.ckpt --max-tokens 48 --batch 8 --stats"
OMP_NUM_THREADS=$threads run timeout 60 "$B/generate" $G --device cpu -o "$gd/cpu.jsonl" "$gd/p.jsonl" 2>"$gd/cpu.err"
rc=$?
n=$(grep -c '"finish":"length"' "$gd/cpu.jsonl" 2>/dev/null)
[ $rc -eq 0 ] && [ "$n" = 16 ] && ok=true || ok=false
verdict generate_cpu $ok "\"rc\":$rc,\"lines\":${n:-0},\"tokens_per_s\":$(gstat "$gd/cpu.err" tokens_per_s)"
OMP_NUM_THREADS=$threads run timeout 60 "$B/generate" $G --device auto -o "$gd/auto.jsonl" "$gd/p.jsonl" 2>"$gd/auto.err"
rc=$?
dv=$(sed -n 's/.*"device":"\([a-z]*\)".*/\1/p' "$gd/auto.err" | tail -n 1)
if [ $gpu = 1 ]; then want=cuda; else want=cpu; fi
[ $rc -eq 0 ] && [ "$dv" = $want ] && ok=true || ok=false
[ $gpu = 0 ] && ! cmp -s "$gd/cpu.jsonl" "$gd/auto.jsonl" && ok=false   # no GPU: the CPU's bytes
verdict generate_auto $ok "\"rc\":$rc,\"device\":\"$dv\""
if [ $gpu = 1 ]; then
    for pr in fp32 bf16; do
        run timeout 60 "$B/generate" $G --device cuda --precision $pr -o "$gd/cuda-$pr.jsonl" "$gd/p.jsonl" 2>"$gd/cuda-$pr.err"
        rc=$?
        n=$(grep -c '"finish":"length"' "$gd/cuda-$pr.jsonl" 2>/dev/null)
        same=false; cmp -s "$gd/cpu.jsonl" "$gd/cuda-$pr.jsonl" && same=true
        ok=false; [ $rc -eq 0 ] && [ "$n" = 16 ] && { [ $pr = bf16 ] || [ $same = true ]; } && ok=true
        verdict "generate_cuda_$pr" $ok "\"rc\":$rc,\"lines\":${n:-0},\"ids_equal_cpu\":$same,\"tokens_per_s\":$(gstat "$gd/cuda-$pr.err" tokens_per_s),\"decode_tokens_per_s\":$(gstat "$gd/cuda-$pr.err" decode_tokens_per_s)"
    done
else
    skip generate_cuda_fp32; skip generate_cuda_bf16
fi
# throughput on the bench's 'small' shape (V8192 C512 I1536 L8 H8 KV4 D64), random weights:
# reported, not judged (near-ties of random logits may flip in the last bits)
cat >"$gd/small.json" <<'CFG'
{"vocab_size": 8192, "hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 8,
 "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64, "rms_norm_eps": 1e-6,
 "rope_theta": 1000000.0, "tie_word_embeddings": false, "max_position_embeddings": 4096}
CFG
run "$B/model-init" --config "$gd/small.json" --seed 2 -o "$gd/small.ckpt" 2>>"$gd/init.err"
gen_data 8 16 1 8192 >"$gd/sp.jsonl"
for dp in cpu:fp32 cuda:fp32 cuda:bf16; do
    dv=${dp%%:*} pr=${dp#*:}
    if [ $dv = cuda ] && [ $gpu = 0 ]; then skip "generate_small_${dv}_$pr"; continue; fi
    OMP_NUM_THREADS=$threads run timeout 90 "$B/generate" --ckpt "$gd/small.ckpt" --max-tokens 128 --batch 8 --stats \
        --device $dv --precision $pr -o "$gd/small-$dv-$pr.jsonl" "$gd/sp.jsonl" 2>"$gd/small-$dv-$pr.err"
    rc=$?
    [ $rc -eq 0 ] && ok=true || ok=false
    verdict "generate_small_${dv}_$pr" $ok "\"rc\":$rc,\"tokens_per_s\":$(gstat "$gd/small-$dv-$pr.err" tokens_per_s),\"decode_tokens_per_s\":$(gstat "$gd/small-$dv-$pr.err" decode_tokens_per_s)"
done

# ---- rollout (and serve) with a tiny agent model
rd=$d/rollout; mkdir -p "$rd"
H=$top/examples/harness
run "$B/world-gen" --seed 2 --products 30 -o "$rd/w.json" 2>"$rd/prep.err" &&
run "$B/task-gen" --world "$rd/w.json" -n 16 --seed 3 -o "$rd/t.jsonl" 2>>"$rd/prep.err" &&
run "$B/traj-gen" --world "$rd/w.json" --harness "$H" --think 0.3 -o "$rd/traj.jsonl" "$rd/t.jsonl" 2>>"$rd/prep.err" &&
run "$B/tok-train" --chat -n 700 -o "$rd/tok.json" "$rd/traj.jsonl" 2>>"$rd/prep.err"
cat >"$rd/cfg.json" <<'J'
{"vocab_size":704,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
 "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"max_position_embeddings":4096}
J
run "$B/model-init" --config "$rd/cfg.json" --std 0.5 --seed 4 --tokenizer "$rd/tok.json" -o "$rd/m.ckpt" 2>>"$rd/prep.err"
R="--ckpt $rd/m.ckpt --world $rd/w.json --harness $H --max-tokens 24 --max-turns 3 --batch 16 --logprobs"
rollout() {   # DEVICE PRECISION: seconds on stdout
    s=$(date +%s.%N)
    OMP_NUM_THREADS=$threads run timeout 90 "$B/rollout" $R --device $1 --precision $2 -o "$rd/$1-$2.jsonl" \
        "$rd/t.jsonl" 2>"$rd/$1-$2.err"
    r=$?
    echo "$s $(date +%s.%N)" | awk '{ printf "%.3f\n", $2 - $1 }'
    return $r
}
# generated tokens over the wall time; ids and mask without the log-probs
rtps() { num gen_tokens <"$1" | awk -v s="$2" '{ n += $1 } END { printf("%.1f", s > 0 ? n / s : 0) }'; }
ids() { sed 's/,"logprobs":\[[^]]*\]//' "$1"; }
secs=$(rollout cpu fp32); rc=$?
n=$(grep -c '"tokens":{"ids"' "$rd/cpu-fp32.jsonl" 2>/dev/null)
[ $rc -eq 0 ] && [ "$n" = 16 ] && ok=true || ok=false
verdict rollout_cpu $ok "\"rc\":$rc,\"trajectories\":${n:-0},\"wall_s\":$secs,\"gen_tokens_per_s\":$(rtps "$rd/cpu-fp32.jsonl" "$secs")"
ids "$rd/cpu-fp32.jsonl" >"$rd/cpu.ids"
if [ $gpu = 1 ]; then
    for pr in fp32 bf16; do
        secs=$(rollout cuda $pr); rc=$?
        n=$(grep -c '"tokens":{"ids"' "$rd/cuda-$pr.jsonl" 2>/dev/null)
        ids "$rd/cuda-$pr.jsonl" >"$rd/cuda-$pr.ids"
        same=false; cmp -s "$rd/cpu.ids" "$rd/cuda-$pr.ids" && same=true
        # trajectories whose ids equal the CPU's (bf16: reported, not judged)
        eq=$(paste -d '\n' "$rd/cpu.ids" "$rd/cuda-$pr.ids" | awk 'NR % 2 { a = $0; next } { e += ($0 == a) } END { print e + 0 }')
        ok=false; [ $rc -eq 0 ] && [ "$n" = 16 ] && { [ $pr = bf16 ] || [ $same = true ]; } && ok=true
        verdict "rollout_cuda_$pr" $ok "\"rc\":$rc,\"trajectories\":${n:-0},\"ids_equal_cpu\":$same,\"equal_trajectories\":$eq,\"wall_s\":$secs,\"gen_tokens_per_s\":$(rtps "$rd/cuda-$pr.jsonl" "$secs")"
        [ $rc -eq 0 ] || tail -n 5 "$rd/cuda-$pr.err" >&2
    done
else
    skip rollout_cuda_fp32; skip rollout_cuda_bf16
fi

# ---- grpo-step: the policy trains on the GPU and its rollouts decode there
# too; in fp32 the first step plays the CPU's rollouts (the same ids), so
# its reward is the CPU's to the last digit
GR="--init $rd/m.ckpt --world $rd/w.json --harness $H --groups 2 --group-size 4 --max-tokens 16 --max-turns 2 --steps 2 --lr 1e-3"
grpo() {   # DEVICE PRECISION
    OMP_NUM_THREADS=$threads run timeout 120 "$B/grpo-step" $GR --device $1 --precision $2 \
        --metrics "$rd/grpo-$1-$2.jsonl" -o "$rd/grpo-$1-$2.ckpt" "$rd/t.jsonl" 2>"$rd/grpo-$1-$2.err"
}
grpo cpu fp32; rc=$?
r0=$(head -n 1 "$rd/grpo-cpu-fp32.jsonl" 2>/dev/null | num reward)
[ $rc -eq 0 ] && [ -n "$r0" ] && ok=true || ok=false
verdict grpo_cpu $ok "\"rc\":$rc,\"step1_reward\":${r0:-null}"
if [ $gpu = 1 ]; then
    grpo cuda fp32; rc=$?
    r1=$(head -n 1 "$rd/grpo-cuda-fp32.jsonl" 2>/dev/null | num reward)
    [ $rc -eq 0 ] && [ -n "$r1" ] && [ "$r0" = "$r1" ] && ok=true || ok=false
    verdict grpo_cuda_fp32 $ok "\"rc\":$rc,\"step1_reward\":${r1:-null},\"cpu\":${r0:-null}"
    [ $ok = true ] || tail -n 5 "$rd/grpo-cuda-fp32.err" >&2
else
    skip grpo_cuda_fp32
fi

M='"messages":[{"role":"system","content":"You are a host."},{"role":"user","content":"hi, price of P001?"}]'
{ printf '{"id":"c1","path":"/v1/chat/completions",%s,"max_tokens":24,"temperature":0}\n' "$M"
  echo '{"id":"a1","message":"how much is P002?","max_tokens":16,"max_turns":2,"temperature":0}'; } >"$rd/req.jsonl"
serve() {   # DEVICE PRECISION: answers without the clock readings
    OMP_NUM_THREADS=$threads run timeout 60 "$B/serve" --ckpt "$rd/m.ckpt" --world "$rd/w.json" --harness "$H" \
        --stdio --slots 2 --max-tokens 24 --max-context 4096 --poll-ms 0 --device $1 --precision $2 \
        <"$rd/req.jsonl" 2>"$rd/serve-$1-$2.err" |
        sed 's/"id":"chatcmpl-[^"]*",//; s/,"created":[0-9]*//; s/,"timings":{[^}]*}//' >"$rd/serve-$1-$2.jsonl"
}
serve cpu fp32
n=$(grep -c '"status":200' "$rd/serve-cpu-fp32.jsonl")
[ "$n" = 2 ] && ok=true || ok=false
verdict serve_cpu $ok "\"answers_200\":$n"
if [ $gpu = 1 ]; then
    serve cuda fp32
    n=$(grep -c '"status":200' "$rd/serve-cuda-fp32.jsonl")
    same=false; cmp -s "$rd/serve-cpu-fp32.jsonl" "$rd/serve-cuda-fp32.jsonl" && same=true
    [ "$n" = 2 ] && [ $same = true ] && grep -q 'on cuda in fp32' "$rd/serve-cuda-fp32.err" && ok=true || ok=false
    verdict serve_cuda_fp32 $ok "\"answers_200\":$n,\"answers_equal_cpu\":$same"
    [ $ok = true ] || tail -n 5 "$rd/serve-cuda-fp32.err" >&2
else
    skip serve_cuda_fp32
fi

echo "{\"check\":\"programs_done\",\"gpu\":$gpu,\"failed\":$failed,\"seconds\":$(el)}"
exit $failed

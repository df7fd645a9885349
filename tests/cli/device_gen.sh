# device_gen.sh — --device / --precision of every program that decodes
# (generate, rollout, serve, diagnose evolve; generate_device.sh has
# generate's own cases):
# a bad value is a usage error, --mtp with --device cuda is one, --device
# auto --mtp decodes on the CPU.  Without a GPU (or CUDA back end):
# --device cuda fails with one line naming the reason, exit 1, and writes
# no output; --device auto gives the bytes --device cpu gives.  With a
# GPU: rollout and serve in fp32 give the CPU's greedy token ids, bf16
# runs, /health and /metrics name the device.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/examples/harness"
export OMP_NUM_THREADS=1
unset HAT_SERVE_TOKEN

tiny_agent "$T" 4
jq '. + {"num_nextn_predict_layers":1}' "$T/cfg.json" >"$T/cfg_mtp.json"
model-init --config "$T/cfg_mtp.json" --std 0.5 --seed 4 --tokenizer "$T/tok.json" -o "$T/mtp.ckpt"
# A cut-down harness: a short system prompt keeps each turn cheap.
harness-pack -o "$T/h.json" "$H"
jq -c '.tools |= .[0:2] | .skills |= .[0:3] | .system_prompt.blocks |= .[0:2]' "$T/h.json" >"$T/hs.json"
awk 'NR <= 3 { printf "{\"id\":%d,\"ids\":[%d,%d,%d,%d]}\n", NR, NR * 7, NR * 11 % 704, 300 + NR, 5 }' \
    "$T/t.jsonl" >"$T/p.jsonl"
R="--world $T/w.json --harness $T/hs.json --max-tokens 12 --max-turns 2 --batch 4"
G="--ckpt $T/m.ckpt --max-tokens 16 --batch 4"
S="--world $T/w.json --harness $T/hs.json --stdio --slots 4 --max-tokens 16 --max-context 1024 --poll-ms 0"
M='"messages":[{"role":"system","content":"You are a host."},{"role":"user","content":"hi, price of P001?"}]'
{ printf '{"id":"c1","path":"/v1/chat/completions",%s,"max_tokens":16,"temperature":0}\n' "$M"
  printf '{"id":"c2","path":"/v1/chat/completions",%s,"max_tokens":12,"temperature":0.8,"seed":3}\n' "$M"
  echo '{"id":"a1","message":"how much is P002?","max_tokens":10,"max_turns":2,"temperature":0}'; } >"$T/req.jsonl"
# serve's answers without what changes from run to run (clock readings)
answers() { jq -c 'del(.response.timings, .response.created, .response.id)' "$1"; }

# --- bad values: usage errors, the same words in every program
for p in generate rollout serve; do
    case $p in generate) a="$G" ;; rollout) a="--ckpt $T/m.ckpt $R" ;; serve) a="--ckpt $T/m.ckpt $S" ;; esac
    fails "$p --device tpu is a usage error" 2 $p $a --device tpu </dev/null
    has "$p --device message" "$T/.err" "^$p: --device: must be cpu, cuda or auto \\(not \"tpu\"\\)"
    fails "$p --precision fp16 is a usage error" 2 $p $a --precision fp16 </dev/null
    has "$p --precision message" "$T/.err" "^$p: --precision: must be bf16 or fp32 \\(not \"fp16\"\\)"
    fails "$p --device cuda --mtp is a usage error" 2 $p $a --device cuda --mtp 2 </dev/null
    has "$p --mtp message" "$T/.err" "^$p: --mtp is not supported with --device cuda"
done
fails "sft-step shares the parser" 2 sft-step --init "$T/m.ckpt" --data "$T/none" --precision fp8 -o "$T/x.ckpt"
has "sft-step --precision message" "$T/.err" '^sft-step: --precision: must be bf16 or fp32 \(not "fp8"\)'

# --- the CPU references; the default is the CPU
ok "rollout --device cpu" rollout --ckpt "$T/m.ckpt" $R --logprobs --device cpu -o "$T/r_cpu.jsonl" "$T/t.jsonl"
[ "$(wc -l <"$T/r_cpu.jsonl")" = 4 ] && pass "rollout: one trajectory per task" || flunk "rollout lines" "$(wc -l <"$T/r_cpu.jsonl")"
rollout --ckpt "$T/m.ckpt" $R --logprobs "$T/t.jsonl" >"$T/r_def.jsonl" 2>/dev/null
same "rollout: default = --device cpu" "$T/r_cpu.jsonl" "$T/r_def.jsonl"
ok "serve --device cpu" serve --ckpt "$T/m.ckpt" $S --device cpu <"$T/req.jsonl"
answers "$T/.out" >"$T/s_cpu"
n=$(jq -r .status "$T/s_cpu" | tr '\n' ' ')
[ "$n" = "200 200 200 " ] && pass "serve: three answers" || flunk "serve answers" "$n"
serve --ckpt "$T/m.ckpt" $S <"$T/req.jsonl" 2>/dev/null >"$T/s_def.jsonl"
answers "$T/s_def.jsonl" >"$T/s_def"
same "serve: default = --device cpu" "$T/s_cpu" "$T/s_def"
generate $G --device cpu "$T/p.jsonl" >"$T/g_cpu.jsonl"
# diagnose evolve plays cases under two harnesses through rollout
evalset --world "$T/w.json" --harness "$T/hs.json" --sets live -n 3 --seed 5 -o "$T/cases.jsonl"
jq -c '.tools |= .[0:1]' "$T/hs.json" >"$T/hs2.json"
D="evolve --ckpt $T/m.ckpt --world $T/w.json --harness $T/hs.json --edited $T/hs2.json --cases $T/cases.jsonl --max-tokens 12 --max-turns 2"
ok "diagnose evolve --device cpu" diagnose $D --device cpu -o "$T/d_cpu.json"
diagnose $D -o "$T/d_def.json" 2>/dev/null
same "diagnose: default = --device cpu" "$T/d_cpu.json" "$T/d_def.json"
fails "diagnose --device tpu is a usage error" 2 diagnose $D --device tpu
has "diagnose --device message" "$T/.err" '^diagnose: --device: must be cpu, cuda or auto \(not "tpu"\)'

# --- auto with --mtp decodes on the CPU, GPU or not (MTP drafting is CPU-only)
rollout --ckpt "$T/mtp.ckpt" $R --logprobs --mtp 2 --device cpu "$T/t.jsonl" >"$T/rm_cpu.jsonl" 2>/dev/null
ok "rollout --device auto --mtp 2" rollout --ckpt "$T/mtp.ckpt" $R --logprobs --mtp 2 --device auto -o "$T/rm_auto.jsonl" "$T/t.jsonl"
same "rollout auto --mtp = cpu --mtp" "$T/rm_cpu.jsonl" "$T/rm_auto.jsonl"
serve --ckpt "$T/mtp.ckpt" $S --mtp 2 --device cpu <"$T/req.jsonl" 2>/dev/null >"$T/sm_cpu.jsonl"
serve --ckpt "$T/mtp.ckpt" $S --mtp 2 --device auto <"$T/req.jsonl" 2>/dev/null >"$T/sm_auto.jsonl"
answers "$T/sm_cpu.jsonl" >"$T/sm_cpu"; answers "$T/sm_auto.jsonl" >"$T/sm_auto"
same "serve auto --mtp = cpu --mtp" "$T/sm_cpu" "$T/sm_auto"

# --- serve over HTTP: /health and /metrics name the engines' device
start_http() {
    rm -f "$T/port"
    serve --world "$T/w.json" --harness "$T/hs.json" --slots 2 --max-context 1024 --poll-ms 0 \
        --port 0 --port-file "$T/port" "$@" 2>>"$T/serve.log" &
    PID=$!
    i=0; while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    URL="http://127.0.0.1:$(cat "$T/port" 2>/dev/null)"
}
stop_http() { kill -TERM "$PID" 2>/dev/null; wait "$PID"; }
health() {   # NAME DEVICE PRECISION SERVE-ARGS...
    n=$1 d=$2 pr=$3; shift 3
    if ! command -v curl >/dev/null; then echo "# curl not installed: $n skipped"; return; fi
    start_http "$@"
    curl -s "$URL/health" >"$T/health"
    curl -s "$URL/metrics" >"$T/metrics"
    stop_http
    has "$n: /health names the device" "$T/health" "\"device\":\"$d\",\"precision\":\"$pr\""
    has "$n: /metrics, chat engine" "$T/metrics" "^hat_engine_info\\{engine=\"chat\",device=\"$d\",precision=\"$pr\"\\} 1\$"
    has "$n: /metrics, agent engine" "$T/metrics" "^hat_engine_info\\{engine=\"agent\",device=\"$d\",precision=\"$pr\"\\} 1\$"
}
health "serve --device cpu" cpu fp32 --ckpt "$T/m.ckpt" --device cpu

if rollout --ckpt "$T/m.ckpt" $R --logprobs --device cuda --precision fp32 -o "$T/r_gpu.jsonl" "$T/t.jsonl" 2>"$T/gpu.err"; then
    # --- a usable GPU: fp32 greedy ids are the CPU's (log-probs may differ in the last bits)
    jq -c '[.id, .tokens.ids, .tokens.mask, .messages]' "$T/r_cpu.jsonl" >"$T/ids_cpu"
    jq -c '[.id, .tokens.ids, .tokens.mask, .messages]' "$T/r_gpu.jsonl" >"$T/ids_gpu"
    same "rollout cuda fp32: the CPU's token ids and messages" "$T/ids_cpu" "$T/ids_gpu"
    ok "rollout cuda bf16" rollout --ckpt "$T/m.ckpt" $R --device cuda -o "$T/r_gpu16.jsonl" "$T/t.jsonl"
    [ "$(wc -l <"$T/r_gpu16.jsonl")" = 4 ] && pass "rollout cuda bf16: every task" || flunk "rollout cuda bf16 lines" "$(wc -l <"$T/r_gpu16.jsonl")"
    ok "serve cuda fp32" serve --ckpt "$T/m.ckpt" $S --device cuda --precision fp32 <"$T/req.jsonl"
    jq -c 'select(.id == "c1") | .response.choices' "$T/.out" >"$T/sg1"
    jq -c 'select(.id == "c1") | .response.choices' "$T/s_cpu" >"$T/sc1"
    has "serve: the CPU's chat answer is there" "$T/sc1" '"content":'
    same "serve cuda fp32: greedy chat = cpu" "$T/sc1" "$T/sg1"
    jq -c 'select(.id == "a1") | .response.trajectory.messages' "$T/.out" >"$T/sg3"
    jq -c 'select(.id == "a1") | .response.trajectory.messages' "$T/s_cpu" >"$T/sc3"
    has "serve: the CPU's agent answer is there" "$T/sc3" '"role":"assistant"'
    same "serve cuda fp32: greedy agent = cpu" "$T/sc3" "$T/sg3"
    health "serve --device cuda" cuda bf16 --ckpt "$T/m.ckpt" --device cuda
    ok "diagnose evolve cuda fp32" diagnose $D --device cuda --precision fp32 -o "$T/d_gpu.json"
    same "diagnose cuda fp32 = cpu" "$T/d_cpu.json" "$T/d_gpu.json"
    health "serve --device auto" cuda bf16 --ckpt "$T/m.ckpt" --device auto
else
    # --- no GPU or no CUDA back end: one line naming the reason, exit 1, no output
    rc=$?
    reason='--device cuda: (no CUDA GPU or driver found|this build has no CUDA back end \(rebuild with make CUDA=1\))$'
    [ $rc -eq 1 ] && pass "rollout --device cuda without a GPU exits 1" || flunk "rollout --device cuda" "exit $rc"
    has "rollout: the reason" "$T/gpu.err" "^rollout: $reason"
    [ "$(wc -l <"$T/gpu.err")" -eq 1 ] && pass "rollout: one line" || flunk "rollout: one line" "$(cat "$T/gpu.err")"
    [ ! -e "$T/r_gpu.jsonl" ] && pass "rollout: no output file" || flunk "rollout: no output file"
    fails "generate --device cuda without a GPU" 1 generate $G --device cuda -o "$T/g_gpu.jsonl" "$T/p.jsonl"
    has "generate: the reason" "$T/.err" "^generate: $reason"
    [ ! -e "$T/g_gpu.jsonl" ] && pass "generate: no output file" || flunk "generate: no output file"
    fails "serve --device cuda without a GPU" 1 serve --ckpt "$T/m.ckpt" $S --device cuda <"$T/req.jsonl"
    has "serve: the reason" "$T/.err" "^serve: $reason"
    [ "$(wc -l <"$T/.err")" -eq 1 ] && pass "serve: one line" || flunk "serve: one line" "$(cat "$T/.err")"
    [ ! -s "$T/.out" ] && pass "serve: no answers" || flunk "serve: no answers" "$(head -c 300 "$T/.out")"
    # auto falls back to the CPU: the same bytes
    ok "rollout --device auto" rollout --ckpt "$T/m.ckpt" $R --logprobs --device auto --precision fp32 -o "$T/r_auto.jsonl" "$T/t.jsonl"
    same "rollout: auto = cpu without a GPU" "$T/r_cpu.jsonl" "$T/r_auto.jsonl"
    ok "generate --device auto" generate $G --device auto -o "$T/g_auto.jsonl" "$T/p.jsonl"
    same "generate: auto = cpu without a GPU" "$T/g_cpu.jsonl" "$T/g_auto.jsonl"
    ok "serve --device auto" serve --ckpt "$T/m.ckpt" $S --device auto <"$T/req.jsonl"
    answers "$T/.out" >"$T/s_auto"
    same "serve: auto = cpu without a GPU" "$T/s_cpu" "$T/s_auto"
    health "serve --device auto" cpu fp32 --ckpt "$T/m.ckpt" --device auto --precision bf16
    fails "diagnose --device cuda without a GPU" 1 diagnose $D --device cuda -o "$T/d_gpu.json"
    has "diagnose: the reason" "$T/.err" "^diagnose: $reason"
    [ "$(wc -l <"$T/.err")" -eq 1 ] && pass "diagnose: one line" || flunk "diagnose: one line" "$(cat "$T/.err")"
    [ ! -e "$T/d_gpu.json" ] && pass "diagnose: no output file" || flunk "diagnose: no output file"
    ok "diagnose --device auto" diagnose $D --device auto -o "$T/d_auto.json"
    same "diagnose: auto = cpu without a GPU" "$T/d_cpu.json" "$T/d_auto.json"
fi

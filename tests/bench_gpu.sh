#!/bin/sh
# bench_gpu.sh — the GPU benchmark (tests/gpu/bench.c) where this build
# has the CUDA back end and a GPU is usable; one skipped line elsewhere.
# cuBLAS TFLOP/s, a training step of the largest shared bench config and
# of a 0.5B shape (tokens/s, MFU), and batch-1 decoding against the
# memory-bandwidth bound, as JSON lines.  tests/gpu/check.sh runs the
# same benchmark after the parity tests.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bench=$top/build/rel/gpu/bench
skip() { echo "{\"bench\":\"gpu\",\"skipped\":true,\"why\":\"$1\"}"; exit 0; }
[ -x "$bench" ] || skip "no CUDA back end in this build (make CUDA=1 gpu-bench)"
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 || skip "no GPU"
cfg="$top/tests/fixtures/bench/configs.json"
[ -f "$cfg" ] || skip "no $cfg"
# the largest config by parameters: V,C,I,L,H,KV,D,B,T
big=$(jq -r '.configs | max_by(.vocab_size * .hidden_size + .num_hidden_layers * .hidden_size * .intermediate_size)
    | "\(.name):\(.vocab_size),\(.hidden_size),\(.intermediate_size),\(.num_hidden_layers),\(.num_attention_heads),\(.num_key_value_heads),\(.head_dim)"
      + " \(.B),\(.T)"' "$cfg")
model=${big% *} bt=${big#* }
exec "$bench" --matmul --train "$model,$bt" \
    --train "synthetic-0.5b:32768,2048,6144,8,16,8,128,8,1024" \
    --decode "$model,512" --decode "qwen3-1.7b-shape:151936,2048,6144,28,16,8,128,1024"

#!/bin/sh
# check.sh — the prepared GPU check (man 7 hat, GPU): one short run that
# builds the CUDA back end, runs the parity suite and a benchmark, and
# prints JSON lines on stdout (logs on stderr and in build/gpu-check,
# packed into $OUT/gpu-logs.tgz when the device tool sets OUT).  Run from
# the repo root on a machine with a GPU:
#     sh tests/gpu/check.sh
# Budget: under 5 minutes on one H200; measured 70 s without programs.sh
# (build 46 s on 16 cores, parity 11 s, benchmark 13 s).  Exit status 0 only when the build and every
# parity test passed; the benchmark reports, it does not judge.
# No Debian -dev packages on that machine?  Run tests/gpu/fetch-debs.sh
# here and carry .debs/: they are unpacked into a private prefix.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
t0=$(date +%s)
logs=$top/build/gpu-check         # packed into $OUT/gpu-logs.tgz at the end
rm -rf "$logs"
mkdir -p "$logs" build
# The programs' checkpoints and data stay behind: the device tool returns
# files of at most 16 MiB, and the whole folder was over that (session 20).
trap '[ -z "${OUT:-}" ] || tar czf "$OUT/gpu-logs.tgz" -C build --exclude="*.ckpt" --exclude="*.safetensors" --exclude="*.jsonl" gpu-check' EXIT
el() { echo $(( $(date +%s) - t0 )); }

# --- libraries carried as .debs (fetch-debs.sh), in /opt/hat-deps.  The
# loader path is set only for hat's own programs (run below): Debian's
# libraries must not replace the image's for nvcc, python3 or nvidia-smi.
run() { "$@"; }
if [ -d .debs ] && ls .debs/*.deb >/dev/null 2>&1; then
    p=${HAT_DEPS_PREFIX:-/opt/hat-deps}
    for f in .debs/*.deb; do dpkg -x "$f" "$p"; done
    ml=$p/usr/lib/x86_64-linux-gnu
    # openblas.pc is reached through Debian's alternatives, which dpkg -x
    # does not make: name the pthread build's folder directly.
    export PKG_CONFIG_SYSROOT_DIR=$p
    export PKG_CONFIG_LIBDIR=$ml/pkgconfig:$ml/openblas-pthread/pkgconfig:$p/usr/share/pkgconfig
    export LIBRARY_PATH=$ml:$ml/openblas-pthread${LIBRARY_PATH:+:$LIBRARY_PATH}
    export CPATH=$p/usr/include:$p/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
    if ! command -v pkg-config >/dev/null; then    # Debian's, on its own libpkgconf
        mkdir -p build/pc
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$ml" "$p/usr/bin/pkgconf" >build/pc/pkg-config
        chmod +x build/pc/pkg-config
        export PATH=$top/build/pc:$PATH
    fi
    hat_ld=$ml:$ml/openblas-pthread
    run() { LD_LIBRARY_PATH=$hat_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
fi

# --- NCCL: the CUDA toolkit's or the system's, else the one PyTorch's
# wheels bring (nvidia-nccl-*), linked through a libnccl.so made here.
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuda_lib=$(dirname "$nvcc_bin")/../lib64
if ! ls "$cuda_lib"/libnccl.so >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so '; then
    nd=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
    if [ -n "$nd" ] && [ -e "$nd/lib/libnccl.so.2" ]; then
        mkdir -p build/nccl
        ln -sf "$nd/lib/libnccl.so.2" build/nccl/libnccl.so
        export LIBRARY_PATH=$top/build/nccl${LIBRARY_PATH:+:$LIBRARY_PATH}
        export CPATH=$nd/include${CPATH:+:$CPATH}
        hat_ld=$nd/lib${hat_ld:+:$hat_ld}
        run() { LD_LIBRARY_PATH=$hat_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
        echo "{\"check\":\"nccl\",\"from\":\"$nd\"}"
    else
        echo '{"check":"nccl","from":null}'
    fi
fi

# --- the machine
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
echo "{\"check\":\"machine\",\"gpu\":\"$gpu\",\"nvcc\":\"$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')\",\"cores\":$(nproc)}"
cap=$(echo "$gpu" | awk -F', ' '{print $4}' | tr -d '.')
[ -n "$cap" ] || cap=90
arch=${NVCC_ARCH:-"-gencode arch=compute_$cap,code=sm_$cap"}

# --- build (the deps stamp: packages come from the image or .debs, not apt)
missing=""
for lib in $(sed -n 's/^PC_LIBS *:= *//p' Makefile); do     # the Makefile's list
    pkg-config --exists "$lib" 2>/dev/null || missing="$missing $lib"
done
if [ -n "$missing" ]; then
    echo "{\"check\":\"build\",\"ok\":false,\"missing_libraries\":\"${missing# }\",\"hint\":\"run tests/gpu/fetch-debs.sh where apt works and carry .debs\"}"
    exit 1
fi
touch build/.deps-ok
# every unit test with "cuda" in its name, the bench, and the programs
# when tests/gpu/programs.sh will run them
gpu_tests=$(ls tests/unit/test_*cuda*.c | sed 's#^tests/unit/\(.*\)\.c$#build/rel/tests/\1#')
progs=""; [ -f tests/gpu/programs.sh ] && progs=all
if ! make CUDA=1 NVCC_ARCH="$arch" -j"$(nproc)" $progs $gpu_tests gpu-bench >"$logs/build.log" 2>&1; then
    echo "{\"check\":\"build\",\"ok\":false,\"seconds\":$(el)}"
    tail -n 40 "$logs/build.log" >&2
    exit 1
fi
echo "{\"check\":\"build\",\"ok\":true,\"arch\":\"sm_$cap\",\"seconds\":$(el)}"

# --- parity: the kernels, the model and the decoder against the CPU
rc=0 fail=0 skip=0
for t in $gpu_tests; do
    n=$(basename "$t")
    run timeout 180 "$t" >"$logs/$n.log" 2>&1
    r=$?
    p=$(grep -c '^ok ' "$logs/$n.log")
    k=$(grep -c '^ok .*# skip no CUDA' "$logs/$n.log")
    f=$(grep -c '^not ok ' "$logs/$n.log")
    echo "{\"check\":\"parity\",\"test\":\"$n\",\"rc\":$r,\"passed\":$((p - k)),\"skipped\":$k,\"failed\":$f,\"seconds\":$(el)}"
    cat "$logs/$n.log" >&2
    [ $r -eq 0 ] || rc=$r
    fail=$((fail + f)) skip=$((skip + k))
done

# --- the programs on the GPU (tests/gpu/programs.sh: JSON lines)
if [ -f tests/gpu/programs.sh ]; then
    HAT_RUN_ENV=${hat_ld:-} timeout 240 sh tests/gpu/programs.sh "$logs" 2>"$logs/programs.err"
    prc=$?
    echo "{\"check\":\"programs\",\"rc\":$prc,\"seconds\":$(el)}"
    tail -n 30 "$logs/programs.err" >&2
    [ $prc -eq 0 ] || rc=$prc
fi

# --- benchmark: the largest bench config, a bigger synthetic one, decoding
cfg=$(python3 -c '
import json, sys
c = [x for x in json.load(open(sys.argv[1]))["configs"] if x["name"] == "small"][0]
print("%d,%d,%d,%d,%d,%d,%d" % (c["vocab_size"], c["hidden_size"], c["intermediate_size"],
      c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]),
      "%d,%d" % (c["B"], c["T"]))' "$top/tests/fixtures/bench/configs.json")
small_model=${cfg% *}
small_bt=${cfg#* }
run timeout 240 build/rel/gpu/bench --matmul \
    --train "small:$small_model,$small_bt" \
    --train "synthetic-0.5b:32768,2048,6144,8,16,8,128,8,1024" \
    --decode "small:$small_model,512" \
    --decode "qwen3-1.7b-shape:151936,2048,6144,28,16,8,128,1024" 2>"$logs/bench.err"
brc=$?
[ $brc -eq 0 ] || { echo "{\"check\":\"bench\",\"rc\":$brc}"; cat "$logs/bench.err" >&2; }
echo "{\"check\":\"done\",\"seconds\":$(el)}"
[ "$rc" -eq 0 ] && [ "$fail" -eq 0 ] && [ "$skip" -eq 0 ]

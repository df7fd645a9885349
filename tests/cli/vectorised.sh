# vectorised.sh — the AVX2 (x86-64-v3) builds of the kernels' exp loops
# are vector code.  vexpf (kernels/cpu/vecmath.h) turns x/ln2 into the
# exponent with a float-to-int conversion: vector code converts 8 floats
# at once (vcvttps2dq into a ymm register), a scalar loop one (vcvttss2si).
# Built under GCC's default -ftrapping-math these clones were scalar, in
# training (the softmax alone a third of a PROFILE=small step) and in
# decoding (Makefile, KERNEL_CFLAGS); a timing would not catch that in a
# test, the instructions do.  Skipped
# off x86-64, without objdump, under SAN=1, or where the compiler made no
# target clones.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
name="AVX2 clones of the exp loops are vector code"
if [ "$(uname -m)" != x86_64 ]; then skip "$name" "not x86-64"; exit 0; fi
if ! command -v objdump >/dev/null; then skip "$name" "objdump is not installed"; exit 0; fi
if [ "${HAT_SAN:-0}" = 1 ]; then skip "$name" "sanitizer build"; exit 0; fi
objdump -d --no-show-raw-insn "$HAT_BIN/sft-step" > "$T/dis" || { flunk "$name" "objdump failed"; exit 0; }
if ! grep -q '\.arch_x86_64_v3>:' "$T/dis"; then skip "$name" "no x86-64-v3 target clones in this build"; exit 0; fi
for f in softmax_tile dsoftmax_tile swiglu_fwd_range swiglu_bwd_range swiglu_row row_lse row_grad \
         attention_decode att_task; do
    awk -v f="<$f.arch_x86_64_v3>:" '$2 == f { on = 1; next } /^$/ { on = 0 } on' "$T/dis" > "$T/$f"
    has "$f: an x86-64-v3 clone" "$T/$f" '.'
    has "$f: its exp converts 8 floats at once" "$T/$f" 'vcvttps2dq.*ymm'
done

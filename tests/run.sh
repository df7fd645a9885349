#!/bin/sh
# run.sh — run every unit test binary and command-line test script, count
# their "ok"/"not ok" lines, and end with one line "N passed, N failed".
# A test program that exits non-zero without reporting a failure (a crash,
# a sanitizer abort) counts as one failure.  Output of failing tests is
# shown; passing ones stay quiet unless VERBOSE=1.
#   HAT_BIN   programs to test (bin/ or build/san/bin)
#   HAT_UNIT  directory of unit test binaries
#   ONLY      run only tests whose name contains this string
#   JOBS      tests run at once (default: make's -jN, else the core count)
# Everything a test needs is in the checkout: conformance data (Hugging
# Face tokenizers, the Qwen3 chat template, the original IFEval checker)
# is under tests/fixtures/conformance.
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${HAT_UNIT:=$top/build/rel/tests}"
export HAT_BIN HAT_TOP="$top" HAT_DATA="$top/data" HAT_CONFORMANCE="$top/tests/fixtures/conformance"
export PATH="$HAT_BIN:$PATH" LC_ALL=C.UTF-8 OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}" UBSAN_OPTIONS="print_stacktrace=1"
# Each test is one process tree; two of them at once, each with every core,
# would oversubscribe: tests are small, one BLAS/OpenMP thread each.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

# ", N skipped" when N > 0: checks whose peer is not installed ("skip - NAME")
skipped() { [ "${1:-0}" -gt 0 ] && printf ', %s skipped' "$1"; }

# --- one test (run by xargs below): NAME CMD... ---------------------------
if [ "${1:-}" = --one ]; then
    shift; name=$1; shift
    log="$RUN_OUT/$name.log"
    HAT_TEST_TMP="$RUN_OUT/tmp/$name"; export HAT_TEST_TMP; mkdir -p "$HAT_TEST_TMP"
    "$@" >"$log" 2>&1 </dev/null
    rc=$?
    p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log"); s=$(grep -c '^skip ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok - $name exited with status $rc" >>"$log"; fi
    echo "$p $f $s" >"$RUN_OUT/$name.result"
    rm -rf "$HAT_TEST_TMP"   # scratch files go; the log stays until the end
    if [ "$f" -gt 0 ]; then
        { echo "FAIL $name ($p passed, $f failed)"; sed 's/^/    /' "$log" | tail -n 60; } >"$RUN_OUT/$name.report"
    else
        { echo "ok   $name ($p$(skipped "$s"))"; grep '^skip ' "$log" | sed 's/^/    /'
          [ -n "${VERBOSE:-}" ] && sed 's/^/    /' "$log"; } >"$RUN_OUT/$name.report"
    fi
    cat "$RUN_OUT/$name.report"   # one write, so parallel reports do not interleave
    exit 0
fi

# --- the whole suite ------------------------------------------------------
if [ -z "${JOBS:-}" ]; then
    JOBS=$(printf '%s\n' "${MAKEFLAGS:-}" | sed -n 's/.*-j *\([0-9][0-9]*\).*/\1/p')
    [ -n "$JOBS" ] || JOBS=$(nproc 2>/dev/null || echo 1)
fi
# One directory per run, so concurrent runs do not clobber each other;
# removed when everything passed, only the logs kept otherwise.
RUN_OUT="$top/tests/out/run.$$"; export RUN_OUT
rm -rf "$RUN_OUT"; mkdir -p "$RUN_OUT/tmp"
trap 'rm -rf "$RUN_OUT/tmp"' EXIT
trap 'rm -rf "$RUN_OUT"; exit 130' INT TERM

# The command-line scripts first: they take longest, so they start early.
{
    for t in "$top"/tests/cli/*.sh; do
        [ -e "$t" ] || continue
        case "$t" in */lib.sh) continue ;; esac
        n=$(basename "$t" .sh)
        case "$n" in *"${ONLY:-}"*) printf '%s sh %s\n' "$n" "$t" ;; esac
    done
    for t in "$HAT_UNIT"/test_*; do
        [ -x "$t" ] || continue
        n=$(basename "$t")
        case "$n" in *"${ONLY:-}"*) printf '%s %s\n' "$n" "$t" ;; esac
    done
} >"$RUN_OUT/list"

xargs -P "$JOBS" -L 1 sh "$0" --one <"$RUN_OUT/list"

pass=0 fail=0 skip=0
while read -r name _; do
    if [ -f "$RUN_OUT/$name.result" ]; then read -r p f s <"$RUN_OUT/$name.result"
    else p=0 f=1 s=0; echo "FAIL $name (no result)"; fi
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
    [ "$f" -eq 0 ] && rm -f "$RUN_OUT/$name.log"
done <"$RUN_OUT/list"
rm -rf "$RUN_OUT/tmp" "$RUN_OUT"/*.result "$RUN_OUT"/*.report "$RUN_OUT/list"
if [ "$fail" -eq 0 ]; then rm -rf "$RUN_OUT"
else echo "logs of the failed tests: $RUN_OUT"; fi
# Skipped checks (a peer that is not installed) are neither passed nor
# failed; their count comes on the line before, so the last line keeps
# its one form, "N passed, N failed".
[ "$skip" -gt 0 ] && echo "$skip skipped (a peer is not installed: the lines \"skip - NAME\" above say which)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

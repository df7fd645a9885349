#!/bin/sh
# run.sh — run every unit test binary and command-line test script, count
# their "ok"/"not ok" lines, and end with one line "N passed, N failed".
# A test program that exits non-zero without reporting a failure (a crash,
# a sanitizer abort) counts as one failure.  Output of failing tests is
# shown; passing ones stay quiet unless VERBOSE=1.
#   HAT_BIN   programs to test (bin/ or build/san/bin)
#   HAT_UNIT  directory of unit test binaries
#   ONLY      run only tests whose name contains this string
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}" "${HAT_UNIT:=$top/build/rel/tests}"
export HAT_BIN HAT_TOP="$top" HAT_DATA="$top/data" HAT_SHARED="${HAT_SHARED:-$top/../shared}"
export PATH="$HAT_BIN:$PATH" LC_ALL=C.UTF-8 OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}" UBSAN_OPTIONS="print_stacktrace=1"
# One directory per run, so concurrent runs do not clobber each other;
# removed when everything passed, kept for inspection otherwise.
out="$top/tests/out/run.$$"
rm -rf "$out"; mkdir -p "$out"
export HAT_TEST_TMP="$out"
pass=0 fail=0

run_one() {   # name, command...
    name=$1; shift
    case "$name" in *"${ONLY:-}"*) ;; *) return ;; esac
    log="$out/$name.log"
    "$@" >"$log" 2>&1
    rc=$?
    p=$(grep -c '^ok ' "$log"); f=$(grep -c '^not ok ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; echo "not ok - $name exited with status $rc" >>"$log"; fi
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$f" -gt 0 ]; then
        echo "FAIL $name ($p passed, $f failed)"; sed 's/^/    /' "$log" | tail -n 60
    else
        echo "ok   $name ($p)"; [ -n "${VERBOSE:-}" ] && sed 's/^/    /' "$log"
    fi
}

for t in "$HAT_UNIT"/test_*; do
    [ -x "$t" ] || continue
    run_one "$(basename "$t")" "$t"
done
for t in "$top"/tests/cli/*.sh; do
    [ -e "$t" ] || continue
    case "$t" in */lib.sh) continue ;; esac
    run_one "$(basename "$t" .sh)" sh "$t"
done
[ "$fail" -eq 0 ] && rm -rf "$out"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

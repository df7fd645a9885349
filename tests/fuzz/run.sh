#!/bin/sh
# run.sh — run the libFuzzer targets built by `make fuzz` (FUZZ_BIN) for
# FUZZ_SECONDS each, from a scratch copy of tests/fuzz/corpus/NAME/ (so
# fuzzing never grows the committed corpus), and print one JSON line per
# target: executions, exec/s, coverage (cov = edges, ft = features, from
# libFuzzer's final status line), corpus size, crashes.  Inputs that crash
# are kept in tests/out/fuzz/NAME/ (crash-*, leak-*, timeout-*, oom-*);
# copy one into tests/fuzz/corpus/NAME/ once fixed, and make check replays
# it (tests/unit/test_fuzz_replay.c).  Exit 1 if any target crashed.
#   tests/fuzz/run.sh [NAME...]     default: every target in FUZZ_BIN
top=$(cd "$(dirname "$0")/../.." && pwd)
: "${FUZZ_BIN:=$top/build/fuzz}" "${FUZZ_SECONDS:=60}"
export HAT_TOP="$top" HAT_DATA="$top/data" HAT_CONFORMANCE="$top/tests/fixtures/conformance"
export LC_ALL=C.UTF-8 OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}" OMP_NUM_THREADS=1
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="print_stacktrace=1"
out="$top/tests/out/fuzz"
mkdir -p "$out"
if [ $# -eq 0 ]; then
    set --
    for b in "$FUZZ_BIN"/fuzz_*; do
        case "$b" in *.d) continue ;; esac
        [ -x "$b" ] && set -- "$@" "$(basename "$b" | sed 's/^fuzz_//')"
    done
fi
status=0
for name in "$@"; do
    bin="$FUZZ_BIN/fuzz_$name"
    [ -x "$bin" ] || { echo "run.sh: no fuzz target $bin (run make fuzz)" >&2; status=1; continue; }
    work="$out/$name"
    rm -rf "$work"; mkdir -p "$work/corpus"
    [ -d "$top/tests/fuzz/corpus/$name" ] && cp "$top/tests/fuzz/corpus/$name"/* "$work/corpus/" 2>/dev/null
    HAT_TEST_TMP="$work" "$bin" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
        -close_fd_mask=3 -rss_limit_mb=4096 -timeout=20 -max_len=65536 \
        -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n1)
    last=$(grep -E '^#[0-9]+' "$work/log" | tail -n1)
    cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
    corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
    crashes=$(ls "$work" | grep -cE '^(crash|leak|timeout|oom|slow-unit)-')
    [ "$rc" -ne 0 ] && status=1
    printf '{"target":"%s","seconds":%s,"executions":%s,"exec_per_s":%s,"cov":%s,"ft":%s,"corpus":%s,"crashes":%s,"exit":%s}\n' \
        "$name" "$FUZZ_SECONDS" "${execs:-0}" "${rate:-0}" "${cov:-0}" "${ft:-0}" "${corp:-0}" "$crashes" "$rc"
    [ "$rc" -ne 0 ] && grep -E 'ERROR|SUMMARY|==[0-9]+==|invariant|deadly signal' "$work/log" | head -n 5 >&2
done
exit $status

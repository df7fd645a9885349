#!/bin/sh
# bench.sh — run every tests/bench_*.sh; each prints JSON lines on stdout.
# Benchmarks are never part of make check: they measure, tests assert.
#   ONLY=hsa make bench     run only benchmarks whose name contains "hsa"
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}"
export HAT_BIN HAT_TOP="$top" HAT_DATA="$top/data" HAT_CONFORMANCE="$top/tests/fixtures/conformance"
export PATH="$HAT_BIN:$PATH" LC_ALL=C.UTF-8 OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
export HAT_BENCH_TMP="${HAT_BENCH_TMP:-$top/build/bench}"
mkdir -p "$HAT_BENCH_TMP"
status=0
for b in "$top"/tests/bench_*.sh; do
    [ -e "$b" ] || continue
    case "$b" in *"${ONLY:-}"*) ;; *) continue ;; esac
    sh "$b" || { echo "{\"bench\":\"$(basename "$b" .sh)\",\"error\":\"exit $?\"}"; status=1; }
done
exit $status

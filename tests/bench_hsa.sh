#!/bin/sh
# bench_hsa.sh — hsa-augment throughput beside jq's identity filter on the
# same file in the same run.  Prints JSON lines:
#   {"bench":"hsa-augment",...,"traj_per_s":..,"mb_per_s":..}
#   {"bench":"jq -c .",...}
#   {"bench":"hsa-augment/jq","ratio":..}   (>= 1 means at least as fast)
# N (default 20000) trajectories are made by replicating the fixture with
# varied ids.  Not part of make check.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}"
N=${N:-20000}
export HAT_DATA="${HAT_DATA:-$top/data}" LC_ALL=C.UTF-8
T=$(mktemp -d "${TMPDIR:-/tmp}/benchhsaXXXXXX")
trap 'rm -rf "$T"' EXIT
FX="$top/tests/fixtures/hsa/traj.jsonl"
fx_n=$(grep -c . "$FX")
reps=$(( (N + fx_n - 1) / fx_n ))
awk -v reps="$reps" -v n="$N" '{ line[NR] = $0 } END {
    k = 0
    for (r = 0; r < reps; r++)
        for (i = 1; i <= NR && k < n; i++) {
            s = line[i]; sub(/"id":"/, "\"id\":\"b" r "-", s); print s; k++
        }
}' "$FX" >"$T/big.jsonl"
bytes=$(wc -c <"$T/big.jsonl")

now() { date +%s.%N; }
run() {   # name, command...: seconds of the best of 2 runs
    name=$1; shift
    best=""
    for _ in 1 2; do
        t0=$(now); "$@" >"$T/out" ; t1=$(now)
        s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
        if [ -z "$best" ] || awk -v s="$s" -v b="$best" 'BEGIN { exit !(s < b) }'; then best=$s; fi
    done
    echo "$best"
}
s_hsa=$(run hsa "$HAT_BIN/hsa-augment" -k 1 --dims all --p 1 --seed 1 "$T/big.jsonl")
lines=$(wc -l <"$T/out")
[ "$lines" -eq "$N" ] || { echo "hsa-augment wrote $lines lines, wanted $N" >&2; exit 1; }
s_jq=$(run jq jq -c . "$T/big.jsonl")
report() {   # name seconds
    awk -v name="$1" -v s="$2" -v n="$N" -v b="$bytes" 'BEGIN {
        printf "{\"bench\":\"%s\",\"trajectories\":%d,\"bytes\":%d,\"seconds\":%.3f,\"traj_per_s\":%.0f,\"mb_per_s\":%.2f}\n",
               name, n, b, s, n / s, b / s / 1e6 }'
}
report hsa-augment "$s_hsa"
report "jq -c ." "$s_jq"
awk -v a="$s_hsa" -v b="$s_jq" 'BEGIN { printf "{\"bench\":\"hsa-augment/jq\",\"ratio\":%.2f,\"target\":1}\n", b / a }'

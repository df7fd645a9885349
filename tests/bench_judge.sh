#!/bin/sh
# bench_judge.sh — judge(1) verdicts per second on one core, beside jq's
# identity filter on the same trajectories.  Prints JSON lines:
#   {"bench":"judge","verdicts":N,"seconds":..,"verdicts_per_s":..,"scoring_per_s":..,"target":40000}
#   {"bench":"jq -c .",...}
# scoring_per_s leaves out the start-up (world and task index loading),
# measured by a run over no trajectories.  N (default 20000) teacher
# trajectories with 30% faults.  Not part of make check.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}"
N=${N:-20000}
export HAT_DATA="${HAT_DATA:-$top/data}" LC_ALL=C.UTF-8 OMP_NUM_THREADS=1
T=$(mktemp -d "${TMPDIR:-/tmp}/benchjudgeXXXXXX")
trap 'rm -rf "$T"' EXIT
"$HAT_BIN/world-gen" --seed 1 >"$T/world.json"
"$HAT_BIN/task-gen" --world "$T/world.json" -n "$N" --seed 1 --faults 0.3 >"$T/tasks.jsonl"
"$HAT_BIN/traj-gen" --world "$T/world.json" --harness "$top/examples/harness" --think 0.2 \
    --keep-retries 0.3 <"$T/tasks.jsonl" >"$T/traj.jsonl"
: >"$T/empty.jsonl"
bytes=$(wc -c <"$T/traj.jsonl")

now() { date +%s.%N; }
best() {   # command...: seconds of the best of 3 runs
    b=""
    for _ in 1 2 3; do
        t0=$(now); "$@" >"$T/out"; t1=$(now)
        s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
        if [ -z "$b" ] || awk -v s="$s" -v b="$b" 'BEGIN { exit !(s < b) }'; then b=$s; fi
    done
    echo "$b"
}
J="taskset -c 0 $HAT_BIN/judge --world $T/world.json --tasks $T/tasks.jsonl"
command -v taskset >/dev/null || J="$HAT_BIN/judge --world $T/world.json --tasks $T/tasks.jsonl"
s_all=$(best $J "$T/traj.jsonl")
n=$(grep -c '"pass":true' "$T/out")
s_load=$(best $J "$T/empty.jsonl")
s_jq=$(best jq -c . "$T/traj.jsonl")
awk -v s="$s_all" -v l="$s_load" -v n="$N" -v p="$n" -v b="$bytes" 'BEGIN {
    printf "{\"bench\":\"judge\",\"verdicts\":%d,\"passed\":%d,\"bytes\":%d,\"seconds\":%.3f,\"startup_s\":%.3f,\"verdicts_per_s\":%.0f,\"scoring_per_s\":%.0f,\"target\":40000}\n",
           n, p, b, s, l, n / s, n / (s - l) }'
awk -v s="$s_jq" -v n="$N" -v b="$bytes" 'BEGIN {
    printf "{\"bench\":\"jq -c .\",\"lines\":%d,\"seconds\":%.3f,\"lines_per_s\":%.0f,\"mb_per_s\":%.2f}\n", n, s, n / s, b / s / 1e6 }'

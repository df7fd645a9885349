#!/bin/sh
# valgrind.sh — memcheck over a representative pipeline (not part of make
# check: it takes a minute).  world-gen | task-gen | traj-gen | hsa-augment
# | harness-render on a few tasks, then tok-encode; every program must run
# with no memcheck error (exit 99 from valgrind otherwise) and no definite
# leak.  Prints one line per program and ends with "valgrind: N clean, N
# with errors".  Run from the source tree after make:  tests/valgrind.sh
top=$(cd "$(dirname "$0")/.." && pwd)
B="${HAT_BIN:-$top/bin}"
export HAT_DATA="$top/data" OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
VG="valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --quiet"
EX="$top/examples/harness"
clean=0 bad=0
step() {   # name, output file, command... (stdin from $IN)
    name=$1 out=$2; shift 2
    if $VG "$@" <"$IN" >"$out" 2>"$T/$name.vg"; then
        clean=$((clean + 1)); echo "clean  $name"
    else
        bad=$((bad + 1)); echo "ERRORS $name (exit $?)"; sed 's/^/    /' "$T/$name.vg" | head -n 40
    fi
}
IN=/dev/null
step world-gen "$T/w.json" "$B/world-gen" --seed 4
step task-gen "$T/tasks.jsonl" "$B/task-gen" --world "$T/w.json" -n 4 --seed 4
IN="$T/tasks.jsonl"
step traj-gen "$T/traj.jsonl" "$B/traj-gen" --world "$T/w.json" --harness "$EX"
IN="$T/traj.jsonl"
step hsa-augment "$T/hsa.jsonl" "$B/hsa-augment" --harness "$EX" -k 2 --seed 4
IN="$T/hsa.jsonl"
step harness-render "$T/render.jsonl" "$B/harness-render" --harness "$EX"
printf '{"text":"how much is the red hoodie? \\u4f60\\u597d \\ud83d\\ude00"}\n' >"$T/text.jsonl"
IN="$T/text.jsonl"
step tok-encode "$T/ids.jsonl" "$B/tok-encode" --tokenizer "$top/tests/fuzz/tokenizer.json"
echo "valgrind: $clean clean, $bad with errors"
[ "$bad" -eq 0 ]

#!/bin/sh
# bench_traj.sh — traj-gen throughput on one core: trajectories per second
# for 20,000 tasks (30% with faults) under the example harness.  JSON line.
: "${HAT_BIN:?run through tests/bench.sh}"
T="${HAT_BENCH_TMP:-/tmp}/traj"
mkdir -p "$T"
export OMP_NUM_THREADS=1
n=20000
"$HAT_BIN/world-gen" --seed 1 -o "$T/w.json" || exit 1
"$HAT_BIN/task-gen" --world "$T/w.json" -n $n --faults 0.3 -o "$T/t.jsonl" || exit 1
best=0
for rep in 1 2 3; do
    s=$(date +%s.%N)
    "$HAT_BIN/traj-gen" --world "$T/w.json" --harness "$HAT_TOP/examples/harness" --think 0.2 \
        --keep-retries 0.1 < "$T/t.jsonl" > "$T/traj.jsonl" || exit 1
    e=$(date +%s.%N)
    best=$(echo "$s $e $n $best" | awk '{r = $3 / ($2 - $1); print (r > $4 ? r : $4)}')
done
bytes=$(wc -c < "$T/traj.jsonl")
printf '{"bench":"traj-gen","tasks":%d,"threads":1,"traj_per_s":%.0f,"target_per_s":20000,"out_mb":%.1f}\n' \
    "$n" "$best" "$(echo "$bytes" | awk '{print $1/1e6}')"

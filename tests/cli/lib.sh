# lib.sh — helpers for command-line tests (sourced by tests/cli/*.sh).
# Each assertion prints "ok - NAME" or "not ok - NAME"; tests/run.sh counts.
#   T=$(mktmp)            a scratch directory for this script
#   ok NAME CMD...        CMD must exit 0
#   fails NAME RC CMD...  CMD must exit with status RC
#   same NAME FILE1 FILE2 files must be byte-identical
#   has NAME FILE PATTERN grep -E PATTERN must match in FILE
#   skip NAME WHY         a check that cannot run here (its peer is not
#                         installed): counted as skipped, not passed
#   need FILE...          inputs the script cannot do without: a missing
#                         one is a failure and ends the script
set -u
: "${HAT_TOP:?run through tests/run.sh}"
mktmp() { mktemp -d "${HAT_TEST_TMP:-/tmp}/cliXXXXXX"; }
pass() { echo "ok - $1"; }
skip() { echo "skip - $1: $2"; }
flunk() { echo "not ok - $1"; shift; [ $# -gt 0 ] && echo "    $*"; return 0; }
ok() {
    n=$1; shift
    if "$@" >"$T/.out" 2>"$T/.err"; then pass "$n"; else flunk "$n" "exit $?: $(head -c 600 "$T/.err")"; fi
}
fails() {
    n=$1; want=$2; shift 2
    "$@" >"$T/.out" 2>"$T/.err"; rc=$?
    if [ "$rc" -eq "$want" ]; then pass "$n"; else flunk "$n" "exit $rc, wanted $want: $(head -c 600 "$T/.err")"; fi
}
need() {
    for f in "$@"; do
        [ -r "$f" ] || { echo "not ok - input $f is missing"; exit 1; }
    done
}
same() { if cmp -s "$2" "$3"; then pass "$1"; else flunk "$1" "$2 and $3 differ"; fi; }
has() { if grep -Eq -- "$3" "$2"; then pass "$1"; else flunk "$1" "no /$3/ in $2: $(head -c 400 "$2")"; fi; }
hasnt() { if grep -Eq -- "$3" "$2"; then flunk "$1" "unexpected /$3/ in $2"; else pass "$1"; fi; }
# tiny_agent DIR N: a 30-product world, N tasks, their teacher trajectories,
# a 700-id chat tokenizer trained on them and a tiny random model with it
# (DIR/w.json t.jsonl traj.jsonl tok.json cfg.json m.ckpt).
tiny_agent() {
    world-gen --seed 2 --products 30 -o "$1/w.json"
    task-gen --world "$1/w.json" -n "$2" --seed 3 -o "$1/t.jsonl"
    traj-gen --world "$1/w.json" --harness "$HAT_TOP/examples/harness" --think 0.3 -o "$1/traj.jsonl" "$1/t.jsonl"
    tok-train --chat -n 700 -o "$1/tok.json" "$1/traj.jsonl"
    cat >"$1/cfg.json" <<'J'
{"vocab_size":704,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":2,
 "num_attention_heads":2,"num_key_value_heads":1,"head_dim":16,"max_position_embeddings":4096}
J
    model-init --config "$1/cfg.json" --std 0.5 --seed 4 --tokenizer "$1/tok.json" -o "$1/m.ckpt"
}

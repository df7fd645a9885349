# writeerr.sh — every program in $HAT_BIN, given a small valid input, must
# fail (non-zero) when its output cannot be written: stdout on /dev/full
# (ENOSPC, with a message naming the error), and stdout a pipe whose reader
# has gone (SIGPIPE death or exit 1 both count).  A program without a case
# here is reported as "# no write-error case" so new programs get one.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
EX="$HAT_TOP/examples/harness"
TOK="$HAT_TOP/tests/fuzz/tokenizer.json"

world-gen --seed 3 -o "$T/w.json"
task-gen --world "$T/w.json" -n 4 --seed 3 >"$T/tasks.jsonl"
traj-gen --world "$T/w.json" --harness "$EX" <"$T/tasks.jsonl" >"$T/traj.jsonl"
printf '{"text":"how much is the red one?"}\n{"text":"is size M in stock"}\n' >"$T/text.jsonl"
tok-encode --tokenizer "$TOK" "$T/text.jsonl" >"$T/ids.jsonl"
cat >"$T/cfg.json" <<'J'
{"vocab_size":400,"hidden_size":16,"intermediate_size":32,"num_hidden_layers":1,
 "num_attention_heads":2,"num_key_value_heads":1,"head_dim":8,"max_position_embeddings":64}
J
model-init --config "$T/cfg.json" -o "$T/m.ckpt"
hsa-augment --harness "$EX" --harness-only --bare -k 1 --seed 3 >"$T/variant.json"
printf '{"ids":[1,2,3]}\n' >"$T/prompts.jsonl"

# The command line writing to stdout for each program (word-split on
# purpose: no argument has spaces).
args_for() {
    case "$1" in
    world-gen)      echo "--seed 1" ;;
    task-gen)       echo "--world $T/w.json -n 50" ;;
    traj-gen)       echo "--world $T/w.json --harness $EX $T/tasks.jsonl" ;;
    hsa-augment)    echo "--harness $EX -k 2 $T/traj.jsonl" ;;
    harness-pack)   echo "$EX" ;;
    harness-render) echo "--harness $EX $T/traj.jsonl" ;;
    harness-diff)   echo "$EX $T/variant.json" ;;
    harness-lint)   echo "--json $HAT_TOP/tests/fixtures/harness/warn_only.json" ;;
    general-gen)    echo "-n 50" ;;
    copy-gen)       echo "-n 500" ;;
    tok-train)      echo "-n 300 $T/text.jsonl" ;;
    tok-encode)     echo "--tokenizer $TOK $T/text.jsonl" ;;
    tok-decode)     echo "--tokenizer $TOK $T/ids.jsonl" ;;
    ckpt)           echo "info $T/m.ckpt" ;;
    generate)       echo "--ckpt $T/m.ckpt --max-tokens 4 $T/prompts.jsonl" ;;
    *)              return 1 ;;
    esac
}

for p in "$HAT_BIN"/*; do
    prog=$(basename "$p")
    case "$prog" in model-init|sft-step|harness-unpack)
        continue ;;   # write files, not stdout: see crash.sh
    esac
    if ! a=$(args_for "$prog"); then echo "# no write-error case for $prog"; continue; fi
    # harness-diff exits as diff(1) does: 1 = they differ, 2 = trouble
    want_ok=0 want_err=1
    [ "$prog" = harness-diff ] && want_ok=1 want_err=2
    # shellcheck disable=SC2086
    "$p" $a >/dev/null 2>"$T/$prog.err0"
    rc=$?
    if [ "$rc" -ne "$want_ok" ]; then
        flunk "$prog runs on its case" "exit $rc: $(head -c 300 "$T/$prog.err0")"; continue
    fi
    # shellcheck disable=SC2086
    fails "$prog: stdout on /dev/full fails" "$want_err" sh -c "exec \"\$0\" \"\$@\" >/dev/full" "$p" $a
    has "$prog: /dev/full message" "$T/.err" "No space left on device"
    # the reader is gone before the program writes: EPIPE or SIGPIPE
    # shellcheck disable=SC2086
    { (sleep 0.2; exec "$p" $a 2>/dev/null); echo $? >"$T/rc"; } | true
    rc=$(cat "$T/rc")
    if [ "$rc" -ne 0 ] && [ "$rc" -ne "$want_ok" ]; then pass "$prog: closed pipe fails ($rc)"
    else flunk "$prog: closed pipe fails" "exit 0"; fi
done

# -o naming a device or a FIFO writes it in place: the temporary file and
# rename that make a regular file's output atomic would replace the node
# (as root, -o /dev/null once left a regular file where /dev/null was).
# A FIFO stands in for the device, so the test harms nothing if it fails.
mkfifo "$T/fifo"
world-gen --seed 1 >"$T/w1.json"
cat "$T/fifo" >"$T/got" & reader=$!
ok "-o a FIFO (JSON output)" world-gen --seed 1 -o "$T/fifo"
wait "$reader"
[ -p "$T/fifo" ] && pass "the FIFO is still a FIFO" || flunk "the FIFO is still a FIFO" "$(ls -l "$T/fifo")"
same "what came through it is the output" "$T/w1.json" "$T/got"
cat "$T/fifo" >"$T/got.ckpt" & reader=$!
ok "-o a FIFO (a checkpoint)" model-init --config "$T/cfg.json" -o "$T/fifo"
wait "$reader"
[ -p "$T/fifo" ] && pass "still a FIFO after a checkpoint" || flunk "still a FIFO after a checkpoint"
model-init --config "$T/cfg.json" -o "$T/m2.ckpt"
same "the checkpoint came through whole" "$T/m2.ckpt" "$T/got.ckpt"
ls -a "$T" | grep -q 'fifo.*tmp' && flunk "no temporary file left beside it" "$(ls -a "$T")" || pass "no temporary file left beside it"

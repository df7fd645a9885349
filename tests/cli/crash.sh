# crash.sh — crash safety of outputs.  sft-step is killed with SIGKILL at
# random moments while it writes a checkpoint every step: the output path
# must then hold nothing or a whole checkpoint that loads, and resuming
# from it must give exactly the bytes of an uninterrupted run.  A full
# disk (simulated with ulimit -f: writes fail with EFBIG) and an output
# directory that cannot be written must give a clear error, exit 1, and
# leave the earlier output as it was.  The kill delays are printed so a
# failure can be replayed (CRASH_DELAYS="0.4 1.1" overrides them).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)

cat >"$T/cfg.json" <<'J'
{"vocab_size":512,"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
 "num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,"max_position_embeddings":64}
J
awk 'BEGIN{for(s=0;s<16;s++){printf "{\"ids\":[";for(t=0;t<17;t++)printf "%s%d",t?",":"",(s*7+t*13)%512;print "]}"}}' >"$T/d.jsonl"
model-init --config "$T/cfg.json" --seed 5 -o "$T/a.ckpt"
N=12
S="--data $T/d.jsonl --batch 4 --seq 16 --lr 1e-3 --total-steps $N"
# shellcheck disable=SC2086
ok "reference run" sft-step --init "$T/a.ckpt" $S --steps $N -o "$T/ref.ckpt"

step_of() { ckpt info "$1" | sed -n 's/.*"step":\([0-9]*\).*/\1/p'; }

delays=${CRASH_DELAYS:-$(awk -v s="$$" 'BEGIN{srand(s); for(i=0;i<3;i++) printf "%.2f ", 0.15+rand()*0.9}')}
echo "# kill delays: $delays"
i=0
for d in $delays; do
    i=$((i+1))
    out="$T/k$i.ckpt"
    # shellcheck disable=SC2086
    sft-step --init "$T/a.ckpt" $S --steps $N --save-every 1 -o "$out" 2>/dev/null &
    pid=$!
    sleep "$d"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ ! -e "$out" ]; then pass "kill $i after ${d}s: nothing written yet"; continue; fi
    ok "kill $i after ${d}s: the checkpoint left loads" ckpt info "$out"
    s=$(step_of "$out")
    if [ -z "$s" ]; then flunk "kill $i: step of the checkpoint left"; continue; fi
    if [ "$s" -ge "$N" ]; then pass "kill $i: run had finished"; same "kill $i: finished run exact" "$T/ref.ckpt" "$out"; continue; fi
    ok "kill $i: resume from step $s" sft-step --init "$out" --data "$T/d.jsonl" --resume --steps $((N - s)) -o "$T/r$i.ckpt"
    same "kill $i: resumed from step $s == uninterrupted (bytes)" "$T/ref.ckpt" "$T/r$i.ckpt"
done

# --- a full disk while writing the checkpoint: clear error, old file kept
cp "$T/ref.ckpt" "$T/keep.ckpt"
# shellcheck disable=SC2086
fails "full disk: sft-step fails" 1 sh -c "trap '' XFSZ; ulimit -f 500; exec sft-step --init '$T/a.ckpt' $S --steps 2 -o '$T/keep.ckpt'"
has "full disk: message" "$T/.err" "keep.ckpt: (cannot write checkpoint|fsync|close).*(File too large|No space)"
same "full disk: earlier checkpoint intact" "$T/ref.ckpt" "$T/keep.ckpt"
if ls "$T"/keep.ckpt.tmp* >/dev/null 2>&1; then flunk "full disk: temporary file removed"; else pass "full disk: temporary file removed"; fi
world-gen --seed 2 -o "$T/w.json"
cp "$T/w.json" "$T/w0.json"
fails "full disk: JSONL output fails" 1 sh -c "trap '' XFSZ; ulimit -f 20; exec world-gen --seed 3 -o '$T/w.json'"
has "full disk: JSONL message" "$T/.err" "w.json: write error: File too large"
same "full disk: earlier JSONL output intact" "$T/w0.json" "$T/w.json"

# --- output directories that cannot be written (we may be root, for whom
# permissions do not apply: use /proc and a missing directory)
fails "unwritable dir: sft-step" 1 sft-step --init "$T/a.ckpt" $S --steps 1 -o /proc/hat-test.ckpt
has "unwritable dir: sft-step message" "$T/.err" "/proc/hat-test.ckpt: cannot create"
fails "missing dir: model-init" 1 model-init --config "$T/cfg.json" -o "$T/no/such/dir/m.ckpt"
has "missing dir: model-init message" "$T/.err" "m.ckpt: cannot create.*No such file or directory"
fails "unwritable dir: world-gen" 1 world-gen -o /proc/hat-test.json
has "unwritable dir: world-gen message" "$T/.err" "/proc/hat-test.json: cannot create"

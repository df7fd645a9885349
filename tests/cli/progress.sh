# progress.sh — the progress line (common/progress.h): drawn on a terminal
# (a pty from script(1)), never when stderr is a file or a pipe, never in
# the first second unless HAT_PROGRESS=now, never with HAT_PROGRESS=0;
# diagnostics erase it first; stdout is the same either way.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H=$HAT_TOP/examples/harness
tiny_agent "$T" 40
tok-encode --chat -t "$T/tok.json" -o "$T/seqs.jsonl" "$T/traj.jsonl"
# on_tty NAME CMD: CMD (a shell string) with stderr on a pty; what the pty
# showed into $T/NAME.tty.  CMD sends its own stdout to a file.
on_tty() { script -qec "$2" "$T/$1.tty" >/dev/null 2>&1; }
esc=$(printf '\033[K')

# Not a terminal: nothing, even with HAT_PROGRESS=now.
export HAT_PROGRESS=now
for p in "tok-encode --chat -t $T/tok.json $T/traj.jsonl" "hsa-augment -k 2 $T/traj.jsonl" \
         "judge --world $T/w.json --tasks $T/t.jsonl $T/traj.jsonl" "evalset --world $T/w.json --harness $H -n 12" \
         "traj-gen --world $T/w.json --harness $H $T/t.jsonl" "tok-train -n 300 --chat $T/traj.jsonl"; do
    n=${p%% *}
    $p >"$T/$n.file.out" 2>"$T/$n.file.err"
    [ ! -s "$T/$n.file.err" ] && pass "$n: stderr a file: no progress" || flunk "$n: stderr a file: no progress" "$(head -c 300 "$T/$n.file.err")"
done
tok-encode --chat -t "$T/tok.json" "$T/traj.jsonl" 2>&1 >/dev/null | cat >"$T/pipe.err"
[ ! -s "$T/pipe.err" ] && pass "stderr a pipe: no progress" || flunk "stderr a pipe: no progress"

# A terminal: the reader's line (file, lines, bytes of the total, percent)
# and its last line with the totals; stdout unchanged.
ok "tok-encode on a terminal" on_tty enc "tok-encode --chat -t $T/tok.json -o $T/enc.tty.out $T/traj.jsonl"
has "tok-encode: lines, MB of the file, percent" "$T/enc.tty" "tok-encode: $T/traj.jsonl: [0-9]+ lines, [0-9.]+ of [0-9.]+ MB \([0-9]+%\)"
has "tok-encode: the last line has the totals" "$T/enc.tty" "tok-encode: $T/traj.jsonl: 40 lines, [0-9.]+ of [0-9.]+ MB \(100%\) in [0-9]+s"
grep -qF "$(printf '\r')tok-encode: $T/traj.jsonl: " "$T/enc.tty" && grep -qF "$esc" "$T/enc.tty" \
    && pass "the line is redrawn in place (carriage return, erase to the end)" || flunk "the line is redrawn in place (carriage return, erase to the end)"
same "tok-encode: the same output on a terminal" "$T/enc.tty.out" "$T/tok-encode.file.out"
ok "hsa-augment on a terminal" on_tty hsa "hsa-augment -k 2 -o $T/hsa.tty.out $T/traj.jsonl"
has "hsa-augment: its input's progress" "$T/hsa.tty" "hsa-augment: $T/traj.jsonl: 40 lines, .*\(100%\) in"
same "hsa-augment: the same output on a terminal" "$T/hsa.tty.out" "$T/hsa-augment.file.out"
ok "evalset on a terminal" on_tty ev "evalset --world $T/w.json --harness $H -n 12 -o $T/ev.tty.out"
has "evalset: cases of the total, with the set" "$T/ev.tty" "evalset: [0-9]+/[0-9]+ cases \([0-9]+%\).*(live|variant|robust|ifeval)"
ok "sft-step on a terminal" on_tty sft "sft-step --init $T/m.ckpt --data $T/seqs.jsonl --seq 4096 --batch 2 --steps 3 -o $T/s.ckpt"
has "sft-step: the data load" "$T/sft.tty" "sft-step: $T/seqs.jsonl: 40 lines"
has "sft-step: steps of the total, both token rates" "$T/sft.tty" "sft-step: 3/3 steps \(100%\) in [0-9]+s, loss [0-9.]+ .*tok/s processed, [0-9]+ trained"
ok "rollout on a terminal" on_tty ro "head -n 3 $T/t.jsonl | rollout --ckpt $T/m.ckpt --world $T/w.json --harness $H --max-tokens 8 --max-turns 2 -o $T/ro.out"
has "rollout: conversations done" "$T/ro.tty" "rollout: 3 conversations in [0-9]+s, 3 read"

# A diagnostic erases the line first: it starts at the left margin.
{ head -n 2 "$T/traj.jsonl"; echo '{bad'; tail -n +3 "$T/traj.jsonl"; } >"$T/bad.jsonl"
ok "tok-encode --skip-bad on a terminal" on_tty bad "tok-encode --chat --skip-bad -t $T/tok.json -o $T/bad.out $T/bad.jsonl"
grep -qF "$(printf '\r\033[K')tok-encode: $T/bad.jsonl:3: invalid JSON" "$T/bad.tty" \
    && pass "the diagnostic starts on an erased line" || flunk "the diagnostic starts on an erased line" "$(od -c "$T/bad.tty" | head -n 20)"

# The first second is silent (short work draws nothing); HAT_PROGRESS=0 never draws.
unset HAT_PROGRESS
head -n 2 "$T/traj.jsonl" >"$T/two.jsonl"
ok "short work on a terminal" on_tty short "tok-encode --chat -t $T/tok.json -o $T/short.out $T/two.jsonl"
hasnt "short work: no progress line" "$T/short.tty" "lines, "
export HAT_PROGRESS=0
ok "HAT_PROGRESS=0 on a terminal" on_tty off "sft-step --init $T/m.ckpt --data $T/seqs.jsonl --seq 4096 --batch 2 --steps 2 -o $T/s0.ckpt"
hasnt "HAT_PROGRESS=0: no progress line" "$T/off.tty" "steps \("

# loadgen: requests answered of the total, against a serve on any free port.
unset HAT_PROGRESS
serve --policy teacher --world "$T/w.json" --harness "$H" --port 0 --port-file "$T/port" 2>"$T/serve.log" &
spid=$!
i=0; while [ ! -s "$T/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
ok "loadgen on a terminal" on_tty lg "HAT_PROGRESS=now loadgen --url http://127.0.0.1:$(cat "$T/port") --concurrency 2 -n 6 --quiet -o $T/lg.out $T/t.jsonl"
has "loadgen: requests of the total" "$T/lg.tty" "loadgen: 6/6 requests \(100%\) in [0-9]+s"
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null

# opd.sh — opd-step end to end with tiny checkpoints: options and bad
# input, the shared-tokenizer check, metrics, determinism, exact resume,
# both KL forms, and a short run that pulls a student towards its teacher
# on held-out prompts (the measured KL falls).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
export OMP_NUM_THREADS=1

general-gen --split opd -n 40 --seed 1 -o "$T/p.jsonl" 2>/dev/null
general-gen --split eval -n 16 --seed 2 -o "$T/e.jsonl" 2>/dev/null
tok-train --chat -n 600 -o "$T/tok.json" "$T/p.jsonl"
tok-train --chat -n 500 -o "$T/tok2.json" "$T/p.jsonl"
cat >"$T/cfg.json" <<'J'
{"vocab_size":600,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":2,
 "num_attention_heads":2,"num_key_value_heads":1,"head_dim":16,"max_position_embeddings":1024}
J
model-init --config "$T/cfg.json" --std 0.3 --seed 4 --tokenizer "$T/tok.json" -o "$T/teacher.ckpt"
model-init --config "$T/cfg.json" --std 0.3 --seed 5 --tokenizer "$T/tok.json" -o "$T/student.ckpt"
model-init --config "$T/cfg.json" --std 0.3 --seed 5 --tokenizer "$T/tok2.json" -o "$T/other.ckpt"
model-init --config "$T/cfg.json" --std 0.3 --seed 5 -o "$T/notok.ckpt"
S="--init $T/student.ckpt --teacher $T/teacher.ckpt --prompts-per-step 4 --samples 4 --max-tokens 24"

ok "opd-step --help" opd-step --help
has "usage" "$T/.out" '^usage: opd-step --init'
fails "unknown option" 2 opd-step --bogus
fails "missing --teacher" 2 opd-step --init "$T/student.ckpt" --steps 1 -o "$T/x.ckpt" "$T/p.jsonl"
fails "bad --kl" 2 opd-step $S --steps 1 --kl reverse -o "$T/x.ckpt" "$T/p.jsonl"
fails "other tokenizer refused" 1 opd-step --init "$T/student.ckpt" --teacher "$T/other.ckpt" --steps 1 -o "$T/x.ckpt" "$T/p.jsonl"
has "tokenizer message" "$T/.err" "^opd-step: .*other.ckpt: the teacher's tokenizer.json differs from the student's; teacher and student must share the tokenizer"
fails "teacher without tokenizer refused" 1 opd-step --init "$T/student.ckpt" --teacher "$T/notok.ckpt" --steps 1 -o "$T/x.ckpt" "$T/p.jsonl"
has "no tokenizer message" "$T/.err" 'the teacher has no tokenizer.json'
{ head -n 2 "$T/p.jsonl"; echo '{"id":"x"}'; } >"$T/bad.jsonl"
fails "prompt without messages" 1 opd-step $S --steps 1 -o "$T/x.ckpt" "$T/bad.jsonl"
has "bad prompt message" "$T/.err" 'bad.jsonl:3: need "messages"'
[ ! -e "$T/x.ckpt" ] && pass "no checkpoint on failure" || flunk "no checkpoint on failure"

ok "two steps" opd-step $S --steps 2 --lr 1e-3 --metrics "$T/m.jsonl" -o "$T/a.ckpt" "$T/p.jsonl"
has "metrics" "$T/m.jsonl" '^\{"step":2,"kl":[0-9.e-]+,"kl_sampled":0\.0,"kl_forward":0\.0,"completion_len":[0-9.e-]+,"samples":16,.*"tokens_per_s":.*"ifeval_pass":'
ok "same seed again" opd-step $S --steps 2 --lr 1e-3 -o "$T/b.ckpt" "$T/p.jsonl"
same "same seed, same checkpoint" "$T/a.ckpt" "$T/b.ckpt"
ok "one step" opd-step $S --steps 1 --lr 1e-3 --total-steps 2 -o "$T/r1.ckpt" "$T/p.jsonl"
ok "--resume one more" opd-step --init "$T/r1.ckpt" --teacher "$T/teacher.ckpt" --resume --steps 1 -o "$T/r2.ckpt" "$T/p.jsonl"
same "1 + resume 1 = 2 steps" "$T/a.ckpt" "$T/r2.ckpt"
ok "--kl sampled" opd-step $S --steps 1 --kl sampled --metrics "$T/s.jsonl" -o "$T/s.ckpt" "$T/p.jsonl"
has "sampled estimate" "$T/s.jsonl" '"kl":0\.0,"kl_sampled":-?[0-9]'
ok "--kl forward, one step" opd-step $S --steps 1 --lr 1e-3 --total-steps 2 --kl forward --metrics "$T/f.jsonl" -o "$T/f1.ckpt" "$T/p.jsonl"
has "forward KL metric" "$T/f.jsonl" '"kl":0\.0,"kl_sampled":0\.0,"kl_forward":[0-9]'
ok "--kl forward, two steps" opd-step $S --steps 2 --lr 1e-3 --kl forward -o "$T/f.ckpt" "$T/p.jsonl"
ok "--kl forward, --resume" opd-step --init "$T/f1.ckpt" --teacher "$T/teacher.ckpt" --resume --steps 1 -o "$T/f2.ckpt" "$T/p.jsonl"
same "forward: 1 + resume 1 = 2 steps" "$T/f.ckpt" "$T/f2.ckpt"
fails "--teacher-samples over --samples" 2 opd-step $S --steps 1 --teacher-samples 5 -o "$T/x.ckpt" "$T/p.jsonl"
ok "--teacher-samples 2, one step" opd-step $S --steps 1 --lr 1e-3 --total-steps 2 --kl forward --teacher-samples 2 -o "$T/t1.ckpt" "$T/p.jsonl"
ok "--teacher-samples 2, two steps" opd-step $S --steps 2 --lr 1e-3 --kl forward --teacher-samples 2 --metrics "$T/t.jsonl" -o "$T/t.ckpt" "$T/p.jsonl"
ok "--teacher-samples, --resume" opd-step --init "$T/t1.ckpt" --teacher "$T/teacher.ckpt" --resume --steps 1 -o "$T/t2.ckpt" "$T/p.jsonl"
same "teacher samples: 1 + resume 1 = 2 steps" "$T/t.ckpt" "$T/t2.ckpt"
[ "$(jq -s '.[0].kl_forward' "$T/t.jsonl")" != "$(jq -s '.[0].kl_forward' "$T/f.jsonl")" ] && pass "teacher samples change the loss" ||
    flunk "teacher samples change the loss"
# All K completions the teacher's: ifeval_pass scores the student's only, so it is null
# (and a teacher distilled on itself has nothing to learn).
ok "teacher on its own samples" opd-step --init "$T/teacher.ckpt" --teacher "$T/teacher.ckpt" --prompts-per-step 4 --samples 4 \
    --max-tokens 24 --steps 1 --kl forward --teacher-samples 4 --metrics "$T/self.jsonl" -o "$T/self.ckpt" "$T/p.jsonl"
has "no KL to itself, no student samples to score" "$T/self.jsonl" '"kl_forward":0\.0,.*"ifeval_pass":null'

# Pull back: KL(student || teacher) on held-out prompts, measured with
# --lr 0 (no change), before and after 12 steps on the OPD prompts.
kl_on() { opd-step --init "$1" --teacher "$T/teacher.ckpt" --prompts-per-step 16 --samples 2 --max-tokens 24 \
              --lr 0 --steps 1 --seed 7 --metrics "$T/kl_$2.jsonl" -o "$T/kl_$2.ckpt" "$T/e.jsonl" && jq .kl "$T/kl_$2.jsonl"; }
ok "distil" opd-step $S --steps 12 --lr 3e-3 --metrics "$T/d.jsonl" -o "$T/d.ckpt" "$T/p.jsonl"
before=$(kl_on "$T/student.ckpt" before); after=$(kl_on "$T/d.ckpt" after)
echo "# held-out KL before $before after $after"
if awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < a * 0.9) }'; then pass "OPD pulls the student towards the teacher"
else flunk "OPD pulls the student towards the teacher" "before $before after $after"; fi
ok "distil, forward KL" opd-step $S --steps 12 --lr 3e-3 --kl forward -o "$T/df.ckpt" "$T/p.jsonl"
after=$(kl_on "$T/df.ckpt" afterf)
echo "# held-out KL after forward-KL steps $after"
if awk -v a="$before" -v b="$after" 'BEGIN { exit !(b < a * 0.9) }'; then pass "forward OPD pulls the student towards the teacher"
else flunk "forward OPD pulls the student towards the teacher" "before $before after $after"; fi
# Replay: each step also trains on domain sequences (here general-gen's
# base split, answers included) by their cross-entropy.
general-gen --split base -n 24 --seed 3 -o "$T/dom.jsonl" 2>/dev/null
R="--replay $T/dom.jsonl --replay-batch 4 --replay-seq 256"
ok "--replay, weight 0" opd-step $S --steps 2 --lr 1e-3 $R --replay-weight 0 --metrics "$T/w0.jsonl" -o "$T/w0.ckpt" "$T/p.jsonl"
has "replay_loss metric" "$T/w0.jsonl" '"replay_loss":[0-9]'
has "no replay, replay_loss null" "$T/m.jsonl" '"replay_loss":null'
[ "$(jq -s '.[1].kl' "$T/w0.jsonl")" = "$(jq -s '.[1].kl' "$T/m.jsonl")" ] && pass "weight 0 steps as no replay" ||
    flunk "weight 0 steps as no replay" "$(jq -s '.[1].kl' "$T/w0.jsonl") vs $(jq -s '.[1].kl' "$T/m.jsonl")"
ok "replay one step" opd-step $S --steps 1 --lr 1e-3 --total-steps 2 $R -o "$T/q1.ckpt" "$T/p.jsonl"
fails "resume without --replay refused" 1 opd-step --init "$T/q1.ckpt" --teacher "$T/teacher.ckpt" --resume --steps 1 -o "$T/q2.ckpt" "$T/p.jsonl"
has "resume message" "$T/.err" 'q1.ckpt: this run replays domain data: give --replay FILE again'
ok "replay resume" opd-step --init "$T/q1.ckpt" --teacher "$T/teacher.ckpt" --resume --steps 1 --replay "$T/dom.jsonl" -o "$T/q2.ckpt" "$T/p.jsonl"
ok "replay two steps" opd-step $S --steps 2 --lr 1e-3 $R -o "$T/q.ckpt" "$T/p.jsonl"
same "replay: 1 + resume 1 = 2 steps" "$T/q.ckpt" "$T/q2.ckpt"
{ head -n 2 "$T/dom.jsonl"; echo '{"messages": 7}'; } >"$T/baddom.jsonl"
fails "bad replay data" 1 opd-step $S --steps 1 --replay "$T/baddom.jsonl" -o "$T/x.ckpt" "$T/p.jsonl"
has "bad replay message" "$T/.err" 'baddom.jsonl:3'
fails "--replay-seq over the context" 1 opd-step $S --steps 1 --replay "$T/dom.jsonl" --replay-seq 4096 -o "$T/x.ckpt" "$T/p.jsonl"
# The domain's loss after 12 distillation steps, with and without replay,
# measured as the first replay batch's cross-entropy under --lr 0.
ce_on() { opd-step --init "$1" --teacher "$T/teacher.ckpt" --prompts-per-step 1 --samples 1 --max-tokens 4 --lr 0 \
              --steps 1 $R --replay-batch 16 --metrics "$T/ce_$2.jsonl" -o "$T/ce_$2.ckpt" "$T/e.jsonl" && jq .replay_loss "$T/ce_$2.jsonl"; }
ok "distil with replay" opd-step $S --steps 12 --lr 3e-3 $R --replay-weight 1 -o "$T/dr.ckpt" "$T/p.jsonl"
plain=$(ce_on "$T/d.ckpt" plain); kept=$(ce_on "$T/dr.ckpt" kept)
echo "# domain cross-entropy after 12 steps: without replay $plain, with $kept"
if awk -v a="$plain" -v b="$kept" 'BEGIN { exit !(b < a * 0.9) }'; then pass "replay keeps the domain's loss lower"
else flunk "replay keeps the domain's loss lower" "without $plain with $kept"; fi
ok "man page" sh -c "MANWIDTH=80 man -l '$HAT_TOP/man/man1/opd-step.1' >/dev/null"

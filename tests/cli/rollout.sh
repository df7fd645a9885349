# rollout.sh — rollout end to end with a tiny random checkpoint: one
# trajectory per task in input order, determinism for a seed and across
# --batch, tokens and log-probs on request, the judge's verdict, cases,
# and bad input with its message and exit status.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/examples/harness"
# Tiny dimensions: one thread is faster than two (and the output is the
# same for any thread count).
export OMP_NUM_THREADS=1

tiny_agent "$T" 5
model-init --config "$T/cfg.json" --seed 4 -o "$T/notok.ckpt"
# Most runs use a cut-down harness: the engine re-reads the whole context
# every turn, and the example harness's system prompt is ~2,000 tokens here.
harness-pack -o "$T/h.json" "$H"
jq -c '.tools |= .[0:2] | .skills |= .[0:3] | .system_prompt.blocks |= .[0:2]' "$T/h.json" >"$T/hs.json"
R="--world $T/w.json --harness $T/hs.json --temperature 1 --max-tokens 12 --max-turns 3"

ok "rollout --help" rollout --help
has "usage" "$T/.out" '^usage: rollout --ckpt'
fails "unknown option" 2 rollout --bogus
fails "no --ckpt" 2 rollout --world "$T/w.json"
fails "no --world" 2 rollout --ckpt "$T/m.ckpt"
fails "--max-tokens 0" 2 rollout --ckpt "$T/m.ckpt" --world "$T/w.json" --max-tokens 0

ok "rollout runs" rollout --ckpt "$T/m.ckpt" $R --batch 4 -o "$T/a.jsonl" "$T/t.jsonl"
n=$(wc -l <"$T/a.jsonl")
[ "$n" = 5 ] && pass "one trajectory per task" || flunk "one trajectory per task" "$n"
jq -r .id "$T/t.jsonl" | sed 's/$/.r/' >"$T/want_ids"
jq -r .id "$T/a.jsonl" >"$T/got_ids"
same "ids in input order" "$T/want_ids" "$T/got_ids"
has "meta" "$T/a.jsonl" '"meta":\{"hsa":\[\],"seed":1,"stream":0,"model":"m.ckpt","intent":"[a-z_]+","turns":[1-3],"finish":"(accepted|max_turns|budget|context)"'
bad=$(jq -c 'select(.messages[0].role != "user" or (.messages|length) < 3)' "$T/a.jsonl" | wc -l)
[ "$bad" = 0 ] && pass "viewer message, then turns" || flunk "viewer message, then turns" "$bad"
bad=$(jq -c 'select(.meta.turns != ([.messages[]|select(.role=="assistant")]|length))' "$T/a.jsonl" | wc -l)
[ "$bad" = 0 ] && pass "meta.turns counts assistant messages" || flunk "meta.turns counts assistant messages" "$bad"

rollout --ckpt "$T/m.ckpt" $R --batch 4 <"$T/t.jsonl" >"$T/b.jsonl"
same "same seed, same bytes" "$T/a.jsonl" "$T/b.jsonl"
rollout --ckpt "$T/m.ckpt" $R --batch 1 "$T/t.jsonl" >"$T/c.jsonl"
same "--batch 1 and --batch 4 give the same trajectories" "$T/a.jsonl" "$T/c.jsonl"
# the system prompt's KV computed once and shared, or copied into each
# conversation: the same ids and log-prob bits (two harnesses, interleaved)
jq -c '.system_prompt.blocks[0].params.host.value = "Lea"' "$T/hs.json" >"$T/hs2.json"
jq -c --slurpfile a "$T/hs.json" --slurpfile b "$T/hs2.json" '. + {harness: (if (input_line_number % 2) == 0 then $a[0] else $b[0] end)}' "$T/t.jsonl" >"$T/th.jsonl"
rollout --ckpt "$T/m.ckpt" $R --batch 3 --logprobs "$T/th.jsonl" >"$T/sh.jsonl"
rollout --ckpt "$T/m.ckpt" $R --batch 3 --logprobs --no-shared-prefix "$T/th.jsonl" >"$T/cp.jsonl"
same "--no-shared-prefix: the same trajectories, tokens and log-probs" "$T/sh.jsonl" "$T/cp.jsonl"
rollout --ckpt "$T/m.ckpt" $R --batch 1 --logprobs --no-shared-prefix "$T/th.jsonl" >"$T/cp1.jsonl"
same "shared at --batch 3 = copied at --batch 1" "$T/sh.jsonl" "$T/cp1.jsonl"
n=$(jq -r '.harness.system_prompt.blocks[0].params.host.value' "$T/sh.jsonl" | sort -u | wc -l)
[ "$n" = 2 ] && pass "two system prompts in flight" || flunk "two system prompts in flight" "$n"
rollout --ckpt "$T/m.ckpt" $R --seed 2 "$T/t.jsonl" >"$T/d.jsonl"
if cmp -s "$T/a.jsonl" "$T/d.jsonl"; then flunk "another seed, other trajectories"; else pass "another seed, other trajectories"; fi
ok "the example harness, greedy" rollout --ckpt "$T/m.ckpt" --world "$T/w.json" --harness "$H" --max-tokens 8 --max-turns 2 --logprobs -o "$T/g.jsonl" "$T/t.jsonl"
# the first prompt decodes to the rendered harness + viewer message
jq -c '{ids: (.tokens.ids[0:(.tokens.mask|index(1))])}' "$T/g.jsonl" | head -n 1 |
    tok-decode --tokenizer "$T/tok.json" | jq -j .text >"$T/p0.txt"
head -n 1 "$T/g.jsonl" | jq -c '{messages: .messages[0:1], harness}' |
    harness-render --raw --generation-prompt >"$T/r0.txt"
same "first prompt = harness-render --generation-prompt" "$T/p0.txt" "$T/r0.txt"
rollout --ckpt "$T/m.ckpt" $R --max-context 64 "$T/t.jsonl" >"$T/ctx.jsonl"
bad=$(jq -c 'select(.meta.finish != "context" or .meta.turns != 0 or (.messages|length) != 1)' "$T/ctx.jsonl" | wc -l)
[ "$bad" = 0 ] && pass "--max-context: the prompt alone is too long" || flunk "--max-context" "$bad"
rollout --ckpt "$T/m.ckpt" $R --max-gen-tokens 12 "$T/t.jsonl" >"$T/bud.jsonl"
bad=$(jq -c 'select(.meta.gen_tokens > 12 or (.meta.finish == "budget" and .meta.gen_tokens != 12))' "$T/bud.jsonl" | wc -l)
nb=$(grep -c '"finish":"budget"' "$T/bud.jsonl")
[ "$bad" = 0 ] && [ "$nb" -gt 0 ] && pass "--max-gen-tokens ends the conversation" || flunk "--max-gen-tokens" "$bad $nb"

# tokens: mask sums to meta.gen_tokens, log-probs <= 0 exactly where mask is 1
ok "--logprobs" rollout --ckpt "$T/m.ckpt" $R --logprobs -o "$T/l.jsonl" "$T/t.jsonl"
bad=$(jq -c 'select((.tokens.mask|add) != .meta.gen_tokens
                    or (.tokens.ids|length) != (.tokens.mask|length)
                    or (.tokens.ids|length) != (.tokens.logprobs|length)
                    or ([.tokens.mask, .tokens.logprobs] | transpose
                        | map(select((.[0] == 1 and .[1] > 0) or (.[0] == 0 and .[1] != 0))) | length) > 0)' "$T/l.jsonl" | wc -l)
[ "$bad" = 0 ] && pass "mask and log-probs agree" || flunk "mask and log-probs agree" "$bad"
jq -c . "$T/a.jsonl" >"$T/a2.jsonl"    # jq's own number and escape style on both sides
jq -c 'del(.tokens)' "$T/l.jsonl" >"$T/l2.jsonl"
same "--logprobs only adds tokens" "$T/a2.jsonl" "$T/l2.jsonl"

# judge
ok "--judge" rollout --ckpt "$T/m.ckpt" $R --judge -o "$T/j.jsonl" "$T/t.jsonl"
has "verdict" "$T/j.jsonl" '"verdict":\{"scores":\{"accuracy":[0-9.]+,"effectiveness":[0-9.]+,"tool_rationality":[0-9.]+,"skill_selection":[0-9.]+,"cot_penalty":[0-9.]+\},"total":-?[0-9.]+,"pass":(true|false),"reasons":\['
jq -c 'del(.verdict)' "$T/j.jsonl" >"$T/j2.jsonl"
same "--judge only adds the verdict" "$T/a2.jsonl" "$T/j2.jsonl"

# inline harness, cases
jq -c --slurpfile h "$T/hs.json" '. + {harness: $h[0]}' "$T/t.jsonl" >"$T/ti.jsonl"
ok "inline harness" rollout --ckpt "$T/m.ckpt" --world "$T/w.json" --temperature 1 --max-tokens 12 --max-turns 3 -o "$T/i.jsonl" "$T/ti.jsonl"
jq -c .messages "$T/a.jsonl" >"$T/m1"; jq -c .messages "$T/i.jsonl" >"$T/m2"
same "inline harness gives the same conversations" "$T/m1" "$T/m2"
jq -c '{id: ("case-" + .id), set: "live", task: .}' "$T/t.jsonl" >"$T/cases.jsonl"
ok "--tasks-are-cases" rollout --ckpt "$T/m.ckpt" $R --tasks-are-cases -o "$T/k.jsonl" "$T/cases.jsonl"
has "case id and keys" "$T/k.jsonl" '^\{"id":"case-[^"]+\.r",.*"case":\{"id":"case-[^"]+","set":"live"\}'
fails "a case needs a task" 1 rollout --ckpt "$T/m.ckpt" $R --tasks-are-cases "$T/t.jsonl"
has "case message" "$T/.err" 't.jsonl:1: a case needs a "task" object'

# bad input
fails "missing checkpoint" 1 rollout --ckpt "$T/nope.ckpt" --world "$T/w.json" "$T/t.jsonl"
has "missing checkpoint message" "$T/.err" 'nope.ckpt'
fails "checkpoint without tokenizer" 1 rollout --ckpt "$T/notok.ckpt" $R "$T/t.jsonl"
has "no tokenizer message" "$T/.err" '^rollout: .*notok.ckpt: the checkpoint has no tokenizer.json \(give --tokenizer FILE'
ok "--tokenizer" rollout --ckpt "$T/notok.ckpt" --tokenizer "$T/tok.json" $R -o "$T/nt.jsonl" "$T/t.jsonl"
echo '{"vocab_size":100,"hidden_size":16,"intermediate_size":16,"num_hidden_layers":1,"num_attention_heads":1,"num_key_value_heads":1,"head_dim":16,"max_position_embeddings":64}' >"$T/small.json"
model-init --config "$T/small.json" -o "$T/small.ckpt"
fails "tokenizer larger than the model" 1 rollout --ckpt "$T/small.ckpt" --tokenizer "$T/tok.json" $R "$T/t.jsonl"
has "vocab message" "$T/.err" 'the tokenizer has [0-9]+ ids but the model only 100'
{ head -n 1 "$T/t.jsonl"; echo '{"id": broken'; tail -n 3 "$T/t.jsonl"; } >"$T/bad.jsonl"
fails "bad task line" 1 rollout --ckpt "$T/m.ckpt" $R "$T/bad.jsonl"
has "bad line message" "$T/.err" '^rollout: .*bad.jsonl:2: '
{ head -n 2 "$T/t.jsonl"; echo '{"id":"x","intent":"haggle","viewer":{"nick":"a","text":"b"}}'; } >"$T/bad2.jsonl"
fails "bad task" 1 rollout --ckpt "$T/m.ckpt" $R "$T/bad2.jsonl"
has "bad task message" "$T/.err" "bad2.jsonl:3: .*haggle"
ok "--skip-bad" rollout --ckpt "$T/m.ckpt" $R --skip-bad -o "$T/s.jsonl" "$T/bad2.jsonl"
has "skipped count" "$T/.err" 'skipped 1 bad tasks'
n=$(wc -l <"$T/s.jsonl")
[ "$n" = 2 ] && pass "--skip-bad keeps the good lines" || flunk "--skip-bad keeps the good lines" "$n"
fails "no harness" 1 rollout --ckpt "$T/m.ckpt" --world "$T/w.json" "$T/t.jsonl"
has "no harness message" "$T/.err" 't.jsonl:1: no harness: give --harness or an inline "harness"'
fails "missing world" 1 rollout --ckpt "$T/m.ckpt" --world "$T/nowhere.json" --harness "$H" "$T/t.jsonl"
ok "man page" sh -c "MANWIDTH=80 man -l '$HAT_TOP/man/man1/rollout.1' >/dev/null"

# --- --jobs: N copies, task i played by copy i mod N: the same bytes ---------------
rollout --ckpt "$T/m.ckpt" $R --batch 2 --logprobs --judge "$T/th.jsonl" >"$T/j1.jsonl"
ok "--jobs 2" rollout --ckpt "$T/m.ckpt" $R --batch 2 --logprobs --judge --jobs 2 -o "$T/j2.jsonl" "$T/th.jsonl"
same "--jobs 2: the same trajectories, tokens, log-probs and verdicts" "$T/j1.jsonl" "$T/j2.jsonl"
rollout --ckpt "$T/m.ckpt" $R --batch 2 --logprobs --judge --jobs 3 <"$T/th.jsonl" >"$T/j3.jsonl"
same "--jobs 3 from stdin (more copies than some get tasks)" "$T/j1.jsonl" "$T/j3.jsonl"
rm -f "$T/jb.jsonl"
fails "--jobs: a bad line" 1 rollout --ckpt "$T/m.ckpt" $R --jobs 2 -o "$T/jb.jsonl" "$T/bad2.jsonl"
n=$(grep -c 'bad2.jsonl:3: .*haggle' "$T/.err")
[ "$n" = 1 ] && pass "--jobs: reported once, at its line" || flunk "--jobs: reported once" "$n: $(cat "$T/.err")"
[ ! -e "$T/jb.jsonl" ] && pass "--jobs: no output file after a failure" || flunk "--jobs: no output file after a failure"
rollout --ckpt "$T/m.ckpt" $R --skip-bad "$T/bad2.jsonl" >"$T/sk1.jsonl" 2>/dev/null
ok "--jobs 2 --skip-bad" rollout --ckpt "$T/m.ckpt" $R --skip-bad --jobs 2 -o "$T/sk2.jsonl" "$T/bad2.jsonl"
same "--jobs --skip-bad: the good lines, as one process" "$T/sk1.jsonl" "$T/sk2.jsonl"
n=$(grep -c 'skipped 1 bad tasks' "$T/.err")
[ "$n" = 1 ] && pass "--jobs --skip-bad: one count" || flunk "--jobs --skip-bad: one count" "$n"
fails "--jobs needs the CPU" 2 rollout --ckpt "$T/m.ckpt" $R --jobs 2 --device cuda "$T/t.jsonl"
fails "--jobs 0" 2 rollout --ckpt "$T/m.ckpt" $R --jobs 0 "$T/t.jsonl"
fails "HAT_SHARD out of range" 2 env HAT_SHARD=2/2 rollout --ckpt "$T/m.ckpt" $R "$T/t.jsonl"
has "HAT_SHARD message" "$T/.err" 'HAT_SHARD=2/2: expected K/N'
fails "HAT_SHARD with a plain task line" 2 sh -c "HAT_SHARD=0/2 rollout --ckpt \"$T/m.ckpt\" $R <\"$T/t.jsonl\""
has "not a record message" "$T/.err" 'not a record of a --jobs run'
# a copy that dies: the run fails and writes nothing (the example harness:
# long enough to be killed mid-way)
for i in 1 2 3 4 5 6 7 8; do cat "$T/t.jsonl"; done >"$T/t40.jsonl"
rm -f "$T/killed.jsonl"
rollout --ckpt "$T/m.ckpt" --world "$T/w.json" --harness "$H" --max-tokens 64 --batch 2 --jobs 2 \
    -o "$T/killed.jsonl" "$T/t40.jsonl" 2>"$T/kill.err" &
pid=$!
k=""
for i in $(seq 1 100); do
    k=$(pgrep -P "$pid" | head -n 1)
    [ -n "$k" ] && break
    sleep 0.01
done
[ -n "$k" ] && kill -9 "$k"
wait "$pid"; rc=$?
[ "$rc" = 1 ] && [ ! -e "$T/killed.jsonl" ] && grep -q 'copy' "$T/kill.err" &&
    pass "--jobs: a killed copy fails the run, nothing written" || flunk "--jobs: a killed copy" "exit $rc: $(cat "$T/kill.err")"

# --- MTP speculative decoding in the agent loop: greedy output unchanged ---------
model-init --config "$T/cfg.json" --mtp 1 --std 0.5 --seed 4 --tokenizer "$T/tok.json" -o "$T/mtp.ckpt"
G="--world $T/w.json --harness $T/hs.json --temperature 0 --max-tokens 12 --max-turns 3"
ok "rollout without --mtp" rollout --ckpt "$T/mtp.ckpt" $G -o "$T/plain.jsonl" "$T/t.jsonl"
ok "rollout --mtp 2" rollout --ckpt "$T/mtp.ckpt" $G --mtp 2 -o "$T/spec.jsonl" "$T/t.jsonl"
same "--mtp keeps greedy conversations byte for byte" "$T/plain.jsonl" "$T/spec.jsonl"
fails "--mtp without an MTP module" 1 rollout --ckpt "$T/m.ckpt" $G --mtp 2 "$T/t.jsonl"
has "--mtp message" "$T/.err" "needs a checkpoint with an MTP module"

# world.sh — world-gen, task-gen and traj-gen end to end: determinism,
# splits, the teacher under the example harness, an external policy
# (--teacher-cmd), and bad input with its message and exit status.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/examples/harness"

ok "world-gen runs" world-gen --seed 4 --products 60 -o "$T/w.json"
world-gen --seed 4 --products 60 > "$T/w2.json"
same "world-gen is deterministic" "$T/w.json" "$T/w2.json"
world-gen --seed 5 --products 60 > "$T/w3.json"
if cmp -s "$T/w.json" "$T/w3.json"; then flunk "another seed, another world"; else pass "another seed, another world"; fi
n=$(jq '.products | length' "$T/w.json")
[ "$n" = 60 ] && pass "--products N" || flunk "--products N" "got $n"
cats=$(jq -r '.products[].category' "$T/w.json" | sort -u | wc -l)
[ "$cats" -ge 5 ] && pass "five categories" || flunk "five categories" "$cats"
fails "world-gen --products 0 is a usage error" 2 world-gen --products 0
fails "unknown option" 2 world-gen --bogus
ok "world-gen --help" world-gen --help
has "usage on --help" "$T/.out" "^usage: world-gen"

ok "task-gen train" task-gen --world "$T/w.json" -n 600 --faults 0.3 --seed 2 -o "$T/t.jsonl"
task-gen --world "$T/w.json" -n 600 --faults 0.3 --seed 2 > "$T/t2.jsonl"
same "task-gen is deterministic" "$T/t.jsonl" "$T/t2.jsonl"
task-gen --world "$T/w.json" -n 100 --faults 0.3 --seed 2 > "$T/t3.jsonl"
head -n 100 "$T/t.jsonl" > "$T/t4.jsonl"
same "task i depends only on (seed, i)" "$T/t3.jsonl" "$T/t4.jsonl"
ni=$(jq -r .intent "$T/t.jsonl" | sort -u | wc -l)
[ "$ni" -ge 14 ] && pass "at least 14 intents" || flunk "at least 14 intents" "$ni"
nf=$(jq 'select(.faults|length>0)' -c "$T/t.jsonl" | wc -l)
[ "$nf" -gt 50 ] && pass "--faults adds faults" || flunk "--faults adds faults" "$nf"
ok "task-gen eval" task-gen --world "$T/w.json" -n 300 --split eval -o "$T/e.jsonl"
jq -r '.context.product // empty' "$T/e.jsonl" | sort -u > "$T/eprod"
jq -r '.products[] | select(.split=="eval") | .id' "$T/w.json" | sort > "$T/evalids"
extra=$(comm -23 "$T/eprod" "$T/evalids" | wc -l)
[ "$extra" = 0 ] && pass "eval tasks use eval products only" || flunk "eval tasks use eval products only" "$extra"
jq -r .context.template "$T/t.jsonl" | sort -u > "$T/ttr"
jq -r .viewer.text "$T/e.jsonl" > /dev/null
fails "task-gen --split other" 2 task-gen --world "$T/w.json" --split test
fails "task-gen --intent unknown" 2 task-gen --world "$T/w.json" --intent haggle
ok "task-gen --intent size" task-gen --world "$T/w.json" -n 20 --intent size -o "$T/size.jsonl"
has "only size tasks" "$T/size.jsonl" '"intent":"size"'
# A phrasing bank with a broken [a|b] group is refused, naming file and index.
cp -r "$HAT_DATA" "$T/data"
jq '.templates += ["[how much|price of {product}"]' "$HAT_DATA/tasks/train/price.json" > "$T/data/tasks/train/price.json"
HAT_DATA="$T/data" fails "task-gen: unclosed group" 1 task-gen --world "$T/w.json" -n 5
has "unclosed group message" "$T/.err" 'tasks/train/price\.json: templates\[[0-9]+\]: not a string with closed, unnested \[a\|b\] groups'
rm -rf "$T/data"
ok "task-gen train forms" task-gen --world "$T/w.json" -n 400 --intent price -o "$T/price.jsonl"
# distinct texts with the product's name taken out: 181 before the groups
nforms=$(jq -r '.context.mentions.product as $p | .viewer.text | split($p) | join("P")' "$T/price.jsonl" | sort -u | wc -l)
[ "$nforms" -gt 240 ] && pass "400 price tasks, over 240 phrasings" || flunk "400 price tasks, over 240 phrasings" "$nforms"
echo '{"products": 3}' > "$T/bad.json"
fails "bad world" 1 task-gen --world "$T/bad.json"
has "bad world message" "$T/.err" "bad.json: not a world"

ok "traj-gen" traj-gen --world "$T/w.json" --harness "$H" --think 0.3 --keep-retries 0.2 -o "$T/traj.jsonl" "$T/t.jsonl"
n=$(wc -l < "$T/traj.jsonl")
[ "$n" = 600 ] && pass "one trajectory per task" || flunk "one trajectory per task" "$n"
traj-gen --world "$T/w.json" --harness "$H" --think 0.3 --keep-retries 0.2 < "$T/t.jsonl" > "$T/traj2.jsonl"
same "traj-gen is deterministic" "$T/traj.jsonl" "$T/traj2.jsonl"
bad=$(jq -c 'select(.messages[-1].role != "assistant" or (.messages[-1].content | startswith("@") | not))' "$T/traj.jsonl" | wc -l)
[ "$bad" = 0 ] && pass "every trajectory ends with a reply to @nick" || flunk "every trajectory ends with a reply to @nick" "$bad"
has "think in some" "$T/traj.jsonl" '"reasoning_content"'
has "meta" "$T/traj.jsonl" '"meta":\{"hsa":\[\],"seed":1,"teacher":"scripted-v1"'
jq -c '.harness' "$T/traj.jsonl" | head -1 > "$T/h.json"
ok "inline harness per task line" sh -c "jq -c --slurpfile h '$T/h.json' '. + {harness: \$h[0]}' '$T/t.jsonl' | head -50 | traj-gen --world '$T/w.json' --think 0.3 --keep-retries 0.2 > '$T/inl.jsonl'"
head -n 50 "$T/traj.jsonl" | jq -c '.messages' > "$T/m1"
jq -c '.messages' "$T/inl.jsonl" > "$T/m2"
same "inline harness gives the same trajectories" "$T/m1" "$T/m2"
head -n 50 "$T/traj.jsonl" >"$T/head50.jsonl"
same "inline harness gives the same lines as --harness" "$T/head50.jsonl" "$T/inl.jsonl"

# bad task lines are named by file:line
head -n 2 "$T/t.jsonl" > "$T/badt.jsonl"
echo '{"id":"x","viewer":{"nick":"a","text":"b"},"intent":"haggle","gold":{"skill":"price"}}' >> "$T/badt.jsonl"
fails "unknown intent" 1 traj-gen --world "$T/w.json" --harness "$H" "$T/badt.jsonl"
has "file:line message" "$T/.err" "badt.jsonl:3: unknown intent 'haggle'"
echo '{"id":' >> "$T/badt.jsonl"
ok "--skip-bad" traj-gen --world "$T/w.json" --harness "$H" --skip-bad "$T/badt.jsonl"
n=$(wc -l < "$T/.out")
[ "$n" = 2 ] && pass "--skip-bad keeps the good lines" || flunk "--skip-bad keeps the good lines" "$n"
fails "traj-gen without harness" 1 traj-gen --world "$T/w.json" "$T/t4.jsonl"
has "no harness message" "$T/.err" "no harness"
fails "--keep-if with an unknown field" 2 traj-gen --world "$T/w.json" --harness "$H" --keep-if 'acc>1'
has "--keep-if names the field" "$T/.err" "unknown verdict field 'acc'"

# An external policy: load the first reply skill, then greet.
cat > "$T/policy.sh" <<'POL'
#!/bin/sh
req=$(cat)
n=$(printf '%s' "$req" | jq '.messages | length')
if [ "$n" -eq 1 ]; then
  printf '%s' "$req" | jq -c '{role:"assistant",content:"",tool_calls:[{type:"function",function:{name:.harness.skill_loader.name,arguments:{(.harness.skill_loader.argument):"engagement"}}}]}'
else
  printf '%s' "$req" | jq -c '{role:"assistant",content:("@" + (.messages[0].content | split(":")[0]) + " welcome!")}'
fi
POL
chmod +x "$T/policy.sh"
task-gen --world "$T/w.json" -n 3 --intent greeting > "$T/g.jsonl"
ok "--teacher-cmd" traj-gen --world "$T/w.json" --harness "$H" --teacher-cmd "$T/policy.sh" -o "$T/cmd.jsonl" "$T/g.jsonl"
n=$(jq -c 'select(.meta.accepted == true and (.messages|length) == 4)' "$T/cmd.jsonl" | wc -l)
[ "$n" = 3 ] && pass "--teacher-cmd trajectories accepted" || flunk "--teacher-cmd trajectories accepted" "$n: $(head -c 600 "$T/cmd.jsonl")"
# --keep-if scores each trajectory with the judge: the greeting policy
# passes on greetings and fails on price questions.
ok "--keep-if pass on greetings" traj-gen --world "$T/w.json" --harness "$H" --teacher-cmd "$T/policy.sh" --keep-if pass -o "$T/kg.jsonl" "$T/g.jsonl"
has "greetings kept" "$T/.err" "kept 3 of 3"
task-gen --world "$T/w.json" -n 3 --intent price > "$T/p.jsonl"
ok "--keep-if pass on price questions" traj-gen --world "$T/w.json" --harness "$H" --teacher-cmd "$T/policy.sh" --keep-if pass -o "$T/kp.jsonl" "$T/p.jsonl"
has "wrong answers dropped" "$T/.err" "kept 0 of 3"
[ ! -s "$T/kp.jsonl" ] && pass "nothing written for dropped trajectories" || flunk "nothing written for dropped trajectories"
ok "--keep-if on a failed component" traj-gen --world "$T/w.json" --harness "$H" --teacher-cmd "$T/policy.sh" --keep-if 'skill_selection<1' -o "$T/ks.jsonl" "$T/p.jsonl"
has "failed component selected" "$T/.err" "kept 3 of 3"
printf '#!/bin/sh\ncat >/dev/null; echo nope\n' > "$T/broken.sh"; chmod +x "$T/broken.sh"
fails "--teacher-cmd printing no JSON" 1 traj-gen --world "$T/w.json" --harness "$H" --teacher-cmd "$T/broken.sh" "$T/g.jsonl"
has "policy error message" "$T/.err" "g.jsonl:1: --teacher-cmd printed no JSON message"

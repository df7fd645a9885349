# eval.sh — evalset, report and diagnose from the command line: determinism,
# sizes (-n, --per-set), --intents, split hygiene against task-gen's train split, the report table on
# crafted verdicts, plots (skipped without gnuplot), diagnose groups, and
# errors with their exit codes.
. "$HAT_TOP/tests/cli/lib.sh"; T=$(mktmp)
H="$HAT_TOP/examples/harness"
world-gen --seed 3 -o "$T/w.json"

ok "evalset runs" evalset --world "$T/w.json" --harness "$H" -n 200 --seed 4 -o "$T/a.jsonl"
evalset --world "$T/w.json" --harness "$H" -n 200 --seed 4 -o "$T/b.jsonl"
evalset --world "$T/w.json" --harness "$H" -n 200 --seed 5 -o "$T/c.jsonl"
same "evalset: same seed, same bytes" "$T/a.jsonl" "$T/b.jsonl"
if cmp -s "$T/a.jsonl" "$T/c.jsonl"; then flunk "evalset: another seed differs"; else pass "evalset: another seed differs"; fi
jq -r .set "$T/a.jsonl" | uniq -c | awk '{printf "%s=%s ", $2, $1}' > "$T/sizes"
has "evalset -n 200: sizes in proportion" "$T/sizes" '^live=88 variant=44 robust=44 ifeval=24 $'
ok "evalset --sets ifeval" evalset --world "$T/w.json" --harness "$H" -n 200 --seed 4 --sets ifeval -o "$T/i.jsonl"
jq -r .set "$T/i.jsonl" | sort -u > "$T/isets"
has "evalset --sets: only that set" "$T/isets" '^ifeval$'
# The first ifeval cases of a smaller run are those of a bigger one (a prefix).
head -n 5 "$T/i.jsonl" > "$T/i5"; jq -c 'select(.set=="ifeval")' "$T/a.jsonl" | head -n 5 > "$T/a5"
same "evalset: -n scales to a prefix" "$T/i5" "$T/a5"

# Split hygiene: no eval viewer text or product in the train split.
task-gen --world "$T/w.json" --split train -n 3000 --seed 4 -o "$T/train.jsonl"
jq -r '.viewer.text' "$T/train.jsonl" | sort -u > "$T/train.txt"
jq -r 'select(.task) | .task.viewer.text' "$T/a.jsonl" | sort -u > "$T/eval.txt"
comm -12 "$T/train.txt" "$T/eval.txt" > "$T/common.txt"
if [ -s "$T/common.txt" ]; then flunk "hygiene: eval texts not in train" "$(head -3 "$T/common.txt")"; else pass "hygiene: eval texts not in train"; fi
jq -r '.context | .product // empty, .product2 // empty' "$T/train.jsonl" | sort -u > "$T/train.p"
jq -r 'select(.task) | .task.context | .product // empty, .product2 // empty' "$T/a.jsonl" | sort -u > "$T/eval.p"
comm -12 "$T/train.p" "$T/eval.p" > "$T/common.p"
if [ -s "$T/common.p" ]; then flunk "hygiene: eval products not in train" "$(head -3 "$T/common.p")"; else pass "hygiene: eval products not in train"; fi
# Held-out HSA names never in train-vocabulary variants.
hsa-augment --harness "$H" --harness-only --bare -k 300 --vocab train --seed 2 |
  jq -r '(.skills[], .tools[]) | .name' | sort -u > "$T/train.names"
harness-pack -o "$T/h.json" "$H"
jq -r '(.skills[], .tools[]) | .name' "$T/h.json" | sort -u > "$T/prod.names"
jq -r 'select(.set=="variant") | (.harness.skills[], .harness.tools[]) | .name' "$T/a.jsonl" | sort -u |
  comm -23 - "$T/prod.names" > "$T/heldout.names"
comm -12 "$T/train.names" "$T/heldout.names" > "$T/common.names"
if [ -s "$T/heldout.names" ] && [ ! -s "$T/common.names" ]; then pass "hygiene: held-out names not in train variants"
else flunk "hygiene: held-out names not in train variants" "$(head -3 "$T/common.names")"; fi

# The teacher passes every agent case (each case is solvable).
jq -c 'select(.task) | .task + {harness: .harness}' "$T/a.jsonl" | traj-gen --world "$T/w.json" -o "$T/t.jsonl"
jq -c 'select(.task) | .task' "$T/a.jsonl" > "$T/tasks.jsonl"
judge --world "$T/w.json" --tasks "$T/tasks.jsonl" -o "$T/v.jsonl" "$T/t.jsonl"
ok "report on the teacher" report --cases "$T/a.jsonl" --model teacher="$T/v.jsonl" --json "$T/r.json" -o "$T/r.md"
has "report: the teacher passes live" "$T/r.md" '^\| teacher \| 100\.0 \[95\.8, 100\.0\] \| 100\.0 \[92\.0, 100\.0\] \| 100\.0 \[92\.0, 100\.0\] \| n/a \| 100\.0 \|$'
jq -r '.scores.teacher.live.n' "$T/r.json" > "$T/n"
has "report --json: case count" "$T/n" '^88$'

# A crafted pair of models, hand-checked: A passes 3 of 4 live, B 1 of 4.
for i in 0 1 2 3; do
  printf '{"task_id":"live-00000%d","intent":"price","total":%s,"pass":%s,"reasons":[]}\n' $i \
    "$([ $i -lt 3 ] && echo 1.0 || echo 0.0)" "$([ $i -lt 3 ] && echo true || echo false)"
done > "$T/A.jsonl"
printf '{"task_id":"live-000000","intent":"price","total":1.0,"pass":true,"reasons":[]}\n' > "$T/B.jsonl"
printf '{"task_id":"live-00000%d","intent":"price","total":0.25,"pass":false,"reasons":[{"code":"reply_too_long","component":"effectiveness","detail":"99 characters, at most 80 allowed"}]}\n' 1 2 3 >> "$T/B.jsonl"
ok "report: two models" report --model A="$T/A.jsonl" --model B="$T/B.jsonl" -o "$T/ab.md"
# Wilson 3/4: [30.1, 95.4]; 1/4: [4.6, 69.9]
has "report: A row" "$T/ab.md" '^\| A \| 75\.0 \[30\.1, 95\.4\] \| n/a \| n/a \| n/a \| 75\.0 \|$'
has "report: B row" "$T/ab.md" '^\| B \| 25\.0 \[4\.6, 69\.9\] \|'
has "report: B mean total" "$T/ab.md" '^\| B \| live \| 43\.8 '
printf '{"task_id":"live-000009","total":1}\n' > "$T/bad.jsonl"
fails "report: bad verdict exits 1" 1 report --model X="$T/bad.jsonl"
has "report: error names file and line" "$T/.err" "report: .*bad.jsonl:1: .*pass"
fails "report: --model without = exits 2" 2 report --model nothing
if command -v gnuplot >/dev/null 2>&1; then
  printf '{"step":1,"loss":3.0}\n{"step":2,"loss":2.5}\n' > "$T/m.jsonl"
  ok "report --plots" report --model A="$T/A.jsonl" --model B="$T/B.jsonl" --metrics sft="$T/m.jsonl" --plots "$T/plots" -o /dev/null
  for f in scores.png scores.svg curves.png curves.svg; do
    if [ -s "$T/plots/$f" ]; then pass "plot $f"; else flunk "plot $f"; fi
  done
  has "plots: PNG signature" "$T/plots/scores.png" 'PNG'
  # Set names on two lines at the cluster centres (one-line names overlapped,
  # and xtic(1) put them under the first model's bar).
  has "plots: set names at the cluster centres" "$T/plots/scores.gp" 'set xtics nomirror \("Live-Stream\\nQA" 0, "Harness-Variant\\nQA" 1, "Tool/Prompt\\nRobustness" 2, "IFEval-style" 3\)'
  hasnt "plots: no xtic(1)" "$T/plots/scores.gp" 'xtic\('
  hasnt "plots: no one-line long name" "$T/plots/scores.svg" 'Harness-Variant QA'
  has "plots: the names' second lines" "$T/plots/scores.svg" '>Robustness<'
  hasnt "plots: two models, no hatching" "$T/plots/scores.gp" 'fs pattern'
  # gnuplot has 8 colours: models 9 to 10 are hatched, not coloured again.
  ok "report --plots, 10 models" report $(for i in 0 1 2 3 4 5 6 7 8 9; do printf -- '--model m%s=%s ' $i "$T/A.jsonl"; done) \
     --plots "$T/plots10" -o /dev/null
  grep -o "title 'm[0-9]'[^,]*" "$T/plots10/scores.gp" | head -n 10 | grep -c 'fs pattern' > "$T/hatched"
  has "plots: only the ninth and tenth model hatched" "$T/hatched" '^2$'
else
  echo "# gnuplot not installed: plot checks skipped"
fi

ok "diagnose groups" diagnose --json --harness "$H" "$T/B.jsonl" -o "$T/d.jsonl"
jq -r 'select(.group=="element") | "\(.key) \(.count)"' "$T/d.jsonl" > "$T/d.txt"
has "diagnose: reply_too_long -> the prompt block with max_chars" "$T/d.txt" '^prompt:reply_format\.max_chars 3$'
jq -r 'select(.group=="summary") | "\(.verdicts) \(.failed)"' "$T/d.jsonl" > "$T/s.txt"
has "diagnose: summary" "$T/s.txt" '^4 3$'
ok "diagnose text" diagnose --harness "$H" "$T/B.jsonl" -o "$T/d.md"
has "diagnose text: header" "$T/d.md" '^4 verdicts, 3 failed \(75\.0%\)$'
fails "diagnose: bad verdict exits 1" 1 diagnose "$T/bad.jsonl"
fails "diagnose evolve without --ckpt exits 2" 2 diagnose evolve --world "$T/w.json"

fails "evalset: unknown set exits 2" 2 evalset --world "$T/w.json" --harness "$H" --sets nope
fails "evalset: no --world exits 2" 2 evalset --harness "$H"
fails "evalset: bad world exits 1" 1 evalset --world "$T/missing.json" --harness "$H"
printf '{"key":1,"prompt":"hi"}\n' > "$T/in.jsonl"
fails "evalset: bad --ifeval-input exits 1" 1 evalset --world "$T/w.json" --harness "$H" --ifeval-input "$T/in.jsonl"
printf '{"key":7,"prompt":"Write a title.","instruction_id_list":["detectable_format:title"],"kwargs":[{}]}\n' > "$T/in.jsonl"
ok "evalset --ifeval-input" evalset --world "$T/w.json" --harness "$H" --sets ifeval --ifeval-input "$T/in.jsonl" -o "$T/orig.jsonl"
jq -c '[.id, .meta.key, .meta.source, (.instruction_id_list|length)]' "$T/orig.jsonl" > "$T/orig.txt"
has "evalset: original IFEval prompts" "$T/orig.txt" '^\["ifeval-000000",7,"ifeval",1\]$'

# --per-set and --intents: N cases in every set, the agent cases of the
# chosen intents only, each in turn, all still played through by the
# teacher (the mini harness serves these four and nothing else).
M="$HAT_TOP/tests/fixtures/harness-mini"
ok "evalset --per-set --intents" evalset --world "$T/w.json" --harness "$M" --per-set 16 \
   --intents price,size,order_status,greeting --seed 4 -o "$T/m.jsonl"
jq -r .set "$T/m.jsonl" | uniq -c | awk '{printf "%s=%s ", $2, $1}' > "$T/msizes"
has "evalset --per-set 16: 16 in every set" "$T/msizes" '^live=16 variant=16 robust=16 ifeval=16 $'
jq -r 'select(.task) | .task.intent' "$T/m.jsonl" | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}' > "$T/mint"
has "evalset --intents: only those, in turn" "$T/mint" '^greeting=[0-9]+ order_status=[0-9]+ price=[0-9]+ size=[0-9]+ $'
jq -r 'select(.set == "live") | .task.intent' "$T/m.jsonl" | head -n 4 | tr '\n' ' ' > "$T/mlive"
has "evalset --intents: live cases take them in turn" "$T/mlive" '^price size order_status greeting $'
jq -r 'select(.set == "robust" and .meta.kind == "fault") | .task.intent' "$T/m.jsonl" | sort -u | tr '\n' ' ' > "$T/mfault"
has "evalset --intents: faults on the chosen tool intents" "$T/mfault" '^(order_status |price |size )+$'
jq -c 'select(.task) | .task + {harness: .harness}' "$T/m.jsonl" | traj-gen --world "$T/w.json" --seed 4 -o "$T/mt.jsonl"
jq -c 'select(.task) | .task' "$T/m.jsonl" > "$T/mtasks.jsonl"
judge --world "$T/w.json" --tasks "$T/mtasks.jsonl" -o "$T/mv.jsonl" "$T/mt.jsonl"
jq -s -c '[length, (map(select(.pass)) | length)]' "$T/mv.jsonl" > "$T/mpass"
has "evalset --intents: the teacher passes all 48 agent cases" "$T/mpass" '^\[48,48\]$'
fails "evalset: unknown intent exits 2" 2 evalset --world "$T/w.json" --harness "$M" --intents price,nope
fails "evalset: -n with --per-set exits 2" 2 evalset --world "$T/w.json" --harness "$M" -n 10 --per-set 5
# --config and --split: dev sets of the evaluation's kinds (examples/Makefile's
# dev robust set): train phrasings and products, and only the config's text banks.
D="$HAT_TOP/examples/tools/dev-sets.json"
ok "evalset --config --split train" evalset --world "$T/w.json" --harness "$M" --config "$D" --split train \
   --sets robust --per-set 60 --intents price,size,order_status,greeting --seed 4 -o "$T/dr.jsonl"
jq -r '.task.context | .product // empty' "$T/dr.jsonl" | sort -u > "$T/dr.p"
comm -12 "$T/dr.p" "$T/eval.p" > "$T/dr.common"
if [ -s "$T/dr.p" ] && [ ! -s "$T/dr.common" ]; then pass "evalset --split train: train products only"
else flunk "evalset --split train: train products only" "$(head -3 "$T/dr.common")"; fi
jq -r '.task.viewer.text' "$T/dr.jsonl" > "$T/dr.txt"
jq -r '.robust | (.adversarial | .prefix[], .suffix[]), .injection.suffix[]' "$D" > "$T/dev.bank"
jq -r '.robust | (.adversarial | .prefix[], .suffix[]), .injection.suffix[]' "$HAT_DATA/eval/sets.json" > "$T/eval.bank"
n_dev=$(grep -cFf "$T/dev.bank" "$T/dr.txt"); n_eval=$(grep -cFf "$T/eval.bank" "$T/dr.txt")
if [ "$n_dev" -ge 12 ] && [ "$n_eval" -eq 0 ]; then pass "evalset --config: the config's banks, not the evaluation's ($n_dev)"
else flunk "evalset --config: the config's banks, not the evaluation's" "dev $n_dev, eval $n_eval"; fi
jq -c 'select(.task) | .task + {harness: .harness}' "$T/dr.jsonl" | traj-gen --world "$T/w.json" --seed 4 -o "$T/drt.jsonl"
jq -c '.task' "$T/dr.jsonl" > "$T/drtasks.jsonl"
judge --world "$T/w.json" --tasks "$T/drtasks.jsonl" -o "$T/drv.jsonl" "$T/drt.jsonl"
jq -s -c '[length, (map(select(.pass)) | length)]' "$T/drv.jsonl" > "$T/drpass"
has "evalset --split train: the teacher passes all 60 dev robust cases" "$T/drpass" '^\[60,60\]$'
echo '{"sizes": ' > "$T/badcfg.json"
fails "evalset: unreadable --config exits 1" 1 evalset --world "$T/w.json" --harness "$M" --config "$T/badcfg.json"
has "evalset: an unreadable --config is named" "$T/.err" 'badcfg.json'
jq 'del(.robust.prompt)' "$D" > "$T/noprompt.json"
evalset --world "$T/w.json" --harness "$M" --config "$T/noprompt.json" 2> "$T/noprompt.err" >/dev/null
has "evalset --config: a missing field names the file" "$T/noprompt.err" 'noprompt.json: robust.prompt needs name, dims and p'
fails "evalset: unknown --split exits 2" 2 evalset --world "$T/w.json" --harness "$M" --split dev
for p in evalset report diagnose; do ok "$p --help" $p --help; done

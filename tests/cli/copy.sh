# copy.sh — copy-gen: determinism, the prefix property, and the one thing
# the records are for: every name and number an answer gives is in its
# context already (so it can be copied and never needs memorising), and
# names do not repeat across records (so they cannot be memorised).
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)

ok "copy-gen runs" copy-gen -n 400 --seed 5 -o "$T/c.jsonl"
copy-gen -n 400 --seed 5 > "$T/c2.jsonl"
same "copy-gen is deterministic" "$T/c.jsonl" "$T/c2.jsonl"
copy-gen -n 100 --seed 5 > "$T/c3.jsonl"
head -n 100 "$T/c.jsonl" > "$T/c4.jsonl"
same "record i depends only on (seed, i)" "$T/c3.jsonl" "$T/c4.jsonl"
copy-gen -n 100 --seed 6 > "$T/c5.jsonl"
if cmp -s "$T/c3.jsonl" "$T/c5.jsonl"; then flunk "another seed, other records"; else pass "another seed, other records"; fi
kinds=$(jq -r .kind "$T/c.jsonl" | sort -u | tr '\n' ' ')
[ "$kinds" = "call lookup repeat " ] && pass "three kinds" || flunk "three kinds" "$kinds"
t=$(jq '[.messages[] | select(.role == "user")] | length' "$T/c.jsonl" | sort -u | tr '\n' ' ')
[ "$t" = "3 " ] && pass "--turns 3 by default" || flunk "--turns 3 by default" "$t"
copy-gen -n 20 --turns 5 | jq '[.messages[] | select(.role == "user")] | length' | sort -u > "$T/t5"
[ "$(cat "$T/t5")" = 5 ] && pass "--turns 5" || flunk "--turns 5" "$(cat "$T/t5")"

# Every word of an answer that holds a digit or a capital, and every tool
# argument, occurs in the messages before it, apart from the answer
# templates' own words.
jq -r '.messages as $m | range(0; $m | length) as $i | $m[$i] | select(.role == "assistant")
       | ([$m[:$i][] | .content] | join(" ")) as $ctx
       | ((.content | split(" ") | map(select(test("[0-9A-Z]")) | sub("[.?:]$"; "") | sub("^[@¥]"; "")))
          + [(.tool_calls // [])[] | .function.arguments[]])[]
       | select(. as $w | $ctx | contains($w) | not)' "$T/c.jsonl" > "$T/missing"
[ ! -s "$T/missing" ] && pass "answers copy from their context" || flunk "answers copy from their context" "$(head -3 "$T/missing")"

# A name the answers give is in the context of few records: with 400
# records and fresh names, almost every product is in one record only.
jq -r '[.messages[] | select(.role == "assistant") | (.tool_calls // [])[] | .function.arguments[]] | unique[]' "$T/c.jsonl" |
    sort | uniq -c | awk '$1 > 1 { r++ } END { print r + 0, NR }' > "$T/rep"
read rep all < "$T/rep"
[ "$all" -gt 300 ] && [ $((rep * 20)) -lt "$all" ] && pass "tool arguments rarely repeat" || flunk "tool arguments rarely repeat" "$rep of $all"

# Where a copy must stop.  Questions end in chat filler often enough, and
# the filler is none of the eval split's phrasing words (else the records
# would teach the evaluation's surface); call turns about orders copy ids
# of several formats; some names are Chinese, some say a word twice.
jq -r '.messages[] | select(.role == "user") | .content' "$T/c.jsonl" > "$T/q"
jq -r '.tails[]' "$HAT_DATA/copy/copy.json" > "$T/tails"
n=$(awk 'NR == FNR { t[$0] = 1; next } { if ($NF in t) k++ } END { print k + 0 }' "$T/tails" "$T/q")
[ "$n" -gt 200 ] && pass "questions end in tails" || flunk "questions end in tails" "$n"
jq -r '.templates[]' "$HAT_DATA"/tasks/eval/*.json | tr 'A-Z' 'a-z' | tr -c "[:alnum:]'\200-\377" '\n' | sort -u > "$T/evalw"
sort -u "$T/tails" | comm -12 - "$T/evalw" > "$T/clash"
[ ! -s "$T/clash" ] && pass "no tail is an eval-split phrasing word" || flunk "no tail is an eval-split phrasing word" "$(cat "$T/clash" | tr '\n' ' ')"
jq -r '.messages[] | (.tool_calls // [])[] | .function | select(.name | test("order")) | .arguments[]' "$T/c.jsonl" > "$T/ids"
o=$(wc -l < "$T/ids"); f=$(sed 's/[0-9]/#/g; s/[A-Z]/@/g' "$T/ids" | sort -u | wc -l)
[ "$o" -gt 100 ] && [ "$f" -ge 5 ] && pass "order calls copy ids of several formats" || flunk "order calls copy ids of several formats" "$o calls, $f formats"
jq -r '.messages[] | (.tool_calls // [])[] | .function | select(.name | test("order") | not) | .arguments[]' "$T/c.jsonl" > "$T/names"
z=$(LC_ALL=C.UTF-8 grep -c '^[^ -~]*$' "$T/names"); w=$(awk '{ for (i = 2; i <= NF; i++) if ($i == $1) { k++; break } } END { print k + 0 }' "$T/names")
[ "$z" -gt 10 ] && [ "$w" -gt 10 ] && pass "Chinese names, names that say a word twice" || flunk "Chinese names, names that say a word twice" "$z Chinese, $w twice of $(wc -l < "$T/names")"

# --pick: a routine found by what it is for.  Without it (or at 0) the
# records are the three kinds, byte for byte; with it, every call opens a
# routine the system message lists, the one whose line the tool gives
# back, listed once, its topic the question's (the question starts as one
# of that topic's templates does), and the topics of a list all differ.
copy-gen -n 100 --seed 5 --pick 0 > "$T/p0.jsonl"
same "--pick 0 gives the same bytes" "$T/c3.jsonl" "$T/p0.jsonl"
ok "copy-gen --pick runs" copy-gen -n 400 --seed 7 --pick 0.5 -o "$T/p.jsonl"
n=$(jq -r 'select(.kind == "pick") | .kind' "$T/p.jsonl" | wc -l)
[ "$n" -gt 160 ] && [ "$n" -lt 240 ] && pass "--pick 0.5: about half the records" || flunk "--pick 0.5: about half the records" "$n of 400"
cat > "$T/pick.jq" <<'J'
# one line per pick call: "ok" or what is wrong with it
($d[0].pick.topics) as $topics
| select(.kind == "pick") | .messages as $m
| ($m[0].content | split("\n")[1:] | map(capture("^- (?<name>[^:]+): (?<about>.*)$"))) as $list
| ($list | map(.about as $a | $topics | map(.about | index($a) != null) | index(true))) as $tix
| if ($tix | unique | length) != ($list | length) or ($list | map(.name) | unique | length) != ($list | length)
  then "a list repeats a topic or a name" else empty end,
  (range(1; $m | length) | select($m[.].tool_calls) as $i
   | $m[$i].tool_calls[0].function.arguments[] as $arg
   | ($list | map(.name) | index($arg)) as $k
   | ($m[$i + 1].content | fromjson | .data.about) as $about
   | ($m[$i - 1].content | sub("^[^:]*: "; "")) as $q
   | if $k == null then "\($arg) is not listed"
     elif $list[$k].about != $about then "\($arg): the tool gives another line"
     elif $q == ($about | ascii_downcase | rtrimstr(".")) then "echo"
     elif ($topics[$tix[$k]].ask | map(split("{")[0]) | any(. as $p | $q | startswith($p)) | not)
     then "\($q): not a question of \($about)"
     else "ok" end)
J
jq -r --slurpfile d "$HAT_DATA/copy/copy.json" -f "$T/pick.jq" "$T/p.jsonl" | sort | uniq -c > "$T/pickres"
[ "$(awk '{ print $2 }' "$T/pickres")" = ok ] && [ "$(awk '{ print $1 }' "$T/pickres")" -gt 400 ] &&
    pass "a pick opens the listed routine whose line fits the question" || flunk "a pick opens the listed routine whose line fits the question" "$(head -3 "$T/pickres")"
jq -r 'select(.kind == "pick") | .messages[0].content | split("\n")[1:][] | sub(":.*"; "") | sub("^- "; "")' "$T/p.jsonl" > "$T/rn"
s=$(grep -c '_' "$T/rn"); k=$(grep -c -- '-' "$T/rn"); c=$(grep -c '^[a-z]*[A-Z]' "$T/rn")
[ "$s" -gt 100 ] && [ "$k" -gt 100 ] && [ "$c" -gt 100 ] && [ "$(sort "$T/rn" | uniq -d | wc -l)" -lt 20 ] &&
    pass "routine names in three styles, rarely twice" || flunk "routine names in three styles, rarely twice" "$s $k $c"
# The routines' lines and questions are copy-gen's own: no sentence of a
# harness, an HSA paraphrase bank or a task phrasing bank (slots aside).
jq -r '.templates[]' "$HAT_DATA"/tasks/*/*.json | sed 's/{[a-z_]*}/{}/g' | sort -u > "$T/tmpl"
jq -r '.pick.topics[] | .ask[], .about[]' "$HAT_DATA/copy/copy.json" | sed 's/{[a-z_]*}/{}/g' | sort -u > "$T/ours"
{ jq -r '.. | strings' "$HAT_DATA"/hsa/*/paraphrases.json; cat "$HAT_TOP"/examples/harness*/skills/*/SKILL.md \
    "$HAT_TOP"/tests/fixtures/harness-mini/skills/*/SKILL.md | sed 's/^description: //'; cat "$T/tmpl"; } | sort -u > "$T/theirs"
comm -12 "$T/ours" "$T/theirs" > "$T/clash"
[ ! -s "$T/clash" ] && pass "pick's sentences are its own" || flunk "pick's sentences are its own" "$(head -3 "$T/clash")"
# --pick-echo E: that share of the questions is the routine's own line,
# as a viewer types it; at 0 the same bytes as without it.
copy-gen -n 100 --seed 7 --pick 0.5 --pick-echo 0 > "$T/e0.jsonl"
copy-gen -n 100 --seed 7 --pick 0.5 > "$T/e00.jsonl"
same "--pick-echo 0 gives the same bytes" "$T/e0.jsonl" "$T/e00.jsonl"
copy-gen -n 200 --seed 8 --turns 4 --pick 1 --pick-echo 0.5 -o "$T/e.jsonl"
jq -r --slurpfile d "$HAT_DATA/copy/copy.json" -f "$T/pick.jq" "$T/e.jsonl" | sort | uniq -c > "$T/echores"
e=$(awk '$2 == "echo" { print $1 }' "$T/echores")
[ "$(awk '{ print $2 }' "$T/echores" | tr '\n' ' ')" = "echo ok " ] && [ "$e" -gt 320 ] && [ "$e" -lt 480 ] &&
    pass "--pick-echo 0.5: half the questions say the gold line, the rest as before" ||
    flunk "--pick-echo 0.5: half the questions say the gold line, the rest as before" "$(head -3 "$T/echores")"
copy-gen -n 50 --seed 8 --pick 1 --pick-echo 1 | jq -r --slurpfile d "$HAT_DATA/copy/copy.json" -f "$T/pick.jq" | sort -u > "$T/e1"
[ "$(cat "$T/e1")" = echo ] && pass "--pick-echo 1: every question" || flunk "--pick-echo 1: every question" "$(head -3 "$T/e1")"
# --pick-line T: the lists' lines as a harness's skill_loader.line; the
# default template gives the same bytes, the reversed one the records the
# default's would be with every line written description first.
copy-gen -n 100 --seed 7 --pick 0.5 --pick-line '- {name}: {description}' > "$T/l0.jsonl"
same "--pick-line '- {name}: {description}' gives the same bytes" "$T/l0.jsonl" "$T/e00.jsonl"
copy-gen -n 100 --seed 7 --pick 0.5 --pick-line '- {description} -> {name}' | jq -c . > "$T/l1.jsonl"
jq -c 'if .kind == "pick" then .messages |= map(if .role == "system" then .content |= (split("\n") | map(
         (capture("^- (?<n>[^:]+): (?<d>.*)$") // null) as $m | if $m then "- \($m.d) -> \($m.n)" else . end) | join("\n"))
       else . end) else . end' "$T/e00.jsonl" > "$T/l2.jsonl"
same "--pick-line '- {description} -> {name}': every line reversed, nothing else" "$T/l1.jsonl" "$T/l2.jsonl"
fails "--pick-line needs --pick" 2 copy-gen --pick-line '- {name}'
fails "--pick-line must hold {name}" 2 copy-gen --pick 1 --pick-line '- {description}'
fails "--pick-echo needs --pick" 2 copy-gen --pick-echo 0.5
fails "--pick-echo above 1" 2 copy-gen --pick 1 --pick-echo 1.5
fails "--pick above 1" 2 copy-gen --pick 1.5
fails "--pick is not for --ids" 2 copy-gen --ids --tokenizer /dev/null --pick 0.5

fails "-n -1 is a usage error" 2 copy-gen -n -1
fails "--turns 0 is a usage error" 2 copy-gen --turns 0
fails "unknown option" 2 copy-gen --bogus
fails "a stray argument" 2 copy-gen extra
ok "copy-gen --help" copy-gen --help
has "usage on --help" "$T/.out" "^usage: copy-gen"
mkdir -p "$T/data/copy"
echo '{"syllables": []}' > "$T/data/copy/copy.json"
HAT_DATA="$T/data" copy-gen -n 1 > /dev/null 2> "$T/err"; rc=$?
[ "$rc" = 1 ] && pass "a bad data file fails" || flunk "a bad data file fails" "exit $rc"
has "the message names the file and the key" "$T/err" "copy/copy.json.*syllables"

# --ids: the induction curriculum.  Each record is a run of ordinary ids
# and the same run again; the mask marks the repeat but its first id (the
# only ids a model can know from the context); no id is an added token;
# run lengths vary over [--min-len, --max-len] (a fixed length would let a
# fixed-offset attention copy without an induction head).
Q="$HAT_TOP/tests/fixtures/conformance/tokenizer/qwen3/tokenizer.json"
need "$Q"
ok "copy-gen --ids runs" copy-gen --ids --tokenizer "$Q" -n 300 --min-len 3 --max-len 9 --seed 4 -o "$T/i.jsonl"
copy-gen --ids --tokenizer "$Q" -n 300 --min-len 3 --max-len 9 --seed 4 > "$T/i2.jsonl"
same "--ids is deterministic" "$T/i.jsonl" "$T/i2.jsonl"
jq -e -s 'all(.[]; .kind == "induction" and (.ids | length) as $n | ($n % 2 == 0) and
                   .ids[:$n/2] == .ids[$n/2:] and .mask == [range($n) | if . > $n/2 then 1 else 0 end])' \
    "$T/i.jsonl" > /dev/null && pass "a run, its repeat, the mask on the repeat" || flunk "a run, its repeat, the mask on the repeat"
l=$(jq '.ids | length / 2' "$T/i.jsonl" | sort -n -u | tr '\n' ' ')
[ "$l" = "3 4 5 6 7 8 9 " ] && pass "run lengths cover --min-len..--max-len" || flunk "run lengths cover --min-len..--max-len" "$l"
jq '.added_tokens[].id' "$Q" | sort -u > "$T/added"
jq '.ids[]' "$T/i.jsonl" | sort -u | comm -12 - "$T/added" > "$T/hit"
[ ! -s "$T/hit" ] && pass "no added token in a run" || flunk "no added token in a run" "$(head -3 "$T/hit")"
fails "--ids needs --tokenizer" 2 copy-gen --ids
fails "--min-len above --max-len" 2 copy-gen --ids --tokenizer "$Q" --min-len 9 --max-len 3
fails "a missing tokenizer fails" 1 copy-gen --ids --tokenizer "$T/none.json"

# --haystack: the distance-free form.  Every record is LEN ids; each
# stretch of mask-1 ids, with the unmasked id before it (the trigger),
# stood earlier in the record, ending before the trigger (so copying it
# needs only the context); the masked stretches start at many places and
# the distance back varies (no position or offset predicts a target).
ok "copy-gen --ids --haystack runs" copy-gen --ids --tokenizer "$Q" --haystack 64 --pairs 3 \
    --min-len 3 --max-len 6 -n 300 --seed 5 -o "$T/h.jsonl"
copy-gen --ids --tokenizer "$Q" --haystack 64 --pairs 3 --min-len 3 --max-len 6 -n 300 --seed 5 > "$T/h2.jsonl"
same "--haystack is deterministic" "$T/h.jsonl" "$T/h2.jsonl"
cat > "$T/seg.jq" <<'J'
# per record: [trigger position, run length, distance back] of each second occurrence
# (slices compared as text: jq 1.6 takes two slices of one array for equal)
.ids as $x | .mask as $m
| [range(1; $m | length) | select($m[.] == 1 and $m[. - 1] == 0)]
| map(. as $s | (first(range($s; $m | length) | select($m[.] == 0)) // ($m | length)) as $e
      | ($e - $s + 1) as $l | $x[$s - 1:$e] as $run
      | [range(0; $s - $l) | select(($x[.:(. + $l)] | tojson) == ($run | tojson))] as $at
      | [$s - 1, $l, (if $at == [] then null else $s - 1 - $at[-1] end)])
J
jq -c -f "$T/seg.jq" "$T/h.jsonl" > "$T/segs"
jq -e -s 'all(.[]; .kind == "haystack" and (.ids | length) == 64 and (.mask | length) == 64)' "$T/h.jsonl" > /dev/null &&
    pass "--haystack records are LEN ids" || flunk "--haystack records are LEN ids"
jq -e -s 'all(.[]; length >= 1 and length <= 3 and all(.[]; .[2] != null and .[1] >= 3 and .[1] <= 6))' "$T/segs" > /dev/null &&
    pass "every masked run stood earlier in the record" || flunk "every masked run stood earlier in the record" "$(head -3 "$T/segs")"
jq -e -s '([.[][] | .[0]] | unique | length) >= 40 and ([.[][] | .[2]] | unique | length) >= 40' "$T/segs" > /dev/null &&
    pass "triggers and distances back vary" || flunk "triggers and distances back vary"
jq '.ids[]' "$T/h.jsonl" | sort -u | comm -12 - "$T/added" > "$T/hit"
[ ! -s "$T/hit" ] && pass "no added token in a haystack" || flunk "no added token in a haystack" "$(head -3 "$T/hit")"
fails "--haystack needs --ids" 2 copy-gen --haystack 64
fails "--haystack too short for two runs" 2 copy-gen --ids --tokenizer "$Q" --haystack 10 --max-len 6

#!/bin/sh
# copycheck.sh — how well a checkpoint copies: 40 fresh copy-gen --ids runs
# (seed 999) of MIN..MAX ids, the prompt the run and the first id of its
# repeat, greedy; prints {"copied": share of the repeat's other ids
# generated exactly in place}.  With HAYSTACK, each run stands once in
# HAYSTACK random ids and the prompt ends at the first id of its second
# occurrence (copy-gen --haystack --pairs 1), so the distance back varies
# up to HAYSTACK and nothing is at a fixed position.
# examples/results/micro-notes.md, e7-e11.
#
#   copycheck.sh CKPT TOKENIZER MIN MAX [HAYSTACK]
set -eu
[ $# -eq 4 ] || [ $# -eq 5 ] || { echo "usage: copycheck.sh CKPT TOKENIZER MIN MAX [HAYSTACK]" >&2; exit 2; }
if [ $# -eq 5 ]; then
    copy-gen --ids --tokenizer "$2" -n 40 --min-len "$3" --max-len "$4" --haystack "$5" --pairs 1 --seed 999 |
        jq -c '.mask as $m | first(range($m | length) | select($m[.] == 1)) as $s
               | (first(range($s; $m | length) | select($m[.] == 0)) // ($m | length)) as $e
               | {ids: .ids[:$s], want: .ids[$s:$e]}'
else
    copy-gen --ids --tokenizer "$2" -n 40 --min-len "$3" --max-len "$4" --seed 999 |
        jq -c '(.ids | length / 2) as $l | {ids: .ids[:$l + 1], want: .ids[$l + 1:]}'
fi |
    generate --ckpt "$1" --tokenizer "$2" --max-tokens "$4" |
    jq -s -c '(map(. as $r | [range($r.want | length) | select($r.gen[.] == $r.want[.])] | length) | add) as $hit
              | (map(.want | length) | add) as $n | {copied: ($hit / $n)}'

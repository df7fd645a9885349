#!/bin/sh
# copycheck.sh — how well a checkpoint copies: 40 fresh copy-gen --ids runs
# (seed 999) of MIN..MAX ids, the prompt the run and the first id of its
# repeat, greedy; prints {"copied": share of the repeat's other ids
# generated exactly in place}.  examples/results/micro-notes.md, e7-e10.
#
#   copycheck.sh CKPT TOKENIZER MIN MAX
set -eu
[ $# -eq 4 ] || { echo "usage: copycheck.sh CKPT TOKENIZER MIN MAX" >&2; exit 2; }
copy-gen --ids --tokenizer "$2" -n 40 --min-len "$3" --max-len "$4" --seed 999 |
    jq -c '(.ids | length / 2) as $l | {ids: .ids[:$l + 1], want: .ids[$l + 1:]}' |
    generate --ckpt "$1" --tokenizer "$2" --max-tokens "$4" |
    jq -s -c '(map(. as $r | [range($r.want | length) | select($r.gen[.] == $r.want[.])] | length) | add) as $hit
              | (map(.want | length) | add) as $n | {copied: ($hit / $n)}'

#!/bin/sh
# pickprobe.sh — the look-up by description on its own (small-notes e24):
# held-out pick records (copy-gen -n N --seed 99 --pick 1 --turns 1), each
# a list of routines and a question that only one line's description
# fits.  The model continues the system message and the question greedily
# (40 tokens); a pick is right when its call names the gold routine as
# the last argument ("NAME"}), listed when it names any listed one.
#
#   pickprobe.sh CKPT [N]        N records (default 200)
#
# FLIP=1 writes the lists description first (copy-gen --pick-line
# '- {description} -> {name}'), for a model trained on such lists.
# Prints one line:
#   {picked, named_listed, n, chance}   (chance: a uniform pick's expected count)
set -eu
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: pickprobe.sh CKPT [N]" >&2; exit 2; }
line='- {name}: {description}'
[ "${FLIP:-0}" = 1 ] && line='- {description} -> {name}'
copy-gen -n "${2:-200}" --seed 99 --pick 1 --turns 1 --pick-line "$line" |
  jq -c '{id, messages: .messages[:2],
                   gold: (.messages[2].tool_calls[0].function.arguments | to_entries[0].value),
                   listed: [.messages[0].content | split("\n")[] | select(startswith("- "))
                            | if test(" -> ") then sub(".* -> "; "") else sub("^- "; "") | sub(":.*"; "") end]}' |
  OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} generate --ckpt "$1" --max-tokens 40 --seed 1 |
  jq -s -c '{picked: map(select(.gold as $g | .text | contains("\"" + $g + "\"}"))) | length,
             named_listed: map(.text as $t | select(any(.listed[]; . as $n | $t | contains("\"" + $n + "\"}")))) | length,
             n: length, chance: (map(1 / (.listed | length)) | add | round)}'

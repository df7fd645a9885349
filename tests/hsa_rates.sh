#!/bin/sh
# hsa_rates.sh — how much of a harness's wording HSA changes, and whether
# its variants stay consistent.  For harness H (default the fresh test
# harness), K variants (default 20) at --p P (default 0.5) of VOCAB
# (default train), prints one JSON line:
#   {"harness":..,"p":..,"variants":K,"wording":N,"changed_mean":..,
#    "changed_min":..,"ops":{dim:n},"undefined_mentions":M}
# changed = the share of H's wording strings (descriptions, rules, tool and
# parameter descriptions, loader texts, prompt block texts and items) not
# found verbatim in the variant; undefined_mentions = harness-lint warnings
# "mentions 'X', which is not ..." over all variants.  Used by
# tests/cli/hsa_any.sh; run it by hand for the README figures.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
: "${HAT_BIN:=$top/bin}"
export HAT_DATA="${HAT_DATA:-$top/data}" LC_ALL=C.UTF-8
H=${1:-$top/tests/fixtures/hsa/fresh}
K=${K:-20}; P=${P:-0.5}; VOCAB=${VOCAB:-train}; SEED=${SEED:-1}
T=$(mktemp -d "${TMPDIR:-/tmp}/hsaratesXXXXXX")
trap 'rm -rf "$T"' EXIT
"$HAT_BIN/harness-pack" "$H" >"$T/h.json"
"$HAT_BIN/hsa-augment" --harness "$T/h.json" --harness-only --bare -k "$K" --dims all --p "$P" \
    --vocab "$VOCAB" --seed "$SEED" --stats "$T/stats.json" >"$T/v.jsonl" 2>"$T/err"
bad=0; i=0
while read -r line; do
    i=$((i + 1)); printf '%s\n' "$line" >"$T/v$i.json"
    n=$("$HAT_BIN/harness-lint" "$T/v$i.json" 2>&1 | grep -c "mentions '" || true)
    bad=$((bad + n))
done <"$T/v.jsonl"
jq -c -n --slurpfile h "$T/h.json" --slurpfile s "$T/stats.json" --arg H "$H" --argjson p "$P" \
    --arg vocab "$VOCAB" --argjson bad "$bad" '
  def wording: [.skills[]? | .description?, .rules[]?],
               [.tools[]? | .description?, (.parameters.properties[]? | .description?)],
               [.skill_loader | .description?, .argument_description?, .preamble?],
               [.system_prompt.blocks[]? | .text?, (.items // [])[]] | .[] | strings;
  ($h[0] | [wording]) as $w
  | [inputs | [wording] as $v | ($w | map(select(. as $x | $v | index([$x]) | not)) | length) / ($w | length)] as $r
  | {harness: $H, vocab: $vocab, p: $p, variants: ($r | length), wording: ($w | length),
     changed_mean: (($r | add) / ($r | length) * 1000 | round / 1000),
     changed_min: ($r | min * 1000 | round / 1000),
     ops: ($s[0].dims | map_values(.ops)), unrewritable: ($s[0].dims | map_values(.unrewritable)),
     undefined_mentions: $bad}' "$T/v.jsonl"

#!/bin/sh
# nonce-vocab.sh — an HSA vocabulary whose names carry no meaning:
#
#   nonce-vocab.sh SEED OUTDIR [words]
#
# data/hsa/train with every word bank of names.json (skill heads and
# tails, their pinyin-like lists, the loader's and the tools' verbs and
# nouns, the argument heads) replaced by made-up words of 2-3 syllables,
# drawn from SEED (the same seed, the same bytes; about 6,000 distinct
# names, far more than a small model can memorise).  Its texts
# (paraphrases.json, hooks.json, rewrite.json, rules.json) stay train's.  With the
# train vocabulary every renamed skill keeps a word of its function
# ("deal_helper"), so a model can learn which word means which skill
# instead of reading the harness; under these names the skill list's
# descriptions and order are all that says which is which (small-notes.md).
#
# With "words", the banks hold real English words instead ("harbor_lantern",
# "ribbonPilot"), drawn at random whatever the function: the words a real
# tokenizer keeps whole (Qwen3's, tests/fixtures/conformance: 4-10 letters,
# 20,272), less every word of HSA's train and held-out vocabularies and
# of tools/dev-names.json (19,595 left), so no name says its function and
# none is a word the evaluation or the dev split renames with.  The
# pinyin-like banks stay made-up syllables.
set -eu
[ $# -eq 2 ] || [ $# -eq 3 -a "${3:-}" = words ] || { echo "usage: nonce-vocab.sh SEED OUTDIR [words]" >&2; exit 2; }
seed=$1 out=$2 mode=${3:-nonce}
top=$(cd "$(dirname "$0")/../.." && pwd)
data=${HAT_DATA:-$top/data}
src=$data/hsa/train
mkdir -p "$out"
for f in paraphrases.json hooks.json rewrite.json rules.json; do cp "$src/$f" "$out/$f"; done
: > "$out/.words"
if [ "$mode" = words ]; then
    jq -r '.. | strings' "$data/hsa/train/names.json" "$data/hsa/heldout/names.json" "$top/examples/tools/dev-names.json" \
        | tr -cs 'A-Za-z' '\n' | tr 'A-Z' 'a-z' | sort -u > "$out/.taken"
    jq -r '.model.vocab | keys[]' "$top/tests/fixtures/conformance/tokenizer/qwen3/tokenizer.json" \
        | sed -n 's/^\xc4\xa0\([a-z]\{4,10\}\)$/\1/p' | sort -u | comm -23 - "$out/.taken" > "$out/.words"
    rm -f "$out/.taken"
    [ "$(wc -l < "$out/.words")" -gt 10000 ] || { echo "nonce-vocab.sh: too few words from the tokenizer" >&2; exit 1; }
fi
# 64 banks of 400 words each, as one JSON array of arrays; with words,
# every bank but the pinyin ones (2i+1 for i < 20, and 41) draws from them.
awk -v seed="$seed" -v words="$out/.words" 'BEGIN {
    srand(seed); split("b d f g k l m n p r s t v z sh ch", c, " "); split("a e i o u ai ou", v, " ");
    nw = 0; while ((getline l < words) > 0) W[++nw] = l;
    printf "[";
    for (b = 0; b < 64; b++) {
        printf "%s[", b ? "," : "";
        pinyin = (b < 40 && b % 2) || b == 41;
        for (w = 0; w < 400; w++) {
            if (nw && !pinyin) s = W[1 + int(rand() * nw)];
            else {
                n = 2 + int(rand() * 2); s = "";
                for (k = 0; k < n; k++) s = s c[1 + int(rand() * 16)] v[1 + int(rand() * 7)];
            }
            printf "%s\"%s\"", w ? "," : "", s;
        }
        printf "]";
    }
    print "]" }' > "$out/.banks.json"
jq --slurpfile b "$out/.banks.json" '
  $b[0] as $w
  | .skills |= (to_entries | to_entries
      | map(.key as $i | .value | .value = (.value + {heads: $w[2 * $i], pinyin: $w[2 * $i + 1][0:100]})) | from_entries)
  | .skill_tails = $w[40] | .skill_tails_pinyin = $w[41][0:100]
  | .loader = {verbs: $w[42][0:60], nouns: $w[43][0:60]}
  | .tools |= (to_entries | to_entries
      | map(.key as $i | .value | .value = (.value + {verbs: $w[44 + $i][0:60], nouns: $w[54 + $i][0:60]})) | from_entries)
  | .params |= (to_entries | to_entries
      | map(.key as $i | .value | .value = (.value + {heads: $w[20 + $i][0:60]})) | from_entries)
' "$src/names.json" > "$out/names.json"
rm -f "$out/.banks.json" "$out/.words"

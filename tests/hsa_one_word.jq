# hsa_one_word.jq — one word changed in every rule of a compiled harness, as
# a weekly staff edit does (exact-text banks stop matching):
#   harness-pack examples/harness | jq -f tests/hsa_one_word.jq > edited.json
def one_word: . as $r
  | ([["the ", "this "], [" and ", " plus "], [" when ", " whenever "], [" with ", " using "],
      [" for ", " on "], [" by ", " via "], [" or ", " nor "], [" a ", " any "],
      [" exactly ", " just "], [" in ", " within "], [" details", " data"]][]
     | select(. as $p | $r | ascii_downcase | contains($p[0]))) as $p
  | $r | sub($p[0]; $p[1]; "i");
.skills[].rules |= map(first(one_word) // .)

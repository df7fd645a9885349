# opd-select.jq — OPD's records (examples/Makefile, OPD_SELECT=1): those
# of general-gen's opd split whose instructions the base's answer meets
# and the SFT model's does not (ifeval(1) lines, strict), in the split's
# order.
#   jq -n -c --slurpfile b BASE.ifeval.jsonl --slurpfile s SFT.ifeval.jsonl -f opd-select.jq general-opd.jsonl
def passed: map(select(.strict.follow_all_instructions) | {(.id): true}) | add // {};
($b | passed) as $bp | ($s | passed) as $sp
| inputs | select($bp[.id] and ($sp[.id] | not))

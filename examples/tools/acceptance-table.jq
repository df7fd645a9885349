# acceptance-table.jq — acceptance.jq's lines (one a run) as a text
# table, one row a run, columns as wide as their widest cell; "no" marks
# a line missed, "overlap" intervals that overlap.
#   for r in e31 e32; do jq -c --arg run $r -f acceptance.jq small-$r.json; done |
#     jq -r -s -f acceptance-table.jq
def f: (. * 10 | round) as $t | ($t | fabs) as $a
     | (if $t < 0 then "-" else "" end) + ($a / 10 | floor | tostring) + "." + ($a % 10 | tostring);
def sg: if . >= 0 then "+" + f else f end;
def m: if . then "" else " no" end;
[ ["run", "Fixed live", "variant HSA/Fixed, gap", "HSA live", "IFEval base/Fixed",
   "after OPD F/H", "OPD live cost F/H", "robust HAT/HSA-OPD"],
  (.[] | [ .run,
           "\(.fixed_live.fixed | f)\(.fixed_live.met | m)",
           "\(.variant_gap.hsa | f)/\(.variant_gap.fixed | f), \(.variant_gap.gap | sg)\(if .variant_gap.apart then "" else " overlap" end)\(.variant_gap.met | m)",
           "\(.hsa_live.hsa | f)\(.hsa_live.met | m)",
           "\(.ifeval_sft.base | f)/\(.ifeval_sft.fixed | f)\(.ifeval_sft.met | m)",
           "\(.ifeval_opd.fixed_opd | f)/\(.ifeval_opd.hsa_opd | f)\(.ifeval_opd.met | m)",
           "\(.opd_live_cost.fixed | f)/\(.opd_live_cost.hsa | f)\(.opd_live_cost.met | m)",
           "\(.hat_robust.hat | f)/\(.hat_robust.hsa_opd | f)\(.hat_robust.met | m)" ]) ]
| (transpose | map(map(length) | max + 2)) as $w
| .[] | to_entries | map(.value + (" " * ($w[.key] - (.value | length)))) | add | sub(" +$"; "")

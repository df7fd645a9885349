# acceptance.jq — issue 21's measured acceptance, read from one run's
# report --json (examples/results/small*.json), as one JSON line: each
# line's figures and whether it is met.  The lines, as the issue states
# them (pass rates in points, 95% Wilson intervals lo/hi):
#   fixed_live      Fixed-SFT passes >= 60 of Live-Stream QA
#   variant_gap     HSA-SFT >= Fixed-SFT + 15 on Harness-Variant QA, the
#                   intervals not overlapping (HSA-SFT's lo above Fixed-SFT's hi)
#   hsa_live        HSA-SFT on Live-Stream QA >= Fixed-SFT - 5
#   ifeval_sft      IFEval-style: Fixed-SFT below the base
#   ifeval_opd      after OPD (both SFT models) within 2 points of the base
#                   or above ...
#   opd_live_cost   ... while Live-Stream QA drops by <= 5 (both)
#   hat_robust      HAT >= HSA-SFT -> OPD on Tool/Prompt Robustness
#   jq -c --arg run NAME -f acceptance.jq RESULTS.json
def s(m; set): .scores[m][set].score;
def iv(m; set): .scores[m][set] | [.lo, .hi];
def r1: . * 10 | round / 10;
{run: $run,
 fixed_live: {fixed: s("fixed-sft"; "live"), met: (s("fixed-sft"; "live") >= 60)},
 variant_gap: {hsa: s("hsa-sft"; "variant"), fixed: s("fixed-sft"; "variant"),
               gap: ((s("hsa-sft"; "variant") - s("fixed-sft"; "variant")) | r1),
               apart: (iv("hsa-sft"; "variant")[0] > iv("fixed-sft"; "variant")[1]),
               met: (s("hsa-sft"; "variant") - s("fixed-sft"; "variant") >= 15
                     and iv("hsa-sft"; "variant")[0] > iv("fixed-sft"; "variant")[1])},
 hsa_live: {hsa: s("hsa-sft"; "live"), fixed: s("fixed-sft"; "live"),
            met: (s("hsa-sft"; "live") >= s("fixed-sft"; "live") - 5)},
 ifeval_sft: {base: s("base"; "ifeval"), fixed: s("fixed-sft"; "ifeval"),
              met: (s("fixed-sft"; "ifeval") < s("base"; "ifeval"))},
 ifeval_opd: {fixed_opd: s("fixed-sft-opd"; "ifeval"), hsa_opd: s("hsa-sft-opd"; "ifeval"),
              met: (([s("fixed-sft-opd"; "ifeval"), s("hsa-sft-opd"; "ifeval")] | min) >= s("base"; "ifeval") - 2)},
 opd_live_cost: {fixed: ((s("fixed-sft"; "live") - s("fixed-sft-opd"; "live")) | r1),
                 hsa: ((s("hsa-sft"; "live") - s("hsa-sft-opd"; "live")) | r1),
                 met: (([s("fixed-sft"; "live") - s("fixed-sft-opd"; "live"),
                         s("hsa-sft"; "live") - s("hsa-sft-opd"; "live")] | max) <= 5)},
 hat_robust: {hat: s("hat"; "robust"), hsa_opd: s("hsa-sft-opd"; "robust"),
              met: (s("hat"; "robust") >= s("hsa-sft-opd"; "robust"))}}

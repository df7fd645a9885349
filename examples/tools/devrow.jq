# devrow.jq — one model's row on the dev split (examples/Makefile dev-MODEL):
# [passed, cases] of the dev rollouts (rollout --judge): live, fresh
# (live phrased anew), variant (HSA's train vocabulary), unseen (names no
# model saw), unseen_p1 (every skill so renamed), real and real_p1 (the
# same under real words no vocabulary has), robust (faults, noisy and
# adversarial text, injections, a paraphrased prompt) and robust_fresh (the
# same from fresh phrasings); and of the IFEval-style
# dev prompts (ifeval, prompt-level strict).  skill: per agent set,
# [cases with no skill_selection reason (verdicts.jsonl(5)), cases]: the
# skill chosen right whether or not the case passed; under every skill
# renamed (the p1 sets) it is the look-up by description alone.
#   jq -n -c --arg m NAME --slurpfile l LIVE --slurpfile f FRESH --slurpfile v VARIANT \
#      --slurpfile u UNSEEN --slurpfile u1 UNSEEN_P1 --slurpfile r REAL --slurpfile r1 REAL_P1 --slurpfile b ROBUST \
#      --slurpfile bf ROBUST_FRESH \
#      --slurpfile i IFEVAL -f devrow.jq
def p(a): [(a | map(select(.verdict.pass)) | length), (a | length)];
def sk(a): [(a | map(select(all(.verdict.reasons[]?; .component != "skill_selection"))) | length), (a | length)];
{model: $m, live: p($l), fresh: p($f), variant: p($v), unseen: p($u), unseen_p1: p($u1),
 real: p($r), real_p1: p($r1), robust: p($b), robust_fresh: p($bf),
 ifeval: [($i | map(select(.strict.follow_all_instructions)) | length), ($i | length)],
 skill: {live: sk($l), fresh: sk($f), variant: sk($v), unseen: sk($u), unseen_p1: sk($u1),
         real: sk($r), real_p1: sk($r1), robust: sk($b),
         robust_fresh: sk($bf)}}

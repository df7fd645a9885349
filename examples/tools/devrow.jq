# devrow.jq — one model's row on the dev split (examples/Makefile dev-MODEL):
# [passed, cases] of the live and variant dev rollouts (rollout --judge) and
# of the IFEval-style dev prompts (ifeval, prompt-level strict).
#   jq -n -c --arg m NAME --slurpfile l LIVE --slurpfile v VARIANT --slurpfile i IFEVAL -f devrow.jq
def p(a): [(a | map(select(.verdict.pass)) | length), (a | length)];
{model: $m, live: p($l), variant: p($v),
 ifeval: [($i | map(select(.strict.follow_all_instructions)) | length), ($i | length)]}

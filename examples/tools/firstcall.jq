# firstcall.jq — the first call a model makes under each HSA variant case
# (rollout --tasks-are-cases output on examples/Makefile's dev
# variant.jsonl): does it call the variant's skill loader by its name,
# with the variant's argument key, naming a skill the variant has?
# Counts, for loaders renamed and kept apart (micro-notes e14, e15):
#   jq -s -c -f firstcall.jq c/M.var-240.jsonl
def loader: .harness.skill_loader // {} | {name: (.name // "load_skill"), arg: (.argument // "skill")};
def first_call: [.messages[]? | select(.role == "assistant") | .tool_calls[]?.function][0];
map(loader as $l | first_call as $c
    | {renamed: ($l.name != "load_skill"),
       named: ($c != null and $c.name == $l.name),
       key: ($c != null and (($c.arguments // {}) | type == "object") and (($c.arguments // {}) | has($l.arg))),
       skill: ($c != null and (((.harness.skills // []) | map(.name)) as $s
                               | (($c.arguments // {}) | if type == "object" then .[$l.arg] else null end) as $v
                               | $s | index([$v]) != null))})
| {n: length,
   renamed: map(select(.renamed)) | length,
   renamed_named: map(select(.renamed and .named)) | length,
   kept: map(select(.renamed | not)) | length,
   kept_named: map(select((.renamed | not) and .named)) | length,
   key: map(select(.key)) | length,
   skill: map(select(.skill)) | length}

# firstcall.jq — the first call a model makes under each HSA variant case
# (rollout --tasks-are-cases output on examples/Makefile's dev
# variant.jsonl): does it call the variant's skill loader by its name,
# with the variant's argument key, naming a skill the variant has?
# Counts, for loaders renamed and kept apart (micro-notes e14, e15):
#   jq -s -c -f firstcall.jq c/M.var-240.jsonl
def loader: .harness.skill_loader // {} | {name: (.name // "load_skill"), arg: (.argument // "skill")};
def first_call: [.messages[]? | select(.role == "assistant") | .tool_calls[]?.function][0];
def count(f): map(select(f)) | length;
map(loader as $l | first_call as $c
    | ($c.arguments | if type == "object" then . else {} end) as $a
    | {renamed: ($l.name != "load_skill"),
       named: ($c.name == $l.name),
       key: ($a | has($l.arg)),
       skill: ([.harness.skills[]?.name] | index([$a[$l.arg]]) != null)})
| {n: length, renamed: count(.renamed), renamed_named: count(.renamed and .named),
   kept: count(.renamed | not), kept_named: count((.renamed | not) and .named),
   key: count(.key), skill: count(.skill)}

# opening.jq — did a conversation open its viewer request as the teacher did?
#
# The learning test (tests/cli/learn.sh) and the micro profile's curves
# (examples/Makefile) measure how a trained model opens a request, before
# its reply, against the scripted teacher's trajectory for the same task
# (traj-gen on the same tasks):
#   skill  the first skill it loads has a function the teacher loaded;
#   tool   its first domain tool call (any tool but the skill loader) has
#          the function of the teacher's first one (none when the teacher
#          made none);
#   args   and the same arguments, compared by parameter function
#          (x-function), as text, case-insensitively: the product name,
#          variant, region, order number, height and weight copied from the
#          viewer's message.
# and two checks of form alone, which a model learns first:
#   formed the first assistant turn parsed and calls only tools the harness
#          has (the skill loader included);
#   named  the first skill it loads is one of the harness's skills.
# Names are read through each conversation's own inline harness, so a
# renamed skill or tool counts by its function.
#
#   jq -n -c -f opening.jq --slurpfile ref TEACHER.jsonl < TRAJ.jsonl
#
# One line per conversation: {id, task_id, intent, formed, named, skill,
# tool, args, ok}; with --arg summary 1, one line of counts of each.

def norm: tostring | ascii_downcase;

# The opening of one conversation: {skills: [functions loaded], call:
# {function, args: {x-function: value}} or null (the first domain call)}.
def opening:
  .harness as $h
  | ($h.skill_loader.name // "load_skill") as $loader
  | ($h.skill_loader.argument // "skill") as $sarg
  | [.messages[] | select(.role == "assistant") | (.tool_calls // [])[]
     | {name: .function.name, args: (.function.arguments // {})}] as $calls
  | ([.messages[] | select(.role == "assistant")][0]) as $first
  | ([$h.tools[].name, $loader]) as $names
  | {formed: ($first != null and $first.parse_error == null and ($first.tool_calls // []) != []
              and all($first.tool_calls[]; .function.name as $n | $names | index([$n]) != null)),
     named: ([$calls[] | select(.name == $loader)][0] as $l
             | $l != null and ([$h.skills[] | select(.name == $l.args[$sarg])] != [])),
     skills: [$calls[] | select(.name == $loader) | .args[$sarg] as $s
              | $h.skills[] | select(.name == $s) | .function],
     call: ([$calls[] | select(.name != $loader)][0] as $c
            | if $c == null then null
              else ([$h.tools[] | select(.name == $c.name)][0]) as $t
              | if $t == null then {function: null, args: {}}
                else {function: $t.function,
                      args: ($c.args | to_entries
                             | map({key: ($t.parameters.properties[.key]["x-function"] // .key),
                                    value: (.value | norm)}) | from_entries)}
                end
              end)};

($ref | map({key: .task_id, value: opening}) | from_entries) as $want
| [inputs | . as $c | $want[$c.task_id] as $w | ($c | opening) as $o
   | ($o.skills[0] as $s | $s != null and ($w.skills | index([$s]) != null)) as $skill
   | (if $w.call == null then $o.call == null
      else $o.call != null and $o.call.function == $w.call.function end) as $tool
   | ($tool and ($w.call == null or $o.call.args == $w.call.args)) as $args
   | {id: $c.id, task_id: $c.task_id, intent: $c.meta.intent,
      formed: $o.formed, named: $o.named, skill: $skill, tool: $tool, args: $args, ok: ($skill and $tool and $args)}]
| if $ARGS.named.summary then
    {n: length, formed: map(select(.formed)) | length, named: map(select(.named)) | length,
     skill: map(select(.skill)) | length, tool: map(select(.tool)) | length,
     args: map(select(.args)) | length, ok: map(select(.ok)) | length}
  else .[] end

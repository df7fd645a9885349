# probe.jq — the choices of a request's opening, as prompts for generate(1).
#
# Input: {"id","text"} lines of harness-render on the teacher's trajectories
# of single requests.  For each, up to three records {id, probe, cut, want,
# prefix, full}: prefix is the rendered text cut (at character cut) just
# before a choice the teacher made, want the text it wrote there, full the
# text a little past it (probe.sh cuts in token space with it):
#   skill  cut after '{"skill": "' of its first skill-loader call: the
#          skill's name;
#   tool   cut after '<tool_call>\n{"name": "' of its first domain call: the
#          tool's name;
#   arg    cut after the first argument's key of that call: the value, as
#          JSON text (a product name, an order number, ...) with what
#          closes it.
# A model continues each prompt greedily; the choice is right when its text
# starts with the teacher's.  This scores the choice apart from the format
# of the turn (a model learns to choose before it writes a whole turn
# right: micro-notes.md).  --arg loader NAME, --arg sarg NAME: the harness's
# skill loader and its argument (default load_skill, skill).
($ARGS.named.loader // "load_skill") as $loader
| ($ARGS.named.sarg // "skill") as $sarg
| .id as $id | .text as $t
| ("<tool_call>\n{\"name\": \"") as $open
# Where each call's name starts, in characters (split, not indices: jq 1.6
# counts indices in bytes and slices in characters).
| ($t | split($open)) as $pieces
| ([range(1; $pieces | length) as $k
    | ([$pieces[:$k][] | length] | add) + $k * ($open | length)]) as $calls
| [ $calls[] as $at
    | ($t[$at:] | capture("^(?<name>[^\"]*)\", \"arguments\": (?<args>\\{[^\\n]*\\})\\}\\n</tool_call>")) as $c
    | {at: $at, name: $c.name, args: $c.args} ] as $parsed
| ($parsed | map(select(.name == $loader))[0]) as $load
| ($parsed | map(select(.name != $loader))[0]) as $call
| (if $load then
     ($t[$load.at:] | index("\"" + $sarg + "\": \"")) as $k
     | ($load.at + $k + ($sarg | length) + 5) as $p
     | {id: "\($id)/skill", probe: "skill", cut: $p, want: ($t[$p:] | capture("^(?<v>[^\"]*\")").v)}
   else empty end),
  (if $call then
     {id: "\($id)/tool", probe: "tool", cut: $call.at, want: ($call.name + "\"")},
     (($t[$call.at:] | index("\"arguments\": {")) as $a
      | ($t[$call.at + $a + 14:] | capture("^(?<key>\"[^\"]*\": )(?<v>\"[^\"]*\"|[^,}]*)")) as $kv
      | ($call.at + $a + 14 + ($kv.key | length)) as $p
      | {id: "\($id)/arg", probe: "arg", cut: $p, want: $kv.v})
   else empty end)
| . + {prefix: $t[:.cut], full: $t[:(.cut + 200)]}

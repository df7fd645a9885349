#!/bin/sh
# probe.sh — score the choices a model makes at a request's opening,
# teacher-forced: the skill it loads, the tool it calls, the first argument
# it copies (probe.jq says where each is cut).
#
#   probe.sh CKPT TOKENIZER DEV
#
# TOKENIZER is the checkpoint's tokenizer.json; DEV as for curve.sh
# (harness.json, teacher.jsonl).  The prompt is cut in
# token space where the checkpoint's tokenizer splits the text (the longest
# common prefix of the ids of the text before the choice and of the text
# running past it), so the model sees the ids it was trained on; it
# continues greedily for 24 tokens and is right when its text starts with
# what the teacher wrote from that point.  Prints one line of counts:
#   {n, skill, tool, arg, tools}  (n requests, each with a skill probe;
#   tools: how many of them call a domain tool, with a tool and an arg probe).
set -eu
[ $# -eq 3 ] || { echo "usage: probe.sh CKPT TOKENIZER DEV" >&2; exit 2; }
ck=$1 tok=$2 dev=$3
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d "${TMPDIR:-/tmp}/probeXXXXXX")
trap 'rm -rf "$t"' EXIT
loader=$(jq -r '.skill_loader.name // "load_skill"' "$dev/harness.json")
sarg=$(jq -r '.skill_loader.argument // "skill"' "$dev/harness.json")
# tok-encode replaces the field it encodes by the ids: encode copies, so
# that "full" is still there to say what the model must write from the cut.
harness-render "$dev/teacher.jsonl" | jq -c -f "$here/probe.jq" --arg loader "$loader" --arg sarg "$sarg" |
    jq -c '. + {enc_full: .full, enc_prefix: .prefix}' |
    tok-encode --tokenizer "$tok" --field enc_full --ids-field fids |
    tok-encode --tokenizer "$tok" --field enc_prefix --ids-field pids |
    jq -c '(first(range(0; [.fids, .pids | length] | min) as $i | select(.fids[$i] != .pids[$i]) | $i)
            // ([.fids, .pids | length] | min)) as $l
           | {id, probe, cut, want, full, ids: .fids[:$l]}' > "$t/p.jsonl"
# What the prompt's ids decode to tells where in the text the model starts.
tok-decode --tokenizer "$tok" --text-field head --keep-ids < "$t/p.jsonl" |
    generate --ckpt "$ck" --max-tokens 24 |
    tok-decode --tokenizer "$tok" --field gen --text-field got |
    jq -c '(.full[(.head | length):.cut] + .want) as $target
           | {probe, right: (.got | startswith($target))}' |
    jq -s -c '{n: (map(select(.probe == "skill")) | length),
               skill: map(select(.probe == "skill" and .right)) | length,
               tool: map(select(.probe == "tool" and .right)) | length,
               arg: map(select(.probe == "arg" and .right)) | length,
               tools: map(select(.probe == "tool")) | length}'

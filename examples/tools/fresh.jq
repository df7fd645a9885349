# fresh.jq — the dev tasks rephrased with tools/fresh-phrasings.json:
#   jq -n -c --slurpfile p tools/fresh-phrasings.json -f tools/fresh.jq DEV/tasks.jsonl
# task k takes phrasing k mod n of its intent; the gold labels stay.
def fill($m): reduce ($m | to_entries[]) as $e (.; gsub("\\{" + $e.key + "\\}"; $e.value | tostring));
[inputs] | to_entries[] | .key as $k | .value
| $p[0][.intent] as $t
| ($k % ($t | length)) as $i
| (.context.mentions // {}) as $m
| .viewer.text = ($t[$i] | fill($m))
| .context.template = "fresh-\(.intent)/\($i)"

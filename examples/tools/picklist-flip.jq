# picklist-flip.jq — a copy-gen pick record with its routine list written
# description first ("- ABOUT -> NAME" for "- NAME: ABOUT"; small-notes e24, E3):
#   copy-gen --pick 1 ... | jq -c -f picklist-flip.jq
.messages |= map(if .role == "system" then .content |= (split("\n") | map(if startswith("- ") then (capture("^- (?<n>[^:]+): (?<d>.*)$") // null) as $m | (if $m then "- \($m.d) -> \($m.n)" else . end) else . end) | join("\n")) else . end)

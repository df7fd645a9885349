# variant-cases.jq — rollout --tasks-are-cases cases from hsa-augment's
# variants of the teacher's dev trajectories: each variant's harness with
# the task it answers ($t: the dev tasks, --slurpfile t tasks.jsonl).
($t | map({(.id): .}) | add) as $by
| {id: "v\(input_line_number)-\(.task_id)", task: $by[.task_id], harness}

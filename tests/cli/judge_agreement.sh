# judge_agreement.sh — the judge agrees with the human labels of
# tests/fixtures/judge/human (labelled by reading, README there) at least
# as well as it did when the checks were last changed, minus a margin for
# rounding: pass vs acceptable (agreement and Cohen's kappa), accuracy
# and effectiveness agreement, on dev, heldout, heldout2 (read and tuned on
# by issue 18's third round), heldout3 (tuned on by the fourth) and
# heldout4 (scored once, blind, after the fourth; tuned on by the fifth)
# and heldout5 (scored once, blind, after the fifth; tuned on by the
# sixth, session 8) and heldout6 (scored once, blind, after the sixth).
# The figures reached are
# in judge(1) and the README.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
H="$HAT_TOP/tests/fixtures/judge/human"
need "$H/world.json" "$H/harness.json" "$H/dev.traj.jsonl" "$H/heldout.labels.jsonl"

# agreement PART [WORLD]: "pass_agree pass_kappa acc_agree eff_agree n" (percent, kappa)
agreement() {
    judge --world "$H/${2:-world.json}" --tasks "$H/$1.tasks.jsonl" --harness "$H/harness.json" \
        -o "$T/$1.v.jsonl" "$H/$1.traj.jsonl" || return 1
    jq -n -r --slurpfile l "$H/$1.labels.jsonl" --slurpfile v "$T/$1.v.jsonl" '
        ($v | map({(.id): .}) | add) as $j
        | [$l[] | select($j[.id]) | {h: ., j: $j[.id]}] as $c
        | ($c | length) as $n
        | ($c | map(select(.h.pass == .j.pass)) | length) as $pa
        | ($c | map(select(.h.pass)) | length) as $hp
        | ($c | map(select(.j.pass)) | length) as $jp
        | (($hp * $jp + ($n - $hp) * ($n - $jp)) / ($n * $n)) as $pe
        | (($pa / $n - $pe) / (1 - $pe)) as $kappa
        | ($c | map(select(.h.accuracy == .j.scores.accuracy)) | length) as $aa
        | ($c | map(select(.h.effectiveness == .j.scores.effectiveness)) | length) as $ea
        | "\(100 * $pa / $n) \($kappa) \(100 * $aa / $n) \(100 * $ea / $n) \($n)"'
}
# at_least NAME VALUE FLOOR
at_least() {
    if awk -v v="$2" -v f="$3" 'BEGIN { exit !(v + 1e-9 >= f) }'; then pass "$1 ($2 >= $3)"; else flunk "$1" "$2 < $3"; fi
}

# floors PART N PASS KAPPA ACC EFF [WORLD]: every case judged, each figure at least its floor
floors() {
    part=$1 n=$2 fp=$3 fk=$4 fa=$5 fe=$6 world=${7:-world.json}
    set -- $(agreement "$part" "$world")
    [ "${5:-0}" -eq "$n" ] && pass "$part: every case judged" || flunk "$part: every case judged" "${5:-none}"
    at_least "$part pass agreement %" "$1" "$fp"
    at_least "$part pass kappa" "$2" "$fk"
    at_least "$part accuracy agreement %" "$3" "$fa"
    at_least "$part effectiveness agreement %" "$4" "$fe"
}
# The third round (issue 18) tuned on dev, heldout and heldout2 (heldout2
# had been scored blind once, after the second round: 82.3, 0.59, 77.8,
# 81.6).  heldout3 (its own world) was scored once, blind, after the third
# round (86.9, 0.68, 86.9, 81.7); the fourth round then read it case by case
# and tuned on it, so it is no longer blind.  The floors are what the
# fourth round reached on all four, less rounding.  (dev's and heldout's
# effectiveness fell from 100 to 99.2: dev-043 and heldout-085 label "ships
# from X" without the days effectiveness 0, while heldout3-055, -106 and
# -130 label the same reply 0.5; the judge follows the later sets, 0.5.)
floors dev 125 100 0.99 100 99.2
floors heldout 128 100 0.99 100 99.2
# The sixth round (session 8) raised heldout2's accuracy (a care label
# contradicted in words of a method, heldout2-012) and heldout3's
# effectiveness (heldout3-080: a partial fault's answered part checked).
floors heldout2 158 98.7 0.96 99.3 98.1
floors heldout3 175 100 0.99 100 97.7 world3.json
# heldout4 (world4, harness4; written and labelled blind in session 5) was
# scored once, after the fourth round was merged: 91.4% pass (kappa 0.82),
# 90.0% accuracy, 89.5% effectiveness.  Its floors guard against a
# regression.  Session 6 (round five) tuned on it, so it is a seen set now:
# 93.2% pass (kappa 0.86), 91.8% accuracy, 91.4% effectiveness.
# The sixth round lifted it to 95.5% pass (kappa 0.91), 95.9%, 94.1%.
floors heldout4 220 95.4 0.90 95.9 94.0 world4.json
# heldout5 (world5, harness5; written and labelled blind in session 6)
# was scored once, after the fifth round was merged: 87.7% pass (kappa
# 0.74), 86.8% accuracy, 83.2% effectiveness (targets 0.80, 92%, 85%:
# missed).  The sixth round (session 8) then read every disagreement and
# tuned on it, so it is a seen set too: 99.5% pass (kappa 0.99), 99.1%
# accuracy, 96.8% effectiveness.
floors heldout5 220 99.5 0.99 99.0 96.8 world5.json
# heldout6 (world6, harness6; written and labelled blind in session 8)
# was scored once, after the sixth round was merged: 95.0% pass (kappa
# 0.90), 95.0% accuracy, 92.3% effectiveness (targets 0.80, 92%, 85%: met).
floors heldout6 220 95.0 0.89 95.0 92.2 world6.json
rm -rf "$T"

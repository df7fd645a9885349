# curveplot.sh — examples/tools/curveplot.sh (make micro's plot): the plotted
# numbers are the passes in percent with their 95% Wilson intervals (the same
# as the micro table's), one block per run, the SVG names both runs and both
# panels, and a bad argument is a usage error that leaves no file behind.
. "$HAT_TOP/tests/cli/lib.sh"
T=$(mktmp)
P="$HAT_TOP/examples/tools/curveplot.sh"
command -v gnuplot >/dev/null || { skip "curveplot" "gnuplot not installed"; exit 0; }
printf '%s\n' '{"step":240,"pass":38,"n":100,"vpass":4,"vn":200}' '{"step":480,"pass":77,"n":100,"vpass":4,"vn":200}' >"$T/f.jsonl"
printf '%s\n' '{"step":240,"pass":20,"n":100}' '{"step":480,"pass":46,"n":100,"vpass":33,"vn":200}' >"$T/h.jsonl"
ok "two runs plotted" sh "$P" "$T/c.svg" fixed-sft="$T/f.jsonl" hsa-sft="$T/h.jsonl"
# 77 of 100: 77% [68, 84]; 33 of 200: 16.5% [12, 22]; a point without variant cases is NaN
r=$(awk '$1 == 480 { printf "%s %.0f %.0f %s %.0f %.0f;", $2, $3, $4, $5, $6, $7 }' "$T/c.dat")
[ "$r" = "77 68 84 2 1 5;46 37 56 16.5 12 22;" ] && pass "Wilson intervals as the micro table's" || flunk "Wilson intervals" "$r"
has "a run without variant cases plots NaN there" "$T/c.dat" '^240 20 .* NaN NaN NaN$'
[ "$(grep -c '^# ' "$T/c.dat")" -eq 2 ] && pass "one block per run" || flunk "one block per run"
has "the SVG names the first run" "$T/c.svg" 'fixed-sft'
has "the SVG names the second run" "$T/c.svg" 'hsa-sft'
has "both panels" "$T/c.svg" 'variant dev cases'
fails "NAME=FILE is required" 2 sh "$P" "$T/d.svg" "$T/f.jsonl"
fails "an unreadable curve file" 2 sh "$P" "$T/d.svg" x="$T/none.jsonl"
[ ! -e "$T/d.svg" ] && pass "no plot left behind" || flunk "no plot left behind"

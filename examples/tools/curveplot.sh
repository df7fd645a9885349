#!/bin/sh
# curveplot.sh — learning curves of curve.sh runs as one plot: judged dev
# passes (%) against SFT steps, live cases on the left, variant cases on
# the right, one line per run with its 95% Wilson interval as error bars.
#
#   curveplot.sh OUT.svg NAME=RUN.curve.jsonl...
#
# Writes OUT.svg (gnuplot's svg terminal: text, so it diffs and commits)
# and OUT.dat (the plotted numbers: step, live %, lo, hi, variant %, lo,
# hi; one block per run).  GNUPLOT names the program (default gnuplot).
set -eu
[ $# -ge 2 ] || { echo "usage: curveplot.sh OUT.svg NAME=RUN.curve.jsonl..." >&2; exit 2; }
out=$1; shift
dat=${out%.svg}.dat
# k passes of n -> "pct lo hi" (Wilson, z = 1.96), as examples/Makefile's table
wilson='def w(k; n): (k / n) as $p | 1.96 as $z | ($z * $z / n) as $q
  | (($p + $q / 2) / (1 + $q)) as $c | ($z * (($p * (1 - $p) / n + $q / n / 4) | sqrt) / (1 + $q)) as $h
  | "\($p * 100) \(($c - $h) * 100) \(($c + $h) * 100)";'
plot_l="" plot_r="" i=0
: >"$dat.tmp"
for run in "$@"; do
    name=${run%%=*} file=${run#*=}
    [ "$name" != "$run" ] && [ -r "$file" ] || { echo "curveplot.sh: $run: want NAME=FILE, a readable curve.jsonl" >&2; exit 2; }
    echo "# $name" >>"$dat.tmp"
    jq -r "$wilson"' "\(.step) \(w(.pass; .n)) \(if .vn then w(.vpass; .vn) else "NaN NaN NaN" end)"' "$file" >>"$dat.tmp"
    printf '\n\n' >>"$dat.tmp"
    sep=${plot_l:+, }
    plot_l="$plot_l$sep'$dat' index $i using 1:2:3:4 with yerrorlines title '$name'"
    plot_r="$plot_r$sep'$dat' index $i using 1:5:6:7 with yerrorlines title '$name'"
    i=$((i + 1))
done
mv "$dat.tmp" "$dat"
"${GNUPLOT:-gnuplot}" <<EOF
set terminal svg size 960,420 dynamic
set output '$out.tmp'
set multiplot layout 1,2
set yrange [0:100]
set ytics 0,20,100
set grid
set xlabel 'SFT steps'
set key top left
set ylabel 'dev passes (%), 95% Wilson'
set title 'live dev cases'
plot $plot_l
set ylabel ''
set title 'variant dev cases (HSA variants of the harness)'
plot $plot_r
unset multiplot
set output
EOF
mv "$out.tmp" "$out"

#!/usr/bin/env bash
# PNGs of the active-message benchmark's output (bench/am/run.sh), the paper's
# figures in miniature:
#   bash bench/am/plot.sh OUTDIR RUN_NP2.txt [RATE_RUN.txt ...]
# RUN_NP2.txt: a whole run (segments, amv lines) -> OUTDIR/am-segments.png (Fig. 5a:
# latency against segments, base/excl/hint), OUTDIR/am-segments-ratio.png (each
# optimization's latency against the one before it) and OUTDIR/am-amv.png (Fig. 9: MPIX_Am
# and MPIX_Amv (1.0, 0.8) against the generated share; not made from a run without amv
# lines, e.g. run.sh 2 --only segments). RATE_RUN.txt: runs with a rate line
# at several NP (run.sh NP ... --only rate) -> OUTDIR/am-origins.png (Fig. 8: AMs per
# second in all against the number of origins, base/excl/hint and MPI_Get_accumulate).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bash bench/am/plot.sh OUTDIR RUN_NP2.txt [RATE_RUN.txt ...]" >&2; exit 1; }
out=$1 run=$2
shift 2
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
header=$(sed -n 's/^# \(20[0-9-]* [0-9:]* UTC\).*/\1/p' "$run" | head -1)

# segments  N  base X us (...)  excl Y us (...)  hint Z us (...)
awk '$1 == "segments" { print $2, $4, $11, $16 }' "$run" >"$tmp/seg"
awk '{ print $1, $3 / $2, $4 / $3 }' "$tmp/seg" >"$tmp/seg-ratio"
# amv  share S  MPIX_Am A/s  MPIX_Amv(1.0) B/s  MPIX_Amv(0.8) C/s  (in millions)
awk '$1 == "amv" { gsub("/s", ""); print $3, $5 / 1e6, $7 / 1e6, $9 / 1e6 }' "$run" >"$tmp/amv"
if [ ! -s "$tmp/seg" ]; then
    echo "plot.sh: $run has no segments lines (a run of bench/am/run.sh 2, whole or --only segments)" >&2
    exit 1
fi

preamble='set terminal pngcairo size 720,480 font ",11"
set grid'
# A gnuplot plot command: column 1 of FILE against columns 2, 3, ..., one titled line each
# (gnuplot's enhanced text: write _ as \\_ in a title).
plot_cmd() { # FILE TITLE...
    local col=2 sep="plot \"$1\""
    shift
    for title in "$@"; do
        printf '%s using 1:%d with linespoints title "%s"' "$sep" "$col" "$title"
        sep=', ""'
        col=$((col + 1))
    done
    echo
}

gnuplot <<EOF
$preamble
set key top left
set output "$out/am-segments.png"
set title "lock + one remote-search AM + unlock (np 2, $header)"
set logscale xy
set xlabel "segments per AM"
set ylabel "latency (us)"
$(plot_cmd "$tmp/seg" base "exclusive lock" "window hint")
set output "$out/am-segments-ratio.png"
set title "each optimization against the one before it (np 2, $header)"
unset logscale
set logscale x
set key bottom left
set ylabel "latency ratio (below 1: faster)"
set yrange [0.7:1.15]
set arrow from graph 0, first 0.9 to graph 1, first 0.9 nohead dashtype 2
set label "the issue's goal: 10% faster" at graph 0.02, first 0.89 front
$(plot_cmd "$tmp/seg-ratio" "exclusive lock / base" "window hint / exclusive lock")
EOF

if [ ! -s "$tmp/amv" ]; then
    echo "plot.sh: no amv lines in $run: am-amv.png not made" >&2
else
    gnuplot <<EOF
$preamble
set output "$out/am-amv.png"
set title "remote-search AMs of 16 segments per second (np 2, $header)"
set key bottom left
set xlabel "share of the maximum output generated"
set ylabel "AMs per second (millions)"
set yrange [0:*]
$(plot_cmd "$tmp/amv" 'MPIX\\_Am' 'MPIX\\_Amv (1.0)' 'MPIX\\_Amv (0.8)')
EOF
fi

[ $# -gt 0 ] || exit 0
# "# np P (O origin(s) ..." then "rate  base X/s  excl Y/s  hint Z/s  MPI_Get_accumulate G/s ..."
for f in "$@"; do
    awk '$2 == "np" { o = $4; sub("[(]", "", o) } $1 == "rate" { gsub("/s", ""); print o, $3, $5, $7, $9 }' "$f"
done | sort -n >"$tmp/rate"
gnuplot <<EOF
$preamble
set key top right
set output "$out/am-origins.png"
set title "1-segment AMs per second in all, many origins to one target"
set logscale y
set xlabel "origins (np - 1)"
set ylabel "AMs per second"
$(plot_cmd "$tmp/rate" base "exclusive lock" "window hint" 'MPI\\_Get\\_accumulate')
EOF

# One measure of bench/run-all.sh against queue depth: one line per PML/backend.
#   gnuplot -e "in='rate.csv'; out='rate.png'; ttl='...'; ylab='msg/s'; ncol=16" bench/plot-deepq.gp
# in: CSV with a header line; column 1 is N (the x tick labels, evenly spaced),
# columns 2..ncol one configuration each (empty: no value); ob1 and pml_ucx first.
set datafile separator ','
set datafile missing ''
# libgd's png: a palette image, a fifth of pngcairo's bytes (the PNGs are committed).
set terminal png size 960,600 font 'DejaVuSans,9'
set output out
set title ttl noenhanced
set xlabel 'N: entries queued ahead of the window'
set ylabel ylab
set logscale y
set format y '%.0s%c'
set grid xtics ytics mytics
set key outside right top noenhanced
set offsets 0.2, 0.2, 0, 0
# ob1 and pml_ucx thick and dark; the ubermatch backends in 8 colours (then the same
# colours again, told apart by their point types; pngcairo would also dash them).
array colours[8] = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf']
dashes(i) = i <= 3 ? 1 : (i - 4) / 8 + 1
colour(i) = i == 2 ? '#000000' : i == 3 ? '#7f7f7f' : colours[(i - 4) % 8 + 1]
plot for [i=2:ncol] in using 0:i:xtic(1) with linespoints \
    lw (i <= 3 ? 3 : 2) lc rgb colour(i) dt dashes(i) pt ((i - 2) % 13 + 1) ps 1.2 \
    title columnheader(i)

# Plot of the clustering benchmark (run by test/bench/run_cluster.sh):
#   gnuplot -e "resdir='test/bench/results'; docdir='docs'" test/bench/plot_cluster.gp
#
# cluster_i3m_vs_static.csv: baseline,n,k,op,pct,changes,il_incremental,
#   il_static,il_ratio,... one row per baseline (median: kc_build on the
#   30,162 rows; greedy: kc_build_greedy on 5,000), k (3, 5), op (insert,
#   delete) and increment pct (1, 5, 10, 25, 50).
# docs/cluster_il.png: IL of the incremental clustering over IL of the static
#   one on the same final rows, against the increment, inserts on the left
#   and deletes on the right.

if (!exists("resdir")) resdir = 'test/bench/results'
if (!exists("docdir")) docdir = 'docs'

i3m = resdir . '/cluster_i3m_vs_static.csv'

# rows "pct ratio" of one series
series(base, k, op) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && $3 == %d && $4 == \"%s\" {print $5, $9}' %s | sort -g", base, k, op, i3m)

set terminal pngcairo size 1200,520 font "sans,11"
set output docdir . '/cluster_il.png'
set datafile separator whitespace
set style data linespoints
set grid xtics ytics
set logscale x
set xtics (1, 5, 10, 25, 50)
set xrange [0.8:60]
set yrange [0.6:1.35]
set xlabel "increment (% of the rows, one at a time)"
set ylabel "IL incremental / IL static"
set key bottom left

set multiplot layout 1,2 title "Adult, 8 quasi-identifiers: I3M incremental maintenance against a static clustering of the same rows"

set title "inserts (kc\\_insert)"
plot series("median", 3, "insert") using 1:2 title "kc\\_build, 30,162 rows, k = 3" lw 2 pt 7, \
     series("median", 5, "insert") using 1:2 title "kc\\_build, 30,162 rows, k = 5" lw 2 pt 5, \
     series("greedy", 3, "insert") using 1:2 title "greedy, 5,000 rows, k = 3" lw 2 pt 9, \
     series("greedy", 5, "insert") using 1:2 title "greedy, 5,000 rows, k = 5" lw 2 pt 11, \
     1.15 title "target at 10 %: 1.15" lw 1 dt 2 lc rgb "gray40", \
     1.0 notitle lw 1 lc rgb "black"

set title "deletes (kc\\_delete)"
plot series("median", 3, "delete") using 1:2 title "kc\\_build, 30,162 rows, k = 3" lw 2 pt 7, \
     series("median", 5, "delete") using 1:2 title "kc\\_build, 30,162 rows, k = 5" lw 2 pt 5, \
     series("greedy", 3, "delete") using 1:2 title "greedy, 5,000 rows, k = 3" lw 2 pt 9, \
     series("greedy", 5, "delete") using 1:2 title "greedy, 5,000 rows, k = 5" lw 2 pt 11, \
     1.0 notitle lw 1 lc rgb "black"

unset multiplot

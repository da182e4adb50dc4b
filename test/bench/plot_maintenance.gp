# Plots of the maintenance benchmark (run by make bench after
# test/bench/maintenance.sh):
#   gnuplot -e "resdir='test/bench/results'; docdir='docs'" test/bench/plot_maintenance.gp
#
# maintenance.csv: test,shape,rows,clients,baseline,keanon,unit,ratio

if (!exists("resdir")) resdir = 'test/bench/results'
if (!exists("docdir")) docdir = 'docs'

csv = resdir . '/maintenance.csv'
shapes = "uniform gain hours"

# rows "table-rows value" of one test and shape (1 client); col 8 is the
# ratio, 6 the keanon figure, 5 the baseline's
series(test, shape, col) = sprintf("< awk -F, '$1 == \"%s\" && $2 == \"%s\" && $4 == 1 {print $3, $%d}' %s | sort -g", test, shape, col, csv)

set terminal pngcairo size 1000,700 font "sans,11"
set datafile separator whitespace
set logscale x
set format x "10^{%L}"
set xlabel "rows in the table"
set grid xtics ytics
set key outside right top
set style data linespoints

set output docdir . '/maintenance_insert.png'
set multiplot layout 2,2 title "Single-row autocommit INSERT, keanon against a btree-indexed twin, side by side in one run"
set title "time per INSERT, keanon / btree (target: 3x)"
set ylabel "ratio"
set yrange [0:*]
plot for [s in shapes] series("insert", s, 8) title s lw 2, 3 title "target" dt 2 lc rgb "gray"
set title "WAL bytes per INSERT, keanon / btree"
set ylabel "ratio"
plot for [s in shapes] series("wal_per_insert", s, 8) title s lw 2
set title "published rows written per INSERT (keanon)"
set ylabel "rows"
plot for [s in shapes] series("rows_written_per_insert", s, 6) title s lw 2
set title "value-index pages dirtied per INSERT"
set ylabel "pages"
plot for [s in shapes] series("index_pages_per_insert", s, 6) title "keanon, " . s lw 2, \
     for [s in shapes] series("index_pages_per_insert", s, 5) title "btree, " . s dt 3
unset multiplot

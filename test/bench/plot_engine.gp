# Plots of the engine benchmark (run by test/bench/run_engine.sh):
#   gnuplot -e "resdir='test/bench/results'; docdir='docs'" test/bench/plot_engine.gp
#
# engine_adult.csv: algorithm,k,e,delta_pct,seconds,sum_error
#   Each configuration appears once, so the sweeps are selected by their
#   fixed parameters (k sweep: e = 100, delta = 50; e sweep: k = 5,
#   delta = 50; delta sweep: k = 5, e = 100, delta below 50) and sorted on x.
# engine_scale.csv: shape,n,build_seconds,insert_us,delete_us,
#   runs_recomputed_per_insert,mem_mb

if (!exists("resdir")) resdir = 'test/bench/results'
if (!exists("docdir")) docdir = 'docs'

adult = resdir . '/engine_adult.csv'
scale = resdir . '/engine_scale.csv'
algs = "keanon incremental quadratic approx"

# rows "x seconds" of one algorithm: awk condition cond, x in column xcol
sweep(alg, cond, xcol) = sprintf("< awk -F, 'NR > 1 && $1 == \"%s\" && %s {print $%d, $5}' %s | sort -g", alg, cond, xcol, adult)

set terminal pngcairo size 900,600 font "sans,11"
set datafile separator whitespace
set logscale y
set format y "10^{%L}"
set ylabel "seconds for the whole increment (mean)"
set key outside right top
set grid xtics ytics mytics
set style data linespoints

set output docdir . '/engine_adult_k.png'
set title "Adult capital-loss, e = 100, delta = 50 %: maintaining the increment"
set xlabel "k"
plot for [a in algs] sweep(a, "$3 == 100 && $4 == 50", 2) using 1:2 title a lw 2 pt 7

set output docdir . '/engine_adult_e.png'
set title "Adult capital-loss, k = 5, delta = 50 %: maintaining the increment"
set xlabel "e"
plot for [a in algs] sweep(a, "$2 == 5 && $4 == 50", 3) using 1:2 title a lw 2 pt 7

set output docdir . '/engine_adult_delta.png'
set title "Adult capital-loss, k = 5, e = 100: maintaining the increment"
set xlabel "delta (% of the rows inserted one at a time)"
plot for [a in algs] sweep(a, "$2 == 5 && $3 == 100 && $4 < 50", 4) using 1:2 title a lw 2 pt 7

# scale: microseconds per change against table size; log y as well, so the
# duplicate-heavy shape (a tenth of a microsecond) stays readable
set datafile separator ","
set output docdir . '/engine_scale.png'
set title "keanon engine, k = 5: time per single-row change"
set xlabel "rows in the table (n)"
set ylabel "microseconds per change (mean)"
set logscale xy
set format y "%g"
set format x "10^{%L}"
set autoscale y
set key outside right top
plot scale using 2:(strcol(1) eq "uniform" ? $4 : NaN) title "uniform, insert" lw 2 pt 7, \
     scale using 2:(strcol(1) eq "uniform" ? $5 : NaN) title "uniform, delete" lw 2 pt 5, \
     scale using 2:(strcol(1) eq "dup" ? $4 : NaN) title "dup, insert" lw 2 pt 9, \
     scale using 2:(strcol(1) eq "dup" ? $5 : NaN) title "dup, delete" lw 2 pt 11

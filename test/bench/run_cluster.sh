#!/usr/bin/env bash
# Build and run the clustering benchmark (test/bench/kc_bench, from
# test/bench/kc_bench.c and src/cluster/*.c): the I3M and similar-B-tree
# experiments on the UCI Adult data, scaling on synthetic rows, NCP at
# k = 10.  Writes
#   test/bench/results/cluster_i3m_vs_static.csv   cluster_sbtree_vs_i3m.csv
#   test/bench/results/cluster_scaling.csv         cluster_ncp.csv
#   test/bench/results/cluster_window_replay.csv   cluster_window_arrivals.csv
#   test/bench/results/cluster_window_scaling.csv
#   test/bench/results/cluster_machine.txt
#   (and each experiment's stderr beside its CSV as cluster_*.log)
# then, when gnuplot is installed, the plot docs/cluster_il.png.
#
# Environment:
#   ADULT_DATA       the UCI Adult file (default: data/adult.data, else
#                    ../shared/data/adult.data beside the work tree)
#   HIERARCHIES      the hierarchy folder (default: test/bench/hierarchies)
#   KC_SCALE_MAX_N   the largest size of the scaling runs (default 1000000)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

bench=test/bench/kc_bench
results=test/bench/results
hierarchies=${HIERARCHIES:-test/bench/hierarchies}

make --no-print-directory "$bench"

adult=${ADULT_DATA:-}
if [ -z "$adult" ]; then
	for candidate in data/adult.data ../shared/data/adult.data; do
		if [ -r "$candidate" ]; then
			adult=$candidate
			break
		fi
	done
fi
if [ -z "$adult" ] || [ ! -r "$adult" ]; then
	echo "run_cluster: the UCI Adult file was not found; set ADULT_DATA" >&2
	exit 1
fi

mkdir -p "$results" docs

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "nproc: $(nproc)"
	echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
	echo "os: $(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")"
	echo "kernel: $(uname -r)"
	echo "compiler: $(cc --version | head -n 1)"
	echo "memory: $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$results/cluster_machine.txt"
cat "$results/cluster_machine.txt"

start=$(date +%s)
for experiment in i3m_vs_static sbtree_vs_i3m scaling ncp window_replay window_arrivals window_scaling; do
	echo "run_cluster: $experiment"
	csv=$results/cluster_$experiment.csv
	log=$results/cluster_$experiment.log
	if ! "$bench" "$experiment" "$adult" "$hierarchies" > "$csv" 2> "$log"; then
		cat "$log" >&2
		exit 1
	fi
	cat "$csv"
done
echo "run_cluster: $(( $(date +%s) - start )) s in all"

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$results/cluster_machine.txt"

if command -v gnuplot > /dev/null 2>&1; then
	gnuplot -e "resdir='$results'; docdir='docs'" test/bench/plot_cluster.gp
	echo "run_cluster: plot written to docs/cluster_il.png"
else
	echo "run_cluster: gnuplot is not installed; no plot (apt-get install gnuplot-nox)"
fi

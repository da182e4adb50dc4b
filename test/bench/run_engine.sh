#!/usr/bin/env bash
# Run the engine benchmark built by `make bench-engine` (test/bench/ke_bench):
# the research's experiment on the Adult data, then the scale runs.  Writes
#   test/bench/results/engine_adult.csv   engine_scale.csv   machine.txt
#   (and the programs' stderr beside them as engine_adult.log, engine_scale.log)
# then, when gnuplot is installed, the plots docs/engine_*.png.
#
# Environment:
#   ADULT_DATA    the UCI Adult file (default: data/adult.data, else
#                 ../shared/data/adult.data beside the work tree)
#   SCALE_NS      table sizes of the scale runs
#                 (default: "10000 100000 1000000 10000000")
#   SCALE_SHAPES  shapes of the scale runs (default: "uniform dup")
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

bench=test/bench/ke_bench
results=test/bench/results
scale_ns=${SCALE_NS:-"10000 100000 1000000 10000000"}
scale_shapes=${SCALE_SHAPES:-"uniform dup"}

if [ ! -x "$bench" ]; then
	echo "run_engine: $bench is not built; run 'make bench-engine'" >&2
	exit 1
fi

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
	echo "run_engine: the UCI Adult file was not found; set ADULT_DATA" >&2
	exit 1
fi

mkdir -p "$results" docs

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "nproc: $(nproc)"
	echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
	echo "kernel: $(uname -r)"
	echo "compiler: $(cc --version | head -n 1)"
	echo "memory: $(free -g 2>/dev/null | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$results/machine.txt"
cat "$results/machine.txt"

echo "run_engine: adult ($adult)"
"$bench" adult "$adult" > "$results/engine_adult.csv" 2> "$results/engine_adult.log" || {
	cat "$results/engine_adult.log" >&2
	exit 1
}
cat "$results/engine_adult.csv"

echo "run_engine: scale"
: > "$results/engine_scale.log"
first=1
for shape in $scale_shapes; do
	for n in $scale_ns; do
		if ! out=$("$bench" scale "$n" "$shape" 2>> "$results/engine_scale.log"); then
			cat "$results/engine_scale.log" >&2
			exit 1
		fi
		if [ "$first" -eq 1 ]; then
			printf '%s\n' "$out" > "$results/engine_scale.csv"
			first=0
		else
			printf '%s\n' "$out" | tail -n +2 >> "$results/engine_scale.csv"
		fi
		printf '%s\n' "$out" | tail -n 1
	done
done

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$results/machine.txt"

if command -v gnuplot > /dev/null 2>&1; then
	gnuplot -e "resdir='$results'; docdir='docs'" test/bench/plot_engine.gp
	echo "run_engine: plots written to docs/engine_*.png"
else
	echo "run_engine: gnuplot is not installed; no plots (apt-get install gnuplot-nox)"
fi

#!/usr/bin/env bash
# Run the full-domain benchmark built by `make bench-fulldomain`
# (test/bench/fd_bench): Kiyomoto and Miyake's Table 1-3 settings and
# ARX's benchmark set-up.  Writes
#   test/bench/results/fulldomain_adult.csv       Table 2 settings, Adult
#   test/bench/results/fulldomain_presample.csv   Table 1 (pre-sampling), Adult
#   test/bench/results/fulldomain_arx.csv         ARX's set-up, Adult
#   test/bench/results/fulldomain_census.csv      Table 3 settings, synthetic
#   test/bench/results/fulldomain_machine.txt
#
# Environment:
#   ADULT_DATA    the UCI Adult file (default: data/adult.data)
#   CENSUS_ROWS   rows of the synthetic Census-Income table (default 200000)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

bench=test/bench/fd_bench
results=test/bench/results
hier=test/bench/hierarchies_arx
adult=${ADULT_DATA:-data/adult.data}
census_rows=${CENSUS_ROWS:-200000}

if [ ! -x "$bench" ]; then
	echo "run_fulldomain: $bench is not built; run 'make bench-fulldomain'" >&2
	exit 1
fi
if [ ! -r "$adult" ]; then
	echo "run_fulldomain: $adult not found; set ADULT_DATA" >&2
	exit 1
fi
mkdir -p "$results"

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "nproc: $(nproc)"
	echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n 1)"
	echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
	echo "compiler: $(cc --version | head -n 1)"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$results/fulldomain_machine.txt"

run() {
	local name=$1
	shift
	echo "run_fulldomain: $name"
	"$bench" "$@" > "$results/fulldomain_$name.csv"
	column -s, -t < "$results/fulldomain_$name.csv" | cut -c1-200
}

run adult paper "$adult" "$hier"
run presample presample "$adult" "$hier"
run arx arx "$adult" "$hier"
run census census "$census_rows"

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$results/fulldomain_machine.txt"

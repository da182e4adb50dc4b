#!/usr/bin/env bash
# Bound aggregates against plain aggregates over the same published view of
# a 1M-row watched table, side by side in one throwaway cluster: five
# alternating rounds of each query, CSV of every timing, then the medians
# and their ratio.  Run as root after `make install`.
#   query,round,method,ms
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${ROWS:-1000000}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_psql -c "CREATE EXTENSION keanon" \
	-c "CREATE TABLE people (id integer PRIMARY KEY, grp integer, age integer, salary integer)" \
	-c "INSERT INTO people SELECT i, i % 100, 18 + i % 60, (random() * 200000)::integer FROM generate_series(1, $rows) i"
start=$(date +%s.%N)
bench_psql -c "SELECT keanon.watch('people', 'salary', '{grp,age}', 5, 100)" >/dev/null
end=$(date +%s.%N)
echo "watch_seconds,$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
bench_psql -c "VACUUM ANALYZE people_keanon_rows" -c "VACUUM ANALYZE people_keanon_parts"

# time one query (ms) with psql's \timing
time_query() {
	bench_psql -c '\timing on' -c "$1" | awk '/^Time:/ {print $2}'
}

echo "query,round,method,ms"
results=$(mktemp)
for q in all grp7 age30_40; do
	case $q in
		all) where="true" ;;
		grp7) where="grp = 7" ;;
		age30_40) where="age BETWEEN 30 AND 40" ;;
	esac
	for round in 1 2 3 4 5; do
		{
			echo "$q,$round,sum,$(time_query "SELECT sum(salary) FROM people_anon WHERE $where")"
			echo "$q,$round,sum_bounds,$(time_query "SELECT keanon.sum_bounds(keanon_pid) FROM people_anon WHERE $where")"
			echo "$q,$round,min_max,$(time_query "SELECT min(salary), max(salary) FROM people_anon WHERE $where")"
			echo "$q,$round,min_max_bounds,$(time_query "SELECT keanon.min_bounds(keanon_pid), keanon.max_bounds(keanon_pid) FROM people_anon WHERE $where")"
		} | tee -a "$results"
	done
done
bench_psql -At -c "SELECT 'check,' || keanon.check('people')"

# medians per query and method, and the ratios bound / plain
echo "query,median_sum_ms,median_sum_bounds_ms,ratio,median_min_max_ms,median_min_max_bounds_ms,ratio"
sort -t, -k1,1 -k3,3 -k4,4n "$results" | awk -F, '
	{ v[$1 "," $3] = v[$1 "," $3] " " $4; q[$1] = 1 }
	function med(s,   a, n) { n = split(s, a, " "); return a[int((n + 1) / 2)] }
	END {
		for (k in q)
		{
			s = med(v[k ",sum"]); b = med(v[k ",sum_bounds"])
			m = med(v[k ",min_max"]); mb = med(v[k ",min_max_bounds"])
			printf "%s,%.1f,%.1f,%.2f,%.1f,%.1f,%.2f\n", k, s, b, b / s, m, mb, mb / m
		}
	}'
rm -f "$results"

#!/usr/bin/env bash
# What one large write costs a live watch in backend memory: a watched table
# of ROWS rows (default 10^6; values uniform up to 10^7, k = 5, e = 100)
# takes ADD more rows (default 400,000) in one INSERT ... SELECT, with
# work_mem at each of WORK_MEMS (default "4MB 64MB"); a sampler reads the
# backend's RssAnon from /proc every 20 ms and keeps the largest.  The
# keanon index's page store keeps its private page copies within work_mem
# (at least 256 pages), installing the least recently used ones early.
# GENERALIZE=K watches with generalize => K (the quasi-identifier published
# in groups of K), whose maintenance frees each row's work before the next.
# Run as root after `make install`.  CSV on stdout:
#   work_mem,rows,added,seconds,peak_rss_anon_mb,index_mb
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${ROWS:-1000000}
add=${ADD:-400000}
work_mems=${WORK_MEMS:-"4MB 64MB"}
generalize=${GENERALIZE:+", generalize => $GENERALIZE"}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_sql -c "CREATE EXTENSION keanon" -c "CREATE EXTENSION cube"
echo "work_mem,rows,added,seconds,peak_rss_anon_mb,index_mb"
for wm in $work_mems; do
	bench_sql -c "DROP TABLE IF EXISTS t" \
		-c "CREATE TABLE t (id bigint PRIMARY KEY, qi integer, v integer)" \
		-c "INSERT INTO t SELECT i, i % 100, (random() * 10000000)::int FROM generate_series(1, $rows) i" \
		-c "SELECT keanon.watch('t', 'v', '{qi}', 5, 100$generalize)" -c "VACUUM ANALYZE" -c "CHECKPOINT"
	pidfile=$bench_tmp/pid
	rm -f "$pidfile"
	# the session writes its pid, waits for the sampler, then inserts
	bench_psql -At >"$bench_tmp/out" <<SQL &
\o $pidfile
SELECT pg_backend_pid();
\o
SELECT pg_sleep(0.5);
SET work_mem = '$wm';
SET maintenance_work_mem = '$wm';
SELECT extract(epoch FROM clock_timestamp());
INSERT INTO t SELECT i, i % 100, (random() * 10000000)::int FROM generate_series($((rows + 1)), $((rows + add))) i;
SELECT extract(epoch FROM clock_timestamp());
SELECT keanon.check('t');
SELECT pg_relation_size('t_keanon_idx') / 1048576;
SQL
	psql_pid=$!
	while [ ! -s "$pidfile" ]; do sleep 0.05; done
	backend=$(tr -d '[:space:]' <"$pidfile")
	peak=0
	while kill -0 "$psql_pid" 2>/dev/null; do
		kb=$(awk '/^RssAnon:/{print $2}' "/proc/$backend/status" 2>/dev/null || echo 0)
		[ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
		sleep 0.02
	done
	wait "$psql_pid"
	mapfile -t out <"$bench_tmp/out"
	if [ "${out[3]}" != t ]; then
		echo "memory: keanon.check failed after the insert" >&2
		exit 1
	fi
	awk -v wm="$wm" -v r="$rows" -v a="$add" -v s="${out[1]}" -v e="${out[2]}" -v p="$peak" -v ix="${out[4]}" \
		'BEGIN{printf "%s,%d,%d,%.1f,%.0f,%s\n", wm, r, a, e - s, p / 1024, ix}'
done

#!/usr/bin/env bash
# Why a flush slows down as the table grows: one keanon.flush of PENDING
# (default 20,000) pending single-row INSERTs into a deferred watch of a
# table of N rows (SIZES, default 10^5, 10^6 and 10^7), values uniform up
# to 10^6, k = 5, the worker off.  With e fixed (100), the partitions hold
# more rows as the table grows denser; with e scaled by the density
# (e = 10^7 / N), they keep their size.  Comparing the two tells the
# partitions' size from the table's own size.  Run as root after `make
# install`.  The flush follows a CHECKPOINT, so that each page it is first
# to change since costs a full-page image in the WAL, as on a server whose
# checkpoints come more often than a page's changes (CHECKPOINT_FIRST=0:
# none, the pages written since the last).  CSV on stdout:
#   rows,e,pending,flush_ms,rows_per_s,row_updates,updates_per_arrival,partitions,avg_partition_rows,
#   wal_kb_per_arrival,fpi_per_arrival,twin_ms,twin_rows_per_s,twin_wal_kb_per_arrival,twin_fpi_per_arrival,
#   hot_twin_ms,hot_twin_rows_per_s,hot_twin_wal_kb_per_arrival,hot_twin_fpi_per_arrival
#
# The twin (TWIN=0: none) is the floor of any applier that stores the
# publication row by row: a plain table shaped like the rows table (the
# same columns, its key and the two partition btrees, pages 80 % full) of
# as many rows, after the same CHECKPOINT, takes in one transaction the
# same writes by SQL: the arrivals inserted into random partitions, and as
# many updates of the published value and slot of random rows as the
# flush made.  Its rate at 10^7 against 10^5 is
# what the table's size alone costs such writes.  The HOT twin (TWIN_HOT=0:
# none) makes the same writes into the same table without the two
# partition btrees, so that each update is a HOT one: the floor of a layout
# whose published changes touch no index (a slot map kept outside the
# btrees, docs/writers.md).  ES (default: 100, and 10^7 / N) sets the e
# values tried.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pending=${PENDING:-20000}
sizes=${SIZES:-"100000 1000000 10000000"}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_sql -c "CREATE EXTENSION keanon"
bench_sql -c "LOAD 'keanon'" -c "ALTER SYSTEM SET keanon.worker = off" -c "SELECT pg_reload_conf()"

# twin N PARTITIONS UPDATES [HOT]: the same writes into a plain table of N
# rows (with HOT=1 no index but its key); prints
# ms,rows_per_s,wal_kb_per_arrival,fpi_per_arrival
twin() {
	local n=$1 parts=$2 updates=$3 hot=${4:-0} wal0 fpi0 ms partition_btrees=()
	[ "$hot" = 1 ] || partition_btrees=(-c "CREATE INDEX ON twin (pid, slot)"
		-c "CREATE INDEX ON twin (pid, pub) WHERE slot >= 32")
	bench_sql -c "SELECT setseed(0.25)" \
		-c "CREATE TABLE twin (id bigint PRIMARY KEY, qi integer, v integer, pub integer,
			pid bigint, slot integer, arrival bigint) WITH (fillfactor = 80)" \
		-c "INSERT INTO twin SELECT i, i % 100, v, v, v::bigint * $parts / 1000001,
			(i % ($n / $parts + 1))::int, i
			FROM (SELECT i, (random() * 1000000)::int AS v FROM generate_series(1, $n) i) s
			ORDER BY 5, 6" \
		"${partition_btrees[@]}" \
		-c "VACUUM ANALYZE twin"
	[ "${CHECKPOINT_FIRST:-1}" = 0 ] || bench_sql -c "CHECKPOINT"
	wal0=$(bench_psql -At -c "SELECT pg_current_wal_insert_lsn()")
	fpi0=$(bench_psql -At -c "SELECT wal_fpi FROM pg_stat_wal")
	ms=$(bench_psql -At -c "SET enable_seqscan = off" -c "SET enable_hashjoin = off" \
		-c "SET enable_mergejoin = off" -c "SELECT extract(epoch FROM clock_timestamp())" \
		-c "BEGIN" \
		-c "INSERT INTO twin SELECT $n + i, i % 100, v, v, v::bigint * $parts / 1000001, ($n / $parts) + i, $n + i
			FROM (SELECT i, (random() * 1000000)::int AS v FROM generate_series(1, $pending) i) s" \
		-c "UPDATE twin t SET pub = t.pub + 1, slot = t.slot + 1
			FROM (SELECT DISTINCT 1 + (random() * ($n - 1))::bigint AS id
				FROM generate_series(1, $updates)) r WHERE t.id = r.id" \
		-c "COMMIT" -c "SELECT extract(epoch FROM clock_timestamp())" |
		awk 'NR==1{s=$1} END{printf "%.1f", ($1-s)*1000}')
	bench_psql -At -F, -c "SELECT pg_sleep(0.6)" -c "SELECT $ms, round($pending / ($ms / 1000.0)),
		round((pg_current_wal_insert_lsn() - '$wal0') / 1024.0 / $pending, 1),
		round(((SELECT wal_fpi FROM pg_stat_wal) - $fpi0) / $pending::numeric, 2)" | grep -v '^$'
	bench_sql -c "DROP TABLE twin"
}

echo "rows,e,pending,flush_ms,rows_per_s,row_updates,updates_per_arrival,partitions,avg_partition_rows,wal_kb_per_arrival,fpi_per_arrival,twin_ms,twin_rows_per_s,twin_wal_kb_per_arrival,twin_fpi_per_arrival,hot_twin_ms,hot_twin_rows_per_s,hot_twin_wal_kb_per_arrival,hot_twin_fpi_per_arrival"
for n in $sizes; do
	es=${ES:-}
	if [ -z "$es" ]; then
		es=100
		[ $((10000000 / n)) -ne 100 ] && es="$es $((10000000 / n))"
	fi
	for e in $es; do
		t=t_${n}_$e
		bench_sql -c "SELECT setseed(0.5)" \
			-c "CREATE TABLE $t (id bigint PRIMARY KEY, qi integer, v integer)" \
			-c "INSERT INTO $t SELECT i, i % 100, (random() * 1000000)::int FROM generate_series(1, $n) i" \
			-c "SELECT keanon.watch('$t', 'v', '{qi}', 5, $e, mode => 'deferred')" \
			-c "INSERT INTO $t SELECT $n + i, i % 100, (random() * 1000000)::int FROM generate_series(1, $pending) i" \
			-c "VACUUM ANALYZE"
		[ "${CHECKPOINT_FIRST:-1}" = 0 ] || bench_sql -c "CHECKPOINT"
		before=$(bench_psql -At -c "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = '${t}_keanon_rows'")
		wal0=$(bench_psql -At -c "SELECT pg_current_wal_insert_lsn()")
		fpi0=$(bench_psql -At -c "SELECT wal_fpi FROM pg_stat_wal")
		ms=$(bench_psql -At -c "SELECT extract(epoch FROM clock_timestamp())" -c "SELECT keanon.flush('$t')" \
			-c "SELECT extract(epoch FROM clock_timestamp())" | awk 'NR==1{s=$1} NR==3{printf "%.1f", ($1-s)*1000}')
		line=$(bench_psql -At -F, -c "SELECT pg_sleep(0.6)" -c "
SELECT $n, $e, $pending, $ms, round($pending / ($ms / 1000.0)),
	u.n_tup_upd - $before, round((u.n_tup_upd - $before) / $pending::numeric, 2),
	(SELECT count(*) FROM ${t}_keanon_parts), (SELECT round(avg(p.n), 1) FROM ${t}_keanon_parts p),
	round((pg_current_wal_insert_lsn() - '$wal0') / 1024.0 / $pending, 1),
	round(((SELECT wal_fpi FROM pg_stat_wal) - $fpi0) / $pending::numeric, 2)
FROM pg_stat_user_tables u WHERE u.relname = '${t}_keanon_rows'" | grep -v '^$')
		nparts=$(echo "$line" | cut -d, -f8)
		bench_sql -c "DROP TABLE $t CASCADE"
		updates=$(echo "$line" | cut -d, -f6)
		plain=",,,"
		[ "${TWIN:-1}" = 0 ] || plain=$(twin "$n" "$nparts" "$updates")
		hot=",,,"
		[ "${TWIN_HOT:-1}" = 0 ] || hot=$(twin "$n" "$nparts" "$updates" 1)
		echo "$line,$plain,$hot"
	done
done

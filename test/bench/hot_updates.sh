#!/usr/bin/env bash
# What the rows table's (keanon_pid, keanon_pub) index costs and buys, side
# by side in one run: each case runs on two tables made alike, one as
# keanon.watch builds it and one whose owner dropped that index, so that a
# change of a published value alone is a HOT update (docs/behaviour.md).
#   flush	one keanon.flush of PENDING (default 20,000) pending single-row
#			INSERTs into a deferred watch of N rows (SIZES, default 10^5 and
#			10^6), values uniform up to 10^6, k = 5, e = 100, the worker
#			off, after a CHECKPOINT: time, row versions, HOT ones, WAL, and
#			the rows table's size with its indexes afterwards;
#	leave	ROUNDS (default 10) single-row DELETEs from one partition of
#			DISTINCT (default 200,000) distinct values (k = 2, e = 3/4 of
#			their spread), each value rare there: the rows showing it are
#			found through the index, or without it by reading the
#			partition's slots.
# Run as root after `make install`.  CSV on stdout:
#   case,rows,layout,ms,per_s,row_updates,hot_updates,wal_kb_per_change,rows_table_mb
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pending=${PENDING:-20000}
sizes=${SIZES:-"100000 1000000"}
distinct=${DISTINCT:-200000}
rounds=${ROUNDS:-10}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_sql -c "CREATE EXTENSION keanon"
bench_sql -c "LOAD 'keanon'" -c "ALTER SYSTEM SET keanon.worker = off" -c "SELECT pg_reload_conf()"
sleep 1

# drop_pub_index TABLE: what an owner may do
drop_pub_index() {
	bench_sql -c "DROP INDEX ${1}_keanon_rows_keanon_pid_keanon_pub_idx"
}

# measure CASE ROWS LAYOUT TABLE CHANGES SQL: run SQL after a CHECKPOINT
measure() {
	local case=$1 n=$2 layout=$3 t=$4 changes=$5 sql=$6 u0 w0 ms
	bench_sql -c "CHECKPOINT"
	sleep 0.7
	u0=$(bench_psql -At -F, -c "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = '${t}_keanon_rows'")
	w0=$(bench_psql -At -c "SELECT pg_current_wal_insert_lsn()")
	ms=$(printf '%s\n' "SELECT extract(epoch FROM clock_timestamp());" "\\o /dev/null" "$sql" "\\o" \
		"SELECT extract(epoch FROM clock_timestamp());" | bench_psql -At |
		awk 'NR==1{s=$1} END{printf "%.1f", ($1-s)*1000}')
	sleep 0.7
	bench_psql -At -F, -c "SELECT '$case', $n, '$layout', $ms, round($changes / ($ms / 1000.0)),
		n_tup_upd - ${u0%,*}, n_tup_hot_upd - ${u0#*,},
		round((pg_current_wal_insert_lsn() - '$w0') / 1024.0 / $changes, 1),
		round(pg_total_relation_size('${t}_keanon_rows') / 1048576.0, 1)
		FROM pg_stat_user_tables WHERE relname = '${t}_keanon_rows'"
}

echo "case,rows,layout,ms,per_s,row_updates,hot_updates,wal_kb_per_change,rows_table_mb"
for n in $sizes; do
	for t in hot pubidx; do
		bench_sql -c "SELECT setseed(0.5)" \
			-c "CREATE TABLE $t (id bigint PRIMARY KEY, qi integer, v integer)" \
			-c "INSERT INTO $t SELECT i, i % 100, (random() * 1000000)::int FROM generate_series(1, $n) i" \
			-c "SELECT keanon.watch('$t', 'v', '{qi}', 5, 100, mode => 'deferred')"
		[ $t = pubidx ] || drop_pub_index $t
		bench_sql -c "SELECT setseed(0.25)" \
			-c "INSERT INTO $t SELECT $n + i, i % 100, (random() * 1000000)::int FROM generate_series(1, $pending) i" \
			-c "VACUUM ANALYZE $t, ${t}_keanon_rows"
	done
	for t in hot pubidx; do
		layout=pub_index
		[ $t = pubidx ] || layout=dropped
		measure flush "$n" $layout $t "$pending" "SELECT keanon.flush('$t');"
	done
	bench_sql -c "DROP TABLE hot CASCADE" -c "DROP TABLE pubidx CASCADE"
done

for t in hot pubidx; do
	bench_sql -c "CREATE TABLE $t (id bigint PRIMARY KEY, g int, v int)" \
		-c "INSERT INTO $t SELECT i, i % 10, i FROM generate_series(1, $distinct) i" \
		-c "SELECT keanon.watch('$t', 'v', '{g}', 2, $((distinct * 3 / 4)))"
	[ $t = pubidx ] || drop_pub_index $t
	bench_sql -c "VACUUM ANALYZE $t, ${t}_keanon_rows"
done
for t in hot pubidx; do
	layout=pub_index
	[ $t = pubidx ] || layout=dropped
	deletes=$(for i in $(seq "$rounds"); do echo "DELETE FROM $t WHERE id = $((i * distinct / (rounds + 1)));"; done)
	measure leave "$distinct" $layout $t "$rounds" "$deletes"
	bench_sql -c "SELECT keanon.check('$t')" >/dev/null
done

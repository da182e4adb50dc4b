#!/usr/bin/env bash
# Writers of a watched table against the same table with a plain btree
# index on the sensitive column, side by side in one throwaway cluster:
# a live watch and a deferred one.  Run as root after `make install`.
# CSV on stdout:
#   test,fsync,clients,btree,live,deferred,unit,live_ratio,deferred_ratio
# ratios are keanon's cost over the btree twin's: latency ratios for tps
# (btree tps / keanon tps), time ratios for loads.
#
# For each fsync setting of FSYNC_LIST (default "off on"; off measures the
# CPU alone) and 1 and 4 clients, pgbench runs single-row autocommit
# INSERTs for SECONDS_PER_RUN seconds (default 10) into each of three
# tables of ROWS rows (default 100000, uniform values, k = 5, e = 100),
# ROUNDS times in alternation (default 2; the median tps is reported).
# While the deferred table takes writes, keanon's worker publishes them; a
# sampler reads keanon.status every 100 ms and reports the publication lag
# (the age of the oldest change not yet published) as its mean and maximum
# over the 1-client runs, and the time the worker then takes to catch up.
# Then, with fsync off, each table of ROWS rows takes a mix of single-row
# statements on a random key, one client for SECONDS_PER_RUN seconds,
# ROUNDS times in alternation: an UPDATE of the value (to a random one),
# an UPDATE of the quasi-identifier, a DELETE and the INSERT of the row
# again; pgbench's mean latency of each statement (median over the
# rounds) is reported.  Then, with fsync off, one psql session per table
# runs COST_INSERTS (default 20000) single-row autocommit INSERTs of the
# same values, ROUNDS times in alternation, and reports the median CPU
# time of its backend and WAL written per INSERT (and, for the live table,
# the rows-table rows written per INSERT); the deferred table's INSERTs
# wait, the worker off, for one keanon.flush, whose CPU time per row
# published is reported too (the worker's cost per row it publishes).  Then BULK_ROWS rows (default 1000000) are loaded
# by INSERT ... SELECT and by COPY into each table holding as many rows
# already: for the deferred table, the load itself and the load followed
# by its flush.  Last, with fsync off, the live table and its twin are
# built at each size of SCALE_ROWS (default "10000 10000000") and take
# single-row INSERTs from one client as above (the live ratio at the
# largest size over the smallest's is the last line).  PARTS (default
# "insert mix cost bulk scale") runs a subset.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${ROWS:-100000}
secs=${SECONDS_PER_RUN:-10}
rounds=${ROUNDS:-2}
bulk=${BULK_ROWS:-1000000}
fsync_list=${FSYNC_LIST:-"off on"}
parts=${PARTS:-"insert mix cost bulk scale"}
cost_n=${COST_INSERTS:-20000}
scale_rows=${SCALE_ROWS:-"10000 10000000"}
has_part() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# room for the 10^7-row tables of the scale part with keanon's own
export BENCH_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-8GB}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

work=$bench_tmp/scripts
mkdir -p "$work"
chown postgres: "$work"

tables="b_t l_t d_t"
make_tables() {
	bench_sql -c "DROP TABLE IF EXISTS b_t, l_t, d_t CASCADE" \
		-c "CREATE TABLE b_t (id bigserial PRIMARY KEY, g integer, v integer)" \
		-c "INSERT INTO b_t (g, v) SELECT i % 100, (random() * 1000000000)::integer FROM generate_series(1, $1) i" \
		-c "CREATE INDEX b_t_v ON b_t (v)" \
		-c "CREATE TABLE l_t (id bigserial PRIMARY KEY, g integer, v integer)" \
		-c "INSERT INTO l_t (g, v) SELECT g, v FROM b_t" \
		-c "SELECT keanon.watch('l_t', 'v', '{g}', 5, 100)" \
		-c "CREATE TABLE d_t (id bigserial PRIMARY KEY, g integer, v integer)" \
		-c "INSERT INTO d_t (g, v) SELECT g, v FROM b_t" \
		-c "SELECT keanon.watch('d_t', 'v', '{g}', 5, 100, mode => 'deferred')" \
		-c "VACUUM ANALYZE" -c "CHECKPOINT"
}
tps() {
	runuser -u postgres -- pgbench -h "$PGHOST" -p "$PGPORT" -n -T "$secs" -c "$2" -j "$2" \
		-f "$1" postgres 2>/dev/null | awk '/^tps/ { print $3 }'
}
median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# b / a, for a time or a latency (a the btree's)
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "" }'
}
sql_seconds() {
	local s e
	s=$(date +%s.%N)
	bench_psql -c "$1" >/dev/null
	e=$(date +%s.%N)
	awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }'
}
# wait until the deferred table has nothing pending; prints the seconds
drain() {
	local s e
	s=$(date +%s.%N)
	bench_sql -c "DO \$\$ BEGIN WHILE (SELECT pending FROM keanon.status('d_t')) > 0 LOOP
		PERFORM pg_sleep(0.05); END LOOP; END \$\$"
	e=$(date +%s.%N)
	awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }'
}

bench_sql -c "CREATE EXTENSION keanon" \
	-c "CREATE TABLE lag_samples (fsync text, at timestamptz, lag interval, pending bigint)"
for t in $tables; do
	printf '\\set v random(0, 1000000000)\nINSERT INTO %s (g, v) VALUES (:v %% 100, :v);\n' $t >"$work/ins_$t.sql"
	printf '\\set id random(1, %s)\nUPDATE %s SET v = (random() * 1e9)::integer WHERE id = :id;\nUPDATE %s SET g = g + 1 WHERE id = :id;\nDELETE FROM %s WHERE id = :id;\nINSERT INTO %s (id, g, v) VALUES (:id, :id %% 100, (random() * 1e9)::integer);\n' \
		"$rows" $t $t $t $t >"$work/mix_$t.sql"
done
# pgbench's mean latency of each statement of a script, in ms, one per line
latencies() {
	runuser -u postgres -- pgbench -h "$PGHOST" -p "$PGPORT" -n -r -T "$secs" -c 1 \
		-f "$1" postgres 2>/dev/null | awk '/^ +[0-9.]+ +[0-9]+ +(UPDATE|DELETE|INSERT)/ { print $1 }'
}

echo "test,fsync,clients,btree,live,deferred,unit,live_ratio,deferred_ratio"
for fsync in $fsync_list; do
	has_part insert || break
	bench_sql -c "ALTER SYSTEM SET fsync = $fsync" -c "SELECT pg_reload_conf()"
	make_tables "$rows"
	for c in 1 4; do
		declare -A got=()
		for ((r = 1; r <= rounds; r++)); do
			for t in $tables; do
				sampler=
				if [ $t = d_t ] && [ $c = 1 ]; then
					# the lag while one client writes
					bench_psql -c "DO \$\$ BEGIN FOR i IN 1 .. $((secs * 10)) LOOP
						INSERT INTO lag_samples SELECT '$fsync', clock_timestamp(), coalesce(lag, '0'), pending
						FROM keanon.status('d_t');
						COMMIT; PERFORM pg_sleep(0.1); END LOOP; END \$\$" >/dev/null &
					sampler=$!
				fi
				got[$t]="${got[$t]:-} $(tps "$work/ins_$t.sql" $c)"
				ended=$(date +%s.%N)
				[ -n "$sampler" ] && wait "$sampler"
				drain >/dev/null
				# from the writers' end, not the sampler's (which outlasts them)
				d=$(awk -v a="$ended" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
				[ $t = d_t ] && echo "catch_up_after_run,$fsync,$c,,,$d,s,,"
			done
		done
		b=$(echo "${got[b_t]}" | tr ' ' '\n' | grep . | median)
		l=$(echo "${got[l_t]}" | tr ' ' '\n' | grep . | median)
		d=$(echo "${got[d_t]}" | tr ' ' '\n' | grep . | median)
		echo "insert_tps,$fsync,$c,$b,$l,$d,tps,$(ratio "$l" "$b"),$(ratio "$d" "$b")"
		unset got
	done
	bench_psql -At -c "SELECT 'lag_1_client,$fsync,1,,,' || round(extract(epoch FROM avg(lag))::numeric, 3) || ',s_mean,,'
		FROM lag_samples WHERE fsync = '$fsync'"
	bench_psql -At -c "SELECT 'lag_1_client,$fsync,1,,,' || round(extract(epoch FROM max(lag))::numeric, 3) || ',s_max,,'
		FROM lag_samples WHERE fsync = '$fsync'"
	bench_psql -At -c "SELECT 'check,$fsync,,,' || keanon.check('l_t') || ',' || keanon.check('d_t') || ',,,'"
done

# single-row UPDATEs, DELETEs and INSERTs on the CPU alone
if has_part mix; then
	bench_sql -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()"
	make_tables "$rows"
	declare -A lat=()
	for ((r = 1; r <= rounds; r++)); do
		for t in $tables; do
			i=0
			for ms in $(latencies "$work/mix_$t.sql"); do
				lat[$t,$i]="${lat[$t,$i]:-} $ms"
				i=$((i + 1))
			done
			drain >/dev/null
		done
	done
	i=0
	for what in update_value update_qi delete insert_again; do
		b=$(echo "${lat[b_t,$i]:-}" | tr ' ' '\n' | grep . | median)
		l=$(echo "${lat[l_t,$i]:-}" | tr ' ' '\n' | grep . | median)
		d=$(echo "${lat[d_t,$i]:-}" | tr ' ' '\n' | grep . | median)
		echo "mix_$what,off,1,$b,$l,$d,ms,$(ratio "$b" "$l"),$(ratio "$b" "$d")"
		i=$((i + 1))
	done
	unset lat
	bench_psql -At -c "SELECT 'check,mix,,,' || keanon.check('l_t') || ',' || keanon.check('d_t') || ',,,'"
fi

# what one single-row INSERT costs the writer's backend, on the CPU alone:
# its CPU time (from /proc/self/stat, not disturbed by the client or by
# other processes' scheduling as throughput is), the WAL it writes and,
# for the live table, the rows-table rows written (inserted, updated or
# deleted) per INSERT.  A deferred table's worker does
# its publishing in another process, which this does not count.
if has_part cost; then
	bench_sql -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()"
	make_tables "$rows"
	tick_us=$((1000000 / $(getconf CLK_TCK)))
	for t in $tables; do
		awk -v t=$t -v n="$cost_n" 'BEGIN { srand(7); for (i = 0; i < n; i++) { v = int(rand() * 1e9);
			printf "INSERT INTO %s (g, v) VALUES (%d, %d);\n", t, v % 100, v } }' >"$work/cost_$t.sql"
	done
	chown postgres: "$work"/cost_*.sql
	bench_sql -c "SELECT pg_stat_reset()"
	declare -A cpu=() wal=()
	flush_cpu=
	for ((r = 1; r <= rounds; r++)); do
		for t in $tables; do
			# the deferred table's INSERTs wait for the flush timed below
			[ $t = d_t ] && bench_sql -c "LOAD 'keanon'" -c "ALTER SYSTEM SET keanon.worker = off" \
				-c "SELECT pg_reload_conf()"
			# one session: CPU ticks and WAL position before, the INSERTs, then both after
			read -r c w < <(bench_psql -At -v n="$cost_n" -v f="$work/cost_$t.sql" -v tick="$tick_us" <<'SQL'
SELECT split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint AS c0, pg_current_wal_insert_lsn() AS w0
FROM pg_read_file('/proc/self/stat') s \gset
\o /dev/null
\i :f
\o
SELECT round((split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint - :c0) * :tick / :n::numeric, 1)
	   || ' ' || round((pg_current_wal_insert_lsn() - :'w0') / :n)
FROM pg_read_file('/proc/self/stat') s;
SQL
			)
			cpu[$t]="${cpu[$t]:-} $c"
			wal[$t]="${wal[$t]:-} $w"
			if [ $t = d_t ]; then
				# what publishing them costs: one flush of the lot, in a session's CPU time
				flush_cpu="$flush_cpu $(bench_psql -At -v tick="$tick_us" <<'SQL'
SELECT split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint AS c0
FROM pg_read_file('/proc/self/stat') s \gset
SELECT keanon.flush('d_t') AS flushed \gset
SELECT round((split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint - :c0) * :tick / nullif(:flushed, 0)::numeric, 1)
FROM pg_read_file('/proc/self/stat') s;
SQL
				)"
				bench_sql -c "LOAD 'keanon'" -c "ALTER SYSTEM RESET keanon.worker" -c "SELECT pg_reload_conf()"
			fi
			drain >/dev/null
		done
	done
	for what in cpu wal; do
		declare -n m=$what
		b=$(echo "${m[b_t]}" | tr ' ' '\n' | grep . | median)
		l=$(echo "${m[l_t]}" | tr ' ' '\n' | grep . | median)
		d=$(echo "${m[d_t]}" | tr ' ' '\n' | grep . | median)
		unit=us
		[ $what = wal ] && unit=bytes
		echo "insert_${what}_per_row,off,1,$b,$l,$d,$unit,$(ratio "$b" "$l"),$(ratio "$b" "$d")"
		unset -n m
	done
	unset cpu wal
	echo "flush_cpu_per_row,off,1,,,$(echo "$flush_cpu" | tr ' ' '\n' | grep . | median),us,,"
	sleep 1
	bench_psql -At -c "SELECT 'insert_rows_table_writes_per_row,off,1,,' ||
		round((n_tup_ins + n_tup_upd + n_tup_del)::numeric / ($rounds * $cost_n), 2) || ',,rows,,'
		FROM pg_stat_user_tables WHERE relname = 'l_t_keanon_rows'"
	bench_psql -At -c "SELECT 'check,cost,,,' || keanon.check('l_t') || ',' || keanon.check('d_t') || ',,,'"
fi

# loads into full tables (fsync as last set)
has_part bulk && bench_sql -c "COPY (SELECT i % 100, (random() * 1e9)::integer FROM generate_series(1, $bulk) i) TO '$work/bulk.tsv'"
for how in insert copy; do
	has_part bulk || break
	make_tables "$bulk"
	bench_sql -c "LOAD 'keanon'" -c "ALTER SYSTEM SET keanon.worker = off" -c "SELECT pg_reload_conf()"
	if [ $how = insert ]; then
		load="SELECT i % 100, (random() * 1e9)::integer FROM generate_series(1, $bulk) i"
		bs=$(sql_seconds "INSERT INTO b_t (g, v) $load")
		ls=$(sql_seconds "INSERT INTO l_t (g, v) $load")
		ds=$(sql_seconds "INSERT INTO d_t (g, v) $load")
	else
		bs=$(sql_seconds "COPY b_t (g, v) FROM '$work/bulk.tsv'")
		ls=$(sql_seconds "COPY l_t (g, v) FROM '$work/bulk.tsv'")
		ds=$(sql_seconds "COPY d_t (g, v) FROM '$work/bulk.tsv'")
	fi
	fs=$(sql_seconds "SELECT keanon.flush('d_t')")
	echo "bulk_${how}_into_full,,1,$bs,$ls,$ds,s,$(ratio "$bs" "$ls"),$(ratio "$bs" "$ds")"
	echo "bulk_${how}_into_full_with_flush,,1,$bs,$ls,$(awk -v a="$ds" -v b="$fs" 'BEGIN { printf "%.3f", a + b }'),s,$(ratio "$bs" "$ls"),$(ratio "$bs" "$(awk -v a="$ds" -v b="$fs" 'BEGIN { print a + b }')")"
	bench_sql -c "LOAD 'keanon'" -c "ALTER SYSTEM RESET keanon.worker" -c "SELECT pg_reload_conf()"
	bench_psql -At -c "SELECT 'check,bulk_$how,,,' || keanon.check('l_t') || ',' || keanon.check('d_t') || ',,,'"
done

# the live single-row INSERT against the twin at each size, on the CPU alone
if has_part scale; then
	bench_sql -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()"
	first=
	for n in $scale_rows; do
		bench_sql -c "DROP TABLE IF EXISTS b_t, l_t, d_t CASCADE" \
			-c "CREATE TABLE b_t (id bigserial PRIMARY KEY, g integer, v integer)" \
			-c "INSERT INTO b_t (g, v) SELECT i % 100, (random() * 1000000000)::integer FROM generate_series(1, $n) i" \
			-c "CREATE INDEX b_t_v ON b_t (v)" \
			-c "CREATE TABLE l_t (id bigserial PRIMARY KEY, g integer, v integer)" \
			-c "INSERT INTO l_t (g, v) SELECT g, v FROM b_t" \
			-c "SELECT keanon.watch('l_t', 'v', '{g}', 5, 100)" \
			-c "VACUUM ANALYZE" -c "CHECKPOINT"
		declare -A got=()
		for ((r = 1; r <= rounds; r++)); do
			for t in b_t l_t; do
				got[$t]="${got[$t]:-} $(tps "$work/ins_$t.sql" 1)"
			done
		done
		b=$(echo "${got[b_t]}" | tr ' ' '\n' | grep . | median)
		l=$(echo "${got[l_t]}" | tr ' ' '\n' | grep . | median)
		unset got
		echo "insert_tps_at_$n,off,1,$b,$l,,tps,$(ratio "$l" "$b"),"
		bench_psql -At -c "SELECT 'check,scale_$n,,,' || keanon.check('l_t') || ',,,,'"
		last_n=$n
		last=$(ratio "$l" "$b")
		[ -z "$first" ] && first_n=$n && first=$last
	done
	echo "insert_ratio_growth_${first_n}_to_$last_n,off,1,,,,x,$(ratio "$first" "$last"),"
fi

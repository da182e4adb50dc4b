#!/usr/bin/env bash
# Maintenance cost of a watched table against the same table with a plain
# btree index on the sensitive column and no keanon, side by side in one
# throwaway cluster.  Run as root after `make install`.  CSV on stdout:
#   test,shape,rows,clients,baseline,keanon,unit,ratio
# Sizes: ROWS_LIST (default "10000 100000 1000000 10000000"); single-row
# UPDATE and DELETE at UD_ROWS (default 1000000, uniform shape, must be in
# ROWS_LIST); SECONDS_PER_RUN per pgbench run (default 10); BULK_ROWS for
# the bulk loads (default 1000000); WATCH_ROWS for watching an existing
# table (default 10000000).  SHAPES (default "uniform gain hours") and
# PARTS (default "single bulk watch") run a subset.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rows_list=${ROWS_LIST:-"10000 100000 1000000 10000000"}
ud_rows=${UD_ROWS:-1000000}
secs=${SECONDS_PER_RUN:-10}
bulk=${BULK_ROWS:-1000000}
watch_rows=${WATCH_ROWS:-10000000}
shapes=${SHAPES:-"uniform gain hours"}
parts=${PARTS:-"single bulk watch"}
has_part() { case " $parts " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# room for both 10^7-row tables, their indexes and keanon's internal tables
export BENCH_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-4GB}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

work=$bench_tmp/scripts
mkdir -p "$work"
chown postgres: "$work"

# The Adult data's capital-gain and hours-per-week, resampled
awk -F', *' 'NR > 1 && NF >= 15 { print $11 "\t" $13 }' "$root/data/adult.data" >"$work/adult.tsv"
chown postgres: "$work/adult.tsv"
bench_sql -c "CREATE EXTENSION keanon" -c "CREATE EXTENSION pg_walinspect" \
	-c "CREATE TABLE adult (gain integer, hours integer)" \
	-c "\\copy adult FROM '$work/adult.tsv'" \
	-c "CREATE TABLE adult_gain (rn integer PRIMARY KEY, v integer)" \
	-c "INSERT INTO adult_gain SELECT row_number() OVER (), gain FROM adult" \
	-c "CREATE TABLE adult_hours (rn integer PRIMARY KEY, v integer)" \
	-c "INSERT INTO adult_hours SELECT row_number() OVER (), hours FROM adult" \
	-c "VACUUM ANALYZE adult_gain" -c "VACUUM ANALYZE adult_hours"
adult_n=$(bench_psql -At -c "SELECT count(*) FROM adult")

# A value of the Adult shapes is drawn from the data by an index lookup on
# a random row number: the same small cost in both tables' INSERTs
# value expression of a shape, for SQL
value_sql() {
	case $1 in
		uniform) echo "(random() * 1000000000)::integer" ;;
		gain | hours) echo "(SELECT v FROM adult_$1 WHERE rn = (SELECT 1 + floor(random() * $adult_n)::integer))" ;;
	esac
}
# the rows of a table of n rows of a shape, for INSERT ... SELECT
rows_sql() {
	case $1 in
		uniform) echo "SELECT i % 100, (random() * 1000000000)::integer FROM generate_series(1, $2) i" ;;
		gain | hours) echo "SELECT i % 100, (SELECT v FROM adult_$1 WHERE rn = s.r) FROM (SELECT i, 1 + floor(random() * $adult_n)::integer AS r FROM generate_series(1, $2) i) s" ;;
	esac
}
# a pgbench INSERT of one row of a shape into table $2
insert_pgbench() {
	case $1 in
		uniform)
			echo '\set v random(0, 1000000000)'
			echo "INSERT INTO $2 (g, v) VALUES (:v % 100, :v);" ;;
		gain | hours)
			echo "\\set r random(1, $adult_n)"
			echo "INSERT INTO $2 (g, v) SELECT :r % 100, v FROM adult_$1 WHERE rn = :r;" ;;
	esac
}
# k and e per shape
watch_args() {
	case $1 in
		uniform) echo "5, 10000" ;;
		gain) echo "5, 500" ;;
		hours) echo "5, 2" ;;
	esac
}

# latency in ms of a pgbench run
pgb_latency() {
	runuser -u postgres -- pgbench -h "$PGHOST" -p "$PGPORT" -n -T "$secs" -c "$2" -j "$2" \
		-f "$1" postgres 2>/dev/null | awk '/latency average/ { print $4 }'
}
pgb_tps() {
	runuser -u postgres -- pgbench -h "$PGHOST" -p "$PGPORT" -n -T "$secs" -c "$2" -j "$2" \
		-f "$1" postgres 2>/dev/null | awk '/^tps/ { print $3 }'
}
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "" }'
}
# WAL between two LSNs, per statement of n: bytes, rows written (heap
# INSERT, UPDATE and HOT_UPDATE records) to table $3, and distinct pages of
# index $4 dirtied (WAL-logged) per transaction
wal_metrics() {
	bench_psql -At -F ' ' -c "
		WITH b AS (SELECT r.start_lsn, r.xid, r.resource_manager AS rm, r.record_type AS rt,
						  m[1]::oid AS rel, m[2]::bigint AS blk
				   FROM pg_get_wal_records_info('$1', '$2') r,
						regexp_matches(r.block_ref, 'rel [0-9]+/[0-9]+/([0-9]+) fork main blk ([0-9]+)', 'g') m)
		SELECT (pg_wal_lsn_diff('$2', '$1') / $5)::bigint,
			   round((SELECT count(DISTINCT start_lsn) FROM b WHERE rm = 'Heap'
					  AND rt ~ '^(INSERT|UPDATE|HOT_UPDATE)'
					  AND rel = pg_relation_filenode('$3')) / $5.0, 2),
			   round((SELECT count(*) FROM (SELECT DISTINCT xid, blk FROM b
					  WHERE rel = pg_relation_filenode('$4')) d) / $5.0, 2)"
}
# seconds taken by one SQL command
sql_seconds() {
	local s e
	s=$(date +%s.%N)
	bench_psql -c "$1" >/dev/null
	e=$(date +%s.%N)
	awk -v a="$s" -v b="$e" 'BEGIN { printf "%.3f", b - a }'
}

echo "test,shape,rows,clients,baseline,keanon,unit,ratio"
for shape in $shapes; do
	has_part single || break
	for n in $rows_list; do
		v=$(value_sql "$shape")
		bench_sql -c "DROP TABLE IF EXISTS b_t, w_t CASCADE" \
			-c "CREATE TABLE b_t (id bigserial PRIMARY KEY, g integer, v integer)" \
			-c "INSERT INTO b_t (g, v) $(rows_sql "$shape" "$n")" \
			-c "CREATE INDEX b_t_v ON b_t (v)" \
			-c "CREATE TABLE w_t (id bigserial PRIMARY KEY, g integer, v integer)" \
			-c "INSERT INTO w_t (g, v) SELECT g, v FROM b_t" \
			-c "SELECT keanon.watch('w_t', 'v', '{g}', $(watch_args "$shape"))" \
			-c "VACUUM ANALYZE b_t" -c "VACUUM ANALYZE w_t" \
			-c "VACUUM ANALYZE w_t_keanon_rows" -c "VACUUM ANALYZE w_t_keanon_parts" -c "CHECKPOINT"
		# the shape as loaded: distinct values and the commonest value's share
		bench_psql -At -c "SELECT 'shape,$shape,$n,' || count(*) || ',' || round(max(c)::numeric / sum(c), 3) FROM (SELECT v, count(*) AS c FROM w_t GROUP BY v) x"
		for t in b_t w_t; do
			insert_pgbench "$shape" $t >"$work/ins_$t.sql"
		done
		for c in 1 4; do
			bl=$(pgb_latency "$work/ins_b_t.sql" $c)
			kl=$(pgb_latency "$work/ins_w_t.sql" $c)
			echo "insert,$shape,$n,$c,$bl,$kl,ms,$(ratio "$bl" "$kl")"
		done
		# per single-row INSERT, over 200 of them: WAL bytes, rows written to
		# the table that holds the published rows (b_t itself, or w_t's
		# rows table) and pages of the index on the value dirtied, from the
		# WAL records of the inserting transactions
		for t in b_t w_t; do
			w0=$(bench_psql -At -c "SELECT pg_current_wal_insert_lsn()")
			bench_sql -c "DO \$\$ BEGIN FOR i IN 1 .. 200 LOOP EXECUTE 'INSERT INTO $t (g, v) SELECT 1, $v'; COMMIT; END LOOP; END \$\$"
			w1=$(bench_psql -At -c "SELECT pg_current_wal_insert_lsn()")
			if [ $t = b_t ]; then
				read -r wal_b rw_b ip_b < <(wal_metrics "$w0" "$w1" b_t b_t_v 200)
			else
				read -r wal_w rw_w ip_w < <(wal_metrics "$w0" "$w1" w_t_keanon_rows w_t_keanon_idx 200)
			fi
		done
		echo "wal_per_insert,$shape,$n,1,$wal_b,$wal_w,bytes,$(ratio "$wal_b" "$wal_w")"
		echo "rows_written_per_insert,$shape,$n,1,$rw_b,$rw_w,rows,$(ratio "$rw_b" "$rw_w")"
		echo "index_pages_per_insert,$shape,$n,1,$ip_b,$ip_w,pages,$(ratio "$ip_b" "$ip_w")"
		# single-row UPDATE and DELETE of the value, uniform shape
		if [ "$shape" = uniform ] && [ "$n" = "$ud_rows" ]; then
			for t in b_t w_t; do
				{
					echo "\\set id random(1, $n)"
					echo "UPDATE $t SET v = v + 1 WHERE id = :id;"
				} >"$work/upd_$t.sql"
				{
					echo "\\set id random(1, $n)"
					echo "DELETE FROM $t WHERE id = :id;"
				} >"$work/del_$t.sql"
			done
			bl=$(pgb_latency "$work/upd_b_t.sql" 1); kl=$(pgb_latency "$work/upd_w_t.sql" 1)
			echo "update,$shape,$n,1,$bl,$kl,ms,$(ratio "$bl" "$kl")"
			bl=$(pgb_latency "$work/del_b_t.sql" 1); kl=$(pgb_latency "$work/del_w_t.sql" 1)
			echo "delete,$shape,$n,1,$bl,$kl,ms,$(ratio "$bl" "$kl")"
		fi
		bench_psql -At -c "SELECT 'check,$shape,$n,' || keanon.check('w_t')"
	done
done

# bulk loads of $bulk rows, INSERT ... SELECT and COPY (from one file for
# both tables), into an empty table and into one holding as many rows
has_part bulk && bench_sql -c "COPY (SELECT i % 100, (random() * 1e9)::integer FROM generate_series(1, $bulk) i) TO '$work/bulk.tsv'"
for how in insert copy; do
	has_part bulk || break
	for into in empty full; do
		bench_sql -c "DROP TABLE IF EXISTS b_t, w_t CASCADE" \
			-c "CREATE TABLE b_t (id bigserial PRIMARY KEY, g integer, v integer)" \
			-c "CREATE INDEX ON b_t (v)" \
			-c "CREATE TABLE w_t (id bigserial PRIMARY KEY, g integer, v integer)" \
			-c "SELECT keanon.watch('w_t', 'v', '{g}', 5, 10000)"
		if [ $into = full ]; then
			bench_sql -c "INSERT INTO b_t (g, v) SELECT i % 100, (random() * 1e9)::integer FROM generate_series(1, $bulk) i" \
				-c "INSERT INTO w_t (g, v) SELECT g, v FROM b_t"
		fi
		bench_sql -c "CHECKPOINT"
		if [ $how = insert ]; then
			load="SELECT i % 100, (random() * 1e9)::integer FROM generate_series(1, $bulk) i"
			bs=$(sql_seconds "INSERT INTO b_t (g, v) $load")
			ks=$(sql_seconds "INSERT INTO w_t (g, v) $load")
		else
			bs=$(sql_seconds "COPY b_t (g, v) FROM '$work/bulk.tsv'")
			ks=$(sql_seconds "COPY w_t (g, v) FROM '$work/bulk.tsv'")
		fi
		echo "bulk_${how}_into_$into,uniform,$bulk,1,$bs,$ks,s,$(ratio "$bs" "$ks")"
		bench_psql -At -c "SELECT 'check,bulk_${how}_$into,$bulk,' || keanon.check('w_t')"
	done
done

# watching an existing table against CREATE INDEX ... USING btree
if has_part watch; then
	bench_sql -c "DROP TABLE IF EXISTS b_t, w_t CASCADE" \
		-c "CREATE TABLE w_t (id bigserial PRIMARY KEY, g integer, v integer)" \
		-c "INSERT INTO w_t (g, v) SELECT i % 100, (random() * 1e9)::integer FROM generate_series(1, $watch_rows) i" \
		-c "VACUUM ANALYZE w_t" -c "CHECKPOINT"
	bs=$(sql_seconds "CREATE INDEX w_t_btree ON w_t (v)")
	bench_sql -c "CHECKPOINT"
	ks=$(sql_seconds "SELECT keanon.watch('w_t', 'v', '{g}', 5, 10000)")
	echo "watch_existing,uniform,$watch_rows,1,$bs,$ks,s,$(ratio "$bs" "$ks")"
	bench_psql -At -c "SELECT 'check,watch,$watch_rows,' || keanon.check('w_t')"
fi

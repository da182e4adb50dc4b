#!/usr/bin/env bash
# What one single-row INSERT costs a live watch on shapes where one row can
# move many partition boundaries, and the WAL it writes: at each of SIZES
# (default "100000 1000000") rows, ROUNDS (default 3) INSERTs one by one,
# each timed in the server and its WAL measured, per shape:
#   even        values 1 .. N, k = 2, e = 1 (every placement of the one
#               three-value partition is optimal), arrivals above the top
#   alternating gaps of 1 and 2 (0, 1, 3, 4, 6, ...), k = 2, e = 1,
#               arrivals above the top
#   near_tie    values 10 i plus 1 on every seventh, k = 3, e = 10,
#               arrivals above the top
#   by_writer   N uniform values up to 10^6 (k = 5, e = 100), then one bulk
#               INSERT of 2 N values spaced 25 apart above them, then
#               arrivals above everything
#   skewed_update  half the rows the one value 500000 (one partition of
#               N / 2 rows), the rest uniform up to 10^6 (k = 5, e = 100);
#               single-row UPDATEs move rows of that partition above the top
# SHAPES (default all) picks some of them.
# Run as root after `make install`.  CSV on stdout:
#   shape,rows,insert,ms,wal_bytes,check
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sizes=${SIZES:-"100000 1000000"}
rounds=${ROUNDS:-3}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_sql -c "CREATE EXTENSION keanon"
echo "shape,rows,insert,ms,wal_bytes,check"
shapes=${SHAPES:-"even alternating near_tie by_writer skewed_update"}
# shape NAME ROWS VALUES-SQL K E FIRST-ARRIVAL STEP [EXTRA-SQL [UPDATE]]:
# with UPDATE, round r moves row 2 r to the arrival instead of inserting
shape() {
	local name=$1 n=$2 vals=$3 k=$4 e=$5 first=$6 step=$7 extra=${8:-} update=${9:-}
	local stmt
	case " $shapes " in *" $name "*) ;; *) return 0 ;; esac
	bench_sql -c "DROP TABLE IF EXISTS w" -c "CREATE TABLE w (id bigint PRIMARY KEY, g int, v bigint)" \
		-c "INSERT INTO w SELECT i, i % 10, $vals FROM generate_series(1, $n) i" \
		-c "SELECT keanon.watch('w', 'v', '{g}', $k, $e)"
	[ -n "$extra" ] && bench_sql -c "$extra"
	bench_sql -c "VACUUM ANALYZE w" -c "CHECKPOINT"
	for r in $(seq "$rounds"); do
		if [ -n "$update" ]; then
			stmt="UPDATE w SET v = $first + $step * $r WHERE id = 2 * $r"
		else
			stmt="INSERT INTO w VALUES (-$r, 0, $first + $step * $r)"
		fi
		bench_psql -At -F, <<SQL
SELECT pg_current_wal_lsn() AS a, clock_timestamp() AS t0 \gset
$stmt;
SELECT '$name', $n, $r,
	round((extract(epoch FROM clock_timestamp() - :'t0'::timestamptz) * 1000)::numeric, 1),
	pg_wal_lsn_diff(pg_current_wal_lsn(), :'a'), '';
SQL
	done
	bench_psql -At -F, -c "SELECT '$name', $n, 'check', '', '', keanon.check('w')"
}
for n in $sizes; do
	shape even "$n" "i" 2 1 "3 * $n" 1
	shape alternating "$n" "(i / 2) * 3 + i % 2" 2 1 "3 * $n" 1
	shape near_tie "$n" "10 * i + (i % 7 = 0)::int" 3 10 "30 * $n" 10
	shape by_writer "$n" "(random() * 1000000)::bigint" 5 100 "200000000" 1 \
		"INSERT INTO w SELECT $n + i, i % 10, 2000000 + 25 * i FROM generate_series(1, 2 * $n) i"
	shape skewed_update "$n" "CASE WHEN i % 2 = 0 THEN 500000 ELSE (random() * 1000000)::bigint END" \
		5 100 "2000000" 1 "" update
done

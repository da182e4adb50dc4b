#!/usr/bin/env bash
# What an aborted subtransaction costs a live watch: on a watched table of
# ROWS rows (default 10^6; values uniform up to 10^6, k = 5, e = 100),
# ROUNDS transactions (default 200) of each kind, single session, timed by
# pgbench-style loops in one psql session:
#   plain      BEGIN; INSERT one row; COMMIT
#   savepoint  BEGIN; SAVEPOINT s; INSERT one row; ROLLBACK TO s;
#              INSERT one row; COMMIT (the second INSERT's open puts the
#              index back from the savepoint's page images)
#   exception  one PL/pgSQL exception block whose INSERT fails after its
#              maintenance, then one INSERT, in one transaction
# Run as root after `make install`.  CSV on stdout: kind,rows,ms_per_transaction
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${ROWS:-1000000}
rounds=${ROUNDS:-200}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_sql -c "CREATE EXTENSION keanon"
bench_sql -c "CREATE TABLE t (id bigint PRIMARY KEY, qi integer, v integer)" \
	-c "INSERT INTO t SELECT i, i % 100, (random() * 1000000)::int FROM generate_series(1, $rows) i" \
	-c "SELECT keanon.watch('t', 'v', '{qi}', 5, 100)" -c "VACUUM ANALYZE" -c "CHECKPOINT"
bench_sql -c "CREATE SEQUENCE ids START $((rows + 1))"

# the milliseconds of ROUNDS transactions of one kind, per transaction
timed() {
	local body=$1 sql
	sql=$(for _ in $(seq "$rounds"); do echo "$body"; done)
	bench_psql -At <<SQL | awk 'NR==1{s=$1} NR==2{printf "%.3f", ($1 - s) * 1000 / '"$rounds"'}'
SELECT extract(epoch FROM clock_timestamp());
\o /dev/null
$sql
\o
SELECT extract(epoch FROM clock_timestamp());
SQL
}

ins="INSERT INTO t VALUES (nextval('ids'), 1, (random() * 1000000)::int);"
echo "kind,rows,ms_per_transaction"
for round in 1 2; do
	echo "plain,$rows,$(timed "BEGIN; $ins COMMIT;")"
	echo "savepoint,$rows,$(timed "BEGIN; SAVEPOINT s; $ins ROLLBACK TO SAVEPOINT s; $ins COMMIT;")"
	echo "exception,$rows,$(timed "BEGIN; DO \$\$ BEGIN INSERT INTO t VALUES (nextval('ids'), 1, (random() * 1000000)::int); RAISE EXCEPTION 'undone'; EXCEPTION WHEN raise_exception THEN NULL; END \$\$; $ins COMMIT;")"
done
bench_psql -At -c "SELECT 'check,' || keanon.check('t')"

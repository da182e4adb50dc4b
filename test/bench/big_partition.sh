#!/usr/bin/env bash
# What a row joining one very large partition costs: DISTINCT values
# (default 200,000) 1, 2, ... watched with k = 2 and e = 3/4 of their spread,
# so one partition holds them all; then ROUNDS single-row INSERTs of values
# already there (no bound moves: the O(1) steps), each timed, and the WAL
# they wrote.  The partitions table's row lists the partition's distinct
# values and counts, and each such change writes it again.
# Run as root after `make install`.  CSV on stdout:
#   distinct_values,partitions,ms_per_insert,wal_bytes_per_insert,vals_bytes
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=${DISTINCT:-200000}
rounds=${ROUNDS:-10}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_sql -c "CREATE EXTENSION keanon" -c "CREATE TABLE t (id bigint PRIMARY KEY, g int, v int)" \
	-c "INSERT INTO t SELECT i, i % 10, i FROM generate_series(1, $n) i" \
	-c "SELECT keanon.watch('t', 'v', '{g}', 2, $((n * 3 / 4)))" -c "CHECKPOINT"
inserts=$(for i in $(seq "$rounds"); do echo "INSERT INTO t VALUES ($((n + i)), 1, $((i * n / (rounds + 1))));"; done)
echo "distinct_values,partitions,ms_per_insert,wal_bytes_per_insert,vals_bytes"
bench_psql -At -F, <<SQL
SELECT pg_current_wal_lsn() AS a, extract(epoch FROM clock_timestamp()) AS t0 \gset
\o /dev/null
$inserts
\o
SELECT $n, (SELECT count(*) FROM t_keanon_parts),
	round(((extract(epoch FROM clock_timestamp()) - :t0) * 1000 / $rounds)::numeric, 1),
	round(pg_wal_lsn_diff(pg_current_wal_lsn(), :'a') / $rounds),
	(SELECT pg_column_size(vals) FROM t_keanon_parts LIMIT 1)
WHERE keanon.check('t');
SQL

#!/usr/bin/env bash
# CREATE INDEX ... USING keanon against CREATE INDEX ... USING btree on the
# same 1M-row column, side by side in one throwaway cluster, three rounds
# each, alternating.  Run as root after `make install`.  Prints CSV:
#   round,rows,shape,method,seconds
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${ROWS:-1000000}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

bench_psql -c "CREATE EXTENSION keanon"
bench_psql -c "CREATE TABLE t_uniform (id bigint PRIMARY KEY, v bigint)" \
	-c "INSERT INTO t_uniform SELECT i, (random() * 1e12)::bigint FROM generate_series(1, $rows) i" \
	-c "CREATE TABLE t_dup (id bigint PRIMARY KEY, v bigint)" \
	-c "INSERT INTO t_dup SELECT i, (random() * 200)::bigint * 1000 FROM generate_series(1, $rows) i" \
	-c "VACUUM ANALYZE t_uniform" -c "VACUUM ANALYZE t_dup" -c "CHECKPOINT"

echo "round,rows,shape,method,seconds"
for round in 1 2 3; do
	for shape in uniform dup; do
		for method in btree keanon; do
			opts=""
			[ "$method" = keanon ] && opts="WITH (k = 5, e = 1000)"
			secs=$(bench_psql -At -c "DROP INDEX IF EXISTS t_${shape}_i" -c "CHECKPOINT" \
				-c "SELECT extract(epoch FROM clock_timestamp())" \
				-c "CREATE INDEX t_${shape}_i ON t_$shape USING $method (v) $opts" \
				-c "SELECT extract(epoch FROM clock_timestamp())" | awk 'NR==1{s=$1} NR==2{printf "%.3f", $1-s}')
			echo "$round,$rows,$shape,$method,$secs"
		done
	done
done
bench_psql -At -c "CREATE INDEX t_uniform_k ON t_uniform USING keanon (v) WITH (k = 5, e = 1000)" \
	-c "SELECT 'check,' || keanon.index_check('t_uniform_k')" \
	-c "SELECT 'pages,' || pg_relation_size('t_uniform_k') / 8192"

#!/usr/bin/env bash
# Shared by the in-database benchmarks: start a throwaway PostgreSQL 15
# cluster as the postgres user (run as root), export PGHOST/PGPORT for psql,
# and stop and remove it on exit.  Source it; do not run it.
# BENCH_SHARED_BUFFERS sets shared_buffers (default 1GB).
pg_bindir=$(/usr/lib/postgresql/15/bin/pg_config --bindir 2>/dev/null || pg_config --bindir)
bench_tmp=$(mktemp -d /tmp/keanon-bench.XXXXXX)
chown postgres: "$bench_tmp"
bench_stop() {
	cd /
	runuser -u postgres -- "$pg_bindir/pg_ctl" -D "$bench_tmp/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$bench_tmp"
}
trap bench_stop EXIT
(cd "$bench_tmp" && runuser -u postgres -- "$pg_bindir/initdb" -D "$bench_tmp/data" -A trust \
	-U postgres --no-sync >"$bench_tmp/initdb.log" 2>&1)
export PGPORT=${BENCH_PORT:-54600}
export PGHOST=$bench_tmp
export PGUSER=postgres
export PGOPTIONS='-c client_min_messages=warning'
(cd "$bench_tmp" && runuser -u postgres -- "$pg_bindir/pg_ctl" -D "$bench_tmp/data" -w -l "$bench_tmp/log" \
	-o "-k $bench_tmp -p $PGPORT -c listen_addresses='' -c shared_buffers=${BENCH_SHARED_BUFFERS:-1GB} -c maintenance_work_mem=1GB -c max_wal_size=8GB -c checkpoint_timeout=30min" start >/dev/null)
bench_psql() {
	runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 -h "$PGHOST" -p "$PGPORT" -d postgres "$@"
}
# the same, output thrown away (setup statements)
bench_sql() {
	bench_psql "$@" >/dev/null
}

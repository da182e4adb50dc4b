#!/usr/bin/env bash
# Shared by the benchmarks that may run against a server of the caller's:
# with PGHOST set, run_psql and run_pgbench use psql and pgbench from PATH
# and PGHOST/PGPORT/PGUSER as given; without it, a throwaway cluster is
# started (pg_cluster.sh, as root after `make install`).  Source it; do not
# run it.  Needs $here, the benchmark's folder.
if [ -z "${PGHOST:-}" ]; then
	# shellcheck source=pg_cluster.sh
	. "$here/pg_cluster.sh"
	run_psql() { bench_psql "$@"; }
	run_pgbench() { runuser -u postgres -- "$pg_bindir/pgbench" -h "$PGHOST" -p "$PGPORT" "$@" postgres; }
else
	run_psql() { psql -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
	run_pgbench() { pgbench "$@" postgres; }
fi

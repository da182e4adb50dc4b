#!/usr/bin/env bash
# What the deferred publisher waits on while many clients write, and how
# far behind it falls: a btree-indexed twin (b_t) and a deferred watch (d_t)
# of ROWS rows (default 100,000; values uniform up to 10^6, k = 5, e = 100)
# each take pgbench single-row INSERTs from CLIENTS (default 16) for SECS
# seconds (default 60).  During d_t's run, and up to CAP seconds after it
# (default 45) until nothing is pending, one psql session samples every
# 0.25 s: the rows published (the partitions' counts), the pending entries
# and the age of the oldest (the publication lag), and the keanon worker's
# wait event and CPU time (/proc/PID/stat, read by pg_read_file: run it as
# a superuser).  The server's fsync is whatever it is set to.
# Uses psql and pgbench from PATH and PGHOST/PGPORT/PGUSER as given; without
# PGHOST it starts a throwaway cluster (test/bench/pg_cluster.sh, as root
# after `make install`).  SAMPLES names a file for every sample (CSV:
# t_rel_s,phase,published,pending,lag_s,worker_event,worker_cpu_ticks).
# A backlog not caught up within CAP is not flushed: the worker is stopped
# and d_t dropped (keanon.check runs when it caught up).
# CSV on stdout: metric,value
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${ROWS:-100000}
clients=${CLIENTS:-16}
secs=${SECS:-60}
cap=${CAP:-45}
# shellcheck source=bench_target.sh
. "$here/bench_target.sh"
work=$(mktemp -d /tmp/keanon-publisher.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

run_psql -c "CREATE EXTENSION IF NOT EXISTS keanon" >/dev/null
run_psql -c "DROP TABLE IF EXISTS base" \
	-c "CREATE TABLE base AS SELECT 1 AS q, (random() * 1000000)::int AS s FROM generate_series(1, $rows)" >/dev/null
for t in b_t d_t; do
	run_psql -c "DROP TABLE IF EXISTS $t CASCADE" \
		-c "CREATE TABLE $t (id bigserial PRIMARY KEY, q int, s int)" \
		-c "INSERT INTO $t (q, s) SELECT q, s FROM base" >/dev/null
	echo "INSERT INTO $t (q, s) VALUES (1, (random() * 1000000)::int);" >"$work/ins_$t.sql"
done
run_psql -c "CREATE INDEX b_t_s ON b_t (s)" \
	-c "SELECT keanon.watch('d_t', 's', '{q}', 5, 100, mode => 'deferred')" \
	-c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null
parts=$(run_psql -At -c "SELECT parts_table FROM keanon.watches WHERE relid = 'd_t'::regclass")
pending=$(run_psql -At -c "SELECT pending_table FROM keanon.watches WHERE relid = 'd_t'::regclass")

echo "metric,value"
run_psql -At -c "SELECT 'fsync,' || current_setting('fsync')"
run_psql -At -c "SELECT 'cores,' || $(nproc)"
run_psql -At -c "SELECT 'clients,' || $clients"
run_psql -At -c "SELECT 'table_rows_before,' || $rows"
tps=$(run_pgbench -n -c "$clients" -j "$clients" -T "$secs" -f "$work/ins_b_t.sql" 2>/dev/null |
	awk '/^tps/ { printf "%.0f", $3 }')
echo "twin_tps,$tps"

# one psql session samples until it is killed
run_psql -At -F, >"$work/samples" 2>/dev/null <<SQL &
SELECT extract(epoch FROM clock_timestamp())::numeric(16, 3),
	(SELECT pg_catalog.sum(n) FROM $parts),
	p.n, coalesce(extract(epoch FROM clock_timestamp() - p.oldest)::numeric(10, 3), 0),
	coalesce(w.wait_event_type, 'CPU') || ':' || coalesce(w.wait_event, '-'),
	coalesce((SELECT (string_to_array(split_part(pg_catalog.pg_read_file('/proc/' || w.pid || '/stat'), ') ', 2), ' '))[12]::bigint
		+ (string_to_array(split_part(pg_catalog.pg_read_file('/proc/' || w.pid || '/stat'), ') ', 2), ' '))[13]::bigint), -1),
	coalesce(w.pid, 0)
FROM (SELECT pg_catalog.count(*) AS n, pg_catalog.min(keanon_at) AS oldest FROM $pending) p
	LEFT JOIN pg_catalog.pg_stat_activity w ON w.backend_type = 'keanon worker' AND w.datname = current_database()
\watch 0.25
SQL
sampler=$!
start=$(date +%s.%N)
tps=$(run_pgbench -n -c "$clients" -j "$clients" -T "$secs" -f "$work/ins_d_t.sql" 2>/dev/null |
	awk '/^tps/ { printf "%.0f", $3 }')
end=$(date +%s.%N)
echo "deferred_writers_tps,$tps"
# the catch-up: until a sample shows nothing pending, or the cap
while :; do
	last=$(grep -E '^[0-9.]+,' "$work/samples" | tail -1 | cut -d, -f1,3)
	if [ -n "$last" ] && awk -v l="$last" -v e="$end" 'BEGIN { split(l, a, ","); exit !(a[1] > e && a[2] == 0) }'; then break; fi
	awk -v e="$end" -v n="$(date +%s.%N)" -v c="$cap" 'BEGIN { exit !(n - e >= c) }' && break
	sleep 0.25
done
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true

# the samples, relative to the run's start (a line cut by the kill is skipped)
grep -E '^[0-9.]+,[0-9]+,[0-9]+,[0-9.]+,[A-Za-z]+:[A-Za-z_-]+,-?[0-9]+,[0-9]+$' "$work/samples" |
	awk -F, -v s="$start" -v e="$end" 'BEGIN { OFS = "," }
		{ print sprintf("%.2f", $1 - s), ($1 <= e ? "run" : "after"), $2, $3, $4, $5, $6 }' >"$work/rel"
[ -n "${SAMPLES:-}" ] && { echo "t_rel_s,phase,published,pending,lag_s,worker_event,worker_cpu_ticks"; cat "$work/rel"; } >"$SAMPLES"
hz=$(getconf CLK_TCK)
awk -F, -v secs="$secs" -v hz="$hz" '
	{ t[NR] = $1; ph[NR] = $2; pub[NR] = $3; pend[NR] = $4; lag[NR] = $5; ev[NR] = $6; cpu[NR] = $7 }
	END {
		n = NR
		for (i = 1; i <= n; i++) if (ph[i] == "run") { runs++; lags[runs] = lag[i]; last_run = i; if (!first_run) first_run = i }
		# lag percentiles while the writers ran
		for (i = 2; i <= runs; i++) { v = lags[i]; for (j = i - 1; j >= 1 && lags[j] > v; j--) lags[j + 1] = lags[j]; lags[j + 1] = v }
		if (runs) {
			printf "samples_during_run,%d\n", runs
			printf "lag_p50_s,%s\n", lags[int((runs - 1) * 0.50) + 1]
			printf "lag_p99_s,%s\n", lags[int((runs - 1) * 0.99) + 1]
			printf "lag_max_s,%s\n", lags[runs]
		}
		for (i = 1; i <= n; i++) if (ph[i] == "run") {
			if (t[i] <= 15) { a += lag[i]; na++ }
			if (t[i] >= secs - 15) { b += lag[i]; nb++ }
		}
		if (na) printf "lag_mean_first_15s,%.3f\n", a / na
		if (nb) printf "lag_mean_last_15s,%.3f\n", b / nb
		if (last_run > first_run && t[last_run] > t[first_run])
			printf "published_rows_per_s_during_run,%.0f\n", (pub[last_run] - pub[first_run]) / (t[last_run] - t[first_run])
		if (n > last_run && t[n] > t[last_run])
			printf "published_rows_per_s_after,%.0f\n", (pub[n] - pub[last_run]) / (t[n] - t[last_run])
		printf "pending_at_writers_end,%d\n", pend[last_run]
		for (i = last_run + 1; i <= n; i++) if (pend[i] == 0) { printf "catch_up_s,%.2f\n", t[i] - secs; caught = 1; break }
		if (!caught) printf "catch_up_s,NA (pending %d after %.0f s)\n", pend[n], t[n] - secs
		# the worker: CPU time over the samples it ran in, and its wait events
		for (i = 2; i <= n; i++) if (cpu[i] >= 0 && cpu[i - 1] >= 0 && cpu[i] >= cpu[i - 1]) { ct += cpu[i] - cpu[i - 1]; wt += t[i] - t[i - 1] }
		if (wt > 0) printf "worker_cpu_share,%.3f\n", ct / hz / wt
		for (i = 1; i <= n; i++) if (cpu[i] >= 0) { e[ev[i]]++; ne++ }
		for (k in e) printf "worker_event %s,%.3f\n", k, e[k] / ne
	}' "$work/rel"
# checked when the publisher caught up; a backlog left is dropped with the
# table (its worker stopped first) rather than flushed for minutes
if [ "$(run_psql -At -c "SELECT count(*) FROM $pending")" = 0 ]; then
	run_psql -At -c "SELECT 'flushed_at_end,' || keanon.flush('d_t')" -c "SELECT 'check,' || keanon.check('d_t')"
else
	echo "check,not run (the backlog is dropped)"
	run_psql -c "LOAD 'keanon'" -c "ALTER SYSTEM SET keanon.worker = off" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.5
	run_psql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'keanon worker'" >/dev/null
	run_psql -c "DROP TABLE d_t CASCADE" >/dev/null
	run_psql -c "ALTER SYSTEM RESET keanon.worker" -c "SELECT pg_reload_conf()" >/dev/null
fi

#!/usr/bin/env bash
# Where live writers lose time as clients are added: a live watch (l_t)
# and a btree-indexed twin (b_t) of ROWS rows (default 100,000; values
# uniform up to 10^6, k = 5, e = 100) take pgbench single-row INSERTs from
# each of CLIENTS (default "1 16") for SECS seconds (default 20), while a
# sampler reads pg_stat_activity every 0.1 s and counts what each active
# pgbench backend is doing: on the CPU ("CPU:-") or waiting (type:event,
# Lock:object being keanon's writers' lock).
# Uses psql and pgbench from PATH and PGHOST/PGPORT/PGUSER as given; without
# PGHOST it starts a throwaway cluster (test/bench/pg_cluster.sh, as root
# after `make install`).  CSV on stdout:
#   table,clients,tps,event,samples,share
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rows=${ROWS:-100000}
clients=${CLIENTS:-"1 16"}
secs=${SECS:-20}
# shellcheck source=bench_target.sh
. "$here/bench_target.sh"
work=$(mktemp -d /tmp/keanon-waits.XXXXXX)
chmod 755 "$work"

run_psql -c "CREATE EXTENSION IF NOT EXISTS keanon" >/dev/null
for t in b_t l_t; do
	run_psql -c "DROP TABLE IF EXISTS $t CASCADE" \
		-c "CREATE TABLE $t (id bigserial PRIMARY KEY, q int, s int)" \
		-c "INSERT INTO $t (q, s) SELECT 1, (random() * 1000000)::int FROM generate_series(1, $rows)" >/dev/null
	echo "INSERT INTO $t (q, s) VALUES (1, (random() * 1000000)::int);" >"$work/ins_$t.sql"
done
run_psql -c "CREATE INDEX b_t_s ON b_t (s)" -c "SELECT keanon.watch('l_t', 's', '{q}', 5, 100)" \
	-c "VACUUM ANALYZE" -c "CHECKPOINT" >/dev/null

echo "table,clients,tps,event,samples,share"
for c in $clients; do
	for t in b_t l_t; do
		: >"$work/samples"
		# one psql session samples until it is killed
		run_psql -At -F, >"$work/samples" 2>/dev/null <<SQL &
SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '-'), count(*)
FROM pg_stat_activity WHERE application_name = 'pgbench' AND state = 'active'
GROUP BY 1 \watch 0.1
SQL
		sampler=$!
		tps=$(run_pgbench -n -c "$c" -j "$c" -T "$secs" -f "$work/ins_$t.sql" 2>/dev/null |
			awk '/^tps/ { printf "%.0f", $3 }')
		kill "$sampler" 2>/dev/null || true
		wait "$sampler" 2>/dev/null || true
		# (the watch's title lines and a line cut by the kill are skipped)
		awk -F, -v t="$t" -v c="$c" -v tps="$tps" 'NF == 2 && $1 ~ /^[A-Za-z]+:[A-Za-z-]+$/ && $2 ~ /^[0-9]+$/ { n[$1] += $2; all += $2 }
			END { for (e in n) printf "%s,%s,%s,%s,%d,%.3f\n", t, c, tps, e, n[e], n[e] / all }' \
			"$work/samples" | sort -t, -k5,5nr
	done
done
run_psql -At -c "SELECT 'check,' || keanon.check('l_t')" >&2
rm -rf "$work"

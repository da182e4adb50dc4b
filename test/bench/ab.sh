#!/usr/bin/env bash
# Two builds of keanon side by side: build each tree (A and B), then, for
# ROUNDS rounds, install A and run the workload, install B and run it,
# alternately, so that a drift of the machine falls on both alike.  The
# workload, in a throwaway cluster: watch a table of ROWS rows (the fill),
# pgbench single-row INSERTs for SECONDS seconds with synchronous_commit
# off (live maintenance), a
# multi-row UPDATE of a tenth of the rows, and keanon.check.  Run as root;
# it leaves build B installed.
#   usage: test/bench/ab.sh TREE_A TREE_B
#   build,round,watch_ms,insert_tps,update_ms
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
a=$1
b=$2
rounds=${ROUNDS:-3}
rows=${ROWS:-200000}
seconds=${SECONDS_PER_RUN:-10}
work=$(mktemp -d /tmp/keanon-ab.XXXXXX)
chmod 755 "$work"
for t in A B; do
	src=$a
	[ "$t" = B ] && src=$b
	mkdir "$work/$t"
	tar -C "$src" --exclude=./.git -cf - . | tar -C "$work/$t" -xf -
	make -C "$work/$t" -s clean >/dev/null
	make -C "$work/$t" -s >/dev/null
done
pgbench=$(/usr/lib/postgresql/15/bin/pg_config --bindir)/pgbench
echo "build,round,watch_ms,insert_tps,update_ms"
for round in $(seq 1 "$rounds"); do
	for t in A B; do
		make -C "$work/$t" -s install >/dev/null
		(
			# shellcheck source=pg_cluster.sh
			. "$here/pg_cluster.sh"
			ms() { bench_psql -c '\timing on' -c "$1" | awk '/^Time:/ {print $2}'; }
			bench_sql -c "CREATE EXTENSION keanon" \
				-c "CREATE TABLE people (id bigserial PRIMARY KEY, grp integer, salary integer)" \
				-c "INSERT INTO people (grp, salary) SELECT i % 100, (i::bigint * 7919) % 1000000 FROM generate_series(1, $rows) i" \
				-c "VACUUM ANALYZE people"
			w=$(ms "SELECT keanon.watch('people', 'salary', '{grp}', 5, 100)")
			echo "INSERT INTO people (grp, salary) VALUES ((random() * 99)::integer, (random() * 999999)::integer);" >"$bench_tmp/ins.sql"
			chown postgres: "$bench_tmp/ins.sql"
			# commits without waiting for the disk: the statement's own cost shows
			tps=$(runuser -u postgres -- env PGOPTIONS='-c synchronous_commit=off' "$pgbench" -n \
				-h "$PGHOST" -p "$PGPORT" -f "$bench_tmp/ins.sql" -T "$seconds" postgres |
				awk '/^tps/ {print $3; exit}')
			u=$(ms "UPDATE people SET salary = salary + 1 WHERE id % 10 = 0")
			bench_psql -At -c "SELECT keanon.check('people')" >/dev/null
			echo "$t,$round,$w,$tps,$u"
		)
	done
done
rm -rf "$work"

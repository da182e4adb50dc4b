#!/usr/bin/env bash
# The cost of generalized quasi-identifiers inside PostgreSQL: single-row
# INSERTs into a watch of the 8 Adult quasi-identifiers with generalize
# (I3M and the similar-B-tree) against the same watch without it, side by
# side in one throwaway cluster, at several table sizes; and the time to
# watch (static clustering included) the 30,162 complete Adult rows.  Run
# as root after `make install`.  CSV on stdout:
#   test,rows,method,value,unit
# ROWS_LIST (default "10000 100000 1000000") and SECONDS_PER_RUN (default
# 10) scale it down.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rows_list=${ROWS_LIST:-"10000 100000 1000000"}
secs=${SECONDS_PER_RUN:-10}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

work=$bench_tmp/scripts
mkdir -p "$work"
cp "$here"/hierarchies/*.csv "$work/"
# the complete Adult rows: age, workclass, education-num, marital-status,
# occupation, race, sex, native-country, and capital-loss as the value
awk -F', *' 'NR > 1 && NF >= 15 && $0 !~ /\?/ { print NR "\t" $1 "\t" $2 "\t" $5 "\t" $6 "\t" $7 "\t" $9 "\t" $10 "\t" $14 "\t" $12 }' \
	"$root/data/adult.data" >"$work/adult.tsv"
chown -R postgres: "$work"

bench_sql -c "CREATE EXTENSION keanon" -c "CREATE EXTENSION cube"
for h in workclass marital-status occupation race sex native-country; do
	t=$(echo "h_$h" | tr '-' '_')
	bench_sql -c "CREATE TABLE $t (value text, parent text)" \
		-c "\\copy $t FROM '$work/$h.csv' WITH (FORMAT csv, HEADER true)" \
		-c "UPDATE $t SET parent = NULL WHERE parent = ''"
done
bench_sql -c "CREATE TABLE adult (id integer PRIMARY KEY, age integer, workclass text, edu integer,
	marital text, occupation text, race text, sex text, country text, loss integer)" \
	-c "\\copy adult FROM '$work/adult.tsv'"
hier='{"workclass": "h_workclass", "marital": "h_marital_status", "occupation": "h_occupation", "race": "h_race", "sex": "h_sex", "country": "h_native_country"}'
qis="ARRAY['age', 'workclass', 'edu', 'marital', 'occupation', 'race', 'sex', 'country']"

# watching all of Adult, with the static clustering
for method in none i3m sbtree; do
	bench_sql -c "CREATE TABLE a_$method (LIKE adult INCLUDING ALL)" -c "INSERT INTO a_$method SELECT * FROM adult"
	if [ "$method" = none ]; then
		gen=""
	else
		gen=", generalize => 5, hierarchies => '$hier', qi_method => '$method'"
	fi
	ms=$(bench_psql -At -c "\\timing on" -c "SELECT keanon.watch('a_$method', 'loss', $qis, 3, 0$gen)" |
		awk '/^Time:/ { print $2 }')
	echo "watch_adult,30162,$method,$ms,ms"
	if [ "$method" != none ]; then
		bench_psql -At -c "SELECT 'groups_adult,30162,$method,' || count(*) || ',groups' FROM keanon.qi_groups('a_$method')"
		bench_psql -At -c "SELECT 'il_adult,30162,$method,' || round(max(total_il)::numeric, 1) || ',il' FROM keanon.qi_groups('a_$method')"
		bench_psql -At -c "SELECT 'check_adult,30162,$method,' || keanon.check('a_$method') || ',bool'"
	fi
done

# single-row INSERTs of Adult-shaped rows into tables of each size
cat >"$work/insert.sql" <<'EOF'
\set r random(1, 30162)
INSERT INTO :tab SELECT nextval('ids'), age, workclass, edu, marital, occupation, race, sex, country, loss
FROM adult WHERE id = (SELECT min(id) FROM adult WHERE id >= :r);
EOF
chown postgres: "$work/insert.sql"
bench_sql -c "CREATE SEQUENCE ids START 100000000"
for rows in $rows_list; do
	for method in none i3m sbtree; do
		tab=t_${method}_$rows
		bench_sql -c "CREATE TABLE $tab (LIKE adult INCLUDING ALL)" \
			-c "INSERT INTO $tab SELECT g, a.age, a.workclass, a.edu, a.marital, a.occupation, a.race, a.sex, a.country,
				a.loss FROM generate_series(1, $rows) g JOIN adult a ON a.id = (SELECT min(id) FROM adult WHERE id >= 1 + (g::bigint * 7919) % 30000)"
		if [ "$method" = none ]; then
			gen=""
		else
			gen=", generalize => 5, hierarchies => '$hier', qi_method => '$method'"
		fi
		bench_sql -c "SELECT keanon.watch('$tab', 'loss', $qis, 3, 0$gen)" -c "VACUUM ANALYZE"
		tps=$(runuser -u postgres -- pgbench -n -h "$PGHOST" -p "$PGPORT" -c 1 -T "$secs" -D tab="$tab" \
			-f "$work/insert.sql" postgres 2>/dev/null | awk '/^tps/ { print $3 }')
		echo "insert_us,$rows,$method,$(awk -v t="$tps" 'BEGIN { printf "%.1f", 1e6 / t }'),us_per_row"
		if [ "$method" != none ]; then
			bench_psql -At -c "SELECT 'check,$rows,$method,' || keanon.check('$tab') || ',bool'"
		fi
		bench_sql -c "DROP TABLE $tab"
	done
done

#!/usr/bin/env bash
# What a watch costs on disk: every relation keanon adds for a watch (the
# rows table with its indexes and TOAST, the keanon index, the partitions
# table, and for a generalized watch its groups, members and hierarchy
# tables) against the watched table with its own indexes, after VACUUM.
# Two shapes at ROWS rows (default 10^6):
#   uniform  id bigint key, two integer quasi-identifiers, a salary
#            uniform up to 10^6 (k = 5, e = 100)
#   adult    the complete rows of data/adult.data repeated to ROWS rows:
#            a serial key, age, workclass, education, marital status,
#            occupation, race, sex, native country, hours per week as the
#            sensitive value (k = 5, e = 10), and once more generalized
#            (age numeric, workclass, marital status, occupation, race,
#            sex and country by the hierarchies of test/bench/hierarchies/,
#            generalize => 5)
# Run as root after `make install`.  CSV on stdout:
#   shape,rows,table_bytes,added_bytes,ratio,added_bytes_per_row,relation,bytes
# (one line per shape with the totals, relation and bytes empty, then one
# line per relation keanon added)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rows=${ROWS:-1000000}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

work=$bench_tmp/disk
mkdir -p "$work"
awk -F', *' 'NR > 1 && NF >= 15 && $0 !~ /\?/ { print $1 "\t" $2 "\t" $4 "\t" $6 "\t" $7 "\t" $9 "\t" $10 "\t" $14 "\t" $13 }' \
	"$root/data/adult.data" >"$work/adult.tsv"
cp "$here"/hierarchies/*.csv "$work/" 2>/dev/null || true
chown -R postgres: "$work"

bench_sql -c "CREATE EXTENSION keanon" -c "CREATE EXTENSION cube"
bench_sql -c "LOAD 'keanon'" -c "ALTER SYSTEM SET keanon.worker = off" -c "SELECT pg_reload_conf()"

# the watched table with its indexes, and what keanon added for its watch
sizes() {
	local shape=$1 tab=$2
	bench_psql -At -F, -c "VACUUM ANALYZE" -c "
WITH w AS (SELECT * FROM keanon.watches WHERE relid = '$tab'::regclass),
added AS (SELECT c.oid, c.relname FROM pg_class c, w
		  WHERE c.oid IN (w.rows_table, w.parts_table, w.qi_groups, w.qi_members, w.qi_hierarchy)),
rel AS (SELECT relname, pg_total_relation_size(oid) AS bytes FROM added),
tot AS (SELECT pg_total_relation_size('$tab'::regclass) AS t, (SELECT sum(bytes) FROM rel) AS a)
SELECT '$shape', $rows, t, a, round(a / t::numeric, 2), round(a / $rows::numeric, 1), NULL, NULL FROM tot
UNION ALL
SELECT '$shape', $rows, NULL, NULL, NULL, NULL, relname::text, bytes FROM rel ORDER BY 7 NULLS FIRST"
}

echo "shape,rows,table_bytes,added_bytes,ratio,added_bytes_per_row,relation,bytes"

bench_sql -c "CREATE TABLE uniform (id bigint PRIMARY KEY, zip integer, age integer, salary integer)" \
	-c "INSERT INTO uniform SELECT i, (random() * 999)::int, 18 + (random() * 70)::int, (random() * 1e6)::int
		FROM generate_series(1, $rows) i"
bench_sql -c "SELECT keanon.watch('uniform', 'salary', '{zip,age}', 5, 100)"
sizes uniform uniform

bench_sql -c "CREATE TABLE adult_src (age integer, workclass text, education text, marital text, occupation text,
	race text, sex text, country text, hours integer)" -c "\\copy adult_src FROM '$work/adult.tsv'"
for shape in adult adult_generalized; do
	bench_sql -c "CREATE TABLE $shape (id bigserial PRIMARY KEY, age integer NOT NULL, workclass text NOT NULL,
		education text NOT NULL, marital text NOT NULL, occupation text NOT NULL, race text NOT NULL,
		sex text NOT NULL, country text NOT NULL, hours integer)" \
		-c "INSERT INTO $shape (age, workclass, education, marital, occupation, race, sex, country, hours)
			SELECT a.age, a.workclass, a.education, a.marital, a.occupation, a.race, a.sex, a.country, a.hours
			FROM generate_series(1, ceil($rows / (SELECT count(*) FROM adult_src)::numeric)::int) g, adult_src a
			LIMIT $rows"
done
bench_sql -c "SELECT keanon.watch('adult', 'hours', '{age,workclass,education,marital,occupation,race,sex,country}', 5, 10)"
sizes adult adult
# the I3M experiment's categorical hierarchies (education left out: the
# research generalizes education-num, which this table does not keep)
hier=''
for h in workclass:workclass marital:marital-status occupation:occupation race:race sex:sex country:native-country; do
	col=${h%%:*}
	bench_sql -c "CREATE TABLE h_$col (value text, parent text)" \
		-c "\\copy h_$col FROM '$work/${h#*:}.csv' WITH (FORMAT csv, HEADER true)" \
		-c "UPDATE h_$col SET parent = NULL WHERE parent = ''"
	hier="$hier${hier:+, }\"$col\": \"h_$col\""
done
bench_sql -c "SELECT keanon.watch('adult_generalized', 'hours',
	'{age,workclass,marital,occupation,race,sex,country}', 5, 10, generalize => 5,
	hierarchies => '{$hier}')"
sizes adult_generalized adult_generalized

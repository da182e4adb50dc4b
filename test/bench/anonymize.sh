#!/usr/bin/env bash
# keanon.anonymize inside PostgreSQL on the Adult data: the whole function
# call (reading the table, the search, writing the result table) and the
# search alone, for the PrivacyFrost2 paper's Table 2 settings and for
# ARX's benchmark set-up with method => 'optimal'.  Run as root after
# `make install`.  CSV on stdout:
#   setup,method,scoring,k,l,c,t,first_call_ms,call_ms,search_ms,checks,score,smallest_group
# (first_call_ms: the first call of a session; call_ms: the same call again)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

work=$bench_tmp/scripts
mkdir -p "$work"
cp "$here"/hierarchies_arx/*.csv "$work/"
# the complete rows: age, workclass, education, marital-status, occupation,
# race, sex, native-country, hours-per-week, salary class
awk -F', *' 'NR > 1 && NF >= 15 && $0 !~ /\?/ { print $1 "\t" $2 "\t" $4 "\t" $6 "\t" $7 "\t" $9 "\t" $10 "\t" $14 "\t" $13 "\t" $15 }' \
	"$root/data/adult.data" >"$work/adult.tsv"
chown -R postgres: "$work"

bench_sql -c "CREATE EXTENSION keanon"
for h in age education marital-status native-country race salary-class sex workclass occupation; do
	t=$(echo "h_$h" | tr '-' '_')
	bench_sql -c "CREATE TABLE $t (value text, parent text)" \
		-c "\\copy $t FROM '$work/$h.csv' WITH (FORMAT csv, HEADER true)" \
		-c "UPDATE $t SET parent = NULL WHERE parent = ''"
done
bench_sql -c "CREATE TABLE adult (age integer, workclass text, education text, marital text, occupation text,
	race text, sex text, country text, hours integer, salary text)" \
	-c "\\copy adult FROM '$work/adult.tsv'" -c "VACUUM ANALYZE adult"

echo "setup,method,scoring,k,l,c,t,first_call_ms,call_ms,search_ms,checks,score,smallest_group"
run() {
	local setup=$1 qis=$2 sens=$3 hier=$4 method=$5 scoring=$6 k=$7 l=$8 c=$9 t=${10}
	local lv=$l cv=$c tv=$t
	[ "$lv" = NULL ] && lv=''
	[ "$cv" = NULL ] && cv=''
	[ "$tv" = NULL ] && tv=''
	local out
	# the same call twice in one session: the first pays for loading
	# keanon, compiling its PL/pgSQL and warming the caches, the second not
	out=$(bench_psql -At -F, -c "\\timing on" -c "DROP TABLE IF EXISTS adult_generalized" \
		-c "SELECT search_ms, candidates_checked, score, smallest_group FROM keanon.anonymize('adult', '$qis', '$sens',
			'$hier', $k, l => $l, c => $c, t => $t, scoring => '$scoring', method => '$method')" \
		-c "DROP TABLE adult_generalized" \
		-c "SELECT search_ms, candidates_checked, score, smallest_group FROM keanon.anonymize('adult', '$qis', '$sens',
			'$hier', $k, l => $l, c => $c, t => $t, scoring => '$scoring', method => '$method')" 2>/dev/null |
		awk -F, '/^Time:/ { t = $0; sub(/^Time: /, "", t); sub(/ ms.*/, "", t); times[n++] = t }
			!/^Time:/ && NF == 4 { row = $0 }
			END { print times[1] "," times[3] "," row }')
	echo "$setup,$method,$scoring,$k,$lv,$cv,$tv,$out"
}

paper_qis='{age,workclass,education,marital,occupation,race,sex,country}'
paper_hier='{"age": "h_age", "workclass": "h_workclass", "education": "h_education", "marital": "h_marital_status", "occupation": "h_occupation", "race": "h_race", "sex": "h_sex", "country": "h_native_country"}'
for scoring in basic eta log; do
	for k in 2 10; do
		for l in 2 10; do
			run paper_table2 "$paper_qis" hours "$paper_hier" privacyfrost2 $scoring $k $l NULL NULL
		done
		for t in 0.1 0.9; do
			run paper_table2 "$paper_qis" hours "$paper_hier" privacyfrost2 $scoring $k NULL NULL $t
		done
	done
done
# the same settings, the optimum
for k in 2 10; do
	for l in 2 10; do
		run paper_table2 "$paper_qis" hours "$paper_hier" optimal basic $k $l NULL NULL
	done
done
# ARX's benchmark: occupation sensitive, 8 quasi-identifiers
arx_qis='{age,education,marital,country,race,salary,sex,workclass}'
arx_hier='{"age": "h_age", "education": "h_education", "marital": "h_marital_status", "country": "h_native_country", "race": "h_race", "salary": "h_salary_class", "sex": "h_sex", "workclass": "h_workclass"}'
run arx "$arx_qis" occupation "$arx_hier" optimal basic 5 NULL NULL NULL
run arx "$arx_qis" occupation "$arx_hier" optimal basic 5 3 4 NULL
run arx "$arx_qis" occupation "$arx_hier" optimal basic 5 NULL NULL 0.2
run arx "$arx_qis" occupation "$arx_hier" privacyfrost2 basic 5 NULL NULL NULL

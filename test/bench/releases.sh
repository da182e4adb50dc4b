#!/usr/bin/env bash
# What releases that reveal nothing by subtraction cost: rows withheld and
# retained per release, and each release's sum-error next to the
# unconstrained optimum of the table's current rows, on the Adult data's
# capital-loss (the research's experiment: rows with capital-loss > 0 and
# no '?', half loaded, the rest arriving) and on uniform salaries.  Each
# round inserts a slice of the arrivals, deletes 1% of the rows and
# releases; the release's own time is measured too.  Run as root after
# `make install`.
#   data,release,rows,published,withheld,retained,partitions,sum_error,unconstrained_sum_error,release_ms
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${ROUNDS:-8}
uniform=${UNIFORM_ROWS:-20000}
# shellcheck source=pg_cluster.sh
. "$here/pg_cluster.sh"

work=$(mktemp -d /tmp/keanon-releases.XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"; bench_stop' EXIT
# capital-loss (field 12) of the rows with capital-loss > 0 and no '?'
awk -F', *' 'NR > 1 && NF >= 15 && $12 > 0 && $0 !~ /\?/ { print NR "\t" $1 "\t" $12 }' \
	"$root/data/adult.data" >"$work/adult.tsv"
chown postgres: "$work/adult.tsv"

bench_sql -c "CREATE EXTENSION keanon" \
	-c "CREATE TABLE src_adult (id integer PRIMARY KEY, age integer, v integer)" \
	-c "\\copy src_adult FROM '$work/adult.tsv'" \
	-c "CREATE TABLE src_uniform AS SELECT i AS id, 18 + i % 60 AS age, (random() * 200000)::integer AS v FROM generate_series(1, $uniform) i" \
	-c "ALTER TABLE src_uniform ADD PRIMARY KEY (id)"

time_ms() {
	bench_psql -c '\timing on' -c "$1" | awk '/^Time:/ {print $2}'
}

echo "data,release,rows,published,withheld,retained,partitions,sum_error,unconstrained_sum_error,release_ms"
for data in adult uniform; do
	case $data in
		adult) k=5; e=100 ;;
		uniform) k=5; e=5000 ;;
	esac
	n=$(bench_psql -At -c "SELECT count(*) FROM src_$data")
	half=$((n / 2))
	slice=$(((n - half + rounds - 1) / rounds))
	bench_sql -c "CREATE TABLE t_$data (id integer PRIMARY KEY, age integer, v integer)" \
		-c "INSERT INTO t_$data SELECT * FROM src_$data ORDER BY id LIMIT $half" \
		-c "SELECT keanon.watch('t_$data', 'v', '{age}', $k, $e, mode => 'release')"
	for round in $(seq 0 "$rounds"); do
		if [ "$round" -gt 0 ]; then
			bench_sql -c "INSERT INTO t_$data SELECT * FROM src_$data ORDER BY id OFFSET $((half + (round - 1) * slice)) LIMIT $slice" \
				-c "DELETE FROM t_$data WHERE id IN (SELECT id FROM t_$data ORDER BY random() LIMIT (SELECT count(*) / 100 FROM t_$data))"
		fi
		ms=$(time_ms "SELECT keanon.release('t_$data')")
		bench_psql -At -F, -c "SELECT '$data', release_no, (SELECT count(*) FROM t_$data), rows_published,
			rows_withheld, rows_retained, partitions, sum_error, unconstrained_sum_error, '$ms'
			FROM keanon.releases('t_$data') ORDER BY release_no DESC LIMIT 1"
	done
	bench_psql -At -c "SELECT 'check,$data,' || keanon.check('t_$data')" >&2
done

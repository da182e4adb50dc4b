#!/usr/bin/env bash
# PostgreSQL's own regression suite with keanon loaded in every test
# database, against the same suite without it.  Run as root, after keanon
# is installed (scripts/test.sh runs it last).
#
# The suite is built from the Debian source of the installed postgresql-15
# (deb-src entries are added for it when missing): only pg_regress and
# regress.so.  Both runs use private temporary servers.  What keanon
# changes is the difference between the two runs' results, test by test;
# it must be exactly test/core/keanon.diff (the catalog listings that show
# keanon's access method, operator classes and event triggers).  Any other
# difference fails.  Whatever the plain run itself differs in from the
# suite's expected output (the Debian build, this machine) cancels out.
#
# When the source of the installed version cannot be had, another 15.x
# source the archive offers serves; when none can, the suite is skipped
# with a message, not failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${KEANON_CORE_WORK:-$(mktemp -d /tmp/keanon-core.XXXXXX)}
chmod 755 "$work"
version=$(dpkg-query -W -f='${Version}' postgresql-15)
log="$work/core.log"

# the installed version's source, or else another 15.x one: the two runs
# share the suite and the server, so a suite of another minor version
# still tells what keanon changes
# shellcheck source=../pg15-source.sh
. "$here/../pg15-source.sh"
fetch_pg15_source "$work" "$log"
if [ -z "$src" ]; then
	echo "core suite: SKIPPED: no source of postgresql-15 could be fetched from the archive"
	exit 0
fi

echo "core suite: building pg_regress and regress.so from $(basename "$src") (server $version) in $work"
# the generated headers first: a parallel make of the suite alone races them
(cd "$src" && ./configure --without-readline --without-zlib --without-icu --without-llvm \
	>>"$log" 2>&1 && make -C src/backend generated-headers >>"$log" 2>&1 &&
	make -C src/test/regress -j2 >>"$log" 2>&1) || {
	tail -n 30 "$log"
	echo "core suite: could not build the regression suite" >&2
	exit 1
}
chown -R postgres: "$work"

# run the parallel schedule, with extra pg_regress options; its results go
# to $work/out_NAME
run_suite() {
	local name=$1
	shift
	(cd "$src/src/test/regress" && runuser -u postgres -- ./pg_regress \
		--temp-instance="$work/tmp_$name" --bindir=/usr/lib/postgresql/15/bin \
		--inputdir=. --dlpath=. --max-concurrent-tests=20 --schedule=parallel_schedule \
		--outputdir="$work/out_$name" "$@" >"$work/$name.log" 2>&1) || true
	if [ ! -d "$work/out_$name/results" ]; then
		tail -n 30 "$work/$name.log"
		echo "core suite: the $name run did not run" >&2
		exit 1
	fi
}
echo "core suite: the plain run"
run_suite plain
echo "core suite: the run with keanon loaded in every database"
run_suite keanon --load-extension=keanon

# what keanon changes, test by test, its OIDs left out; the tests the
# schedule marks "ignore:" (random: its output is random by design) are
# left out, since either run may differ in them by chance
ignored=$(sed -n 's/^ignore: *//p' "$src/src/test/regress/parallel_schedule" | tr -s ' \n' ' ')
(
	cd "$work"
	for f in out_keanon/results/*.out; do
		t=$(basename "$f")
		case " $ignored " in *" ${t%.out} "*) continue ;; esac
		diff -u --label "plain/$t" --label "keanon/$t" "out_plain/results/$t" "$f" || true
	done
) | sed -E -e 's/^(\+ keanon_[a-z0-9]+_ops +\| +)[0-9]+$/\1N/' \
	-e 's/^(\+ +)[0-9]+( \| [a-z_]+ +\| +)[0-9]+( \| [a-z_]+ *)$/\1N\2N\3/' >"$work/keanon.diff"
if ! diff -u "$here/keanon.diff" "$work/keanon.diff" >"$work/unexpected.diff"; then
	cat "$work/unexpected.diff"
	echo "core suite: FAILED: keanon changes PostgreSQL's own suite beyond the documented listings" \
		"(test/core/keanon.diff); the work is kept in $work" >&2
	exit 1
fi
echo "core suite: keanon changes only the documented listings ($(grep -c '^+++ ' "$work/keanon.diff") tests)"
rm -rf "$work"

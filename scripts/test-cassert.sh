#!/usr/bin/env bash
# keanon's regression and isolation suites against a PostgreSQL 15 server
# built from source with assertions (--enable-cassert: the server's own
# assertions, and freed memory overwritten at once, so that memory read
# after it was freed shows), then a scenario of every mode under
# debug_discard_caches = 1 (every cache entry thrown away at each use,
# which only such a server accepts): test/discard/.
#
# The last step of `make test` (it builds a server: about 8 minutes on two
# cores; KEANON_CASSERT=0 skips it), or run alone, as root, after
# scripts/install-deps.sh.  The server and keanon's build go to a private
# directory, nothing of them outside it (Debian's source fixes the library
# directory at the system's: it is pointed into the private directory, and
# checked, before anything is installed); fetching the source adds the
# archive's deb-src entries when missing, as the core suite does.  When no
# PostgreSQL 15 source can be fetched, or it does not build here, the
# suite is skipped with a message; keanon's build and tests must pass.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${KEANON_CASSERT_WORK:-$(mktemp -d /tmp/keanon-cassert.XXXXXX)}
chmod 755 "$work"
log="$work/build.log"
inst="$work/inst"
port=${KEANON_CASSERT_PORT:-54795}

section() {
	echo
	echo "=== $* ==="
}

fail() {
	[ -f "$log" ] && tail -n 30 "$log"
	echo "cassert suite: FAILED: $*; the work is kept in $work" >&2
	exit 1
}

# shellcheck source=../test/pg15-source.sh
. "$root/test/pg15-source.sh"
fetch_pg15_source "$work" "$log"
if [ -z "$src" ]; then
	echo "cassert suite: SKIPPED: no source of postgresql-15 could be fetched from the archive"
	exit 0
fi

echo "cassert suite: building $(basename "$src") with assertions into $inst"
sed -i "s|^override pkglibdir := .*|override pkglibdir := $inst/lib/pkg|" "$src/src/Makefile.global.in"
if ! (cd "$src" && ./configure --prefix="$inst" --enable-cassert --without-readline --without-zlib \
	--without-icu --without-llvm CFLAGS="-O1" >>"$log" 2>&1); then
	tail -n 30 "$log"
	echo "cassert suite: SKIPPED: PostgreSQL 15's configure fails here (log above, work in $work)"
	exit 0
fi
# every directory the installation writes to lies inside it
for dir in prefix exec_prefix libdir pkglibdir datadir includedir bindir; do
	value=$(make -s -C "$src/src/port" -f - print <<MK 2>/dev/null
include Makefile
print:
	@echo \$($dir)
MK
	)
	case "$value" in
	"$inst" | "$inst"/*) ;;
	*) fail "the build would install $dir into '$value', outside $inst" ;;
	esac
done
if ! (cd "$src" && make -s -j"$(nproc)" >>"$log" 2>&1 && make -s install >>"$log" 2>&1 &&
	for c in cube citext amcheck ltree; do make -s -C "contrib/$c" install >>"$log" 2>&1 || exit 1; done); then
	tail -n 30 "$log"
	echo "cassert suite: SKIPPED: PostgreSQL 15 with assertions does not build here (log above, work in $work)"
	exit 0
fi
pg_config="$inst/bin/pg_config"
case "$("$pg_config" --pkglibdir)" in
"$inst"/*) ;;
*) fail "the server's library directory is outside $inst" ;;
esac

echo "cassert suite: building keanon against it"
tree="$work/keanon"
mkdir -p "$tree"
tar -C "$root" --exclude=./.git -cf - . | tar -C "$tree" -xf -
make -C "$tree" clean >/dev/null 2>&1 || true
(make -C "$tree" -s PG_CONFIG="$pg_config" PG_CFLAGS="-Werror" >>"$log" 2>&1 &&
	make -C "$tree" -s PG_CONFIG="$pg_config" install >>"$log" 2>&1) || fail "building keanon"
chown -R postgres: "$work"

. "$root/scripts/report-failure.sh"

echo "cassert suite: regression and isolation suites"
if ! (cd "$tree" && runuser -u postgres -- make installcheck PG_CONFIG="$pg_config" TAP_TESTS= \
		EXTRA_REGRESS_OPTS="--temp-instance=$tree/tmp_pgr --port=$port"); then
	report_failure "$tree" cassert
	fail "the suites on a server with assertions"
fi

echo "cassert suite: every mode under debug_discard_caches = 1"
printf 'keanon.worker = off\n' >"$work/discard.conf"
chmod 644 "$work/discard.conf"
if ! (cd "$tree" && runuser -u postgres -- "$inst/lib/pkg/pgxs/src/test/regress/pg_regress" \
		--temp-instance="$tree/tmp_discard" --port="$port" --bindir="$inst/bin" \
		--temp-config="$work/discard.conf" --inputdir=test/discard \
		--outputdir="$tree/out_discard" discard_caches); then
	cat "$tree/out_discard/regression.diffs" 2>/dev/null | head -n 100
	fail "the scenario under debug_discard_caches"
fi
echo "cassert suite: passed"
# a directory of the caller's (KEANON_CASSERT_WORK) is left for the caller
[ -n "${KEANON_CASSERT_WORK:-}" ] || rm -rf "$work"

#!/usr/bin/env bash
# Everything CI runs (what `make test` runs), as root on Debian 12:
#
#   1. install missing packages (scripts/install-deps.sh)
#   2. the engine's C unit tests (make unit)
#   3. build the extension with warnings as errors and assertions on, and
#      install it
#   4. make installcheck as the postgres user in a copy of the tree under
#      /tmp, against a private temporary server: pg_regress (REGRESS), then
#      the isolation specs (ISOLATION) and TAP tests (TAP_TESTS); PGXS
#      runs all three from the same target; then PostgreSQL's own
#      regression suite with keanon loaded in every database, against the
#      suite without it (test/core/run.sh)
#   5. when the 15 suites passed, the unit tests and the same installcheck
#      on PostgreSQL 17, in a Debian 13 chroot (scripts/test-pg17.sh; it
#      makes the chroot with debootstrap on the first run, which needs the
#      network, and reuses it afterwards), then a database dumped from 15
#      and restored into 17
#   6. the Debian packages, postgresql-15-keanon and postgresql-17-keanon,
#      each installed into a clean chroot of its release and tried there
#      (scripts/deb.sh, what `make deb` runs; it needs the network)
#   7. afterwards, whether the tests passed or failed, build keanon again
#      the normal way (without -DUSE_ASSERT_CHECKING, in another copy) and
#      install that into 15, so the assertion-enabled build does not stay
#      installed in place of a normal one
#
# KEANON_PG17=0 skips step 5 (the PostgreSQL 17 suites); KEANON_PG17_CHROOT
# and KEANON_PG17_MIRROR choose its chroot folder and Debian mirror (see
# scripts/test-pg17.sh).  KEANON_DEB=0 skips step 6 (the packages).
# Step 6b, after the packages: the regression and isolation suites on a
# PostgreSQL 15 built from source with assertions, and a scenario under
# debug_discard_caches (scripts/test-cassert.sh; about 8 minutes);
# KEANON_CASSERT=0 skips it.
#
# PostgreSQL refuses to run as root, and the postgres user may not be able
# to read or write the tree where it is (under /root, owned by root), hence
# the copy.  On failure the regression diffs and server and TAP logs are
# printed and the script exits non-zero; the copy is kept for inspection.
#
# KEANON_ASSERTS=0 builds without -DUSE_ASSERT_CHECKING; that build is
# a normal one, so step 7 is skipped.
#
# Before step 3 the script refuses to run where a running PostgreSQL 15
# server uses keanon (installed in a database, or preloaded), which would
# load the assertion-enabled build meanwhile (scripts/servers-using-keanon.sh);
# KEANON_TEST_BESIDE_SERVERS=1 runs anyway.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "test: run as root (it installs packages and the extension)" >&2
	exit 1
fi

# Show the lines between two headings, so CI logs are easy to scan
section() {
	echo
	echo "=== $* ==="
}

section "dependencies"
bash "$root/scripts/install-deps.sh"

# The assertion-enabled build is installed system-wide while the tests
# run: a running server using keanon would load it.  Refuse, unless told.
if [ "${KEANON_ASSERTS:-1}" != 0 ] && [ "${KEANON_TEST_BESIDE_SERVERS:-0}" = 0 ]; then
	using=$(bash "$root/scripts/servers-using-keanon.sh")
	if [ -n "$using" ]; then
		echo "test: refusing to run: these running PostgreSQL 15 servers use keanon, and would load" \
			"the assertion-enabled build the tests install (cluster, port, database):" >&2
		echo "$using" | sed 's/^/  /' >&2
		echo "test: stop them, run the tests on another machine, or set KEANON_TEST_BESIDE_SERVERS=1" \
			"to run anyway (a normal build is installed again at the end)" >&2
		exit 1
	fi
fi

section "engine unit tests"
make -C "$root" unit

# Debian's server is built without assertions; defining USE_ASSERT_CHECKING
# for keanon's own files turns on its Assert()s.  The engine's assert()s are
# on in any build without -DNDEBUG.
cflags="-Werror"
if [ "${KEANON_ASSERTS:-1}" != 0 ]; then
	cflags="$cflags -DUSE_ASSERT_CHECKING"
fi

work=$(mktemp -d /tmp/keanon-test.XXXXXX)
chmod 755 "$work"

section "copy of the tree in $work"
tar -C "$root" --exclude=./.git -cf - . | tar -C "$work" -xf -

# Build and install keanon without assertions, from a fresh copy of the tree
# (the test copy keeps its objects and output for inspection)
install_normal_build() {
	local rc=$? normal
	set +e
	section "install a normal build again (without -DUSE_ASSERT_CHECKING)"
	if normal=$(mktemp -d /tmp/keanon-normal.XXXXXX) &&
			tar -C "$root" --exclude=./.git -cf - . | tar -C "$normal" -xf - &&
			make -C "$normal" clean >"$normal/build.log" 2>&1 &&
			make -C "$normal" -s >>"$normal/build.log" 2>&1 &&
			make -C "$normal" -s install >>"$normal/build.log" 2>&1; then
		echo "test: installed keanon built without assertions"
		rm -rf "$normal"
	else
		[ -f "$normal/build.log" ] && cat "$normal/build.log"
		echo "test: could not install a normal build; the assertion-enabled" \
			"build is still installed (see $normal)" >&2
		[ "$rc" -ne 0 ] || rc=1
	fi
	exit "$rc"
}

section "build and install (PG_CFLAGS=$cflags)"
# also removes any earlier test output copied along with the tree
make -C "$work" clean >/dev/null
make -C "$work" PG_CFLAGS="$cflags"
if [ "${KEANON_ASSERTS:-1}" != 0 ]; then
	trap install_normal_build EXIT
fi
make -C "$work" PG_CFLAGS="$cflags" install

chown -R postgres: "$work"

# report_failure WORK NAME: what explains a failed installcheck
. "$root/scripts/report-failure.sh"

section "installcheck as postgres"
if ! (cd "$work" && runuser -u postgres -- make installcheck \
		EXTRA_REGRESS_OPTS="--temp-instance=$work/tmp_pgr"); then
	report_failure "$work" test
	exit 1
fi

section "PostgreSQL's own regression suite, with keanon loaded and without"
if ! bash "$root/test/core/run.sh"; then
	echo "test: FAILED: the core suite; the test tree is kept in $work" >&2
	exit 1
fi

rm -rf "$work"

if [ "${KEANON_PG17:-1}" != 0 ]; then
	section "PostgreSQL 17 (scripts/test-pg17.sh; KEANON_PG17=0 skips it)"
	if ! bash "$root/scripts/test-pg17.sh"; then
		echo "test: FAILED: the PostgreSQL 17 suites" >&2
		exit 1
	fi
fi

if [ "${KEANON_DEB:-1}" != 0 ]; then
	section "Debian packages (scripts/deb.sh; KEANON_DEB=0 skips it)"
	if ! bash "$root/scripts/deb.sh"; then
		echo "test: FAILED: the Debian packages" >&2
		exit 1
	fi
fi

if [ "${KEANON_CASSERT:-1}" != 0 ]; then
	section "a server built with assertions, and debug_discard_caches (scripts/test-cassert.sh; KEANON_CASSERT=0 skips it)"
	if ! bash "$root/scripts/test-cassert.sh"; then
		echo "test: FAILED: the suites on a server built with assertions" >&2
		exit 1
	fi
fi

section "all tests passed"

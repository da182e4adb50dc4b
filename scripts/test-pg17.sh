#!/usr/bin/env bash
# keanon's suites on PostgreSQL 17, as root on Debian 12 (scripts/test.sh
# runs this after the PostgreSQL 15 suites):
#
#   1. make a Debian 13 (trixie) chroot with debootstrap, or reuse the one
#      an earlier run made (debootstrap is installed first if missing)
#   2. install in it whatever is missing of postgresql-17 (which contains
#      the contrib modules, cube among them), postgresql-server-dev-17,
#      make, gcc and libipc-run-perl
#   3. copy the tree into the chroot's /tmp, build keanon there with
#      warnings as errors and assertions on, and install it into the
#      chroot's PostgreSQL 17
#   4. as the chroot's postgres user: make unit, then make installcheck
#      against a private temporary server (pg_regress, the isolation specs
#      and the TAP tests, as for 15)
#   5. a database watching tables in every mode, made on this machine's
#      PostgreSQL 15 (test/upgrade/dump_source.sql), dumped with 15's
#      pg_dump and restored into 17 with 17's pg_restore: every view shows
#      what it showed, every watch checks and takes writes, releases and
#      flushes (test/upgrade/restored_check.sql)
#
# PostgreSQL's own regression suite (test/core/run.sh) runs for 15 only.
# Nothing outside the chroot is installed or changed but the chroot itself
# and, while the script runs, /proc and /dev mounted into it (unmounted at
# exit; mounts that were already there are left alone).  Unlike for 15, the
# assertion-enabled build stays installed: only these tests use the
# chroot's server.  On failure the regression diffs and the server and TAP
# logs are printed and the script exits non-zero; the test copy is kept.
#
# Settings (environment variables):
#   KEANON_PG17_CHROOT   the chroot's folder (default /tmp/keanon-trixie);
#                        made when missing, reused when an earlier run
#                        finished making it
#   KEANON_PG17_MIRROR   the Debian mirror (default http://deb.debian.org/debian)
#   KEANON_ASSERTS=0     build without -DUSE_ASSERT_CHECKING, as for 15
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chroot_dir=${KEANON_PG17_CHROOT:-/tmp/keanon-trixie}
mirror=${KEANON_PG17_MIRROR:-http://deb.debian.org/debian}
log=/tmp/keanon-pg17-setup.log
pg_config=/usr/lib/postgresql/17/bin/pg_config
# marks a chroot whose making finished (debootstrap and the packages)
ready="$chroot_dir/etc/keanon-pg17-ready"

if [ "$(id -u)" -ne 0 ]; then
	echo "test-pg17: run as root (it makes a chroot and installs packages)" >&2
	exit 1
fi

# Show the lines between two headings, so CI logs are easy to scan (with
# the seconds since the start)
section() {
	echo
	echo "=== PostgreSQL 17: $* ($SECONDS s) ==="
}

# Run one setup step with its output appended to the log; on failure show
# the end of the log and say where the whole of it is
setup_step() {
	if ! "$@" >>"$log" 2>&1 </dev/null; then
		echo "test-pg17: failed: $*" >&2
		echo "test-pg17: last lines of $log:" >&2
		tail -n 30 "$log" >&2
		exit 1
	fi
}

# Run a command inside the chroot with a small, known environment
in_chroot() {
	chroot "$chroot_dir" /usr/bin/env -i \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
}

# the mounts this run made, unmounted at exit (innermost first)
mounted=()

# Undo this run's mounts
unmount_all() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount -R "${mounted[$i]}" 2>/dev/null || umount -R -l "${mounted[$i]}" ||
			echo "test-pg17: could not unmount ${mounted[$i]}" >&2
	done
	mounted=()
}

# Mount /proc and /dev into the chroot where nothing is mounted yet
mount_all() {
	if ! mountpoint -q "$chroot_dir/proc"; then
		mount -t proc proc "$chroot_dir/proc"
		mounted+=("$chroot_dir/proc")
	fi
	if ! mountpoint -q "$chroot_dir/dev"; then
		# /dev/shm for the server's dynamic shared memory; rslave, so
		# that unmounting here never reaches the host's /dev
		mount --rbind /dev "$chroot_dir/dev"
		mount --make-rslave "$chroot_dir/dev"
		mounted+=("$chroot_dir/dev")
	fi
}

: >"$log"
trap unmount_all EXIT

section "chroot in $chroot_dir"
if [ -f "$ready" ]; then
	echo "test-pg17: reusing the chroot"
elif [ -d "$chroot_dir/debootstrap" ]; then
	echo "test-pg17: $chroot_dir is an interrupted debootstrap;" \
		"remove it (with nothing mounted in it) or set KEANON_PG17_CHROOT" >&2
	exit 1
elif [ -x "$chroot_dir/usr/bin/apt-get" ]; then
	echo "test-pg17: using the chroot found there (its packages are checked)"
elif [ -e "$chroot_dir" ] && [ -n "$(ls -A "$chroot_dir")" ]; then
	echo "test-pg17: $chroot_dir is neither empty nor a chroot;" \
		"set KEANON_PG17_CHROOT to another folder" >&2
	exit 1
else
	if ! command -v debootstrap >/dev/null 2>&1; then
		echo "test-pg17: installing debootstrap (output in $log)"
		setup_step env DEBIAN_FRONTEND=noninteractive apt-get update
		setup_step env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y --no-install-recommends debootstrap
	fi
	echo "test-pg17: debootstrap trixie from $mirror (a few minutes; output in $log)"
	setup_step debootstrap --variant=minbase trixie "$chroot_dir" "$mirror"
fi
mount_all
# name resolution for apt, as the host has it
cp -L /etc/resolv.conf "$chroot_dir/etc/resolv.conf" 2>/dev/null || true

packages=(postgresql-17 postgresql-server-dev-17 make gcc libipc-run-perl)
missing=()
for pkg in "${packages[@]}"; do
	# dpkg -s also succeeds for removed packages that left config files
	if ! in_chroot dpkg -s "$pkg" 2>/dev/null |
			grep -q '^Status: install ok installed$'; then
		missing+=("$pkg")
	fi
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "test-pg17: installing ${missing[*]} in the chroot (output in $log)"
	# no service starts inside the chroot (the packages' own cluster stays down)
	printf '#!/bin/sh\nexit 101\n' >"$chroot_dir/usr/sbin/policy-rc.d"
	chmod 755 "$chroot_dir/usr/sbin/policy-rc.d"
	setup_step in_chroot apt-get update
	setup_step in_chroot apt-get install -y --no-install-recommends "${missing[@]}"
fi
# postgresql-17 provides postgresql-contrib-17: the tests need cube from it
if [ ! -f "$chroot_dir/usr/share/postgresql/17/extension/cube.control" ]; then
	echo "test-pg17: the chroot's PostgreSQL 17 has no cube extension" >&2
	exit 1
fi
touch "$ready"
in_chroot "$pg_config" --version

cflags="-Werror"
if [ "${KEANON_ASSERTS:-1}" != 0 ]; then
	cflags="$cflags -DUSE_ASSERT_CHECKING"
fi

work_in=$(in_chroot mktemp -d /tmp/keanon-test17.XXXXXX)
work="$chroot_dir$work_in"
chmod 755 "$work"

section "copy of the tree in $work"
tar -C "$root" --exclude=./.git -cf - . | tar -C "$work" -xf -

section "build and install (PG_CFLAGS=$cflags)"
# also removes objects built for 15 and earlier test output copied along
in_chroot make -C "$work_in" PG_CONFIG="$pg_config" clean >/dev/null
in_chroot make -C "$work_in" -j"$(nproc)" PG_CONFIG="$pg_config" PG_CFLAGS="$cflags"
in_chroot make -C "$work_in" PG_CONFIG="$pg_config" PG_CFLAGS="$cflags" install

chown -R --reference="$chroot_dir/var/lib/postgresql" "$work"

# Run make in the test copy as the chroot's postgres user
make_as_postgres() {
	in_chroot runuser -u postgres -- make -C "$work_in" PG_CONFIG="$pg_config" "$@"
}

# report_failure WORK NAME: what explains a failed installcheck
. "$root/scripts/report-failure.sh"

section "unit tests as postgres"
if ! make_as_postgres unit; then
	echo "test-pg17: FAILED: make unit; the test tree is kept in $work" >&2
	exit 1
fi

section "installcheck as postgres"
if ! make_as_postgres installcheck EXTRA_REGRESS_OPTS="--temp-instance=$work_in/tmp_pgr"; then
	report_failure "$work" test-pg17
	exit 1
fi

# A database watching tables in every mode, dumped from PostgreSQL 15 (this
# machine's, where keanon is installed) and restored into 17
section "a database dumped from PostgreSQL 15, restored into 17"
pg15=/usr/lib/postgresql/15/bin
dump15=$(mktemp -d /tmp/keanon-dump15.XXXXXX)
chown postgres: "$dump15"
# the postgres user may not enter the tree (a clone under /root): it runs
# from its own folder, and the SQL comes on standard input
cd "$dump15"
stop15() {
	runuser -u postgres -- "$pg15/pg_ctl" -D "$dump15/data" -m fast -w stop >/dev/null 2>&1 || true
}
psql15() {
	runuser -u postgres -- "$pg15/psql" -X -q -v ON_ERROR_STOP=1 -h "$dump15" -p 54715 -d postgres "$@"
}
if ! { runuser -u postgres -- "$pg15/initdb" -D "$dump15/data" -A trust -U postgres --no-sync >"$dump15/initdb.log" &&
		runuser -u postgres -- "$pg15/pg_ctl" -D "$dump15/data" -w -l "$dump15/log" \
			-o "-k $dump15 -p 54715 -c listen_addresses=''" start >/dev/null &&
		psql15 <"$root/test/upgrade/dump_source.sql" >"$dump15/source.out" &&
		runuser -u postgres -- "$pg15/pg_dump" -Fc -h "$dump15" -p 54715 -d postgres -f "$dump15/k15.dump"; }; then
	stop15
	cat "$dump15"/*.log "$dump15/source.out" 2>/dev/null | tail -n 40
	echo "test-pg17: FAILED: the PostgreSQL 15 database to dump; see $dump15" >&2
	exit 1
fi
stop15
cp "$dump15/k15.dump" "$work/k15.dump"
chown -R --reference="$chroot_dir/var/lib/postgresql" "$work"
bin17=/usr/lib/postgresql/17/bin
as17() {
	in_chroot runuser -u postgres -- "$@"
}
if ! { as17 "$bin17/initdb" -D "$work_in/d17" -A trust -U postgres --no-sync >/dev/null &&
		as17 "$bin17/pg_ctl" -D "$work_in/d17" -w -l "$work_in/d17.log" \
			-o "-k $work_in -p 54717 -c listen_addresses=''" start >/dev/null &&
		as17 "$bin17/createdb" -h "$work_in" -p 54717 restored &&
		as17 "$bin17/pg_restore" -h "$work_in" -p 54717 -d restored "$work_in/k15.dump" &&
		as17 "$bin17/psql" -X -q -At -h "$work_in" -p 54717 -d restored -f "$work_in/test/upgrade/restored_check.sql"; }; then
	as17 "$bin17/pg_ctl" -D "$work_in/d17" -m fast -w stop >/dev/null 2>&1 || true
	tail -n 40 "$work/d17.log" 2>/dev/null
	echo "test-pg17: FAILED: restoring the PostgreSQL 15 dump into 17; the test tree is kept in $work" >&2
	exit 1
fi
as17 "$bin17/pg_ctl" -D "$work_in/d17" -m fast -w stop >/dev/null
cd /
rm -rf "$dump15"

rm -rf "$work"
section "all tests passed"

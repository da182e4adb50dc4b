#!/usr/bin/env bash
# Build keanon's Debian packages (`make deb`), as root on Debian 12, with
# PostgreSQL's own packaging helpers (pg_buildext, debian/):
#
#   postgresql-15-keanon   built here (Debian 12 ships PostgreSQL 15)
#   postgresql-17-keanon   built in a Debian 13 chroot (PostgreSQL 17)
#
# then, unless KEANON_DEB_TEST=0, install each package into a clean chroot
# of its release (nothing there but the minimal base system, the package
# and what apt pulls in for it) and check that CREATE EXTENSION keanon
# works there: a table watched, written and checked, with generalized
# quasi-identifiers (which need contrib's cube).
#
# The packages land in dist/.  The chroots are made with debootstrap
# under KEANON_CHROOTS (default /tmp/keanon-chroots); the build chroot is
# kept for the next run, the clean ones are made afresh each time.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
chroots=${KEANON_CHROOTS:-/tmp/keanon-chroots}
mirror=${KEANON_MIRROR:-http://deb.debian.org/debian}
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$root/keanon.control")
dist=$root/dist

if [ "$(id -u)" -ne 0 ]; then
	echo "deb: run as root (it installs packages and makes chroots)" >&2
	exit 1
fi

section() {
	echo
	echo "=== $* ==="
}

mounted=()
cleanup() {
	local m
	for m in "${mounted[@]}"; do
		umount -l "$m" 2>/dev/null || true
	done
}
trap cleanup EXIT

# A minimal Debian chroot of suite at dir, with its security updates
make_chroot() {
	local suite=$1 dir=$2
	if [ ! -x "$dir/usr/bin/apt-get" ]; then
		rm -rf "$dir"
		mkdir -p "$(dirname "$dir")"
		debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$dir.debootstrap.log" 2>&1 ||
			{ cat "$dir.debootstrap.log"; return 1; }
		cat >"$dir/etc/apt/sources.list" <<-EOF
			deb $mirror $suite main
			deb $mirror $suite-updates main
			deb http://deb.debian.org/debian-security $suite-security main
		EOF
		# no service may start inside: clusters are started by hand
		printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
		chmod +x "$dir/usr/sbin/policy-rc.d"
	fi
	if ! mountpoint -q "$dir/proc"; then
		mount -t proc proc "$dir/proc"
		mounted+=("$dir/proc")
	fi
}

# Remove a chroot, /proc unmounted first and nothing crossed beyond it
drop_chroot() {
	local dir=$1
	if mountpoint -q "$dir/proc"; then
		umount -l "$dir/proc"
	fi
	rm -rf --one-file-system "$dir"
}

# apt-get install in chroot dir, quietly unless it fails
chroot_apt() {
	local dir=$1
	shift
	chroot "$dir" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $*" \
		>"$dir.apt.log" 2>&1 || { tail -n 50 "$dir.apt.log"; return 1; }
}

mkdir -p "$dist"
rm -f "$dist"/postgresql-*-keanon_*.deb

section "postgresql-15-keanon, here"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential debootstrap debhelper postgresql-server-dev-all \
	postgresql-server-dev-15 dpkg-dev >/tmp/keanon-deb-apt.log 2>&1 || { tail -n 50 /tmp/keanon-deb-apt.log; exit 1; }
here=$(mktemp -d /tmp/keanon-deb.XXXXXX)
mkdir -p "$here/build/keanon-$version"
tar -C "$root" --exclude=./.git --exclude=./dist -cf - . | tar -C "$here/build/keanon-$version" -xf -
(cd "$here/build/keanon-$version" && make clean >/dev/null 2>&1 || true
	cd "$here/build/keanon-$version" && pg_buildext updatecontrol &&
	dpkg-buildpackage -us -uc -b) >"$here/build.log" 2>&1 || { tail -n 60 "$here/build.log"; exit 1; }
cp "$here"/build/postgresql-15-keanon_"$version"_*.deb "$dist/"
rm -rf "$here"

section "postgresql-17-keanon, in a Debian 13 chroot"
builder=$chroots/trixie-build
make_chroot trixie "$builder"
chroot_apt "$builder" build-essential debhelper postgresql-server-dev-all postgresql-server-dev-17 dpkg-dev
rm -rf "$builder/root/build"
mkdir -p "$builder/root/build/keanon-$version"
tar -C "$root" --exclude=./.git --exclude=./dist -cf - . | tar -C "$builder/root/build/keanon-$version" -xf -
chroot "$builder" bash -c "cd /root/build/keanon-$version && (make clean >/dev/null 2>&1 || true) &&
	pg_buildext updatecontrol && dpkg-buildpackage -us -uc -b" >"$builder.build.log" 2>&1 ||
	{ tail -n 60 "$builder.build.log"; exit 1; }
cp "$builder"/root/build/postgresql-17-keanon_"$version"_*.deb "$dist/"
ls -l "$dist"

if [ "${KEANON_DEB_TEST:-1}" = 0 ]; then
	exit 0
fi

# Install a package into a clean chroot of suite and use the extension
install_test() {
	local suite=$1 pg=$2 dir=$chroots/$1-clean deb
	deb=$(basename "$dist"/postgresql-"$pg"-keanon_"$version"_*.deb)
	section "postgresql-$pg-keanon into a clean Debian $suite"
	drop_chroot "$dir"
	make_chroot "$suite" "$dir"
	cp "$dist/$deb" "$dir/tmp/"
	chroot_apt "$dir" "/tmp/$deb"
	chroot "$dir" bash -c "
		set -e
		pg_lsclusters -h | grep -q '^$pg main' || pg_createcluster $pg main >/dev/null
		pg_ctlcluster $pg main start
		su postgres -c \"psql -X -v ON_ERROR_STOP=1 -At\" <<'SQL'
CREATE EXTENSION keanon;
CREATE EXTENSION cube;
SELECT extversion FROM pg_extension WHERE extname = 'keanon';
CREATE TABLE people (id integer PRIMARY KEY, age integer NOT NULL, salary integer);
INSERT INTO people SELECT i, 20 + i % 40, 1000 * (1 + (i * 7) % 50) FROM generate_series(1, 200) i;
SELECT keanon.watch('people', 'salary', '{age}', 3, 2000, generalize => 4);
INSERT INTO people VALUES (500, 33, 41000), (501, 34, 42000);
DELETE FROM people WHERE id < 10;
SELECT keanon.check('people');
SELECT count(*) FROM people_anon;
SQL
		pg_ctlcluster $pg main stop"
	drop_chroot "$dir"
}

install_test bookworm 15
install_test trixie 17
section "packages built and installed"
ls -l "$dist"

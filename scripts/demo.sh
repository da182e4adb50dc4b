#!/usr/bin/env bash
# keanon's demo (make demo), as root on Debian 12:
#
#   1. install missing packages (scripts/install-deps.sh; apt-get's output
#      goes to a log file)
#   2. build keanon and install it into PostgreSQL 15 (output to a log,
#      shown only on failure)
#   3. start a throwaway server as the postgres user, in a new directory
#      under /tmp on a free port (never Debian's default cluster on 5432)
#   4. run scripts/demo.sql in it with psql -e, which echoes every query
#   5. stop the server and remove its directory, whatever happened
#
# keanon stays installed afterwards; nothing else is left behind.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root (it installs packages and the extension)" >&2
	exit 1
fi

bash "$root/scripts/install-deps.sh"

pg_config=/usr/lib/postgresql/15/bin/pg_config
[ -x "$pg_config" ] || pg_config=pg_config
bindir=$("$pg_config" --bindir)

tmp=$(mktemp -d /tmp/keanon-demo.XXXXXX)
chown postgres: "$tmp"
chmod 700 "$tmp"
started=no

# Stop the server (if it started) and remove its directory
cleanup() {
	local rc=$?
	cd /
	if [ "$started" = yes ]; then
		if [ "$rc" -ne 0 ] && [ -f "$tmp/server.log" ]; then
			echo "demo: last lines of the server's log:" >&2
			tail -n 20 "$tmp/server.log" >&2
		fi
		(cd "$tmp" && runuser -u postgres -- "$bindir/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null) || true
	fi
	rm -rf "$tmp"
	echo
	if [ "$started" = yes ]; then
		echo "demo: stopped the throwaway server and removed $tmp; keanon stays installed"
	else
		echo "demo: removed $tmp"
	fi
	if [ "$rc" -ne 0 ]; then
		echo "demo: FAILED" >&2
	fi
}
trap cleanup EXIT

# Run a step with its output in a log under $tmp, shown only on failure
quietly() {
	local log=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		cat "$log" >&2
		echo "demo: failed: $*" >&2
		exit 1
	fi
}

echo "demo: building keanon and installing it into PostgreSQL 15 ($("$pg_config" --pkglibdir))"
quietly "$tmp/build.log" make -C "$root" --no-print-directory PG_CONFIG="$pg_config"
quietly "$tmp/install.log" make -C "$root" --no-print-directory PG_CONFIG="$pg_config" install

# A port no other server listens on, over TCP or in the usual socket dirs
port=
for p in $(seq 54330 54429); do
	if [ -e "/tmp/.s.PGSQL.$p" ] || [ -e "/var/run/postgresql/.s.PGSQL.$p" ]; then
		continue
	fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		continue
	fi
	port=$p
	break
done
if [ -z "$port" ]; then
	echo "demo: no free port found in 54330-54429" >&2
	exit 1
fi

cd "$tmp"
echo "demo: starting a throwaway server in $tmp (port $port, Unix socket only)"
quietly "$tmp/initdb.log" runuser -u postgres -- "$bindir/initdb" -D "$tmp/data" \
	-A trust -U postgres --no-sync
if ! runuser -u postgres -- "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w \
		-o "-k $tmp -p $port -c listen_addresses=''" start >/dev/null; then
	cat "$tmp/server.log" >&2
	exit 1
fi
started=yes

echo "demo: running scripts/demo.sql as the superuser postgres; psql echoes each query"
runuser -u postgres -- "$bindir/psql" -X -q -e -v ON_ERROR_STOP=1 \
	-h "$tmp" -p "$port" -U postgres -d postgres <"$root/scripts/demo.sql"

#!/usr/bin/env bash
# Build and install keanon, start a throwaway PostgreSQL 15 cluster, run
# scripts/demo.sql in it with every query echoed, then stop and remove the
# cluster.  Run as root (it installs packages and the extension).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root (it installs packages and the extension)" >&2
	exit 1
fi

bash "$root/scripts/install-deps.sh"

echo "demo: building and installing keanon"
make -C "$root" -s
make -C "$root" -s install

pg_config=/usr/lib/postgresql/15/bin/pg_config
[ -x "$pg_config" ] || pg_config=pg_config
bindir=$("$pg_config" --bindir)

tmp=$(mktemp -d /tmp/keanon-demo.XXXXXX)
chown postgres: "$tmp"
chmod 700 "$tmp"
started=no

# Stop the cluster (if it started) and remove its directory
cleanup() {
	cd /
	if [ "$started" = yes ]; then
		(cd "$tmp" && runuser -u postgres -- "$bindir/pg_ctl" -D "$tmp/data" -m fast -w stop >/dev/null) || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

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
echo "demo: initdb in $tmp/data"
if ! runuser -u postgres -- "$bindir/initdb" -D "$tmp/data" -A trust -U postgres \
		--no-sync >"$tmp/initdb.log" 2>&1; then
	cat "$tmp/initdb.log" >&2
	exit 1
fi

echo "demo: starting the server on socket $tmp, port $port"
if ! runuser -u postgres -- "$bindir/pg_ctl" -D "$tmp/data" -l "$tmp/server.log" -w \
		-o "-k $tmp -p $port -c listen_addresses=''" start >/dev/null; then
	cat "$tmp/server.log" >&2
	exit 1
fi
started=yes

runuser -u postgres -- "$bindir/psql" -X -e -v ON_ERROR_STOP=1 \
	-h "$tmp" -p "$port" -U postgres -d postgres <"$root/scripts/demo.sql"

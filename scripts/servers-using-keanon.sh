#!/usr/bin/env bash
# Which running PostgreSQL 15 clusters of this machine use keanon: one line
# per database where the extension is installed, "cluster port database",
# and one per cluster preloading it, "cluster port (preloaded)".  A cluster
# it cannot ask is listed as "cluster port (cannot connect)".  Uses
# Debian's pg_lsclusters; prints nothing where that is missing (no cluster
# made by Debian's packages).  Run as root.
#
# `make test` installs an assertion-enabled build of keanon system-wide
# while it runs (scripts/test.sh): a server that loads keanon meanwhile
# would load that build, so the tests refuse to start when this lists one.
set -uo pipefail

command -v pg_lsclusters >/dev/null 2>&1 || exit 0
pg_lsclusters -h 2>/dev/null | while read -r ver name port status owner _; do
	[ "$ver" = 15 ] || continue
	case "$status" in
		online*) ;;
		*) continue ;;
	esac
	ask() {
		runuser -u "$owner" -- psql -X -q -At -p "$port" "$@" 2>/dev/null
	}
	if ! dbs=$(ask -d postgres -c "SELECT datname FROM pg_catalog.pg_database WHERE datallowconn"); then
		echo "$ver/$name $port (cannot connect)"
		continue
	fi
	if ask -d postgres -c "SELECT 1 WHERE 'keanon' = ANY (pg_catalog.string_to_array(pg_catalog.replace(
		pg_catalog.current_setting('shared_preload_libraries') || ',' ||
		pg_catalog.current_setting('session_preload_libraries'), ' ', ''), ','))" | grep -q 1; then
		echo "$ver/$name $port (preloaded)"
	fi
	while read -r db; do
		[ -n "$db" ] || continue
		if ask -d "$db" -c "SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'keanon'" | grep -q 1; then
			echo "$ver/$name $port $db"
		fi
	done <<<"$dbs"
done

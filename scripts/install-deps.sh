#!/usr/bin/env bash
# Install, as root on Debian 12, whatever keanon's build, tests and demo
# need that is not installed yet.  Does nothing when all is present.
#
# apt-get's output (about a thousand lines on a fresh machine) goes to the
# log file below, not to the terminal; it is printed only when a step fails.
# Installing postgresql-15 also creates and starts Debian's default cluster
# on port 5432; keanon's demo and tests leave it alone and start their own
# throwaway servers.
set -euo pipefail

log=${KEANON_DEPS_LOG:-/tmp/keanon-install-deps.log}

packages=(
	postgresql-15
	postgresql-server-dev-15
	libipc-run-perl
	make
	gcc
	gnuplot-nox
	python3
	dpkg-dev
)

missing=()
for pkg in "${packages[@]}"; do
	# dpkg -s also succeeds for removed packages that left config files
	if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed$'; then
		missing+=("$pkg")
	fi
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all packages present"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}" >&2
	echo "install-deps: run this script as root to install them" >&2
	exit 1
fi

# Run one apt-get step with its output appended to the log; on failure show
# the end of the log and say where the whole of it is
apt_step() {
	if ! "$@" >>"$log" 2>&1 </dev/null; then
		echo "install-deps: failed: $*" >&2
		echo "install-deps: last lines of $log:" >&2
		tail -n 30 "$log" >&2
		exit 1
	fi
}

: >"$log"
export DEBIAN_FRONTEND=noninteractive
echo "install-deps: updating the package lists (apt-get's output goes to $log)"
apt_step apt-get update
echo "install-deps: installing ${missing[*]} (about a minute)"
apt_step apt-get install -y --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Install, as root on Debian 12, whatever keanon's build, tests and demo
# need that is not installed yet.  Does nothing when all is present.
set -euo pipefail

packages=(
	postgresql-15
	postgresql-server-dev-15
	libipc-run-perl
	make
	gcc
	gnuplot-nox
	python3
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

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"

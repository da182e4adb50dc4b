# Sourced by test/core/run.sh and scripts/test-cassert.sh: fetch_pg15_source
# WORK LOG unpacks the Debian source of the installed postgresql-15 into
# WORK (deb-src entries are added for it when missing), or else of another
# 15.x version the archive offers, and sets src to its directory; src is
# empty when none can be fetched.  Run as root.

# the versions of the source the archive offers, the installed one first
pg15_source_versions() {
	local version
	version=$(dpkg-query -W -f='${Version}' postgresql-15)
	apt-cache showsrc postgresql-15 2>/dev/null | sed -n 's/^Version: //p' |
		awk -v v="$version" '$0 == v { print; next } { rest = rest $0 "\n" } END { printf "%s", rest }'
}

fetch_pg15_source() {
	local work=$1 log=$2 v
	if [ -z "$(pg15_source_versions)" ]; then
		cat >/etc/apt/sources.list.d/keanon-deb-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
		apt-get update -q >>"$log" 2>&1 || true
	fi
	src=
	for v in $(pg15_source_versions); do
		if (cd "$work" && apt-get source -q "postgresql-15=$v" >>"$log" 2>&1); then
			src=$(find "$work" -maxdepth 1 -type d -name 'postgresql-15-*' | head -n 1)
			return 0
		fi
		rm -rf "${work:?}"/postgresql-15*
	done
}

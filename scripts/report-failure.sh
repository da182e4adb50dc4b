# Sourced by scripts/test.sh and scripts/test-pg17.sh (which define
# section): report_failure WORK NAME prints whatever explains a failed
# installcheck in the test tree WORK (regression diffs, the servers' logs,
# the TAP logs), then says that NAME failed and the tree is kept.
report_failure() {
	local work=$1 name=$2 f
	for f in "$work/regression.diffs" "$work/output_iso/regression.diffs"; do
		if [ -f "$f" ]; then
			section "$f"
			cat "$f"
		fi
	done
	for f in "$work/log/postmaster.log" "$work/output_iso/log/postmaster.log"; do
		if [ -f "$f" ]; then
			section "last lines of $f"
			tail -n 100 "$f"
		fi
	done
	if [ -d "$work/tmp_check/log" ]; then
		for f in "$work"/tmp_check/log/*; do
			[ -f "$f" ] || continue
			section "$f"
			cat "$f"
		done
	fi
	echo
	echo "$name: FAILED; the test tree is kept in $work" >&2
}

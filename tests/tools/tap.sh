# Shared by the tests in tests/tools/ (sourced, never run): TAP lines.
# shellcheck shell=sh disable=SC2034 # tap_failed is read by the tests that source this

tap_count=0
tap_failed=0

# tap_report NAME WHY: one TAP line; WHY empty means passed. A failure's
# WHY also follows "#" on its line, so that the harness's FAIL line (the
# part of a long log a reader sees first) says why.
tap_report() {
	tap_count=$((tap_count + 1))
	if [ -z "$2" ]; then
		echo "ok $tap_count $1"
	else
		echo "not ok $tap_count $1 # $2"
		tap_failed=1
	fi
}

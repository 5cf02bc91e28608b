# Shared helpers for the harness scripts; sourced, never run.
# shellcheck shell=bash

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$top/build"
tree=${TREE:-$build/linux}
logs="$build/logs"
mkdir -p "$logs"

die() {
	echo "error: $*" >&2
	exit 1
}

# Print a duration in seconds as 2m41s.
fmt_time() {
	if [ "$1" -ge 60 ]; then
		printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
	else
		printf '%ds' "$1"
	fi
}

# stage NAME CMD...: run CMD with its output in build/logs/NAME.log (on the
# terminal too with V=1), then print "[NAME] time". On failure show the end
# of the log and fail.
stage() {
	local name=$1 start rc=0
	shift
	start=$SECONDS
	if [ "${V:-0}" = 1 ]; then
		"$@" 2>&1 | tee "$logs/$name.log" || rc=$?
	else
		"$@" >"$logs/$name.log" 2>&1 || rc=$?
	fi
	if [ "$rc" != 0 ]; then
		echo "[$name] FAILED after $(fmt_time $((SECONDS - start))) (log: build/logs/$name.log)"
		[ "${V:-0}" = 1 ] || tail -n 25 "$logs/$name.log" | sed 's/^/  | /'
		return "$rc"
	fi
	echo "[$name] $(fmt_time $((SECONDS - start)))"
}

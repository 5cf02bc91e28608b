# Shared helpers for the harness scripts; sourced, never run.
# shellcheck shell=bash

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Debian's programs only: the harness runs what scripts/deps installs
# (scripts/deps-check proves it), not what else this machine has on PATH
# (a rustc in ~/.cargo/bin would make the kernel's Kconfig probe it).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
build="$top/build"
tree=${TREE:-$build/linux}
logs="$build/logs"
mkdir -p "$logs"

# make for kernel builds, through ccache with its cache in build/ccache:
# the builds of check-series, the feature-off build and the mutants share
# most of their objects. CCACHE_BASEDIR makes paths relative, so object
# directories side by side share entries.
# The compiler follows LLVM= (LLVM=-16: clang-16) and CROSS_COMPILE= from
# the environment, as the kernel's own Makefile would choose it.
kmake() {
	local cc=gcc
	if [ -n "${LLVM:-}" ]; then
		cc=clang${LLVM#1}
	elif [ -n "${CROSS_COMPILE:-}" ]; then
		cc=${CROSS_COMPILE}gcc
	fi
	CCACHE_DIR="$build/ccache" CCACHE_BASEDIR="$build" CCACHE_MAXSIZE=10G \
		make CC="ccache $cc" HOSTCC="ccache gcc" "$@"
}

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

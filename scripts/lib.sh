# Shared helpers for the harness scripts; sourced, never run.
# shellcheck shell=bash

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Debian's programs only: the harness runs what scripts/deps installs
# (scripts/deps-check proves it), not what else this machine has on PATH
# (a rustc in ~/.cargo/bin would make the kernel's Kconfig probe it).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

die() {
	echo "error: $*" >&2
	exit 1
}

# The bases the series is kept for, the default first: mainline 7.3 and
# the backport to Debian's 6.12. BASE picks one; its series is
# patches/*-BASE (patches/mainline-7.3, patches/backport-6.12) and its
# tree, builds and logs are in build/BASE. Exported, so that what a
# script starts works on the same base.
bases=(7.3 6.12)

# series_dir_of BASE: the series directory of a base.
series_dir_of() {
	local dirs=("$top"/patches/*-"$1")
	if [ "${#dirs[@]}" != 1 ] || [ ! -d "${dirs[0]}" ]; then
		die "BASE=$1 needs exactly one series directory patches/*-$1"
	fi
	echo "${dirs[0]}"
}

# known_base BASE: whether BASE is one of the bases.
known_base() {
	local b
	for b in "${bases[@]}"; do
		[ "$b" != "$1" ] || return 0
	done
	return 1
}

export BASE=${BASE:-${bases[0]}}
known_base "$BASE" ||
	die "unknown BASE=$BASE: the bases are 7.3 (mainline, the default) and 6.12 (the backport)"
series_dir=$(series_dir_of "$BASE")
# What the bases share: the ccache, the downloaded sources, the kernel
# build lock, make test's execve trace, the model check's work.
build_root="$top/build"
build="$build_root/$BASE"
# The arm64 guest's busybox: Debian's busybox-static:arm64, unpacked once
# into build/src (scripts/fetch-deb). make test fetches it before it traces
# what it runs, as the bases' sources: it is an input, and apt's helpers
# are apt's.
arm64_busybox="$build_root/src/busybox-static-arm64"
fetch_arm64_busybox() {
	[ -d "$arm64_busybox" ] ||
		"$top/scripts/fetch-deb" bookworm arm64 busybox-static "$arm64_busybox"
}
tree=${TREE:-$build/linux}
logs="$build/logs"
mkdir -p "$logs"

# The guest's architecture, ARCH as the kernel names it: x86_64 (the
# default) or arm64, for the guest's kernel and programs of make run,
# shell and exec (and make test's arm64 lane), on the mainline series
# only. An arm64 guest is cross-built (Debian's gcc-aarch64-linux-gnu)
# and keeps its objects, image and logs apart: the suffix "-arm64".
# ARCH=i386 (make bot-checks' 32-bit objects) takes x86's fragments.
case "${ARCH:-x86_64}" in
x86 | x86_64 | i386)
	guest_arch=x86_64
	arch_suffix=
	kernel_image=arch/x86/boot/bzImage
	;;
arm64)
	case "$(basename "$0")" in
	run | boot | kernel | initramfs | guest-exec | fetch-deb | tree | fetch-base) ;;
	*) die "ARCH=arm64 is for make run, shell and exec (make test runs its arm64 lane itself)" ;;
	esac
	guest_arch=arm64
	arch_suffix=-arm64
	kernel_image=arch/arm64/boot/Image
	export CROSS_COMPILE=${CROSS_COMPILE:-aarch64-linux-gnu-}
	;;
*)
	die "unknown ARCH=$ARCH: the guests are x86_64 (the default) and arm64"
	;;
esac

# rel PATH: PATH as messages show it, relative to the project.
rel() {
	echo "${1#"$top"/}"
}

# make for kernel builds, through ccache with its cache where ccache keeps
# it by default (~/.cache/ccache, or CCACHE_DIR), one for both bases and
# every clone: the builds of check-series, the feature-off build and the
# mutants share most of their objects, and the two bases whatever compiles
# the same in both. CCACHE_BASEDIR makes the paths under build/ relative,
# so object directories side by side (build/7.3/obj and build/6.12/obj,
# each beside its tree), and another clone's, share entries.
# The compiler follows LLVM= (LLVM=-16: clang-16) and CROSS_COMPILE= from
# the environment, as the kernel's own Makefile would choose it.
kmake() {
	local cc=gcc
	if [ -n "${LLVM:-}" ]; then
		cc=clang${LLVM#1}
	elif [ -n "${CROSS_COMPILE:-}" ]; then
		cc=${CROSS_COMPILE}gcc
	fi
	CCACHE_BASEDIR="$build_root" CCACHE_MAXSIZE=10G \
		make CC="ccache $cc" HOSTCC="ccache gcc" "$@"
}

# base_worktree: a worktree of the base's tree at the base commit,
# build/BASE/base-src, for the builds of the unpatched kernel; one of an
# older import of the base is replaced.
base_worktree() {
	[ -e "$tree/.git" ] || "$top/scripts/tree"
	if [ -d "$build/base-src" ] &&
		[ "$(git -C "$build/base-src" rev-parse HEAD 2>/dev/null)" != "$(git -C "$tree" rev-parse base)" ]; then
		rm -rf "$build/base-src"
		git -C "$tree" worktree prune
	fi
	[ -d "$build/base-src" ] || git -C "$tree" worktree add -q --detach "$build/base-src" base
}

# Print a duration in seconds as 2m41s.
fmt_time() {
	if [ "$1" -ge 60 ]; then
		printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
	else
		printf '%ds' "$1"
	fi
}

# stage NAME CMD...: run CMD with its output in build/BASE/logs/NAME.log
# (on the terminal too with V=1), then print "[NAME] time". On failure
# show the end of the log and fail.
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
		echo "[$name] FAILED after $(fmt_time $((SECONDS - start))) (log: $(rel "$logs/$name.log"))"
		[ "${V:-0}" = 1 ] || tail -n 25 "$logs/$name.log" | sed 's/^/  | /'
		return "$rc"
	fi
	echo "[$name] $(fmt_time $((SECONDS - start)))"
}

# untraced_runner PID: until process PID ends, run the commands that
# run_untraced sends through $UNTRACED_RUNNER/requests, one at a time,
# outside make test's execve trace. A request is a directory: "args"
# (the command, NUL-separated), then "output" and "status" written here.
untraced_runner() {
	local traced=$1 req args status
	exec 3<>"$UNTRACED_RUNNER/requests"
	while kill -0 "$traced" 2>/dev/null; do
		read -r -t 2 req <&3 || continue
		mapfile -d '' -t args <"$req/args"
		if "${args[@]}" </dev/null >"$req/output" 2>&1; then
			status=0
		else
			status=$?
		fi
		echo "$status" >"$req/status.new"
		mv "$req/status.new" "$req/status"
	done
	exec 3<&-
}

# run_untraced OUTPUT SECONDS CMD...: "timeout SECONDS CMD..." run by make
# test's untraced_runner; its output in OUTPUT, its exit status returned.
# timeout and CMD's program are recorded as execve calls in
# $UNTRACED_RUNNER/execs for scripts/deps-check.
run_untraced() {
	local output=$1 seconds=$2 req prog
	shift 2
	req=$(mktemp -d "$UNTRACED_RUNNER/request.XXXXXX")
	printf '%s\0' timeout "$seconds" "$@" >"$req/args"
	for prog in timeout "$1"; do
		printf '0 execve("%s", [...]) = 0\n' "$(command -v "$prog")" \
			>>"$UNTRACED_RUNNER/execs"
	done
	echo "$req" >"$UNTRACED_RUNNER/requests"
	while [ ! -f "$req/status" ]; do
		sleep 1
	done
	cp "$req/output" "$output"
	return "$(cat "$req/status")"
}

#!/bin/sh
# The SIGSEGV of a refused abort has si_code SI_KERNEL, as the
# documentation's abort check says:
#   restartable_seq_refusal_siginfo_test.sh [ABI_TEST]
# (default: ./restartable_seq_abi_test, run in /tests/rseq).
#
# The signal kills the process before any handler or tracer could read
# its siginfo (it is immutable), so the kernel's own record is what shows
# it: the signal:signal_generate tracepoint, whose "code=" is si_code.
# The ABI test's abort_without_the_signature_is_refused runs three
# children whose aborts the kernel refuses; each must be killed by one
# SIGSEGV generated with code=128 (SI_KERNEL), and no SIGSEGV of that
# program may carry another code. One TAP line per check; the test's
# output and the trace follow as comments.
set -eu

abi_test=${1:-./restartable_seq_abi_test}
test_name=abort_without_the_signature_is_refused
refused_children=3
si_kernel=128

tmp=$(mktemp -d)
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$(dirname "$0")/tap.sh"

tracing=/sys/kernel/tracing
[ -d "$tracing/events" ] || mount -t tracefs tracefs "$tracing"
event="$tracing/events/signal/signal_generate"
[ -d "$event" ] || {
	echo "# $event missing: the kernel has no signal tracepoints"
	echo "not ok 1 signal_generate_available # no tracepoint"
	echo "1..1"
	exit 1
}

# Leave tracing as it was found: off, empty, no filter.
# shellcheck disable=SC2317 # run by the EXIT trap
stop_tracing() {
	echo 0 >"$event/enable"
	echo 0 >"$event/filter"
	echo >"$tracing/trace"
	rm -rf "$tmp"
}
trap stop_tracing EXIT

echo 'sig == 11' >"$event/filter"
echo >"$tracing/trace"
echo 1 >"$event/enable"
status=0
"$abi_test" -t "$test_name" >"$tmp/test.log" 2>&1 || status=$?
echo 0 >"$event/enable"
sed 's/^/# /' "$tmp/test.log"

why=
if [ "$status" != 0 ]; then
	why="exit status $status"
elif ! grep -Eq "^ *ok [0-9]+ (global\.)?$test_name" "$tmp/test.log"; then
	why="$test_name did not pass"
fi
tap_report abi_test_refuses_the_aborts "$why"

# A task's comm is its file name cut to 15 bytes.
comm=$(basename "$abi_test" | cut -c1-15)
grep -F 'signal_generate:' "$tracing/trace" |
	grep -F " comm=$comm " >"$tmp/trace" || true
sed 's/^/# trace: /' "$tmp/trace"
total=$(grep -c . "$tmp/trace" || true)
kernel=$(grep -c " code=$si_kernel " "$tmp/trace" || true)

why=
if [ "$total" != "$refused_children" ]; then
	why="$total SIGSEGV generated for $refused_children refused aborts"
fi
tap_report one_sigsegv_per_refused_abort "$why"

why=
if [ "$kernel" != "$total" ]; then
	why="$((total - kernel)) of $total SIGSEGV with si_code other than SI_KERNEL ($si_kernel)"
elif [ "$total" = 0 ]; then
	why="no SIGSEGV traced"
fi
tap_report sigsegv_si_code_is_si_kernel "$why"

echo "1..$tap_count"
exit "$tap_failed"

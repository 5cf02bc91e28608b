#!/bin/sh
# gdb (Debian's, in batch mode) on a registered thread:
#   restartable_seq_gdb_test.sh [TARGET]
# TARGET is tests/tools/gdb_target.c built -g -O0 -static (default
# /tests/bin/gdb_target). What the documentation says a debugger sees
# ("Tracers and uprobes" in Documentation/userspace-api/
# restartable_sequences.rst): the kernel applies the abort check right
# before a signal-delivery-stop, so
#   1. a breakpoint inside a sequence is not reported as a breakpoint: gdb
#      gets a SIGTRAP with the thread already at the abort address and
#      *post_commit 0; deleted, the program goes on and its sum is exact;
#   2. single-stepping from the sequence's first instruction ends at the
#      abort address as soon as *post_commit is set (each step's trap is an
#      event);
#   3. a breakpoint outside the sequence is an ordinary breakpoint, hit
#      each time round the loop, and the program finishes with its sum
#      exact.
# One TAP line per case; gdb's output follows as comments. Exit status 1
# if a case failed.
set -eu

target=${1:-/tests/bin/gdb_target}
# Few iterations: each case stops once or twice, and the program's own
# check (sum == iterations, exit 0) is the same at any count.
iterations=200
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0

# gdb needs a terminal type to set up readline, even in batch mode.
export TERM="${TERM:-dumb}"

# run_gdb NAME: run gdb with the commands on stdin (the script) on the
# target; its output, the inferior's included, goes to $tmp/NAME.out.
# gdb's exit status is not the verdict (batch mode exits 0 after a
# failed command too): the checks read the output. A session that does
# not end within $gdb_limit seconds is killed (gdb and the inferior) and
# noted in the output: a stop gdb never reports must fail this test, not
# use up the harness's time limit for the whole script.
gdb_limit=60
run_gdb() {
	cat >"$tmp/$1.gdb"
	status=0
	timeout -s KILL "$gdb_limit" gdb -q -batch -nx -x "$tmp/$1.gdb" \
		--args "$target" "$iterations" >"$tmp/$1.out" 2>&1 </dev/null || status=$?
	# coreutils' timeout says 124 when it killed gdb (137 if it was
	# killed itself); gdb's inferior dies with it (PTRACE_O_EXITKILL).
	if [ "$status" = 124 ] || [ "$status" = 137 ]; then
		echo "gdb_killed after $gdb_limit s" >>"$tmp/$1.out"
	fi
}

# field NAME KEY: the word after the word KEY in the lines the gdb script
# printed ("printf ... KEY %#lx ..."), the first one; empty if none.
field() {
	awk -v key="$2" '{ for (i = 1; i < NF; i++) if ($i == key) { print $(i + 1); exit } }' \
		"$tmp/$1.out"
}

# report NAME WHY: one TAP line; WHY empty means passed. gdb's output is
# shown either way (as TAP comments: "ok" at the start of one of its
# lines must not count as a result).
report() {
	n=$((n + 1))
	sed 's/^/# /' "$tmp/$1.out"
	if [ -z "$2" ]; then
		echo "ok $n $1"
	else
		echo "# $1: $2"
		echo "not ok $n $1"
		failed=1
	fi
}

# finished NAME: why the run did not end with the program exiting 0 with
# its exact sum, or nothing.
finished() {
	if ! grep -q "^sum $iterations of $iterations, " "$tmp/$1.out"; then
		echo "the program did not report the exact sum $iterations"
	elif ! grep -q '^\[Inferior 1 (process [0-9]*) exited normally\]' "$tmp/$1.out"; then
		echo "the program did not exit normally"
	fi
}

# 1. A breakpoint on the label right before the commit store.
run_gdb breakpoint_inside_the_sequence_stops_at_the_abort_address <<'EOF'
set pagination off
set confirm off
break *gdb_inside_sequence
run
printf "stop_pc %#lx abort_label %#lx inside_label %#lx post_commit_word %#lx si_signo %d si_code %d\n", (unsigned long)$pc, gdb_seq_abort, (unsigned long)&gdb_inside_sequence, *gdb_post_commit_word, $_siginfo.si_signo, $_siginfo.si_code
delete
continue
EOF
name=breakpoint_inside_the_sequence_stops_at_the_abort_address
why=
pc=$(field "$name" stop_pc)
abort=$(field "$name" abort_label)
if grep -q '^gdb_killed' "$tmp/$name.out"; then
	why="gdb reported no stop within $gdb_limit s (the program made no progress either)"
elif grep -q '^Breakpoint 1,' "$tmp/$name.out"; then
	why="gdb reported Breakpoint 1 inside the sequence"
elif ! grep -q '^Program received signal SIGTRAP' "$tmp/$name.out"; then
	why="gdb reported no SIGTRAP"
elif [ -z "$pc" ] || [ -z "$abort" ]; then
	why="gdb printed no stop address"
elif [ "$pc" != "$abort" ]; then
	why="stopped at $pc, not at the abort address $abort"
elif [ "$(field "$name" post_commit_word)" != 0 ]; then
	why="*post_commit is $(field "$name" post_commit_word) at the stop, not 0"
else
	why=$(finished "$name")
fi
report "$name" "$why"

# 2. stepi from the sequence's first instruction until the thread is
# outside [first instruction, post-commit address). gdb_seq_start is only
# known once the program has run its start-up, hence the first stop
# outside the sequence.
run_gdb stepi_into_the_sequence_ends_at_the_abort_address <<'EOF'
set pagination off
set confirm off
break *gdb_before_sequence
run
delete
tbreak *gdb_seq_start
continue
printf "first_pc %#lx seq_start %#lx\n", (unsigned long)$pc, gdb_seq_start
set $steps = 0
while (unsigned long)$pc >= gdb_seq_start && (unsigned long)$pc < gdb_seq_post_commit && $steps < 50
  stepi
  set $steps = $steps + 1
end
printf "stepped_pc %#lx abort_label %#lx seq_post_commit %#lx post_commit_word %#lx steps %d\n", (unsigned long)$pc, gdb_seq_abort, gdb_seq_post_commit, *gdb_post_commit_word, $steps
continue
EOF
name=stepi_into_the_sequence_ends_at_the_abort_address
why=
first=$(field "$name" first_pc)
start=$(field "$name" seq_start)
pc=$(field "$name" stepped_pc)
abort=$(field "$name" abort_label)
if grep -q '^gdb_killed' "$tmp/$name.out"; then
	why="gdb did not finish within $gdb_limit s"
elif [ -z "$first" ] || [ "$first" != "$start" ]; then
	why="did not stop at the sequence's first instruction ($first, start $start)"
elif [ -z "$pc" ] || [ -z "$abort" ]; then
	why="gdb printed no address after stepping"
elif [ "$pc" != "$abort" ]; then
	why="stepping ended at $pc, not at the abort address $abort"
elif [ "$(field "$name" post_commit_word)" != 0 ]; then
	why="*post_commit is $(field "$name" post_commit_word) after stepping, not 0"
else
	why=$(finished "$name")
fi
report "$name" "$why"

# 3. A breakpoint outside the sequence, right before the call: hit twice
# (gdb steps over it each time), then deleted.
run_gdb breakpoint_outside_the_sequence_is_a_breakpoint <<'EOF'
set pagination off
set confirm off
break *gdb_before_sequence
run
printf "stop_pc %#lx before_label %#lx\n", (unsigned long)$pc, (unsigned long)&gdb_before_sequence
continue
printf "again_pc %#lx\n", (unsigned long)$pc
delete
continue
EOF
name=breakpoint_outside_the_sequence_is_a_breakpoint
why=
pc=$(field "$name" stop_pc)
label=$(field "$name" before_label)
if grep -q '^gdb_killed' "$tmp/$name.out"; then
	why="gdb did not finish within $gdb_limit s"
elif [ "$(grep -c '^Breakpoint 1, ' "$tmp/$name.out")" != 2 ]; then
	why="gdb did not report Breakpoint 1 twice"
elif grep -q '^Program received signal' "$tmp/$name.out"; then
	why="the program received a signal"
elif [ -z "$pc" ] || [ "$pc" != "$label" ]; then
	why="stopped at $pc, not at the breakpoint $label"
elif [ "$(field "$name" again_pc)" != "$label" ]; then
	why="second stop at $(field "$name" again_pc), not at the breakpoint $label"
else
	why=$(finished "$name")
fi
report "$name" "$why"

echo "1..$n"
exit "$failed"

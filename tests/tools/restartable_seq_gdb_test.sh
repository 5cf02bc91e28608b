#!/bin/sh
# gdb (Debian's, in batch mode) on a registered thread:
#   restartable_seq_gdb_test.sh [TARGET]
# TARGET is tests/tools/gdb_target.c built -g -O0 -static (default
# /tests/bin/gdb_target). What the documentation says a debugger sees
# ("Tracers and uprobes" in Documentation/userspace-api/
# restartable_sequences.rst): a tracer sees a stop where it happened, and
# the stop, an event, aborts the sequence when the thread resumes, so
#   1. a breakpoint inside a sequence is reported as "Breakpoint 1" at its
#      address, *post_commit still set; continuing (without displaced
#      stepping, as the documentation advises) runs the abort path, which
#      retries the sequence and hits the breakpoint again; deleted, the
#      program goes on and its sum is exact;
#   2. single-stepping from the sequence's first instruction leaves it for
#      the abort path as soon as *post_commit is set (each step's trap is
#      an event), never reaching the post-commit address;
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
# shellcheck source-path=SCRIPTDIR source=tap.sh
. "$(dirname "$0")/tap.sh"

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

# report NAME WHY: tap_report, after gdb's output as TAP comments ("ok"
# at the start of one of its lines must not count as a result).
report() {
	sed 's/^/# /' "$tmp/$1.out"
	tap_report "$1" "$2"
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
run_gdb breakpoint_inside_the_sequence_is_reported_there <<'EOF2'
set pagination off
set confirm off
set displaced-stepping off
break *gdb_inside_sequence
run
printf "stop_pc %#lx inside_label %#lx post_commit_word %#lx\n", (unsigned long)$pc, (unsigned long)&gdb_inside_sequence, *gdb_post_commit_word
continue
printf "again_pc %#lx\n", (unsigned long)$pc
delete
continue
EOF2
name=breakpoint_inside_the_sequence_is_reported_there
why=
pc=$(field "$name" stop_pc)
label=$(field "$name" inside_label)
if grep -q '^gdb_killed' "$tmp/$name.out"; then
	why="gdb did not finish within $gdb_limit s"
elif grep -q '^Program received signal' "$tmp/$name.out"; then
	why="gdb reported a signal, not the breakpoint"
elif [ "$(grep -c '^Breakpoint 1, ' "$tmp/$name.out")" != 2 ]; then
	why="gdb did not report Breakpoint 1 twice (the stop, then the retry)"
elif [ -z "$pc" ] || [ "$pc" != "$label" ]; then
	why="stopped at $pc, not at the breakpoint $label"
elif [ "$(field "$name" post_commit_word)" = 0 ]; then
	why="*post_commit is 0 at the stop: the sequence was judged before it"
elif [ "$(field "$name" again_pc)" != "$label" ]; then
	why="the retry stopped at $(field "$name" again_pc), not at $label"
else
	why=$(finished "$name")
fi
report "$name" "$why"

# 2. stepi from the sequence's first instruction until the thread is
# outside [first instruction, post-commit address). gdb_seq_start is only
# known once the program has run its start-up, hence the first stop
# outside the sequence.
run_gdb stepi_into_the_sequence_ends_in_the_abort_path <<'EOF2'
set pagination off
set confirm off
break *gdb_before_sequence
run
delete
tbreak *gdb_seq_start
continue
printf "first_pc %#lx seq_start %#lx\n", (unsigned long)$pc, gdb_seq_start
set $steps = 0
set $published = 0
while (unsigned long)$pc >= gdb_seq_start && (unsigned long)$pc < gdb_seq_post_commit && $steps < 50
  if *gdb_post_commit_word != 0
    set $published = 1
  end
  stepi
  set $steps = $steps + 1
end
printf "stepped_pc %#lx seq_post_commit %#lx post_commit_word %#lx published %d steps %d\n", (unsigned long)$pc, gdb_seq_post_commit, *gdb_post_commit_word, $published, $steps
continue
EOF2
name=stepi_into_the_sequence_ends_in_the_abort_path
why=
first=$(field "$name" first_pc)
start=$(field "$name" seq_start)
pc=$(field "$name" stepped_pc)
if grep -q '^gdb_killed' "$tmp/$name.out"; then
	why="gdb did not finish within $gdb_limit s"
elif [ -z "$first" ] || [ "$first" != "$start" ]; then
	why="did not stop at the sequence's first instruction ($first, start $start)"
elif [ -z "$pc" ]; then
	why="gdb printed no address after stepping"
elif [ "$(field "$name" steps)" = 50 ]; then
	why="still inside the sequence after 50 steps"
elif [ "$pc" = "$(field "$name" seq_post_commit)" ]; then
	why="stepping reached the post-commit address: the sequence committed"
elif [ "$(field "$name" published)" != 1 ]; then
	why="left the sequence before *post_commit was published"
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

echo "1..$tap_count"
exit "$tap_failed"

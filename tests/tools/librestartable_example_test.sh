#!/bin/sh
# librestartable's README example as a reader builds it: hits.c compiled
# outside the repository with "pkg-config --cflags --libs librestartable"
# against a "make install" copy (scripts/initramfs does that), linked
# dynamically; here it runs on the installed shared library:
#   librestartable_example_test.sh [DIR]
# DIR (default /tests/lib/example) holds hits and lib/, the installed
# librestartable.so*. It must exit 0 and say it ran in kernel mode, on
# restartable_sequences() (a fallback mode would also count right).
set -eu

dir=${1:-/tests/lib/example}
status=0
out=$(LD_LIBRARY_PATH="$dir/lib" "$dir/hits" 2>&1) || status=$?
echo "$out" | sed 's/^/# /'
# The dynamic loader shows that the program loaded the installed copy, not a static one.
if ! LD_LIBRARY_PATH="$dir/lib" /lib64/ld-linux-x86-64.so.2 --list "$dir/hits" 2>/dev/null | grep -q "=> $dir/lib/librestartable.so"; then
	echo "# hits does not load $dir/lib/librestartable.so"
	exit 1
fi
if [ "$status" != 0 ]; then
	echo "# hits exited with status $status"
	exit 1
fi
case "$out" in
"mode kernel: "*) ;;
*)
	echo "# hits did not run in kernel mode"
	exit 1
	;;
esac

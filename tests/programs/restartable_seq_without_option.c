// SPDX-License-Identifier: GPL-2.0
/*
 * For a kernel built without CONFIG_RESTARTABLE_SEQUENCES:
 * restartable_seq_without_option
 *
 * The documentation promises ENOSYS there, for every call: registration,
 * unregistration, query, flags no kernel knows (which is how a program
 * tells such a kernel, ENOSYS, from one with the call, EINVAL) and bad
 * pointers alike, with neither word written. rseq() keeps working: the
 * C library's registration of this thread is in place and the kernel
 * keeps its CPU number (run it with the C library's rseq() on).
 *
 * Prints one line per check; exits 1 if any failed. On a kernel with the
 * call the first check fails (registration succeeds).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_restartable_sequences
#define __NR_restartable_sequences 473
#endif

/* The uapi's flags, spelled out: this program does not need the series. */
#define FLAG_UNREGISTER (1U << 0)
#define FLAG_QUERY (1U << 1)
#define WORD_PATTERN 0x5a5a5a5a5a5a5a5aULL

static int failed;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failed = 1;
}

/* One call: -1 with ENOSYS, and neither word written. */
static void expect_enosys(unsigned int flags, int good_pointers, const char *what)
{
	static uint64_t counter, post_commit;
	long ret;

	counter = WORD_PATTERN;
	post_commit = WORD_PATTERN;
	errno = 0;
	ret = syscall(__NR_restartable_sequences, flags,
		      good_pointers ? &counter : NULL,
		      good_pointers ? &post_commit : (void *)-4096L);
	if (ret != -1 || errno != ENOSYS)
		printf("  returned %ld, errno %d (%s)\n", ret, errno, strerror(errno));
	check(ret == -1 && errno == ENOSYS &&
	      counter == WORD_PATTERN && post_commit == WORD_PATTERN, what);
}

/* The C library's rseq() area of this thread: registered and kept. */
static void check_rseq(void)
{
	struct rseq *area;

	check(__rseq_size > 0, "the C library registered rseq() for this thread");
	if (__rseq_size == 0)
		return;
	area = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
	check((int)area->cpu_id == sched_getcpu(), "rseq() keeps its cpu_id");
}

int main(void)
{
	expect_enosys(0, 1, "registration: ENOSYS, words untouched");
	expect_enosys(FLAG_UNREGISTER, 1, "unregistration: ENOSYS, words untouched");
	expect_enosys(FLAG_QUERY, 1, "query: ENOSYS, words untouched");
	expect_enosys(FLAG_UNREGISTER | FLAG_QUERY, 1, "both flags: ENOSYS");
	expect_enosys(1U << 31, 1, "an unknown flag: ENOSYS, not EINVAL");
	expect_enosys(0, 0, "a NULL and a kernel address: ENOSYS, not EINVAL or EFAULT");
	check_rseq();
	return failed;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * restartable_sequences() called by an AArch32 task on an arm64 kernel:
 * the compat system call table has the number but no entry point, so the
 * call fails with ENOSYS whatever it asks, and registers nothing. An
 * AArch32 task could not be judged by the AArch64 rule (no x9 in its
 * register file), so it must never get a registration.
 *
 * Built with clang for ARMv7-A, -nostdlib: no AArch32 C library is
 * needed, only raw system calls (arm's EABI: number in r7, SVC #0). The
 * exit status names the first check that failed (0: all passed); its
 * line on stdout says what it found.
 */
#include <asm/unistd.h>
#include <linux/errno.h>
#include <linux/rseq.h>

typedef unsigned long long u64;

static long sys(long nr, long a, long b, long c)
{
	register long r7 asm("r7") = nr;
	register long r0 asm("r0") = a;
	register long r1 asm("r1") = b;
	register long r2 asm("r2") = c;

	asm volatile("svc #0"
		     : "+r" (r0)
		     : "r" (r7), "r" (r1), "r" (r2)
		     : "memory");
	return r0;
}

static void say(const char *text)
{
	long n = 0;

	while (text[n])
		n++;
	sys(__NR_write, 1, (long)text, n);
}

/* Fail check @n, saying what it checks. */
static int fail(int n, const char *what)
{
	say("restartable_seq_aarch32: ");
	say(what);
	say("\n");
	return n;
}

static u64 counter __attribute__((aligned(8))) = 0x00000005ffffffffULL;
static u64 post_commit __attribute__((aligned(8))) = ~0ULL;

static int checks(void)
{
	u64 counter_addr = 1, post_commit_addr = 1;
	long ret;

	ret = sys(__NR_restartable_sequences, 0, (long)&counter, (long)&post_commit);
	if (ret != -ENOSYS)
		return fail(1, "registration did not fail with ENOSYS");
	if (counter != 0x00000005ffffffffULL || post_commit != ~0ULL)
		return fail(2, "the failed registration wrote a word");
	ret = sys(__NR_restartable_sequences, RESTARTABLE_SEQ_FLAG_QUERY,
		  (long)&counter_addr, (long)&post_commit_addr);
	if (ret != -ENOSYS)
		return fail(3, "query did not fail with ENOSYS");
	if (counter_addr != 1 || post_commit_addr != 1)
		return fail(4, "the failed query wrote an answer");
	ret = sys(__NR_restartable_sequences, RESTARTABLE_SEQ_FLAG_UNREGISTER,
		  (long)&counter, (long)&post_commit);
	if (ret != -ENOSYS)
		return fail(5, "unregistration did not fail with ENOSYS");
	say("restartable_seq_aarch32: ENOSYS for registration, query and unregistration\n");
	return 0;
}

void __attribute__((noreturn)) _start(void)
{
	sys(__NR_exit, checks(), 0, 0);
	__builtin_unreachable();
}

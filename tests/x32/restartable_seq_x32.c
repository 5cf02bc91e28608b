// SPDX-License-Identifier: GPL-2.0
/*
 * restartable_sequences() called from x32 code: the call is the 64-bit one
 * (number 473 with __X32_SYSCALL_BIT), and the registered words are whole
 * 64-bit words, although pointers are 32 bits wide here.
 *
 * Built with -mx32 -nostdlib: no x32 C library is needed, only raw system
 * calls. The exit status names the first check that failed (0: all
 * passed); its line on stdout says what it found.
 */
#include <asm/unistd.h>
#include <asm/restartable_seq.h>
#include <linux/rseq.h>

#define WNOHANG		1
#define SIGKILL		9

typedef unsigned long long u64;

static long long sys(long long nr, long long a, long long b, long long c,
		     long long d)
{
	register long long r10 asm("r10") = d;
	long long ret;

	asm volatile("syscall"
		     : "=a" (ret)
		     : "a" (nr), "D" (a), "S" (b), "d" (c), "r" (r10)
		     : "rcx", "r11", "memory");
	return ret;
}

static void say(const char *text)
{
	long long n = 0;

	while (text[n])
		n++;
	sys(__NR_write, 1, (unsigned long)text, n, 0);
}

/* Fail check @n, saying what it checks. */
static int fail(int n, const char *what)
{
	say("restartable_seq_x32: ");
	say(what);
	say("\n");
	return n;
}

/* Pin thread @pid (0: the caller) to @cpu. */
static long long pin(long long pid, unsigned int cpu)
{
	u64 mask = 1ULL << cpu;

	return sys(__NR_sched_setaffinity, pid, sizeof(mask), (unsigned long)&mask, 0);
}

static void sleep_ms(long long ms)
{
	long long ts[2] = { 0, ms * 1000000 };

	sys(__NR_nanosleep, (unsigned long)ts, 0, 0, 0);
}

static u64 counter __attribute__((aligned(8))) = 0x00000005ffffffffULL;
static u64 post_commit __attribute__((aligned(8))) = ~0ULL;

/*
 * Spin inside a sequence until an event aborts it, then exit 0 from the
 * abort path. RCX and *post_commit hold zero-extended 32-bit addresses.
 */
static void __attribute__((noreturn)) spin_until_aborted(void)
{
	asm volatile("leaq 2f(%%rip), %%rcx\n\t"
		     "leaq 1f(%%rip), %%rax\n\t"
		     "movq %%rax, %[post_commit]\n\t"
		     "0: jmp 0b\n\t"
		     "1: movq $0, %[post_commit]\n\t"
		     ".long %c[signature]\n\t"
		     "2:\n\t"
		     : [post_commit] "=m" (post_commit)
		     : [signature] "i" (RESTARTABLE_SEQ_ABORT_SIGNATURE)
		     : "rax", "rcx", "memory", "cc");
	sys(__NR_exit, post_commit ? 1 : 0, 0, 0, 0);
	__builtin_unreachable();
}

static int main_checks(void)
{
	unsigned int cpu, other;
	long long ret, child;
	int i, status = -1;

	if (sys(__NR_getcpu, (unsigned long)&cpu, 0, 0, 0) || pin(0, cpu))
		return fail(1, "getcpu() or sched_setaffinity() failed");
	other = cpu ? 0 : 1;

	ret = sys(__NR_restartable_sequences, 0, (unsigned long)&counter,
		  (unsigned long)&post_commit, 0);
	if (ret)
		return fail(2, "registration failed");
	if (post_commit != 0)
		return fail(3, "*post_commit not cleared in all 64 bits");
	if ((counter & RESTARTABLE_SEQ_CPU_MASK) != cpu)
		return fail(4, "*counter does not name the CPU");
	/* 6, or more after a preemption since */
	if (counter >> RESTARTABLE_SEQ_EVENT_SHIFT < 6)
		return fail(5, "the count in *counter's high half did not go on from 5");

	/* A fork() child keeps the registration; move it until it aborts. */
	child = sys(__NR_fork, 0, 0, 0, 0);
	if (child < 0)
		return fail(6, "fork() failed");
	if (child == 0)
		spin_until_aborted();
	for (i = 0; i < 250; i++) {
		sleep_ms(20);
		pin(child, i % 2 ? cpu : other);
		if (sys(__NR_wait4, child, (unsigned long)&status, WNOHANG, 0) == child)
			break;
	}
	if (i == 250) {
		sys(__NR_kill, child, SIGKILL, 0, 0);
		return fail(7, "the child's sequence was never aborted");
	}
	if (status != 0)
		return fail(8, "the child did not exit 0 from its abort path");

	ret = sys(__NR_restartable_sequences, RESTARTABLE_SEQ_FLAG_UNREGISTER,
		  (unsigned long)&counter, (unsigned long)&post_commit, 0);
	if (ret)
		return fail(9, "unregistration failed");
	if ((counter & RESTARTABLE_SEQ_CPU_MASK) != RESTARTABLE_SEQ_CPU_UNREGISTERED ||
	    counter >> RESTARTABLE_SEQ_EVENT_SHIFT < 6)
		return fail(10, "unregistration left a wrong *counter");
	say("restartable_seq_x32: registration, abort and unregistration work\n");
	return 0;
}

/* The entry point: no C library to call main() and exit() for us */
void __attribute__((noreturn, used)) start_c(void)
{
	sys(__NR_exit, main_checks(), 0, 0, 0);
	__builtin_unreachable();
}

asm(".globl _start\n"
    "_start:\n\t"
    "andq $-16, %rsp\n\t"
    "call start_c\n");

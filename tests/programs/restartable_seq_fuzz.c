// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzzer for restartable_sequences(): restartable_seq_fuzz [CALLS [CHILDREN]]
 *
 * Registration: threads (four per CPU) make CALLS calls in all with random
 * flags and pointers drawn from NULL, valid, misaligned, kernel,
 * non-canonical, unmapped, read-only and guard-page addresses, in any
 * registration state. Each result must be exactly what a model of the
 * documented ABI predicts.
 *
 * Abort rule: CHILDREN processes each register, load a random abort
 * address into RCX and a random value into *post_commit, and wait in a
 * loop for an event (a timer signal arrives every millisecond). Each must
 * end as the rule says: carry on (no sequence), land on the abort
 * address, or die of SIGSEGV (a bad abort address, or one that does not
 * follow the signature).
 *
 * Exits 1 on any mismatch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/compiler.h>

#include "restartable_seq.h"

enum kind { K_NULL, K_VALID, K_MISALIGNED, K_KERNEL, K_NONCANONICAL,
	    K_UNMAPPED, K_READONLY, K_GUARD, NR_KINDS };

static char *unmapped_page, *readonly_page, *guard_page;
static long calls_per_thread;
static long mismatches, calls_made;

static unsigned long next_random(unsigned long *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* A pointer of the given kind; valid ones are the thread's own words. */
static void *pick(enum kind kind, unsigned long r, unsigned long *valid)
{
	switch (kind) {
	case K_NULL:
		return NULL;
	case K_VALID:
		return valid;
	case K_MISALIGNED:
		return (char *)valid + 1 + r % 7;
	case K_KERNEL:
		return (void *)(0xffffffff81000000UL + (r % 4096) * 8);
	case K_NONCANONICAL:
		return (void *)(0x8000000000000000UL | ((r % (1UL << 40)) << 3));
	case K_UNMAPPED:
		return unmapped_page + (r % 512) * 8;
	case K_READONLY:
		return readonly_page + (r % 512) * 8;
	default:
		return guard_page + (r % 512) * 8;
	}
}

static int misaligned(void *p)
{
	return (uintptr_t)p % 8 != 0;
}

/* Do 8-byte words at a and b share a byte? */
static int overlap(void *a, void *b)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

	return x < y + 8 && y < x + 8;
}

/* A thread's registration as the fuzzer believes it to be */
struct registration {
	void *counter;
	void *post_commit;
};

/* QUERY stores an address through any pointer it can write to. */
static int writable(enum kind k)
{
	return k == K_VALID || k == K_MISALIGNED;
}

/* What the ABI says a call returns, given the thread's state. */
static int expected(int flags, void *counter, enum kind ck, void *post,
		    enum kind pk, const struct registration *reg)
{
	switch (flags) {
	case 0:
		if (!counter || !post || misaligned(counter) ||
		    misaligned(post) || counter == post)
			return -EINVAL;
		if (reg->counter)
			return -EBUSY;
		if (pk != K_VALID || ck != K_VALID)
			return -EFAULT;
		return 0;
	case RESTARTABLE_SEQ_FLAG_UNREGISTER:
		if (!reg->counter || counter != reg->counter ||
		    post != reg->post_commit)
			return -EINVAL;
		return 0;
	case RESTARTABLE_SEQ_FLAG_QUERY:
		/* The two answers must not overwrite each other: checked first */
		if (overlap(counter, post))
			return -EINVAL;
		if (!reg->counter)
			return -ENOENT;
		if (!counter || !post || !writable(ck) || !writable(pk))
			return -EFAULT;
		return 0;
	default:
		return -EINVAL;
	}
}

static void *registration_thread(void *arg)
{
	/* words[0..3] to register, words[4..9] for QUERY's answers */
	static __thread unsigned long words[10] __aligned(8);
	unsigned long state = (uintptr_t)arg * 0x9e3779b97f4a7c15UL + 1;
	struct registration reg = { NULL, NULL };
	long i, bad = 0;

	for (i = 0; i < calls_per_thread; i++) {
		unsigned long r = next_random(&state);
		enum kind ck = r % NR_KINDS, pk = (r >> 8) % NR_KINDS;
		int flags, query, want, got;
		long ret;
		void *counter, *post;

		switch ((r >> 16) % 8) {
		case 0:
			flags = (int)(r >> 32);
			break;
		case 3:
			/* The bit above the flags, alone */
			flags = 4;
			break;
		case 1:
			flags = RESTARTABLE_SEQ_FLAG_UNREGISTER;
			break;
		case 2:
			flags = RESTARTABLE_SEQ_FLAG_QUERY;
			break;
		default:
			flags = 0;
		}
		query = flags == RESTARTABLE_SEQ_FLAG_QUERY;
		counter = pick(ck, r >> 20, query ? &words[4] : &words[0]);
		/* Now and then the same word for both. */
		post = pick(pk, r >> 24, (r >> 40) % 16 ?
			    (query ? &words[7] : &words[2]) :
			    (query ? &words[4] : &words[0]));
		/* Now and then unregister the right words. */
		if (flags == RESTARTABLE_SEQ_FLAG_UNREGISTER && reg.counter &&
		    (r >> 44) % 2) {
			counter = reg.counter;
			post = reg.post_commit;
		}
		want = expected(flags, counter, ck, post, pk, &reg);
		ret = sys_restartable_sequences(flags, counter, post);
		got = ret < 0 ? -errno : ret;

		if (got != want) {
			if (bad++ < 5)
				printf("mismatch: flags %d counter %p (%d) post %p (%d) registered %p: got %d, want %d\n",
				       flags, counter, ck, post, pk, reg.counter, got, want);
		}
		if (got == 0 && flags == 0) {
			reg.counter = counter;
			reg.post_commit = post;
		} else if (got == 0 && flags == RESTARTABLE_SEQ_FLAG_UNREGISTER) {
			reg.counter = NULL;
			reg.post_commit = NULL;
		} else if (got >= 0 && query && ck == K_VALID && pk == K_VALID &&
			   (*(void **)counter != reg.counter ||
			    *(void **)post != reg.post_commit)) {
			if (bad++ < 5)
				printf("QUERY answered %p %p, registered %p %p\n",
				       *(void **)counter, *(void **)post,
				       reg.counter, reg.post_commit);
		}
		if (reg.counter && i % 64 == 0) {
			sched_yield();
			if (rs_counter_cpu(READ_ONCE(words[0])) >= CPU_SETSIZE)
				bad++;
		}
	}
	if (reg.counter)
		sys_restartable_sequences(RESTARTABLE_SEQ_FLAG_UNREGISTER,
					  reg.counter, reg.post_commit);
	__atomic_fetch_add(&mismatches, bad, __ATOMIC_RELAXED);
	__atomic_fetch_add(&calls_made, i, __ATOMIC_RELAXED);
	return NULL;
}

extern const char fuzz_landing[], fuzz_unsigned_landing[];

enum outcome { CARRY_ON, LANDED, SIGSEGV_DEATH, OTHER };

static void empty_handler(int sig)
{
}

/*
 * In a child: register, put abort_ip in RCX and post_commit_value in
 * *post_commit, and wait for an event. Exits 0 if the loop saw the
 * counter change (no abort), 3 if it landed on fuzz_landing (behind the
 * signature), 4 if on fuzz_unsigned_landing (behind none).
 */
static noinline void abort_child(unsigned long abort_ip, unsigned long post_commit_value)
{
	struct itimerval tick = { { 0, 1000 }, { 0, 1000 } };
	unsigned long start;

	if (rs_register())
		_exit(2);
	signal(SIGALRM, empty_handler);
	setitimer(ITIMER_REAL, &tick, NULL);
	start = rs_counter();
	asm volatile("movq %[abort], %%rcx\n\t"
		     "movq %[value], %[post_commit]\n\t"
		     "1: cmpq %[start], %[counter]\n\t"
		     "je 1b\n\t"
		     "movq $0, %[post_commit]\n\t"
		     "jmp 2f\n\t"
		     RS_SIGNATURE
		     "fuzz_landing:\n\t"
		     "movl $60, %%eax\n\t"	/* exit(3) */
		     "movl $3, %%edi\n\t"
		     "syscall\n\t"
		     ".long 0\n\t"
		     "fuzz_unsigned_landing:\n\t"
		     "movl $60, %%eax\n\t"	/* exit(4) */
		     "movl $4, %%edi\n\t"
		     "syscall\n\t"
		     "2:\n\t"
		     : [post_commit] "+m" (rs_self.post_commit)
		     : [abort] "r" (abort_ip), [value] "r" (post_commit_value),
		       [start] "r" (start), [counter] "m" (rs_self.counter)
		     : "rax", "rcx", "rdi", "r11", "memory", "cc");
	_exit(0);
}

static int run_abort_case(unsigned long r)
{
	static const unsigned long bad_ips[] = {
		0, 0xffffffff81000000UL, 0x8000000000000000UL,
		0x00007ffffffff000UL, 0x1000,
	};
	unsigned long abort_ip, value;
	int status, in_sequence, good_ip;
	enum outcome want, got;
	pid_t pid;

	/* Behind the signature, behind none, or not a user address */
	good_ip = r % 3 == 0;
	if (good_ip)
		abort_ip = (unsigned long)fuzz_landing;
	else if (r % 3 == 1)
		abort_ip = (unsigned long)fuzz_unsigned_landing;
	else
		abort_ip = bad_ips[(r >> 1) % 5];
	switch ((r >> 4) % 3) {
	case 0:
		value = 0;			/* no sequence */
		break;
	case 1:
		value = 0x1000;			/* below all code: not inside */
		break;
	default:
		value = ~0UL - (r >> 8) % 4096;	/* above all code: inside */
		break;
	}
	in_sequence = value > 0x1000;
	want = !in_sequence ? CARRY_ON : good_ip ? LANDED : SIGSEGV_DEATH;

	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		abort_child(abort_ip, value);
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		got = CARRY_ON;
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		got = LANDED;
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		got = SIGSEGV_DEATH;
	else
		got = OTHER;
	if (got != want) {
		printf("abort case rcx %#lx post_commit %#lx: outcome %d, want %d (status %#x)\n",
		       abort_ip, value, got, want, status);
		return 1;
	}
	return 0;
}

static char *map_page(int prot)
{
	char *p = mmap(NULL, getpagesize(), prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort();
	return p;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 1000000;
	long children = argc > 2 ? atol(argv[2]) : 500, i;
	unsigned long state = 12345;
	pthread_t threads[64];
	long abort_mismatches = 0;
	int nr_threads;
	cpu_set_t set;

	if (!rs_supported()) {
		printf("restartable_sequences() not supported: skip\n");
		return 4;
	}
	sched_getaffinity(0, sizeof(set), &set);
	nr_threads = 4 * CPU_COUNT(&set) > 64 ? 64 : 4 * CPU_COUNT(&set);
	unmapped_page = map_page(PROT_READ | PROT_WRITE);
	munmap(unmapped_page, getpagesize());
	readonly_page = map_page(PROT_READ);
	guard_page = map_page(PROT_NONE);

	calls_per_thread = calls / nr_threads;
	for (i = 0; i < nr_threads; i++)
		pthread_create(&threads[i], NULL, registration_thread, (void *)i);
	for (i = 0; i < nr_threads; i++)
		pthread_join(threads[i], NULL);
	printf("registration: %ld calls from %d threads, %ld mismatches\n",
	       calls_made, nr_threads, mismatches);

	for (i = 0; i < children; i++)
		abort_mismatches += run_abort_case(next_random(&state));
	printf("abort rule: %ld children, %ld mismatches\n", children, abort_mismatches);
	return mismatches || abort_mismatches ? 1 : 0;
}

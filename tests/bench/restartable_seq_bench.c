// SPDX-License-Identifier: GPL-2.0
/*
 * restartable_seq_bench: restartable_sequences() against rseq(), atomics
 * and locks, user side and kernel side. Built by scripts/bench against the
 * series' tools/testing/selftests/rseq/restartable_seq.h (our operations)
 * and rseq.h/rseq.c (the rseq() operations and thread area), statically.
 *
 * Two ways to measure (--lane):
 *
 *   icount  every figure is RDTSC ticks per operation. Under QEMU with
 *           "-icount shift=0,sleep=off" (one vCPU) a tick is one executed
 *           guest instruction, user and kernel, so the figures are
 *           instructions per operation.
 *   time    CLOCK_MONOTONIC nanoseconds per operation (natively on the
 *           host, or in a TCG guest, where it is not speed).
 *
 * Every row is measured once per trial, and the rows take turns inside a
 * trial (a, b, c, ..., a, b, c, ...), so that drift favours none. Each
 * measurement runs in a fresh thread, pinned to one CPU, registered with
 * what its row needs and nothing else (glibc's own rseq() registration is
 * turned off: the program re-executes itself with
 * GLIBC_TUNABLES=glibc.pthread.rseq=0), and warms up before its window.
 *
 * rseq() has two modes on Linux 7.3. The legacy one, for rseq_len 32 (what
 * glibc 2.36 registers), writes the IDs on every return to user space
 * after a switch. The optimized V2 one, for any longer valid rseq_len on
 * architectures with the generic IRQ entry (x86), does work only after an
 * interrupt from user mode or when the CPU or concurrency ID changed. The
 * bench registers rseq.c's thread area (rseq_offset) itself, with 32 bytes
 * for the legacy mode and AT_RSEQ_FEATURE_SIZE bytes for V2, as the 7.3
 * selftests' __rseq_register_current_thread() does; 6.12's rseq.c has no
 * choice of length, and the bench builds against both. A kernel whose
 * AT_RSEQ_FEATURE_SIZE is 32 or less has no V2: its V2 rows are skipped.
 *
 * Rows, user side, one thread:
 *   a  per-CPU add, restartable_sequences() (rs_percpu_add())
 *   b  per-CPU add, rseq() (rseq_addv())
 *   c  lock add on one shared counter
 *   d  sched_getcpu() + lock add on that CPU's counter
 *   e  pthread mutex around one shared counter
 *   f  plain add to a per-thread counter
 *   g  per-CPU list pop + push, restartable_sequences()
 *   h  per-CPU list pop + push, rseq()
 *   i  list pop + push under a pthread mutex
 * On a kernel without restartable_sequences() (the base kernel, the
 * host), rows a and g run the fast path alone: nothing registers the
 * words, nothing ever aborts. Rows b and h register rseq() V2 where the
 * kernel has it, else 32 bytes: the fast path is the same in both modes.
 *
 * Rows, kernel side, each for five registrations: -0 unregistered, -rs
 * restartable_sequences(), -v2 rseq() V2, -32 rseq() 32 bytes, -rs32
 * restartable_sequences() + rseq() 32 bytes (the realistic case: glibc
 * 2.36 registers every thread so):
 *   switch-   context switch: pipe ping-pong between two threads of the
 *             same kind pinned to one CPU, per switch. Both sleep in
 *             read(): no event for restartable_sequences(), nothing for
 *             rseq() V2, the IDs for the legacy mode.
 *   signal-   signal round trip: tgkill() to itself, an empty handler,
 *             rt_sigreturn(), per signal
 *   syscall-  null system call: syscall(SYS_getppid), per call
 *   preempt-  a busy thread preempted by the timer interrupt, per
 *             preemption (icount lane only, see below)
 * and for the abort path:
 *   trap-...  int3 with an empty SIGTRAP handler, outside a sequence and
 *             inside one (the kernel aborts it: the handler returns to
 *             the abort address): the difference is the abort path.
 *             For restartable_sequences() (trap-rs-: the kernel checks
 *             the abort signature) and for rseq() (V2 where the kernel
 *             has it, else 32 bytes).
 * No sequence makes a system call: the trap rows enter the kernel by an
 * exception (int3), which is what the abort rule allows.
 *
 * The preemption rows. Two threads pinned to one CPU, registered alike,
 * run in user mode without system calls: the measuring one stamps RDTSC
 * in a loop of fixed length; its partner runs blocks of SPIN_BLOCK
 * "incq count" and a branch. Each asks for the shortest time slice the
 * kernel grants (0.1 ms, sched_setattr() with sched_runtime), so that
 * the scheduler preempts each when its slice ends: by its high-resolution
 * timer (HRTICK, on by default in 7.3) or, without it, at the next tick
 * (1 ms at HZ=1000). Short slices keep a window cheap under icount and
 * leave most windows without a periodic tick that switches nothing. The
 * measuring thread finds a gap between two of its stamps in which the
 * partner's count moved: it holds one iteration of its own loop, the
 * partner's whole run and the kernel's work for two preemptions (the
 * timer interrupt that stopped it, the switch, the partner's return to
 * user space; the one that stopped the partner, the switch back, its own
 * return). Under icount each part is counted exactly: its own iteration
 * is the smallest stamp difference of its loop, and the partner executed
 * (count moved) + (branches taken) instructions, the branches following
 * from the count (one after every SPIN_BLOCK increments; the one place
 * the count cannot tell, between the last increment of a block and its
 * branch, is one position in SPIN_BLOCK + 1, and a window where an
 * interrupt lands there comes out one off). What is left is the kernel's
 * instructions for the two preemptions, the same in every window where
 * nothing else happened, wherever in either loop the interrupts landed;
 * the most frequent window count is that. Counting involuntary switches
 * or events over a window of fixed length instead would leave the
 * partner's partial iterations at both ends, different in each window.
 * The first gap after the partner started its loop is a warm-up, the
 * second the window. In the time lane a partner's instruction is no fixed
 * time, so these rows are icount only.
 *
 * Self-checks, so that a broken kernel cannot pass for a fast one:
 *   - restartable_sequences() events (v3 rule: a registered thread sees
 *     an event when a signal is delivered to it, and when it is switched
 *     back in after being preempted in user mode or on another CPU; the
 *     bench's threads are pinned; sleeping in a system call is none). In
 *     every row with it registered, counted outside the window: at least
 *     one per signal delivered and per preemption the preemption row
 *     observed, at most one per signal plus one per involuntary switch
 *     (getrusage(RUSAGE_THREAD)). In the switch rows, where both threads
 *     sleep in read() once per round trip, each thread must also see
 *     fewer events than the window has round trips (a kernel that still
 *     counted every switch-out shows at least that many).
 *   - rseq()'s modes, in the switch rows: cpu_id_start, overwritten
 *     with ~0 before the window as the selftests' legacy_check does, must
 *     have been rewritten after it by a 32-byte registration (after every
 *     switch), and must have been left alone in at least one of the
 *     windows of the V2 row (the kernel rewrites it there only when the
 *     CPU or concurrency ID changed): a V2 registration that the kernel
 *     treats as legacy fails.
 *   - every trap row must have taken one SIGTRAP per iteration, and
 *     exactly the traps inside a sequence must have been aborted.
 *
 * Output: a table, and one JSON object per row on lines of their own,
 * each starting with '{"bench":'; under icount also the mode, the most
 * frequent window count (an undisturbed window repeats exactly). Exit
 * status 0, 4 if rseq() is missing, 1 on a failed self-check.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/auxvec.h>
#include <linux/sched/types.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "rseq.h"
#include "restartable_seq.h"

#define MAX_TRIALS	1001
#define RSEQ_STR_(x)	#x
#define RSEQ_STR(x)	RSEQ_STR_(x)
#define NR_WORDS	CPU_SETSIZE
#define RSEQ_LEGACY_LEN	32
#define SPIN_BLOCK	64	/* the preemption partner's increments per branch */
#define GAP_MIN		1000	/* ticks: above a loop iteration, below a switch */
#define SHORT_SLICE	100000	/* ns: the shortest sched_runtime the kernel takes */

enum lane { LANE_ICOUNT, LANE_TIME };

/*
 * REG_RSEQ (rows b, h and the rseq() trap rows) becomes REG_RSEQ_V2 or
 * REG_RSEQ_32 when the program starts, by what the kernel offers.
 */
enum reg { REG_NONE, REG_RS, REG_RSEQ_V2, REG_RSEQ_32, REG_RS_RSEQ_32, REG_RSEQ };

static const char *const reg_names[] = {
	[REG_NONE] = "none",
	[REG_RS] = "restartable_sequences",
	[REG_RSEQ_V2] = "rseq-v2",
	[REG_RSEQ_32] = "rseq-32",
	[REG_RS_RSEQ_32] = "restartable_sequences+rseq-32",
};

static enum lane lane = LANE_TIME;
static int bench_cpu = -1;
static int trials = 21;
static long user_ops = 200000;		/* operations per user-side window */
static long kernel_ops = 2000;		/* round trips/signals/calls/traps per window */
static const char *where = "";
static const char *only;		/* --only user|kernel */
static unsigned int seed;		/* --seed: the pauses between rows */
static bool rs_ok;			/* rows use restartable_sequences() */
static bool rs_present;			/* the kernel has it */
static bool base_rows;			/* --rows base */
static unsigned int rseq_v2_len;	/* 0: the kernel has no V2 mode */

/* --- measuring --------------------------------------------------------- */

static inline uint64_t stamp(void)
{
	if (lane == LANE_ICOUNT) {
		uint32_t lo, hi;

		/* Under icount RDTSC ends its translation block: exact. */
		asm volatile("lfence\n\trdtsc" : "=a" (lo), "=d" (hi) : : "memory");
		return ((uint64_t)hi << 32) | lo;
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	}
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

/* --- registrations ------------------------------------------------------ */

static bool uses_rs(enum reg reg)
{
	return reg == REG_RS || reg == REG_RS_RSEQ_32;
}

static unsigned int rseq_len_of(enum reg reg)
{
	if (reg == REG_RSEQ_V2)
		return rseq_v2_len;
	if (reg == REG_RSEQ_32 || reg == REG_RS_RSEQ_32)
		return RSEQ_LEGACY_LEN;
	return 0;
}

/* rseq() on rseq.c's thread area, the one its operations use: 0 or -errno. */
static int sys_rseq(unsigned int len, int flags)
{
	if (syscall(__NR_rseq, rseq_get_abi(), len, flags, RSEQ_SIG))
		return -errno;
	return 0;
}

static void register_as(enum reg reg)
{
	unsigned int len = rseq_len_of(reg);
	int ret = 0;

	/*
	 * Without kernel support, rows a and g run the fast path alone, on a
	 * counter that names CPU 0 so that step 1 lets them through.
	 */
	if (uses_rs(reg) && rs_ok)
		ret = rs_register();
	else if (uses_rs(reg))
		rs_self.counter = 0;
	if (!ret && len)
		ret = sys_rseq(len, 0);
	if (ret) {
		fprintf(stderr, "registering as %s: %s\n", reg_names[reg], strerror(-ret));
		exit(1);
	}
}

static void unregister_as(enum reg reg)
{
	unsigned int len = rseq_len_of(reg);

	if ((len && sys_rseq(len, RSEQ_ABI_FLAG_UNREGISTER)) ||
	    (uses_rs(reg) && rs_ok && rs_unregister())) {
		fprintf(stderr, "unregistering as %s failed\n", reg_names[reg]);
		exit(1);
	}
}

/*
 * What the kernel says about the calling thread, taken outside the
 * windows: its restartable_sequences() event count and its involuntary
 * switches. A preemption in user mode is an involuntary switch; so is one
 * in the kernel, which is no event.
 */
struct tally {
	uint32_t events;
	long nivcsw;
};

static void take_tally(struct tally *t)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		abort();
	t->nivcsw = ru.ru_nivcsw;
	t->events = rs_counter_events(rs_counter());
}

/*
 * The events a thread registered with restartable_sequences() saw since
 * t0: at least min, at most one per signal delivered plus one per
 * involuntary switch. Returns them (0 for any other thread).
 */
static long check_events(const char *what, enum reg reg, const struct tally *t0,
			 long min, long signals)
{
	struct tally t;
	long events;

	if (!uses_rs(reg) || !rs_ok)
		return 0;
	take_tally(&t);
	events = (uint32_t)(t.events - t0->events);
	if (events < min || events > signals + t.nivcsw - t0->nivcsw) {
		fprintf(stderr, "%s: event check failed: %ld events, expected %ld to %ld "
			"(%ld signals, %ld involuntary switches)\n", what, events, min,
			signals + t.nivcsw - t0->nivcsw, signals, t.nivcsw - t0->nivcsw);
		exit(1);
	}
	return events;
}

/*
 * A thread that sleeps in read() once per round trip and wakes on the
 * same CPU sees no event for it: fewer events than round trips.
 */
static void check_sleeps(const char *what, enum reg reg, const struct tally *t0,
			 long round_trips)
{
	long events = check_events(what, reg, t0, 0, 0);

	if (events >= round_trips) {
		fprintf(stderr, "%s: sleep check failed: %ld events in %ld round trips, "
			"each a sleep in read() on the same CPU, which is no event\n",
			what, events, round_trips);
		exit(1);
	}
}

/* --- user side: the operations ------------------------------------------ */

static struct rs_percpu_word rs_words[NR_WORDS];
static struct rs_percpu_word rseq_words[NR_WORDS];
static struct rs_percpu_word atomic_words[NR_WORDS];
static long shared_counter __aligned(64);
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread long thread_counter;

static inline void op_rs_add(void)
{
	while (rs_percpu_add(rs_words, 1) != RS_OK)
		;
}

static inline void op_rseq_add(void)
{
	uint32_t cpu;

	do {
		cpu = rseq_cpu_start();
	} while (rseq_addv(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID,
			   &rseq_words[cpu].v, 1, cpu));
}

static inline void op_lock_add(void)
{
	__atomic_fetch_add(&shared_counter, 1, __ATOMIC_RELAXED);
}

static inline void op_getcpu_atomic(void)
{
	__atomic_fetch_add(&atomic_words[sched_getcpu()].v, 1, __ATOMIC_RELAXED);
}

static inline void op_mutex(void)
{
	pthread_mutex_lock(&shared_lock);
	shared_counter++;
	pthread_mutex_unlock(&shared_lock);
}

static inline void op_plain(void)
{
	asm volatile("addq $1, %0" : "+m" (thread_counter));
}

/*
 * The exit path's entry into its user access section (rows j and k), in
 * user space where real hardware can time it: the kernel's own path runs
 * only in the guest, whose time is not the CPU's. *counter is written and
 * *post_commit read after user_rw_access_begin()'s range check and its
 * LFENCE (x86-64's barrier_nospec()), or after masking both pointers as
 * masked_user_access_begin() and mask_user_address() do. STAC, privileged
 * and the same in both, is left out.
 */
#define ENTRY_PTR_MAX	0x7fffffffefffUL
static uint64_t entry_words[2];		/* *counter, *post_commit */

static inline void op_fenced_entry(void)
{
	uint64_t *counter = &entry_words[0], *post_commit = &entry_words[1];

	asm volatile("movabsq %[max], %%rax\n\t"
		     "cmpq %%rax, %[pc]\n\t"
		     "ja 1f\n\t"
		     "lfence\n\t"
		     "movq %[pc], (%[counter])\n\t"
		     "movq (%[pc]), %%rax\n"
		     "1:"
		     : : [counter] "r" (counter), [pc] "r" (post_commit),
		       [max] "i" (ENTRY_PTR_MAX)
		     : "rax", "memory", "cc");
}

static inline void op_masked_entry(void)
{
	uint64_t *counter = &entry_words[0], *post_commit = &entry_words[1];

	asm volatile("movabsq %[max], %%rax\n\t"
		     "cmpq %%rax, %[counter]\n\t"
		     "cmovaq %%rax, %[counter]\n\t"
		     "cmpq %%rax, %[pc]\n\t"
		     "cmovaq %%rax, %[pc]\n\t"
		     "movq %[pc], (%[counter])\n\t"
		     "movq (%[pc]), %%rax\n\t"
		     : [counter] "+r" (counter), [pc] "+r" (post_commit)
		     : [max] "i" (ENTRY_PTR_MAX)
		     : "rax", "memory", "cc");
}

struct rseq_list {
	struct rs_node *head;
} __aligned(64);

static struct rs_percpu_list rs_lists[NR_WORDS];
static struct rseq_list rseq_lists[NR_WORDS];
static struct rs_node *locked_head;

static inline void op_rs_list(void)
{
	struct rs_node *node;
	int ret;

	while ((ret = rs_percpu_pop(rs_lists, &node)) == RS_ABORT)
		;
	if (ret != RS_OK)
		abort();	/* every list holds nodes */
	while (rs_percpu_push(rs_lists, node) != RS_OK)
		;
}

static inline void op_rseq_list(void)
{
	struct rs_node *node, *first;
	intptr_t *head;
	uint32_t cpu;
	int ret;

	do {
		cpu = rseq_cpu_start();
		ret = rseq_cmpnev_storeoffp_load(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID,
						 (intptr_t *)&rseq_lists[cpu].head,
						 (intptr_t)NULL,
						 offsetof(struct rs_node, next),
						 (intptr_t *)&node, cpu);
	} while (ret < 0);
	if (ret > 0)
		abort();	/* every list holds nodes */
	do {
		cpu = rseq_cpu_start();
		head = (intptr_t *)&rseq_lists[cpu].head;
		first = (struct rs_node *)RSEQ_READ_ONCE(*head);
		node->next = first;
	} while (rseq_cmpeqv_storev(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID, head,
				    (intptr_t)first, (intptr_t)node, cpu));
}

static inline void op_mutex_list(void)
{
	struct rs_node *node;

	pthread_mutex_lock(&shared_lock);
	node = locked_head;
	locked_head = node->next;
	pthread_mutex_unlock(&shared_lock);
	pthread_mutex_lock(&shared_lock);
	node->next = locked_head;
	locked_head = node;
	pthread_mutex_unlock(&shared_lock);
}

static void seed_lists(void)
{
	int cpu, i;

	for (cpu = 0; cpu < NR_WORDS; cpu++) {
		for (i = 0; i < 4; i++) {
			struct rs_node *n = calloc(2, sizeof(*n));

			if (!n)
				abort();
			n[0].next = rs_lists[cpu].head;
			rs_lists[cpu].head = &n[0];
			n[1].next = rseq_lists[cpu].head;
			rseq_lists[cpu].head = &n[1];
		}
	}
	for (i = 0; i < 4; i++) {
		struct rs_node *n = calloc(1, sizeof(*n));

		if (!n)
			abort();
		n->next = locked_head;
		locked_head = n;
	}
}

/*
 * One window of a user-side row: warm up, then n operations between two
 * stamps. The operation is inlined into the loop, as a caller would have
 * it; the loop's own increment, compare and branch are in every row.
 */
#define USER_LOOP(name, op)						\
static noinline uint64_t name(long n)					\
{									\
	uint64_t t0;							\
	long i;								\
									\
	for (i = 0; i < n / 8 + 1; i++)					\
		op();							\
	t0 = stamp();							\
	for (i = 0; i < n; i++)						\
		op();							\
	return stamp() - t0;						\
}

USER_LOOP(loop_rs_add, op_rs_add)
USER_LOOP(loop_rseq_add, op_rseq_add)
USER_LOOP(loop_lock_add, op_lock_add)
USER_LOOP(loop_getcpu_atomic, op_getcpu_atomic)
USER_LOOP(loop_mutex, op_mutex)
USER_LOOP(loop_plain, op_plain)
USER_LOOP(loop_rs_list, op_rs_list)
USER_LOOP(loop_rseq_list, op_rseq_list)
USER_LOOP(loop_mutex_list, op_mutex_list)
USER_LOOP(loop_fenced_entry, op_fenced_entry)
USER_LOOP(loop_masked_entry, op_masked_entry)

/* --- kernel side --------------------------------------------------------- */

struct pingpong {
	int ping[2], pong[2];
	enum reg reg;
	long n;
};

static void *pong_thread(void *arg)
{
	struct pingpong *p = arg;
	struct tally t0;
	char c;
	long i;

	pin_to(bench_cpu);
	register_as(p->reg);
	take_tally(&t0);
	for (i = 0; i < p->n; i++) {
		if (read(p->ping[0], &c, 1) != 1 || write(p->pong[1], &c, 1) != 1)
			abort();
	}
	check_sleeps("switch partner", p->reg, &t0, kernel_ops);
	unregister_as(p->reg);
	return NULL;
}

/*
 * rseq()'s modes differ in what a sleep costs: a 32-byte registration has
 * its IDs written on every return to user space after a switch, a V2 one
 * only when the CPU or the concurrency ID changed. cpu_id_start is set to
 * ~0 before the window and looked at after it.
 */
#define IDS_SENTINEL	(~0U)

static bool ids_rewritten(const char *what, enum reg reg)
{
	struct rseq_abi *abi = rseq_get_abi();
	bool rewritten = RSEQ_READ_ONCE(abi->cpu_id_start) != IDS_SENTINEL;

	if (rseq_len_of(reg) == RSEQ_LEGACY_LEN && !rewritten) {
		fprintf(stderr, "%s: rseq() 32-byte check failed: cpu_id_start not "
			"rewritten after a switch\n", what);
		exit(1);
	}
	/* V2 may keep ~0 there: put back what the kernel last wrote. */
	RSEQ_WRITE_ONCE(abi->cpu_id_start, RSEQ_READ_ONCE(abi->cpu_id));
	return rewritten;
}

/*
 * n round trips, 2n switches; the caller is registered as reg already.
 * *ids_kept: whether an rseq() registration's cpu_id_start survived.
 */
static uint64_t loop_switch(long n, enum reg reg, bool *ids_kept)
{
	struct pingpong p = { .reg = reg };
	long warm = n / 4 + 1, i;
	pthread_t thread;
	uint64_t t0 = 0, t = 0;
	char c = 0;

	/*
	 * One more round trip after the window: the partner's exit (and
	 * anything else it does after its last write) stays out of it.
	 */
	p.n = warm + n + 1;
	if (pipe(p.ping) || pipe(p.pong))
		abort();
	if (pthread_create(&thread, NULL, pong_thread, &p))
		abort();
	for (i = 0; i < p.n; i++) {
		if (i == warm) {
			if (rseq_len_of(reg))
				RSEQ_WRITE_ONCE(rseq_get_abi()->cpu_id_start, IDS_SENTINEL);
			t0 = stamp();
		}
		if (i == warm + n)
			t = stamp() - t0;
		if (write(p.ping[1], &c, 1) != 1 || read(p.pong[0], &c, 1) != 1)
			abort();
	}
	*ids_kept = rseq_len_of(reg) && !ids_rewritten("switch", reg);
	pthread_join(thread, NULL);
	close(p.ping[0]);
	close(p.ping[1]);
	close(p.pong[0]);
	close(p.pong[1]);
	return t;
}

static volatile long handled;

static void count_handler(int sig)
{
	handled++;
}

static uint64_t loop_signal(long n)
{
	pid_t pid = getpid(), tid = gettid();
	long warm = n / 4 + 1, i;
	uint64_t t0 = 0;

	for (i = 0; i < warm + n; i++) {
		if (i == warm)
			t0 = stamp();
		syscall(SYS_tgkill, pid, tid, SIGUSR1);
	}
	return stamp() - t0;
}

static uint64_t loop_syscall(long n)
{
	long warm = n / 4 + 1, i;
	uint64_t t0 = 0;

	for (i = 0; i < warm + n; i++) {
		if (i == warm)
			t0 = stamp();
		syscall(SYS_getppid);
	}
	return stamp() - t0;
}

/*
 * The preemption rows (see the top of the file). The partner runs
 * SPIN_BLOCK increments and a branch, over and over, until the count
 * turns negative.
 */
struct spinner {
	long count;
	enum reg reg;
};

static void short_slice(void)
{
	struct sched_attr attr = {
		.size = sizeof(attr),
		.sched_policy = SCHED_OTHER,
		.sched_runtime = SHORT_SLICE,
	};

	if (syscall(SYS_sched_setattr, 0, &attr, 0)) {
		perror("sched_setattr");
		exit(1);
	}
}

static void *spin_partner(void *arg)
{
	struct spinner *s = arg;

	pin_to(bench_cpu);
	short_slice();
	register_as(s->reg);
	asm volatile("1:\n\t"
		     ".rept " RSEQ_STR(SPIN_BLOCK) "\n\t"
		     "incq %0\n\t"
		     ".endr\n\t"
		     "jns 1b"
		     : "+m" (s->count) : : "cc");
	unregister_as(s->reg);
	return NULL;
}

/*
 * The partner's instructions from count c0 to count c1, both positive:
 * the increments, and a branch after each SPIN_BLOCK of them.
 */
static long spin_insns(long c0, long c1)
{
	return c1 - c0 + (c1 - 1) / SPIN_BLOCK - (c0 - 1) / SPIN_BLOCK;
}

/*
 * One window: the second gap in which the partner ran after it had
 * started its loop. Returns what is left of the gap for the kernel's two
 * preemptions (instructions under icount); *preemptions: the gaps in
 * which the partner ran, each a preemption of this thread in user mode.
 */
static uint64_t loop_preempt(enum reg reg, long *preemptions)
{
	struct spinner s = { .reg = reg };
	uint64_t prev = 0, now, iter = UINT64_MAX;
	long c, c_prev, c_now, warm = 1;
	pthread_t thread;
	int64_t kernel;

	short_slice();
	if (pthread_create(&thread, NULL, spin_partner, &s))
		abort();
	/*
	 * With prev 0 the first pass takes the gap branch: it counts a
	 * preemption only if the partner ran since c_prev was read.
	 */
	c_prev = __atomic_load_n(&s.count, __ATOMIC_RELAXED);
	*preemptions = 0;
	for (;;) {
		/*
		 * The count is read before the stamp and once more after a
		 * gap: the pair brackets the gap wherever the interrupt landed.
		 */
		c = __atomic_load_n(&s.count, __ATOMIC_RELAXED);
		now = stamp();
		if (now - prev < GAP_MIN) {
			if (now - prev < iter)
				iter = now - prev;
		} else {
			c_now = __atomic_load_n(&s.count, __ATOMIC_RELAXED);
			if (c_now != c_prev) {
				(*preemptions)++;
				if (c_prev > 0 && !warm--)
					break;
			}
		}
		c_prev = c;
		prev = now;
	}
	kernel = (int64_t)(now - prev - iter) - spin_insns(c_prev, c_now);
	__atomic_store_n(&s.count, LONG_MAX, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	if (kernel <= 0) {
		fprintf(stderr, "preemption: %lld ticks left for the kernel: not QEMU -icount?\n",
			(long long)kernel);
		exit(1);
	}
	return kernel;
}

/*
 * int3 with *post_commit = mask & (address after the commit): mask ~0UL
 * puts the trap inside a sequence, 0 outside one, with the same
 * instructions either way. Inside, the kernel sends the thread to the
 * abort address (RCX) after the handler; outside it resumes after int3.
 * The abort address follows the signature, as in restartable_seq.h.
 * Returns 1 if the kernel aborted the sequence, 2 if step 4 did (an event
 * between reading the counter and re-checking it: no trap was taken).
 */
static inline int trap_rs(unsigned long mask)
{
	unsigned long start = rs_counter();

	asm goto("leaq 4f(%%rip), %%rcx\n\t"
		 "leaq 1f(%%rip), %%rax\n\t"
		 "andq %[mask], %%rax\n\t"
		 "movq %%rax, %[post_commit]\n\t"
		 "cmpq %[start], %[counter]\n\t"
		 "jne 2f\n\t"
		 "int3\n\t"
		 "nop\n\t"
		 "1: movq $0, %[post_commit]\n\t"
		 "jmp 3f\n\t"
		 "2: movq $0, %[post_commit]\n\t"
		 "jmp %l[early]\n\t"
		 ".long " __rs_str(RESTARTABLE_SEQ_ABORT_SIGNATURE) "\n\t"
		 "4: jmp %l[aborted]\n\t"
		 "3:\n\t"
		 : : [post_commit] "m" (rs_self.post_commit),
		     [counter] "m" (rs_self.counter), [start] "r" (start),
		     [mask] "r" (mask)
		 : "rax", "rcx", "memory", "cc" : aborted, early);
	return 0;
aborted:
	return 1;
early:
	return 2;
}

/*
 * The same for rseq(): int3 inside a critical section whose descriptor
 * (written here, version 0, no flags) is published in rseq_cs when mask
 * is ~0UL, or with rseq_cs = 0. The abort handler is preceded by the
 * signature the kernel checks, RSEQ_SIG, and never falls into it.
 */
static inline int trap_rseq(unsigned long mask)
{
	asm goto(".pushsection __rseq_bench_cs, \"aw\"\n\t"
		 ".balign 32\n\t"
		 "5: .long 0, 0\n\t"
		 ".quad 1f, 2f - 1f, 4f\n\t"
		 ".popsection\n\t"
		 "leaq 5b(%%rip), %%rax\n\t"
		 "andq %[mask], %%rax\n\t"
		 "movq %%rax, %%fs:%c[cs_off](%[rseq_offset])\n\t"
		 "1: int3\n\t"
		 "nop\n\t"
		 "2:\n\t"
		 "jmp 3f\n\t"
		 ".long " RSEQ_STR(RSEQ_SIG) "\n\t"
		 "4: jmp %l[aborted]\n\t"
		 "3:\n\t"
		 : : [rseq_offset] "r" (rseq_offset),
		     [cs_off] "i" (offsetof(struct rseq_abi, rseq_cs)),
		     [mask] "r" (mask)
		 : "rax", "memory", "cc" : aborted);
	/* The kernel clears rseq_cs on abort; outside, it was 0. */
	return 0;
aborted:
	return 1;
}

static uint64_t loop_trap(long n, enum reg reg, unsigned long mask)
{
	long warm = n / 4 + 1, i, aborts = 0, before = 0;
	uint64_t t0 = 0;

	for (i = 0; i < warm + n; i++) {
		int ret;

		if (i == warm) {
			before = handled;
			aborts = 0;
			t0 = stamp();
		}
		ret = uses_rs(reg) ? trap_rs(mask) : trap_rseq(mask);
		/* Step 4 caught an event (a tick) before the trap: again */
		if (ret == 2)
			i--;
		else
			aborts += ret;
	}
	t0 = stamp() - t0;
	/* Every iteration trapped, and aborted exactly when inside. */
	if (handled - before != n || aborts != (mask ? n : 0)) {
		fprintf(stderr, "trap check failed: %ld traps, %ld aborts, %ld iterations\n",
			handled - before, aborts, n);
		exit(1);
	}
	return t0;
}

static void sigtrap_handler(int sig)
{
	handled++;
}

/* --- rows ------------------------------------------------------------------ */

enum kind { K_USER, K_SWITCH, K_SIGNAL, K_SYSCALL, K_PREEMPT, K_TRAP };

struct row {
	const char *id, *group, *label;
	enum kind kind;
	enum reg reg;
	uint64_t (*user_loop)(long n);
	unsigned long trap_mask;
	bool skip;
	int n;
	int ids_kept;			/* switch rows: windows where cpu_id_start survived */
	long ops;			/* operations per window */
	char label_buf[64];
	uint64_t ticks[MAX_TRIALS];	/* per window */
	double v[MAX_TRIALS];		/* per operation */
};

/* A kernel-side operation for each of the five registrations. */
#define KERNEL_ROWS(name, group, kind)						\
	{ name "-0", group, "unregistered", kind, REG_NONE },			\
	{ name "-rs", group, "restartable_sequences()", kind, REG_RS },		\
	{ name "-v2", group, "rseq() V2 (optimized)", kind, REG_RSEQ_V2 },	\
	{ name "-32", group, "rseq() 32-byte (legacy)", kind, REG_RSEQ_32 },	\
	{ name "-rs32", group, "restartable_sequences() + rseq() 32-byte",	\
	  kind, REG_RS_RSEQ_32 }

static struct row rows[] = {
	{ "a", "per-CPU add", "restartable_sequences()", K_USER, REG_RS, loop_rs_add },
	{ "b", "per-CPU add", "rseq()", K_USER, REG_RSEQ, loop_rseq_add },
	{ "c", "per-CPU add", "lock add, one shared counter", K_USER, REG_NONE, loop_lock_add },
	{ "d", "per-CPU add", "sched_getcpu() + lock add", K_USER, REG_NONE, loop_getcpu_atomic },
	{ "e", "per-CPU add", "pthread mutex, one counter", K_USER, REG_NONE, loop_mutex },
	{ "f", "per-CPU add", "plain add, per-thread counter", K_USER, REG_NONE, loop_plain },
	{ "g", "list pop+push", "restartable_sequences()", K_USER, REG_RS, loop_rs_list },
	{ "h", "list pop+push", "rseq()", K_USER, REG_RSEQ, loop_rseq_list },
	{ "i", "list pop+push", "pthread mutex", K_USER, REG_NONE, loop_mutex_list },
	{ "j", "user access entry", "range check + LFENCE, store, load", K_USER,
	  REG_NONE, loop_fenced_entry },
	{ "k", "user access entry", "two masked pointers, store, load", K_USER,
	  REG_NONE, loop_masked_entry },
	KERNEL_ROWS("switch", "context switch", K_SWITCH),
	KERNEL_ROWS("signal", "signal round trip", K_SIGNAL),
	KERNEL_ROWS("syscall", "null system call", K_SYSCALL),
	KERNEL_ROWS("preempt", "preemption", K_PREEMPT),
	{ "trap-rs-out", "int3 + SIGTRAP", "restartable_sequences(), outside a sequence",
	  K_TRAP, REG_RS, NULL, 0 },
	{ "trap-rs-in", "int3 + SIGTRAP", "restartable_sequences(), inside: aborted",
	  K_TRAP, REG_RS, NULL, ~0UL },
	{ "trap-rseq-out", "int3 + SIGTRAP", "rseq(), outside a critical section",
	  K_TRAP, REG_RSEQ, NULL, 0 },
	{ "trap-rseq-in", "int3 + SIGTRAP", "rseq(), inside: aborted",
	  K_TRAP, REG_RSEQ, NULL, ~0UL },
};

#define NR_ROWS (sizeof(rows) / sizeof(rows[0]))

static const char *unit(void)
{
	return lane == LANE_ICOUNT ? "instructions" : "ns";
}

/*
 * Under icount the guest's clock is its instruction count, so the cycle
 * of rows keeps a fixed phase against the timer tick, and a row whose
 * windows line up with the tick has it in every window: its most
 * frequent window is then a disturbed one. A pseudo-random pause (up to
 * about a tick) before each row spreads the tick over all windows.
 *
 * The pause depends on the row, the trial and --seed alone, not on which
 * other rows run: the rows that exist on both kernels get the same pauses
 * on both. Which undisturbed pattern a row settles in (how the scheduler
 * interleaves the two threads of a switch or preemption row) still
 * depends on the whole history of the run, which the restartable
 * sequences rows lengthen on the patched kernel only. So scripts/bench
 * also boots the patched kernel with --rows base, which runs exactly the
 * base kernel's rows: the patched-against-base comparison uses those
 * runs, and several seeds per kernel (see scripts/bench-report).
 */
static void shift_phase(const char *id, int trial)
{
	uint32_t h = 2166136261u ^ (uint32_t)(seed * 2654435761u) ^ (uint32_t)trial;
	volatile uint32_t n;

	/* FNV-1a over the row's id, then one LCG step */
	for (; *id; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	h = h * 1103515245 + 12345;
	for (n = (h >> 8) % 300000; n; n--)
		;
}

static void *row_thread(void *arg)
{
	struct row *r = arg;
	long signals = handled, preemptions = 0;
	bool ids_kept = false;
	struct tally t0;
	uint64_t t;
	long ops;

	pin_to(bench_cpu);
	register_as(r->reg);
	take_tally(&t0);
	switch (r->kind) {
	case K_USER:
		t = r->user_loop(user_ops);
		ops = user_ops;
		break;
	case K_SWITCH:
		t = loop_switch(kernel_ops, r->reg, &ids_kept);
		ops = 2 * kernel_ops;
		break;
	case K_SIGNAL:
		t = loop_signal(kernel_ops);
		ops = kernel_ops;
		break;
	case K_SYSCALL:
		t = loop_syscall(kernel_ops);
		ops = kernel_ops;
		break;
	case K_PREEMPT:
		t = loop_preempt(r->reg, &preemptions);
		ops = 2;
		break;
	case K_TRAP:
		t = loop_trap(kernel_ops, r->reg, r->trap_mask);
		ops = kernel_ops;
		break;
	default:
		abort();
	}
	signals = handled - signals;
	if (r->kind == K_SWITCH)
		check_sleeps(r->id, r->reg, &t0, kernel_ops);
	else if (r->kind == K_SIGNAL)
		/* Sent with tgkill(), delivered on its way out: no event. */
		check_events(r->id, r->reg, &t0, 0, 0);
	else
		check_events(r->id, r->reg, &t0, signals + preemptions, signals);
	unregister_as(r->reg);
	r->ids_kept += ids_kept;
	r->ops = ops;
	r->ticks[r->n] = t;
	r->v[r->n++] = (double)t / ops;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The most frequent window count and how many windows had it (the
 * smallest such count on a tie). Under icount a window that nothing
 * disturbed (no timer interrupt, no other background work) repeats
 * exactly, so this is the undisturbed cost.
 */
static uint64_t mode_of(const struct row *r, int *count)
{
	uint64_t sorted[MAX_TRIALS], best = 0;
	int i, run = 0;

	memcpy(sorted, r->ticks, r->n * sizeof(uint64_t));
	qsort(sorted, r->n, sizeof(uint64_t), cmp_u64);
	*count = 0;
	for (i = 0; i < r->n; i++) {
		run = i && sorted[i] == sorted[i - 1] ? run + 1 : 1;
		if (run > *count) {
			*count = run;
			best = sorted[i];
		}
	}
	return best;
}

/* Quantile q of sorted v[0..n-1], linear between ranks. */
static double quantile(const double *v, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)pos;

	if (i >= n - 1)
		return v[n - 1];
	return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
	putchar('"');
}

static void report(struct row *r, const char *kernel)
{
	double sorted[MAX_TRIALS], mode;
	int i, mode_count;

	memcpy(sorted, r->v, r->n * sizeof(double));
	qsort(sorted, r->n, sizeof(double), cmp_double);
	mode = (double)mode_of(r, &mode_count) / r->ops;
	printf("  %-14s %-18s %-44s %10.2f %10.2f %10.2f",
	       r->id, r->group, r->label, sorted[0], quantile(sorted, r->n, 0.5),
	       quantile(sorted, r->n, 0.75) - quantile(sorted, r->n, 0.25));
	if (lane == LANE_ICOUNT)
		printf(" %10.2f %3d%%", mode, 100 * mode_count / r->n);
	printf("\n");
	printf("{\"bench\": 1, \"lane\": \"%s\", \"where\": ",
	       lane == LANE_ICOUNT ? "icount" : "time");
	print_json_string(where);
	printf(", \"kernel\": ");
	print_json_string(kernel);
	printf(", \"restartable_sequences\": %s, \"rows\": \"%s\", \"id\": \"%s\", "
	       "\"group\": ", rs_present ? "true" : "false", base_rows ? "base" : "all",
	       r->id);
	print_json_string(r->group);
	printf(", \"label\": ");
	print_json_string(r->label);
	printf(", \"registration\": \"%s\", \"rseq_len\": %u", reg_names[r->reg],
	       rseq_len_of(r->reg));
	if (uses_rs(r->reg) && !rs_ok)
		printf(", \"note\": \"fast path only: nothing registered\"");
	if (lane == LANE_ICOUNT)
		printf(", \"mode\": %.4f, \"mode_windows\": %d", mode, mode_count);
	printf(", \"unit\": \"%s/op\", \"ops_per_window\": %ld, \"n\": %d, \"min\": %.4f, \"q1\": %.4f, "
	       "\"median\": %.4f, \"q3\": %.4f, \"max\": %.4f, \"samples\": [",
	       unit(), r->ops, r->n, sorted[0], quantile(sorted, r->n, 0.25),
	       quantile(sorted, r->n, 0.5), quantile(sorted, r->n, 0.75),
	       sorted[r->n - 1]);
	for (i = 0; i < r->n; i++)
		printf("%s%.4f", i ? ", " : "", r->v[i]);
	printf("]}\n");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: restartable_seq_bench [--lane icount|time] [--trials N]\n"
		"       [--user-ops N] [--kernel-ops N] [--cpu N] [--only user|kernel]\n"
		"       [--seed N] [--where TEXT] [--rows all|base]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = count_handler };
	unsigned long feature_size;
	bool failed = false;
	struct utsname uts;
	char kernel[400];
	cpu_set_t set;
	unsigned int i;
	int t;

	for (t = 1; t < argc; t++) {
		const char *arg = argv[t], *val = t + 1 < argc ? argv[t + 1] : NULL;

		if (!val)
			usage();
		t++;
		if (!strcmp(arg, "--lane"))
			lane = !strcmp(val, "icount") ? LANE_ICOUNT : LANE_TIME;
		else if (!strcmp(arg, "--trials"))
			trials = atoi(val);
		else if (!strcmp(arg, "--user-ops"))
			user_ops = atol(val);
		else if (!strcmp(arg, "--kernel-ops"))
			kernel_ops = atol(val);
		else if (!strcmp(arg, "--cpu"))
			bench_cpu = atoi(val);
		else if (!strcmp(arg, "--only"))
			only = val;
		else if (!strcmp(arg, "--seed"))
			seed = strtoul(val, NULL, 0);
		else if (!strcmp(arg, "--where"))
			where = val;
		else if (!strcmp(arg, "--rows") && !strcmp(val, "base"))
			base_rows = true;
		else if (!strcmp(arg, "--rows") && !strcmp(val, "all"))
			base_rows = false;
		else
			usage();
	}
	if (trials < 1 || trials > MAX_TRIALS || user_ops < 1 || kernel_ops < 1)
		usage();

	/* Each row registers what it uses and nothing more. */
	if (!getenv("GLIBC_TUNABLES")) {
		setenv("GLIBC_TUNABLES", "glibc.pthread.rseq=0", 1);
		/*
		 * The same addresses in every boot: with address space
		 * randomization the kernel paths of a row (page tables,
		 * hashes of addresses) differ from boot to boot.
		 */
		personality(ADDR_NO_RANDOMIZE);
		execv("/proc/self/exe", argv);
		perror("re-exec");
		return 1;
	}

	if (bench_cpu < 0) {
		if (sched_getaffinity(0, sizeof(set), &set))
			abort();
		for (bench_cpu = 0; !CPU_ISSET(bench_cpu, &set); bench_cpu++)
			;
	}
	pin_to(bench_cpu);
	/*
	 * --rows base: run as the base kernel does, restartable_sequences()
	 * or not, so that the rows both kernels have also share the run's
	 * history (see shift_phase()).
	 */
	rs_present = rs_supported();
	rs_ok = rs_present && !base_rows;
	if (sys_rseq(RSEQ_LEGACY_LEN, 0) || sys_rseq(RSEQ_LEGACY_LEN, RSEQ_ABI_FLAG_UNREGISTER)) {
		fprintf(stderr, "rseq() is not available\n");
		return 4;
	}
	feature_size = getauxval(AT_RSEQ_FEATURE_SIZE);
	if (feature_size > RSEQ_LEGACY_LEN)
		rseq_v2_len = feature_size;
	seed_lists();
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = sigtrap_handler;
	sigaction(SIGTRAP, &sa, NULL);
	uname(&uts);
	snprintf(kernel, sizeof(kernel), "Linux %s %s", uts.release, uts.version);

	for (i = 0; i < NR_ROWS; i++) {
		struct row *r = &rows[i];

		if (r->reg == REG_RSEQ) {
			r->reg = rseq_v2_len ? REG_RSEQ_V2 : REG_RSEQ_32;
			snprintf(r->label_buf, sizeof(r->label_buf), "%s [%s]", r->label,
				 rseq_v2_len ? "V2" : "32-byte");
			r->label = r->label_buf;
		}
		if (only && strcmp(only, r->kind == K_USER ? "user" : "kernel"))
			r->skip = true;
		/* The kernel side of restartable_sequences() needs the kernel. */
		if (r->kind != K_USER && uses_rs(r->reg) && !rs_ok)
			r->skip = true;
		if (r->reg == REG_RSEQ_V2 && !rseq_v2_len)
			r->skip = true;
		/* A partner's instruction is no fixed time. */
		if (r->kind == K_PREEMPT && lane != LANE_ICOUNT)
			r->skip = true;
	}

	printf("restartable_seq_bench: lane %s (%s/op), %s; %s; CPU %d; seed %u; %d trials, "
	       "%ld user / %ld kernel operations per window; restartable_sequences() %s; ",
	       lane == LANE_ICOUNT ? "icount" : "time", unit(), where, kernel,
	       bench_cpu, seed, trials, user_ops, kernel_ops,
	       !rs_present ? "missing (rows a, g: fast path only)" :
	       base_rows ? "available, not used (--rows base: rows a, g: fast path only)" :
	       "available");
	if (rseq_v2_len)
		printf("rseq() V2 with rseq_len %u", rseq_v2_len);
	else
		printf("rseq() without V2 (AT_RSEQ_FEATURE_SIZE %lu): V2 rows skipped",
		       feature_size);
	printf("%s\n", lane == LANE_ICOUNT ? "" : "; preemption rows: icount lane only");
	for (t = 0; t < trials; t++) {
		for (i = 0; i < NR_ROWS; i++) {
			pthread_t thread;

			if (rows[i].skip)
				continue;
			shift_phase(rows[i].id, t);
			if (pthread_create(&thread, NULL, row_thread, &rows[i]))
				abort();
			pthread_join(thread, NULL);
		}
	}
	printf("  %-14s %-18s %-44s %10s %10s %10s%s\n", "row", "group", "", "min",
	       "median", "IQR", lane == LANE_ICOUNT ? "       mode share" : "");
	for (i = 0; i < NR_ROWS; i++)
		if (!rows[i].skip)
			report(&rows[i], kernel);

	/* V2 leaves the IDs alone after a sleep on the same CPU. */
	for (i = 0; i < NR_ROWS; i++) {
		struct row *r = &rows[i];

		if (!r->skip && r->kind == K_SWITCH && r->reg == REG_RSEQ_V2 && !r->ids_kept) {
			fprintf(stderr, "%s: rseq() V2 check failed: cpu_id_start rewritten after "
				"the sleeps of every window, as in the legacy mode\n", r->id);
			failed = true;
		}
	}
	return failed;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * librestartable_bench: the user-space library librestartable against the
 * selftests' hand-written sequences, atomics, a mutex and glibc's malloc.
 * A harness tool: scripts/bench builds it statically against the
 * library's archive and the series' selftests headers, and runs it in the
 * instruction lane's first boot of the patched kernel (QEMU TCG,
 * "-icount shift=0,sleep=off", one vCPU: RDTSC counts guest instructions,
 * user and kernel), after restartable_seq_bench.
 *
 * The library decides its mode once per process, so the program runs
 * itself four times: the first process (no library call at all) measures
 * the rows that do not use the library; one child per library mode
 * (kernel: restartable_sequences(); rseq: RESTARTABLE_MODE=rseq, glibc's
 * rseq() registration; atomic: RESTARTABLE_MODE=atomic) measures the
 * library's rows. glibc registers rseq() in every thread of every process
 * (the library's rseq mode needs it; the hand-written rseq rows use the
 * same registration through rseq.c).
 *
 * Rows (ids "OP/IMPL"):
 *   add       per-CPU add: lib-{kernel,rseq,atomic} (rs_add()), hw-rs
 *             (restartable_seq.h), hw-rseq (rseq.h), lock (lock add on one
 *             shared word), getcpu-lock (sched_getcpu() + lock add on that
 *             CPU's word), mutex
 *   cmpstore  load-compare-store of the thread's CPU's word (read the CPU,
 *             read the word, store word + 1 if unchanged): lib-*
 *             (rs_current_cpu() + rs_cmpstore()), hw-rs, hw-rseq,
 *             getcpu-cas (sched_getcpu() + lock cmpxchg), mutex
 *   list      pop + push on the CPU's list: lib-* (rs_pop() + rs_push()),
 *             hw-rs, hw-rseq, mutex
 *   alloc     an allocation and its free, 32 bytes: lib-*
 *             (rs_pool_alloc() + rs_pool_free()), malloc (glibc, tcache)
 *   cpu, nr_cpus  (lib-*, one thread) rs_current_cpu() and rs_nr_cpus()
 *             alone: what every operation of the library pays before its
 *             sequence (the thread's state, the range check, the mode)
 * each at 1 thread (the most frequent count over --windows windows of
 * --ops operations: an undisturbed window repeats exactly under icount)
 * and at --threads threads on one CPU (each asks for the shortest time
 * slice, 0.1 ms, so that they preempt each other while they run; per
 * window the run with --mt-ops operations per thread minus the same run
 * with none, divided by the operations; the median over --mt-windows
 * windows). "retries" counts the sequences a row saw abort (or fail
 * their compare because another thread changed the word in between).
 *
 *   pc        producer/consumer: 2 producers allocate 64-byte objects and
 *             pass them through a bounded queue (64 slots, a mutex and two
 *             condition variables) to 2 consumers, which check and free
 *             them: lib-* (one pool) and malloc; instructions per object
 *             (--pc-objects per producer, minus the same run with none),
 *             default time slices
 *   stress    (lib-kernel, lib-rseq, lib-atomic) --threads threads on one
 *             CPU, short slices, each allocating bursts of 8 objects from
 *             a pool of 512 and freeing them, --stress-iters bursts each:
 *             no object may be handed out twice (a flag per object, set
 *             by atomic exchange), the pool's statistics must add up
 *             (rs_pool_stats()), and at the end one thread allocates
 *             until ENOMEM and must get every object of the pool exactly
 *             once. Aborts as the kernel saw them: its tracepoints
 *             rseq:restartable_seq_abort and rseq:rseq_ip_fixup, counted
 *             in tracefs during the run, with --trace-aborts 1 only (it
 *             mounts tracefs if need be and changes the tracing state:
 *             for a guest, not for a host).
 *
 * Output: a table, and one JSON object per line starting with
 * '{"libbench":'. Exit status 0, 1 if a check failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/sched/types.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <restartable.h>
#include "librestartable_bench.h"

#define MAX_WINDOWS	1001
#define MAX_THREADS	64
#define SHORT_SLICE	100000	/* ns: the shortest sched_runtime the kernel takes */
#define ALLOC_SIZE	32
#define PC_SIZE		64
#define PC_PRODUCERS	2
#define PC_CONSUMERS	2
#define PC_SLOTS	64
#define STRESS_OBJECTS	512
#define STRESS_BURST	8
#define LIST_NODES	8	/* per CPU list: more than threads */

int bench_icount;
static int bench_cpu = -1;
static int windows = 21;
static long ops = 2000;
static int threads = 4;
static int mt_windows = 5;
static long mt_ops = 20000;
static long pc_objects = 5000;
static int pc_windows = 3;
static long stress_iters = 2000;
static int trace_aborts;		/* --trace-aborts 1: count them in tracefs */
static const char *child_mode;		/* --child: a library mode's process */
static int failures;

/* --- the rows that do not use the library ------------------------------- */

struct word {
	intptr_t v;
} __attribute__((aligned(64)));

static struct word atomic_words[CPU_SETSIZE];
static struct word shared_word;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;

struct node {
	struct node *next;
};

static struct node *locked_head;

static inline void op_lock_add(long *retries)
{
	(void)retries;
	__atomic_fetch_add(&shared_word.v, 1, __ATOMIC_RELAXED);
}

static inline void op_getcpu_lock_add(long *retries)
{
	(void)retries;
	__atomic_fetch_add(&atomic_words[sched_getcpu()].v, 1, __ATOMIC_RELAXED);
}

static inline void op_mutex_add(long *retries)
{
	(void)retries;
	pthread_mutex_lock(&shared_lock);
	shared_word.v++;
	pthread_mutex_unlock(&shared_lock);
}

static inline void op_getcpu_cas(long *retries)
{
	intptr_t v;
	int cpu;

	for (;;) {
		cpu = sched_getcpu();
		v = __atomic_load_n(&atomic_words[cpu].v, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(&atomic_words[cpu].v, &v, v + 1, 0,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			return;
		(*retries)++;
	}
}

static inline void op_mutex_cmpstore(long *retries)
{
	intptr_t v;
	bool done;

	for (;;) {
		v = __atomic_load_n(&shared_word.v, __ATOMIC_RELAXED);
		pthread_mutex_lock(&shared_lock);
		done = shared_word.v == v;
		if (done)
			shared_word.v = v + 1;
		pthread_mutex_unlock(&shared_lock);
		if (done)
			return;
		(*retries)++;
	}
}

static inline void op_mutex_list(long *retries)
{
	struct node *node;

	(void)retries;
	pthread_mutex_lock(&shared_lock);
	node = locked_head;
	locked_head = node->next;
	pthread_mutex_unlock(&shared_lock);
	pthread_mutex_lock(&shared_lock);
	node->next = locked_head;
	locked_head = node;
	pthread_mutex_unlock(&shared_lock);
}

/* The pointer escapes into an asm: the compiler may not drop the pair. */
static inline void op_malloc(long *retries)
{
	void *p = malloc(ALLOC_SIZE);

	(void)retries;
	if (!p)
		abort();
	asm volatile("" : "+r" (p) : : "memory");
	free(p);
}

static void no_init(void)
{
}

BENCH_LOOP(loop_lock_add, op_lock_add)
BENCH_LOOP(loop_getcpu_lock_add, op_getcpu_lock_add)
BENCH_LOOP(loop_mutex_add, op_mutex_add)
BENCH_LOOP(loop_getcpu_cas, op_getcpu_cas)
BENCH_LOOP(loop_mutex_cmpstore, op_mutex_cmpstore)
BENCH_LOOP(loop_mutex_list, op_mutex_list)
BENCH_LOOP(loop_malloc, op_malloc)

static const struct bench_row plain_rows[] = {
	{ "add", "lock", "lock add on one shared word", loop_lock_add, no_init },
	{ "add", "getcpu-lock", "sched_getcpu() + lock add on its word",
	  loop_getcpu_lock_add, no_init },
	{ "add", "mutex", "pthread mutex around one shared word", loop_mutex_add,
	  no_init },
	{ "cmpstore", "getcpu-cas", "sched_getcpu(), load, lock cmpxchg",
	  loop_getcpu_cas, no_init },
	{ "cmpstore", "mutex", "load, then compare and store under a mutex",
	  loop_mutex_cmpstore, no_init },
	{ "list", "mutex", "pop + push under a pthread mutex", loop_mutex_list,
	  no_init },
	{ "alloc", "malloc", "glibc malloc(32) + free() (tcache)", loop_malloc,
	  no_init },
};

/* --- the library's rows ------------------------------------------------- */

static struct rs_percpu_word *lib_add_words;
static struct rs_percpu_word *lib_cmp_words;
static struct rs_percpu_list *lib_lists;
static struct rs_pool *lib_pool;	/* ALLOC_SIZE objects */
static struct rs_pool *pc_pool;		/* PC_SIZE objects */

static inline void op_lib_add(long *retries)
{
	while (rs_add(lib_add_words, RS_CPU_CURRENT, 1, NULL) != RS_DONE)
		(*retries)++;
}

static inline void op_lib_cmpstore(long *retries)
{
	intptr_t v;
	int cpu;

	for (;;) {
		cpu = rs_current_cpu();
		v = __atomic_load_n(&lib_cmp_words[cpu].value, __ATOMIC_RELAXED);
		if (rs_cmpstore(lib_cmp_words, cpu, v, v + 1) == RS_DONE)
			return;
		(*retries)++;
	}
}

static inline void op_lib_list(long *retries)
{
	struct rs_node *node;
	int ret;

	while ((ret = rs_pop(lib_lists, RS_CPU_CURRENT, &node, NULL)) == RS_ABORTED)
		(*retries)++;
	if (ret != RS_DONE)
		abort();	/* every list holds enough nodes */
	while (rs_push(lib_lists, RS_CPU_CURRENT, node, NULL) != RS_DONE)
		(*retries)++;
}

/* As op_malloc(); rs_pool_free()'s result is checked in the stress run. */
static inline void op_lib_alloc(long *retries)
{
	void *p = rs_pool_alloc(lib_pool, ALLOC_SIZE);

	(void)retries;
	if (!p)
		abort();
	asm volatile("" : "+r" (p) : : "memory");
	rs_pool_free(lib_pool, p);
}

static void lib_thread_init(void)
{
	if (rs_thread_register()) {
		fprintf(stderr, "rs_thread_register() failed in mode %s\n",
			rs_mode_name(rs_mode()));
		exit(1);
	}
}

/* What every operation pays before its sequence: the slot, the mode. */
static inline void op_lib_cpu(long *retries)
{
	int cpu = rs_current_cpu();

	(void)retries;
	asm volatile("" : : "r" (cpu));
}

static inline void op_lib_nr_cpus(long *retries)
{
	int nr = rs_nr_cpus();

	(void)retries;
	asm volatile("" : : "r" (nr));
}

BENCH_LOOP(loop_lib_cpu, op_lib_cpu)
BENCH_LOOP(loop_lib_nr_cpus, op_lib_nr_cpus)
BENCH_LOOP(loop_lib_add, op_lib_add)
BENCH_LOOP(loop_lib_cmpstore, op_lib_cmpstore)
BENCH_LOOP(loop_lib_list, op_lib_list)
BENCH_LOOP(loop_lib_alloc, op_lib_alloc)

static char lib_impl[32];

static const struct bench_row lib_rows[] = {
	{ "add", lib_impl, "rs_add()", loop_lib_add, lib_thread_init },
	{ "cmpstore", lib_impl, "rs_current_cpu(), load, rs_cmpstore()",
	  loop_lib_cmpstore, lib_thread_init },
	{ "list", lib_impl, "rs_pop() + rs_push()", loop_lib_list, lib_thread_init },
	{ "alloc", lib_impl, "rs_pool_alloc(32) + rs_pool_free()", loop_lib_alloc,
	  lib_thread_init },
	{ "cpu", lib_impl, "rs_current_cpu() alone (its checks, or the library call)",
	  loop_lib_cpu, lib_thread_init, 1 },
	{ "nr_cpus", lib_impl, "rs_nr_cpus() alone",
	  loop_lib_nr_cpus, lib_thread_init, 1 },
};

static void lib_setup(void)
{
	int nr = rs_nr_cpus(), cpu, i;
	size_t words = nr * sizeof(struct rs_percpu_word);
	size_t lists = nr * sizeof(struct rs_percpu_list);

	lib_add_words = aligned_alloc(64, words);
	lib_cmp_words = aligned_alloc(64, words);
	lib_lists = aligned_alloc(64, lists);
	lib_pool = rs_pool_create(ALLOC_SIZE, 4096);
	pc_pool = rs_pool_create(PC_SIZE, 4096);
	if (!lib_add_words || !lib_cmp_words || !lib_lists || !lib_pool || !pc_pool) {
		perror("lib_setup");
		exit(1);
	}
	memset(lib_add_words, 0, words);
	memset(lib_cmp_words, 0, words);
	memset(lib_lists, 0, lists);
	for (cpu = 0; cpu < nr; cpu++) {
		for (i = 0; i < LIST_NODES; i++) {
			struct rs_node *n = calloc(1, sizeof(*n));

			if (!n)
				abort();
			n->next = lib_lists[cpu].head;
			lib_lists[cpu].head = n;
		}
	}
}

/* --- threads --------------------------------------------------------------- */

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

static long involuntary_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		abort();
	return ru.ru_nivcsw;
}

static void start_thread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	int ret = pthread_create(t, NULL, fn, arg);

	if (ret) {
		fprintf(stderr, "pthread_create: %s\n", strerror(ret));
		exit(1);
	}
}

/* --- measuring ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The most frequent value (the lowest of equally frequent ones) and its count. */
static uint64_t mode_of(uint64_t *v, int n, int *count)
{
	uint64_t best = v[0];
	int i, run = 0, best_run = 0;

	qsort(v, n, sizeof(*v), cmp_u64);
	for (i = 0; i < n; i++) {
		run = i && v[i] == v[i - 1] ? run + 1 : 1;
		if (run > best_run) {
			best_run = run;
			best = v[i];
		}
	}
	*count = best_run;
	return best;
}

static void emit_row(const struct bench_row *r, int nthreads, double figure,
		     double lo, double hi, const char *figure_kind, int nwin,
		     long n, long retries, long switches)
{
	char id[64];

	snprintf(id, sizeof(id), "%s/%s/%d", r->op, r->impl, nthreads);
	printf("%-26s %-52.52s %10.2f %10.2f %10.2f %8ld %8ld\n", id, r->label,
	       figure, lo, hi, retries, switches);
	printf("{\"libbench\": \"row\", \"id\": \"%s\", \"op\": \"%s\", \"impl\": \"%s\", "
	       "\"label\": \"%s\", \"threads\": %d, \"figure\": %.3f, \"kind\": \"%s\", "
	       "\"low\": %.3f, \"high\": %.3f, \"windows\": %d, \"ops_per_thread\": %ld, "
	       "\"retries\": %ld, \"involuntary_switches\": %ld, \"unit\": \"%s\"}\n",
	       id, r->op, r->impl, r->label, nthreads, figure, figure_kind, lo, hi, nwin,
	       n, retries, switches, bench_icount ? "instructions" : "ns");
	fflush(stdout);
}

struct one_arg {
	const struct bench_row *row;
	uint64_t ticks[MAX_WINDOWS];
	long retries;
	long switches;
};

static void *one_thread(void *p)
{
	struct one_arg *a = p;
	long dummy = 0, sw;
	int w;

	pin_to(bench_cpu);
	a->row->thread_init();
	a->row->loop(ops / 4 + 16, 0, &dummy);
	sw = involuntary_switches();
	for (w = 0; w < windows; w++)
		a->ticks[w] = a->row->loop(ops / 8 + 1, ops, &a->retries);
	a->switches = involuntary_switches() - sw;
	return NULL;
}

/* One thread: the most frequent window, per operation. */
static void measure_one(const struct bench_row *r)
{
	static struct one_arg a;
	pthread_t t;
	uint64_t m;
	int count;

	memset(&a, 0, sizeof(a));
	a.row = r;
	start_thread(&t, one_thread, &a);
	pthread_join(t, NULL);
	m = mode_of(a.ticks, windows, &count);
	emit_row(r, 1, (double)m / ops, (double)a.ticks[0] / ops,
		 (double)a.ticks[windows - 1] / ops, "mode", windows, ops, a.retries,
		 a.switches);
}

/*
 * The start of a run: the workers, set up, wait for "go"; the main thread
 * stamps before it says go, once they all wait. (A barrier would let the
 * last worker to arrive, and those it wakes, run before the main thread
 * stamps: on one CPU a short run could end before the stamp.)
 */
struct start_gate {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int ready;
	int go;
};

static void gate_init(struct start_gate *g)
{
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->changed, NULL);
	g->ready = 0;
	g->go = 0;
}

static void gate_wait(struct start_gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->ready++;
	pthread_cond_broadcast(&g->changed);
	while (!g->go)
		pthread_cond_wait(&g->changed, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/* Once nr workers wait: the stamp, then go. */
static uint64_t gate_open(struct start_gate *g, int nr)
{
	uint64_t t0;

	pthread_mutex_lock(&g->lock);
	while (g->ready < nr)
		pthread_cond_wait(&g->changed, &g->lock);
	t0 = bench_stamp();
	g->go = 1;
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
	return t0;
}

static void gate_destroy(struct start_gate *g)
{
	pthread_cond_destroy(&g->changed);
	pthread_mutex_destroy(&g->lock);
}

struct mt_run {
	const struct bench_row *row;
	long n;
	struct start_gate start;
	long retries;
	long switches;
};

static void *mt_thread(void *p)
{
	struct mt_run *m = p;
	long retries = 0, dummy = 0, sw;

	pin_to(bench_cpu);
	short_slice();
	m->row->thread_init();
	m->row->loop(64, 0, &dummy);
	sw = involuntary_switches();
	gate_wait(&m->start);
	m->row->loop(0, m->n, &retries);
	__atomic_fetch_add(&m->retries, retries, __ATOMIC_RELAXED);
	__atomic_fetch_add(&m->switches, involuntary_switches() - sw, __ATOMIC_RELAXED);
	return NULL;
}

/* threads threads on one CPU, n operations each: ticks from start to the last join. */
static uint64_t mt_once(const struct bench_row *r, long n, long *retries, long *switches)
{
	pthread_t t[MAX_THREADS];
	struct mt_run m = { .row = r, .n = n };
	uint64_t t0;
	int i;

	gate_init(&m.start);
	for (i = 0; i < threads; i++)
		start_thread(&t[i], mt_thread, &m);
	t0 = gate_open(&m.start, threads);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	t0 = bench_stamp() - t0;
	gate_destroy(&m.start);
	*retries += m.retries;
	*switches += m.switches;
	return t0;
}

static void measure_mt(const struct bench_row *r)
{
	double per[MAX_WINDOWS];
	long retries = 0, switches = 0, none = 0;
	uint64_t full, empty;
	int w;

	for (w = 0; w < mt_windows; w++) {
		full = mt_once(r, mt_ops, &retries, &switches);
		empty = mt_once(r, 0, &none, &none);
		per[w] = ((double)full - (double)empty) / ((double)threads * mt_ops);
	}
	qsort(per, mt_windows, sizeof(*per), cmp_double);
	emit_row(r, threads, per[mt_windows / 2], per[0], per[mt_windows - 1], "median",
		 mt_windows, mt_ops, retries, switches);
}

static void measure(const struct bench_row *r)
{
	measure_one(r);
	if (threads > 1 && !r->one_thread)
		measure_mt(r);
}

/* --- producer/consumer ------------------------------------------------------ */

struct pc_object {	/* PC_SIZE bytes */
	long producer;
	long seq;
	long check;
	long pad[5];
};

_Static_assert(sizeof(struct pc_object) == PC_SIZE, "pc_object is PC_SIZE bytes");

struct pc_queue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty;
	pthread_cond_t not_full;
	struct pc_object *slot[PC_SLOTS];
	unsigned int head, count;
	long left;		/* objects not yet taken by a consumer */
	long n;			/* per producer */
	struct rs_pool *pool;	/* NULL: malloc */
	struct start_gate start;
	long sum[PC_PRODUCERS];	/* of the seq numbers consumed, per producer */
	long got;
	long bad;
};

struct pc_thread {
	struct pc_queue *q;
	int id;
};

static long pc_check(long producer, long seq)
{
	return (producer + 1) * 0x9e3779b97f4a7c15L ^ seq;
}

static void *pc_producer(void *p)
{
	struct pc_thread *pt = p;
	struct pc_queue *q = pt->q;
	struct pc_object *o;
	long i;

	pin_to(bench_cpu);
	if (q->pool)
		lib_thread_init();
	gate_wait(&q->start);
	for (i = 0; i < q->n; i++) {
		o = q->pool ? rs_pool_alloc(q->pool, sizeof(*o)) : malloc(sizeof(*o));
		if (!o)
			abort();
		o->producer = pt->id;
		o->seq = i;
		o->check = pc_check(pt->id, i);
		pthread_mutex_lock(&q->lock);
		while (q->count == PC_SLOTS)
			pthread_cond_wait(&q->not_full, &q->lock);
		q->slot[(q->head + q->count++) % PC_SLOTS] = o;
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(&q->lock);
	}
	return NULL;
}

static void *pc_consumer(void *p)
{
	struct pc_thread *pt = p;
	struct pc_queue *q = pt->q;
	struct pc_object *o;

	pin_to(bench_cpu);
	if (q->pool)
		lib_thread_init();
	gate_wait(&q->start);
	for (;;) {
		pthread_mutex_lock(&q->lock);
		while (!q->count && q->left)
			pthread_cond_wait(&q->not_empty, &q->lock);
		if (!q->left) {
			pthread_mutex_unlock(&q->lock);
			return NULL;
		}
		o = q->slot[q->head];
		q->head = (q->head + 1) % PC_SLOTS;
		q->count--;
		if (!--q->left)
			pthread_cond_broadcast(&q->not_empty);
		pthread_cond_signal(&q->not_full);
		/* Checked under the lock: the totals need it anyway. */
		if (o->producer < 0 || o->producer >= PC_PRODUCERS ||
		    o->check != pc_check(o->producer, o->seq))
			q->bad++;
		else
			q->sum[o->producer] += o->seq;
		q->got++;
		pthread_mutex_unlock(&q->lock);
		if (q->pool) {
			if (rs_pool_free(q->pool, o))
				__atomic_fetch_add(&q->bad, 1, __ATOMIC_RELAXED);
		} else {
			free(o);
		}
	}
}

/* One run: ticks from the start to the last join; checks the totals. */
static uint64_t pc_once(struct rs_pool *pool, long n, const char *impl)
{
	struct pc_thread pt[PC_PRODUCERS + PC_CONSUMERS];
	pthread_t t[PC_PRODUCERS + PC_CONSUMERS];
	static struct pc_queue q;
	uint64_t t0;
	int i;

	memset(&q, 0, sizeof(q));
	pthread_mutex_init(&q.lock, NULL);
	pthread_cond_init(&q.not_empty, NULL);
	pthread_cond_init(&q.not_full, NULL);
	gate_init(&q.start);
	q.n = n;
	q.left = n * PC_PRODUCERS;
	q.pool = pool;
	for (i = 0; i < PC_PRODUCERS + PC_CONSUMERS; i++) {
		pt[i] = (struct pc_thread){ .q = &q, .id = i % PC_PRODUCERS };
		start_thread(&t[i], i < PC_PRODUCERS ? pc_producer : pc_consumer, &pt[i]);
	}
	t0 = gate_open(&q.start, PC_PRODUCERS + PC_CONSUMERS);
	for (i = 0; i < PC_PRODUCERS + PC_CONSUMERS; i++)
		pthread_join(t[i], NULL);
	t0 = bench_stamp() - t0;
	for (i = 0; i < PC_PRODUCERS; i++)
		if (q.sum[i] != n * (n - 1) / 2)
			q.bad++;
	if (q.bad || q.got != n * PC_PRODUCERS) {
		fprintf(stderr, "pc/%s: %ld of %ld objects arrived, %ld bad\n", impl,
			q.got, n * PC_PRODUCERS, q.bad);
		failures++;
	}
	gate_destroy(&q.start);
	return t0;
}

static void measure_pc(struct rs_pool *pool, const char *impl, const char *label)
{
	const struct bench_row r = { "pc", impl, label, NULL, NULL };
	double per[MAX_WINDOWS];
	uint64_t full, empty;
	struct rs_pool_stats st;
	int w;

	for (w = 0; w < pc_windows; w++) {
		full = pc_once(pool, pc_objects, impl);
		empty = pc_once(pool, 0, impl);
		per[w] = ((double)full - (double)empty) / ((double)PC_PRODUCERS * pc_objects);
	}
	qsort(per, pc_windows, sizeof(*per), cmp_double);
	emit_row(&r, PC_PRODUCERS + PC_CONSUMERS, per[pc_windows / 2], per[0],
		 per[pc_windows - 1], "median", pc_windows, pc_objects, 0, 0);
	if (pool && (rs_pool_stats(pool, &st) || st.allocated)) {
		fprintf(stderr, "pc/%s: pool statistics do not add up after the runs\n", impl);
		failures++;
	}
}

/* --- the kernel's view of aborts: tracefs ---------------------------------- */

static char tracefs[64];
static const char *const abort_events[] = {
	"rseq/restartable_seq_abort", "rseq/rseq_ip_fixup",
};

static int write_file(const char *dir, const char *file, const char *s)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	if (*s && write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -1;
	close(fd);
	return ret;
}

/* Find tracefs (mount it if need be): 0, or -1 if there is none. */
static int trace_find(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	struct stat st;
	char path[128];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/events/rseq", dirs[i]);
		if (!stat(path, &st) ||
		    (!i && !mount("tracefs", dirs[i], "tracefs", 0, NULL) && !stat(path, &st))) {
			snprintf(tracefs, sizeof(tracefs), "%s", dirs[i]);
			return 0;
		}
	}
	return -1;
}

static int trace_start(void)
{
	char file[128];
	unsigned int i;
	int enabled = 0;

	if (!trace_aborts || (!*tracefs && trace_find()))
		return -1;
	write_file(tracefs, "tracing_on", "0");
	write_file(tracefs, "trace", "");
	for (i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "events/%s/enable", abort_events[i]);
		enabled += !write_file(tracefs, file, "1");
	}
	if (!enabled || write_file(tracefs, "tracing_on", "1"))
		return -1;
	return 0;
}

/* Aborts recorded since trace_start() (-1: unknown), and events lost. */
static long trace_stop(long *lost)
{
	char file[128], line[512];
	long aborts = 0, v;
	unsigned int i;
	int cpu;
	FILE *f;

	*lost = 0;
	write_file(tracefs, "tracing_on", "0");
	for (i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "events/%s/enable", abort_events[i]);
		write_file(tracefs, file, "0");
	}
	snprintf(file, sizeof(file), "%s/trace", tracefs);
	f = fopen(file, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "restartable_seq_abort:") || strstr(line, "rseq_ip_fixup:"))
			aborts++;
	fclose(f);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		snprintf(file, sizeof(file), "%s/per_cpu/cpu%d/stats", tracefs, cpu);
		f = fopen(file, "re");
		if (!f)
			break;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "overrun: %ld", &v) == 1)
				*lost += v;
		fclose(f);
	}
	write_file(tracefs, "trace", "");
	return aborts;
}

/* --- the allocator under preemption -------------------------------------------- */

struct stress {
	struct rs_pool *pool;
	void *objects[STRESS_OBJECTS];	/* sorted: the pool's objects */
	uint8_t held[STRESS_OBJECTS];
	struct start_gate start;
	long twice;			/* handed out while held */
	long enomem;
	long free_failed;
	long damaged;
	long switches;
};

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return x < y ? -1 : x > y;
}

static int object_index(struct stress *s, void *p)
{
	void **hit = bsearch(&p, s->objects, STRESS_OBJECTS, sizeof(void *), cmp_ptr);

	return hit ? hit - s->objects : -1;
}

/*
 * Allocate until ENOMEM (one thread, one CPU): the objects, sorted, in
 * objects[]; then free them all. How many there were, or -1 if one came
 * twice or is not a valid pointer.
 */
static long take_all(struct rs_pool *pool, void **objects, long max)
{
	long n = 0, i;
	void *p;

	while (n < max && (p = rs_pool_alloc(pool, ALLOC_SIZE)))
		objects[n++] = p;
	if (n == max && (p = rs_pool_alloc(pool, ALLOC_SIZE))) {
		rs_pool_free(pool, p);
		return max + 1;
	}
	qsort(objects, n, sizeof(void *), cmp_ptr);
	for (i = 1; i < n; i++)
		if (objects[i] == objects[i - 1])
			return -1;
	for (i = 0; i < n; i++)
		if (rs_pool_free(pool, objects[i]))
			return -1;
	return n;
}

static void *stress_thread(void *p)
{
	struct stress *s = p;
	long it, sw, tag = (long)pthread_self();
	void *got[STRESS_BURST];
	int b, idx;

	pin_to(bench_cpu);
	short_slice();
	lib_thread_init();
	sw = involuntary_switches();
	gate_wait(&s->start);
	for (it = 0; it < stress_iters; it++) {
		for (b = 0; b < STRESS_BURST; b++) {
			got[b] = rs_pool_alloc(s->pool, ALLOC_SIZE);
			if (!got[b]) {
				__atomic_fetch_add(&s->enomem, 1, __ATOMIC_RELAXED);
				continue;
			}
			idx = object_index(s, got[b]);
			if (idx < 0 || __atomic_exchange_n(&s->held[idx], 1, __ATOMIC_ACQ_REL))
				__atomic_fetch_add(&s->twice, 1, __ATOMIC_RELAXED);
			((long *)got[b])[1] = tag ^ it;
		}
		for (b = 0; b < STRESS_BURST; b++) {
			if (!got[b])
				continue;
			if (((long *)got[b])[1] != (tag ^ it))
				__atomic_fetch_add(&s->damaged, 1, __ATOMIC_RELAXED);
			idx = object_index(s, got[b]);
			if (idx >= 0)
				__atomic_store_n(&s->held[idx], 0, __ATOMIC_RELEASE);
			if (rs_pool_free(s->pool, got[b]))
				__atomic_fetch_add(&s->free_failed, 1, __ATOMIC_RELAXED);
		}
	}
	__atomic_fetch_add(&s->switches, involuntary_switches() - sw, __ATOMIC_RELAXED);
	return NULL;
}

static void run_stress(const char *impl)
{
	static struct stress s;
	void *after[STRESS_OBJECTS + 1];
	pthread_t t[MAX_THREADS];
	struct rs_pool_stats st;
	long before, end, aborts, lost = 0, pairs;
	int i, stats_ok, same, traced;
	uint64_t t0;

	memset(&s, 0, sizeof(s));
	s.pool = rs_pool_create(ALLOC_SIZE, STRESS_OBJECTS);
	if (!s.pool) {
		perror("rs_pool_create");
		exit(1);
	}
	lib_thread_init();
	before = take_all(s.pool, s.objects, STRESS_OBJECTS);
	gate_init(&s.start);
	for (i = 0; i < threads; i++)
		start_thread(&t[i], stress_thread, &s);
	traced = !trace_start();
	t0 = gate_open(&s.start, threads);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	t0 = bench_stamp() - t0;
	aborts = traced ? trace_stop(&lost) : -1;
	gate_destroy(&s.start);
	stats_ok = !rs_pool_stats(s.pool, &st) && !st.allocated &&
		   st.shared_free + st.percpu_free == STRESS_OBJECTS;
	end = take_all(s.pool, after, STRESS_OBJECTS + 1);
	same = end == STRESS_OBJECTS && !memcmp(after, s.objects, sizeof(s.objects));
	pairs = (long)threads * stress_iters * STRESS_BURST - s.enomem;
	printf("stress/%s: %d threads, %ld pairs, %ld involuntary switches, "
	       "objects %ld before, %ld after (%s), handed out twice %ld, damaged %ld, "
	       "ENOMEM %ld, free failed %ld, statistics %s, aborts (kernel) %ld%s\n",
	       impl, threads, pairs, s.switches, before, end,
	       same ? "the same objects" : "NOT the same objects", s.twice, s.damaged,
	       s.enomem, s.free_failed, stats_ok ? "add up" : "DO NOT add up", aborts,
	       lost ? " (trace lost events)" : "");
	printf("{\"libbench\": \"stress\", \"id\": \"stress/%s\", \"impl\": \"%s\", "
	       "\"threads\": %d, \"pairs\": %ld, \"objects\": %d, \"before\": %ld, "
	       "\"after\": %ld, \"same_objects\": %s, \"handed_out_twice\": %ld, "
	       "\"damaged\": %ld, \"enomem\": %ld, \"free_failed\": %ld, \"stats_ok\": %s, "
	       "\"involuntary_switches\": %ld, \"kernel_aborts\": %ld, \"trace_lost\": %ld, "
	       "\"ticks_per_pair\": %.2f}\n",
	       impl, impl, threads, pairs, STRESS_OBJECTS, before, end,
	       same ? "true" : "false", s.twice, s.damaged, s.enomem, s.free_failed,
	       stats_ok ? "true" : "false", s.switches, aborts, lost,
	       pairs ? (double)t0 / pairs : 0.0);
	fflush(stdout);
	if (before != STRESS_OBJECTS || !same || s.twice || s.damaged || s.enomem ||
	    s.free_failed || !stats_ok)
		failures++;
	rs_pool_destroy(s.pool);
}

/* --- processes ------------------------------------------------------------------ */

static const char *const lib_modes[] = { "kernel", "rseq", "atomic" };

static void run_library_child(void)
{
	const char *got;
	unsigned int i;

	lib_thread_init();
	got = rs_mode_name(rs_mode());
	if (strcmp(got, child_mode)) {
		/* No restartable_sequences() (the host): the mode is another's. */
		printf("# library mode %s asked for, %s given: no rows\n", child_mode, got);
		printf("{\"libbench\": \"mode\", \"asked\": \"%s\", \"got\": \"%s\"}\n",
		       child_mode, got);
		return;
	}
	snprintf(lib_impl, sizeof(lib_impl), "lib-%s", got);
	lib_setup();
	for (i = 0; i < sizeof(lib_rows) / sizeof(lib_rows[0]); i++)
		measure(&lib_rows[i]);
	measure_pc(pc_pool, lib_impl, "producer/consumer, rs_pool_alloc/free, per object");
	run_stress(lib_impl);
}

static int spawn_child(char **argv, const char *mode)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid) {
		if (strcmp(mode, "kernel"))
			setenv("RESTARTABLE_MODE", mode, 1);
		else
			unsetenv("RESTARTABLE_MODE");
		setenv("LIBBENCH_CHILD", mode, 1);
		execv("/proc/self/exe", argv);
		perror("execv");
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "library mode %s: child failed (status 0x%x)\n", mode, status);
		return 1;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: librestartable_bench [--lane icount|time] [--cpu N] "
		"[--windows N] [--ops N] [--threads N] [--mt-windows N] [--mt-ops N] "
		"[--pc-objects N] [--pc-windows N] [--stress-iters N] "
		"[--trace-aborts 0|1]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct utsname u;
	cpu_set_t set;
	unsigned int i;
	int a, hw;

	for (a = 1; a < argc; a++) {
		const char *arg = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;

		if (!val)
			usage();
		a++;
		if (!strcmp(arg, "--lane"))
			bench_icount = !strcmp(val, "icount");
		else if (!strcmp(arg, "--cpu"))
			bench_cpu = atoi(val);
		else if (!strcmp(arg, "--windows"))
			windows = atoi(val);
		else if (!strcmp(arg, "--ops"))
			ops = atol(val);
		else if (!strcmp(arg, "--threads"))
			threads = atoi(val);
		else if (!strcmp(arg, "--mt-windows"))
			mt_windows = atoi(val);
		else if (!strcmp(arg, "--mt-ops"))
			mt_ops = atol(val);
		else if (!strcmp(arg, "--pc-objects"))
			pc_objects = atol(val);
		else if (!strcmp(arg, "--pc-windows"))
			pc_windows = atoi(val);
		else if (!strcmp(arg, "--stress-iters"))
			stress_iters = atol(val);
		else if (!strcmp(arg, "--trace-aborts"))
			trace_aborts = atoi(val);
		else
			usage();
	}
	if (windows < 1 || windows > MAX_WINDOWS || ops < 1 || threads < 1 ||
	    threads > MAX_THREADS || mt_windows < 1 || mt_windows > MAX_WINDOWS ||
	    mt_ops < 1 || pc_objects < 1 || pc_windows < 1 || pc_windows > MAX_WINDOWS ||
	    stress_iters < 1)
		usage();
	child_mode = getenv("LIBBENCH_CHILD");

	/* The same addresses in every run (as restartable_seq_bench). */
	if (!child_mode && !getenv("LIBBENCH_EXEC")) {
		setenv("LIBBENCH_EXEC", "1", 1);
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

	if (child_mode) {
		run_library_child();
		return failures ? 1 : 0;
	}

	uname(&u);
	hw = hw_setup();
	printf("librestartable_bench: kernel %s %s, lane %s, CPU %d, restartable_sequences() %s\n",
	       u.release, u.version, bench_icount ? "icount" : "time", bench_cpu,
	       hw ? "present" : "missing");
	printf("{\"libbench\": \"header\", \"kernel\": \"%s\", \"lane\": \"%s\", "
	       "\"restartable_sequences\": %s, \"threads\": %d}\n", u.release,
	       bench_icount ? "icount" : "time", hw ? "true" : "false", threads);
	printf("%-26s %-52s %10s %10s %10s %8s %8s\n", "row (op/impl/threads)", "operation",
	       bench_icount ? "instr/op" : "ns/op", "low", "high", "retries", "inv.sw");
	locked_head = calloc(LIST_NODES, sizeof(struct node));
	if (!locked_head)
		abort();
	for (a = 0; a < LIST_NODES - 1; a++)
		locked_head[a].next = &locked_head[a + 1];

	for (i = 0; i < (unsigned int)hw_nr_rows; i++)
		if (hw || strcmp(hw_rows[i].impl, "hw-rs"))
			measure(&hw_rows[i]);
	for (i = 0; i < sizeof(plain_rows) / sizeof(plain_rows[0]); i++)
		measure(&plain_rows[i]);
	measure_pc(NULL, "malloc", "producer/consumer, glibc malloc/free, per object");
	for (i = 0; i < 3; i++)
		failures += spawn_child(argv, lib_modes[i]);
	if (failures)
		fprintf(stderr, "librestartable_bench: %d check(s) failed\n", failures);
	return failures ? 1 : 0;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every operation stays exact under a storm of signals (whose handler runs
 * operations on the same data), affinity churn and thread churn, in the
 * mode the process gets. Usage: t_ops [seconds [--fake-kernel]]; with
 * the stand-in kernel of fake_kernel.c, whose only events are the signals,
 * one worker at a time runs kernel-mode sequences, and some must abort.
 *
 * Each worker repeats: an add on its CPU and one on a CPU it picks; an
 * increment by load-compare-store; a pop and a push of a node; an append
 * to a per-CPU log by compare-then-two-stores; an append of a record to a
 * per-CPU ring by memcpy-then-commit; an exchange of the object it holds
 * for the one in its CPU's cache. At the end every total must match the
 * successes counted, every node and object must be in exactly one place,
 * and the newest log and ring entries must be the ones their commits
 * published (all but the oldest, whose slot the stores of an aborted
 * attempt at the next entry may have overwritten).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "restartable.h"
#include "check.h"
#include "fake_kernel.h"

#define WORKERS 4
#define ITERATIONS 3000		/* per worker thread, before it exits */
#define NODES 64
#define LOG_LEN 256

struct test_node {
	struct rs_node node;	/* first: the lists link these */
	atomic_int owner;	/* worker slot + 1 holding it, 0 on a list */
};

struct cache_object {
	atomic_int holder;	/* worker slot, -1 in a cache */
} __attribute__((aligned(64)));

struct record {
	intptr_t index;
	unsigned char fill[56];	/* every byte index & 0xff */
};

static int nr_cpus;
static struct rs_percpu_word *add_words, *cas_words, *log_words, *ring_words;
static struct rs_percpu_list *lists;
static struct rs_percpu_cache *cache;
static struct test_node nodes[NODES];
static struct cache_object *objects;
static intptr_t (*logs)[LOG_LEN];
static struct record (*rings)[LOG_LEN];
static struct cache_object *held[WORKERS];

static atomic_long adds, handler_adds, cas_ops, log_ops, ring_ops;
static atomic_int tids[WORKERS];
static atomic_int stop;
static int workers = WORKERS;	/* one with the stand-in kernel */

static void *zalloc(size_t size)
{
	void *p = aligned_alloc(64, (size + 63) & ~(size_t)63);

	REQUIRE(p, "out of memory");
	memset(p, 0, size);
	return p;
}

/* An increment by load-compare-store: 1 if done. */
static int cmpstore_increment(void)
{
	intptr_t v;
	int cpu, r;

	do {
		cpu = rs_current_cpu();
		v = __atomic_load_n(&cas_words[cpu].value, __ATOMIC_RELAXED);
		r = rs_cmpstore(cas_words, cpu, v, v + 1);
	} while (r == RS_ABORTED || r == RS_COMPARE_FAILED);
	CHECK(r == RS_DONE, "cmpstore: %d", r);
	return r == RS_DONE;
}

/* The handler changes the words the interrupted code may be changing. */
static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	if (RETRY(rs_add(add_words, RS_CPU_CURRENT, 1, NULL)) == RS_DONE)
		handler_adds++;
	cas_ops += cmpstore_increment();
	errno = saved;
}

static void do_cmpstore(void)
{
	cas_ops += cmpstore_increment();
}

static void do_pop_push(int slot)
{
	struct rs_node *node;
	struct test_node *tn;
	int expected = 0;

	if (RETRY(rs_pop(lists, RS_CPU_CURRENT, &node, NULL)) != RS_DONE)
		return;		/* this CPU's list is empty */
	tn = (struct test_node *)node;
	CHECK(atomic_compare_exchange_strong(&tn->owner, &expected, slot + 1),
	      "node %td popped twice (held by %d)", tn - nodes, expected);
	atomic_store(&tn->owner, 0);
	CHECK(RETRY(rs_push(lists, RS_CPU_CURRENT, node, NULL)) == RS_DONE, "push");
}

static void do_log(void)
{
	intptr_t i;
	int cpu, r;

	do {
		cpu = rs_current_cpu();
		i = __atomic_load_n(&log_words[cpu].value, __ATOMIC_RELAXED);
		r = rs_cmp_store2(log_words, cpu, i, &logs[cpu][i % LOG_LEN], i,
				  i + 1);
	} while (r == RS_ABORTED || r == RS_COMPARE_FAILED);
	CHECK(r == RS_DONE, "cmp_store2: %d", r);
	log_ops++;
}

static void do_ring(void)
{
	struct record rec;
	intptr_t i;
	int cpu, r;

	do {
		cpu = rs_current_cpu();
		i = __atomic_load_n(&ring_words[cpu].value, __ATOMIC_RELAXED);
		rec.index = i;
		memset(rec.fill, i & 0xff, sizeof(rec.fill));
		r = rs_memcpy_commit(ring_words, cpu, i, &rings[cpu][i % LOG_LEN],
				     &rec, sizeof(rec), i + 1);
	} while (r == RS_ABORTED || r == RS_COMPARE_FAILED);
	CHECK(r == RS_DONE, "memcpy_commit: %d", r);
	ring_ops++;
}

/* Swap the object the worker holds with the one its CPU's cache holds. */
static void do_cache_swap(int slot)
{
	struct rs_cache_token token;
	struct cache_object *mine = held[slot], *cached;
	void *ptr;
	int r = RS_ABORTED, holder;

	do {
		if (RETRY(rs_cache_get(cache, RS_CPU_CURRENT, &ptr, &token)) != RS_DONE)
			continue;
		atomic_store(&mine->holder, -1);
		r = rs_cache_replace(&token, mine);
		if (r != RS_DONE)
			atomic_store(&mine->holder, slot);
	} while (r != RS_DONE);
	cached = ptr;
	holder = atomic_exchange(&cached->holder, slot);
	CHECK(holder == -1, "cached object %td also held by %d", cached - objects,
	      holder);
	held[slot] = cached;
}

static void *worker(void *arg)
{
	int slot = (int)(intptr_t)arg, i;

	CHECK(rs_thread_register() == 0, "rs_thread_register");
	atomic_store(&tids[slot], (int)syscall(SYS_gettid));
	for (i = 0; i < ITERATIONS && !atomic_load(&stop); i++) {
		CHECK(RETRY(rs_add(add_words, RS_CPU_CURRENT, 1, NULL)) == RS_DONE, "add");
		adds++;
		/*
		 * And on a CPU of our choice: sequences abort unless the thread
		 * runs there; atomic mode adds from anywhere, so the slot sees
		 * contention from every CPU.
		 */
		if (rs_add(add_words, i % nr_cpus, 1, NULL) == RS_DONE)
			adds++;
		do_cmpstore();
		do_pop_push(slot);
		do_log();
		do_ring();
		do_cache_swap(slot);
	}
	atomic_store(&tids[slot], 0);
	return NULL;
}

/* Signals to random workers, every few microseconds. */
static void *signaller(void *arg)
{
	unsigned int rng = 1;
	int tid;

	(void)arg;
	while (!atomic_load(&stop)) {
		tid = atomic_load(&tids[rand_r(&rng) % workers]);
		if (tid)
			syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
		usleep(20);
	}
	return NULL;
}

/* Move random workers to random CPUs, or let them run anywhere. */
static void *mover(void *arg)
{
	unsigned int rng = 2;
	cpu_set_t set;
	int tid, cpu;

	(void)arg;
	while (!atomic_load(&stop)) {
		tid = atomic_load(&tids[rand_r(&rng) % workers]);
		CPU_ZERO(&set);
		if (rand_r(&rng) % 4 == 0) {
			for (cpu = 0; cpu < nr_cpus && cpu < CPU_SETSIZE; cpu++)
				CPU_SET(cpu, &set);
		} else {
			CPU_SET(rand_r(&rng) % nr_cpus, &set);
		}
		if (tid)
			sched_setaffinity(tid, sizeof(set), &set);
		usleep(200);
	}
	return NULL;
}

static void check_totals(void)
{
	long add_sum = 0, cas_sum = 0, log_sum = 0, ring_sum = 0;
	int cpu, n;
	intptr_t i, j;

	for (cpu = 0; cpu < nr_cpus; cpu++) {
		add_sum += add_words[cpu].value;
		cas_sum += cas_words[cpu].value;
		log_sum += log_words[cpu].value;
		ring_sum += ring_words[cpu].value;
		/*
		 * The newest LOG_LEN - 1 entries: the slot of the next one (and
		 * of the oldest) may hold the stores of an aborted attempt.
		 */
		i = log_words[cpu].value;
		for (j = i >= LOG_LEN ? i - LOG_LEN + 1 : 0; j < i; j++)
			CHECK(logs[cpu][j % LOG_LEN] == j,
			      "log of CPU %d: entry %td holds %td", cpu, j,
			      logs[cpu][j % LOG_LEN]);
		i = ring_words[cpu].value;
		for (j = i >= LOG_LEN ? i - LOG_LEN + 1 : 0; j < i; j++) {
			struct record *rec = &rings[cpu][j % LOG_LEN];

			CHECK(rec->index == j && rec->fill[0] == (j & 0xff) &&
			      !memcmp(rec->fill, rec->fill + 1, sizeof(rec->fill) - 1),
			      "ring of CPU %d: record %td is torn", cpu, j);
		}
	}
	CHECK(add_sum == adds + handler_adds, "adds: %ld in the words, %ld done",
	      add_sum, (long)(adds + handler_adds));
	CHECK(cas_sum == cas_ops, "cmpstore: %ld, %ld done", cas_sum, (long)cas_ops);
	CHECK(log_sum == log_ops, "cmp_store2: %ld, %ld done", log_sum, (long)log_ops);
	CHECK(ring_sum == ring_ops, "memcpy_commit: %ld, %ld done", ring_sum,
	      (long)ring_ops);
	fprintf(stderr, "# %ld adds (%ld in handlers), %ld cmpstores, %ld logs, %ld records\n",
		add_sum, (long)handler_adds, cas_sum, log_sum, ring_sum);

	/* Every node on exactly one list. */
	for (cpu = 0, n = 0; cpu < nr_cpus; cpu++) {
		struct rs_node *node;

		for (node = lists[cpu].head; node && n <= NODES; node = node->next, n++) {
			struct test_node *tn = (struct test_node *)node;

			CHECK(atomic_fetch_add(&tn->owner, 1) == 0,
			      "node %td listed twice", tn - nodes);
		}
	}
	CHECK(n == NODES, "%d nodes listed, %d exist", n, NODES);

	/* Every object in exactly one cache or one worker's hands. */
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		struct cache_object *o = (void *)(uintptr_t)(cache[cpu].word &
							     ((1ULL << 48) - 1));

		CHECK(o && atomic_exchange(&o->holder, -2) == -1,
		      "cache of CPU %d holds a bad object", cpu);
	}
	for (n = 0; n < WORKERS; n++)
		CHECK(atomic_exchange(&held[n]->holder, -2) == n,
		      "worker %d holds a bad object", n);
}

/*
 * With the stand-in kernel, its events are the signals: one worker at a
 * time, on CPU 0 like the whole process; the signaller runs on another
 * CPU, and nobody moves threads.
 */
static void use_fake_kernel(void)
{
	REQUIRE(!fake_kernel_setup(SIGUSR1, on_signal), "fake_kernel_setup");
	workers = 1;
}

static void *fake_kernel_signaller(void *arg)
{
	fake_kernel_leave_cpu0();
	return signaller(arg);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3;
	int fake = argc > 2 && !strcmp(argv[2], "--fake-kernel");
	pthread_t threads[WORKERS], sig_thread, move_thread;
	struct timespec t0, now;
	int cpu, i, finished[WORKERS] = { 0 }, left;

	if (fake)
		use_fake_kernel();
	else
		signal(SIGUSR1, on_signal);
	left = workers;
	nr_cpus = rs_nr_cpus();
	fprintf(stderr, "# mode %s, %d CPUs, %.1f s\n", rs_mode_name(rs_mode()),
		nr_cpus, seconds);
	add_words = zalloc(nr_cpus * sizeof(*add_words));
	cas_words = zalloc(nr_cpus * sizeof(*cas_words));
	log_words = zalloc(nr_cpus * sizeof(*log_words));
	ring_words = zalloc(nr_cpus * sizeof(*ring_words));
	lists = zalloc(nr_cpus * sizeof(*lists));
	cache = zalloc(nr_cpus * sizeof(*cache));
	logs = zalloc(nr_cpus * sizeof(*logs));
	rings = zalloc(nr_cpus * sizeof(*rings));
	objects = zalloc((nr_cpus + WORKERS) * sizeof(*objects));

	/* Nodes spread over the lists, objects over the caches and workers. */
	for (i = 0; i < NODES; i++) {
		nodes[i].node.next = lists[i % nr_cpus].head;
		lists[i % nr_cpus].head = &nodes[i].node;
	}
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		objects[cpu].holder = -1;
		cache[cpu].word = (uintptr_t)&objects[cpu];
	}
	for (i = 0; i < WORKERS; i++) {
		held[i] = &objects[nr_cpus + i];
		held[i]->holder = i;
	}

	REQUIRE(rs_thread_register() == 0, "rs_thread_register");
	pthread_create(&sig_thread, NULL, fake ? fake_kernel_signaller : signaller,
		       NULL);
	if (!fake)
		pthread_create(&move_thread, NULL, mover, NULL);

	/* Thread churn: a worker that finished its iterations is replaced. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < workers; i++)
		pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i);
	while (left) {
		for (i = 0; i < workers; i++) {
			if (finished[i])
				continue;
			pthread_join(threads[i], NULL);
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec + (now.tv_nsec - t0.tv_nsec) / 1e9 < seconds) {
				pthread_create(&threads[i], NULL, worker,
					       (void *)(intptr_t)i);
			} else {
				finished[i] = 1;
				left--;
			}
		}
	}
	atomic_store(&stop, 1);
	pthread_join(sig_thread, NULL);
	if (!fake)
		pthread_join(move_thread, NULL);
	check_totals();
	if (fake) {
		fprintf(stderr, "# %ld sequences aborted by events\n",
			fake_kernel_aborts());
		CHECK(fake_kernel_aborts() > 0, "no event aborted a sequence");
	}
	return check_result();
}

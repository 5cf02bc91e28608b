// SPDX-License-Identifier: GPL-2.0
/*
 * Soak test for restartable_sequences(): restartable_seq_stress [SECONDS]
 *
 * Worker threads (four per CPU, replaced as they exit) mix every per-CPU
 * operation of restartable_seq.h, some with a delay loop inside the
 * sequence. Around them: a storm of timer signals whose handler runs
 * sequences too, a thread that moves workers between CPUs, a thread that
 * forks children which run sequences and execve, and a thread that maps
 * and unmaps memory. Once a second everything pauses and the invariants
 * are checked: the per-CPU counters add up to the increments the threads
 * committed, and every list node is on exactly one list, once.
 *
 * Prints operations, aborts, signals, migrations, forks and the updates
 * lost or duplicated; exits 1 if any invariant broke.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/compiler.h>

/* A delay loop inside every sequence, run rs_inject_spins times. */
static __thread long rs_inject_spins;
#if defined(__x86_64__)
#define RS_INJECT_ASM							\
	"movq %[inject], %%r11\n\t"					\
	"testq %%r11, %%r11\n\t"					\
	"jz 38f\n\t"							\
	"37: decq %%r11\n\t"						\
	"jnz 37b\n\t"							\
	"38:\n\t"
#elif defined(__aarch64__)
#define RS_INJECT_ASM							\
	"ldr x11, %[inject]\n\t"					\
	"cbz x11, 38f\n\t"						\
	"37: subs x11, x11, #1\n\t"					\
	"b.ne 37b\n\t"							\
	"38:\n\t"
#endif
#define RS_INJECT_DATA	rs_inject_spins

#include "restartable_seq.h"

#define MAX_WORKERS	64
#define NODES_PER_CPU	32

static int nr_cpus, nr_workers;
static struct rs_percpu_word counters[CPU_SETSIZE];
static struct rs_percpu_word words[CPU_SETSIZE];
static struct rs_percpu_list lists[CPU_SETSIZE];
static struct rs_node *nodes;
static int nr_nodes;

/* Committed updates, counted by whoever committed them, as they go. */
static long committed_adds, committed_words;
static long operations, aborts, signals, moves, forks, exec_failures;

static int stop, pause_request;
static long paused;
static pid_t worker_tid[MAX_WORKERS];

static void count(long *what, long n)
{
	__atomic_fetch_add(what, n, __ATOMIC_RELAXED);
}

/* Workers park here between operations, with no signal handler running. */
static void maybe_pause(void)
{
	sigset_t set;

	if (!__atomic_load_n(&pause_request, __ATOMIC_ACQUIRE))
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	__atomic_fetch_add(&paused, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&pause_request, __ATOMIC_ACQUIRE))
		usleep(100);
	__atomic_fetch_add(&paused, -1, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

static void storm_handler(int sig)
{
	long spins = rs_inject_spins;
	int saved_errno = errno;

	rs_inject_spins = 0;
	while (rs_percpu_add(counters, 1) != RS_OK)
		;
	rs_inject_spins = spins;
	count(&committed_adds, 1);
	count(&signals, 1);
	errno = saved_errno;
}

static unsigned int next_random(unsigned int *state)
{
	*state = *state * 1103515245 + 12345;
	return *state >> 16;
}

static void one_operation(unsigned int *seed, long *my_aborts)
{
	unsigned int r = next_random(seed), cpu;
	struct rs_node *node;
	int ret;

	rs_inject_spins = (r & 7) == 0 ? 2000 : 0;

	switch (r % 3) {
	case 0:
		while (rs_percpu_add(counters, 1) != RS_OK)
			(*my_aborts)++;
		count(&committed_adds, 1);
		break;
	case 1:
		while ((ret = rs_percpu_pop(lists, &node)) == RS_ABORT)
			(*my_aborts)++;
		if (ret != RS_OK)
			break;
		while (rs_percpu_push(lists, node) != RS_OK)
			(*my_aborts)++;
		break;
	case 2:
		/* A word that only ever counts up, by compare-and-store. */
		do {
			intptr_t old;

			cpu = rs_cpu();
			old = READ_ONCE(words[cpu].v);
			ret = rs_percpu_cmpstore(words, cpu, old, old + 1);
			if (ret != RS_OK)
				(*my_aborts)++;
		} while (ret != RS_OK);
		count(&committed_words, 1);
		break;
	}
}

static void *worker(void *arg)
{
	long slot = (intptr_t)arg, my_aborts = 0, i;
	unsigned int seed = slot * 7919 + time(NULL);
	sigset_t set;

	if (rs_register())
		abort();
	WRITE_ONCE(worker_tid[slot], syscall(SYS_gettid));
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	/* Live for a while, then make room for a new thread. */
	for (i = 0; i < 20000 && !READ_ONCE(stop); i++) {
		maybe_pause();
		one_operation(&seed, &my_aborts);
	}
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	WRITE_ONCE(worker_tid[slot], 0);
	count(&aborts, my_aborts);
	count(&operations, i);
	return NULL;
}

static void *worker_slot(void *arg)
{
	while (!READ_ONCE(stop)) {
		pthread_t t;

		if (pthread_create(&t, NULL, worker, arg))
			abort();
		pthread_join(t, NULL);
	}
	return NULL;
}

static void *mover(void *arg)
{
	unsigned int seed = 42;

	while (!READ_ONCE(stop)) {
		pid_t tid = READ_ONCE(worker_tid[next_random(&seed) % nr_workers]);
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(next_random(&seed) % nr_cpus, &set);
		if (tid && !sched_setaffinity(tid, sizeof(set), &set))
			count(&moves, 1);
		usleep(500);
	}
	return NULL;
}

static const char *self_path = "/proc/self/exe";

static void *forker(void *arg)
{
	/* Registered, so that the children inherit a registration. */
	if (rs_register())
		abort();
	while (!READ_ONCE(stop)) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			/* The registration came along: use it, then execve. */
			int i;

			if (rs_register() != -EBUSY)
				_exit(10);
			for (i = 0; i < 1000; i++)
				while (rs_percpu_add(counters, 1) != RS_OK)
					;
			execl(self_path, "restartable_seq_stress", "--exec-child", (char *)NULL);
			_exit(11);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			count(&exec_failures, 1);
		count(&forks, 1);
		usleep(20000);
	}
	return NULL;
}

static void *mapper(void *arg)
{
	while (!READ_ONCE(stop)) {
		size_t len = 16 * getpagesize();
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED) {
			memset(p, 1, len);
			munmap(p, len);
		}
	}
	return NULL;
}

static void seed_lists(void)
{
	int i;

	nr_nodes = nr_cpus * NODES_PER_CPU;
	nodes = calloc(nr_nodes, sizeof(*nodes));
	for (i = 0; i < nr_nodes; i++) {
		struct rs_percpu_list *list = &lists[i % nr_cpus];

		nodes[i].data = i;
		nodes[i].next = list->head;
		list->head = &nodes[i];
	}
}

/* The number of nodes lost or duplicated (0 when all is well). */
static long check_lists(void)
{
	char *seen = calloc(nr_nodes, 1);
	long found = 0, bad = 0;
	int cpu;

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		struct rs_node *n;

		for (n = lists[cpu].head; n; n = n->next) {
			if (n < nodes || n >= nodes + nr_nodes || found > nr_nodes) {
				bad++;
				break;
			}
			if (seen[n->data]++)
				bad++;	/* duplicated */
			found++;
		}
	}
	bad += labs(nr_nodes - found);	/* lost or duplicated */
	free(seen);
	return bad;
}

static intptr_t sum(struct rs_percpu_word *w)
{
	intptr_t s = 0;
	int cpu;

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		s += w[cpu].v;
	return s;
}

int main(int argc, char **argv)
{
	struct itimerval storm = { { 0, 500 }, { 0, 500 } }, off = { };
	pthread_t slots[MAX_WORKERS], helpers[3];
	int seconds = argc > 1 ? atoi(argv[1]) : 30;
	long lost = 0, list_errors = 0, sec;
	long live;
	cpu_set_t set;
	sigset_t block;
	int i;

	if (argc > 1 && !strcmp(argv[1], "--exec-child"))
		return rs_unregister() == -EINVAL ? 0 : 12;
	if (!rs_supported()) {
		printf("restartable_sequences() not supported: skip\n");
		return 4;
	}
	sched_getaffinity(0, sizeof(set), &set);
	nr_cpus = CPU_COUNT(&set);
	nr_workers = 4 * nr_cpus > MAX_WORKERS ? MAX_WORKERS : 4 * nr_cpus;
	seed_lists();

	/* Only registered workers take the storm's signals. */
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	signal(SIGALRM, storm_handler);
	setitimer(ITIMER_REAL, &storm, NULL);

	for (i = 0; i < nr_workers; i++)
		pthread_create(&slots[i], NULL, worker_slot, (void *)(intptr_t)i);
	pthread_create(&helpers[0], NULL, mover, NULL);
	pthread_create(&helpers[1], NULL, forker, NULL);
	pthread_create(&helpers[2], NULL, mapper, NULL);

	for (sec = 1; sec <= seconds; sec++) {
		sleep(1);
		/* Checkpoint: every live worker parks between operations. */
		setitimer(ITIMER_REAL, &off, NULL);
		__atomic_store_n(&pause_request, 1, __ATOMIC_RELEASE);
		do {
			usleep(1000);
			live = 0;
			for (i = 0; i < nr_workers; i++)
				live += READ_ONCE(worker_tid[i]) != 0;
		} while (__atomic_load_n(&paused, __ATOMIC_ACQUIRE) < live);
		list_errors += check_lists();
		lost += labs(committed_adds - sum(counters));
		lost += labs(committed_words - sum(words));
		__atomic_store_n(&pause_request, 0, __ATOMIC_RELEASE);
		setitimer(ITIMER_REAL, &storm, NULL);
	}
	WRITE_ONCE(stop, 1);
	for (i = 0; i < nr_workers; i++)
		pthread_join(slots[i], NULL);
	for (i = 0; i < 3; i++)
		pthread_join(helpers[i], NULL);
	setitimer(ITIMER_REAL, &off, NULL);

	/* Forked children add to their own copy of the counters only. */
	lost += labs(committed_adds - sum(counters));
	lost += labs(committed_words - sum(words));
	list_errors += check_lists();
	printf("%d seconds, %d workers: operations %ld, aborts %ld, signals %ld, affinity moves %ld, forks+execve %ld\n",
	       seconds, nr_workers, operations, aborts, signals, moves, forks);
	printf("lost or duplicated: counter %ld, list nodes %ld, exec children failed %ld\n",
	       lost, list_errors, exec_failures);
	return lost || list_errors || exec_failures ? 1 : 0;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The per-CPU allocator: bad input gets EINVAL and leaves the pool whole;
 * a pool hands out every object once until it is empty; under threads,
 * signals and affinity churn no
 * object is handed out twice and, at the end, every object is accounted
 * for. Usage: t_alloc [seconds [--fake-kernel]]; with the stand-in kernel
 * of fake_kernel.c one worker runs, pinned to CPU 0, and the signals are
 * its only events (the stand-in follows no migration).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "restartable.h"
#include "check.h"
#include "fake_kernel.h"

#define OBJECTS 4096
#define OBJECT_SIZE 48
#define WORKERS 4
#define HELD_MAX 64

static struct rs_pool *pool;
static char *base;			/* the first object handed out, pinned run */
static atomic_int holder[OBJECTS];	/* worker + 1 holding the object, 0 free */
static atomic_int tids[WORKERS];
static atomic_int stop;
static int workers = WORKERS;
static int fake;

/* The index of an object, from the address of the lowest one seen. */
static int index_of(void *p)
{
	return ((char *)p - base) / OBJECT_SIZE;
}

static void take(void *p, int who)
{
	int expected = 0, i = index_of(p);

	CHECK(i >= 0 && i < OBJECTS, "object %p outside the pool", p);
	if (i < 0 || i >= OBJECTS)
		return;
	CHECK(atomic_compare_exchange_strong(&holder[i], &expected, who),
	      "object %d handed to %d, already held by %d", i, who, expected);
	memset(p, who, OBJECT_SIZE);
}

static void give_back(void *p, int who)
{
	int i = index_of(p);
	unsigned char *bytes = p;

	CHECK(bytes[0] == who && bytes[OBJECT_SIZE - 1] == who,
	      "object %d changed while %d held it", i, who);
	atomic_store(&holder[i], 0);
	CHECK(rs_pool_free(pool, p) == 0, "free of object %d: %s", i, strerror(errno));
}

/*
 * The pool is not async-signal-safe (its shared list has a mutex): the
 * handler only makes the signal an event inside whatever sequence runs.
 */
static void on_signal(int sig)
{
	(void)sig;
}

static void *worker(void *arg)
{
	int slot = (int)(intptr_t)arg, n = 0, who = slot + 1;
	unsigned int rng = slot;
	void *held[HELD_MAX];

	CHECK(rs_thread_register() == 0, "rs_thread_register");
	atomic_store(&tids[slot], (int)syscall(SYS_gettid));
	while (!atomic_load(&stop)) {
		if (n < HELD_MAX && (n == 0 || rand_r(&rng) % 2)) {
			held[n] = rs_pool_alloc(pool, 1 + rand_r(&rng) % OBJECT_SIZE);
			if (held[n])
				take(held[n++], who);
			else
				CHECK(errno == ENOMEM, "alloc: %s", strerror(errno));
		} else {
			give_back(held[--n], who);
		}
	}
	while (n)
		give_back(held[--n], who);
	atomic_store(&tids[slot], 0);
	return NULL;
}

/* Signals to random workers; without the stand-in kernel, migrations too. */
static void *disturber(void *arg)
{
	unsigned int rng = 3;
	cpu_set_t set;
	int tid;

	(void)arg;
	while (!atomic_load(&stop)) {
		tid = atomic_load(&tids[rand_r(&rng) % workers]);
		if (tid)
			syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
		if (tid && !fake && rand_r(&rng) % 3) {
			CPU_ZERO(&set);
			CPU_SET(rand_r(&rng) % rs_nr_cpus(), &set);
			sched_setaffinity(tid, sizeof(set), &set);
		}
		usleep(fake ? 20 : 50);
	}
	return NULL;
}

/* Every error path, then a pool that is still whole. */
static void check_bad_input(void)
{
	struct rs_pool *other = rs_pool_create(OBJECT_SIZE * 2, 8);
	struct rs_pool_stats stats;
	void *p, *q;
	int local;

	REQUIRE(other, "rs_pool_create");
	errno = 0;
	CHECK(!rs_pool_create(0, 8) && errno == EINVAL, "object size 0");
	errno = 0;
	CHECK(!rs_pool_alloc(pool, OBJECT_SIZE + 1) && errno == EINVAL,
	      "an object too small for the size");
	errno = 0;
	CHECK(!rs_pool_alloc(NULL, 1) && errno == EINVAL, "no pool");
	p = rs_pool_alloc(pool, OBJECT_SIZE);
	q = rs_pool_alloc(other, OBJECT_SIZE);
	REQUIRE(p && q, "alloc");
	errno = 0;
	CHECK(rs_pool_free(pool, q) == -1 && errno == EINVAL,
	      "an object of a pool of another size");
	errno = 0;
	CHECK(rs_pool_free(pool, (char *)p + 8) == -1 && errno == EINVAL,
	      "a pointer inside an object");
	errno = 0;
	CHECK(rs_pool_free(pool, &local) == -1 && errno == EINVAL,
	      "a pointer from elsewhere");
	errno = 0;
	CHECK(rs_pool_free(pool, (char *)p + OBJECT_SIZE * OBJECTS * 2) == -1 &&
	      errno == EINVAL, "a pointer past the pool");
	/* The object's whole content is the caller's: nothing in it is trusted. */
	memset(p, 0xa5, OBJECT_SIZE);
	CHECK(rs_pool_free(pool, p) == 0, "free");
	errno = 0;
	CHECK(rs_pool_free(pool, p) == -1 && errno == EINVAL, "a double free");
	p = rs_pool_alloc(pool, OBJECT_SIZE);
	REQUIRE(p, "alloc again");
	CHECK(rs_pool_free(pool, p) == 0, "free after the double free");
	errno = 0;
	CHECK(rs_pool_free(pool, p) == -1 && errno == EINVAL,
	      "a double free of an object handed out again");
	errno = 0;
	CHECK(rs_pool_drain(pool, rs_nr_cpus()) == -1 && errno == EINVAL,
	      "drain of CPU %d", rs_nr_cpus());
	errno = 0;
	CHECK(rs_pool_drain(pool, -1) == -1 && errno == EINVAL, "drain of CPU -1");
	CHECK(rs_pool_free(other, q) == 0, "free in the other pool");
	CHECK(rs_pool_stats(pool, &stats) == 0 && stats.allocated == 0,
	      "pool not whole after bad input");
	rs_pool_destroy(other);
}

/* On one CPU, a pool hands out every object, each once, then ENOMEM. */
static void check_exhaustion(void)
{
	static void *all[OBJECTS];
	cpu_set_t one;
	int i;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	REQUIRE(!sched_setaffinity(0, sizeof(one), &one), "sched_setaffinity");
	for (i = 0; i < OBJECTS; i++) {
		all[i] = rs_pool_alloc(pool, OBJECT_SIZE);
		REQUIRE(all[i], "object %d of %d: %s", i, OBJECTS, strerror(errno));
		if (!base || (char *)all[i] < base)
			base = all[i];
	}
	errno = 0;
	CHECK(!rs_pool_alloc(pool, OBJECT_SIZE) && errno == ENOMEM,
	      "more objects than the pool holds");
	for (i = 0; i < OBJECTS; i++)
		take(all[i], 1);
	for (i = 0; i < OBJECTS; i++)
		give_back(all[i], 1);
}

/* The stand-in kernel's events are the signals: one worker on CPU 0. */
static void use_fake_kernel(void)
{
	REQUIRE(!fake_kernel_setup(SIGUSR1, on_signal), "fake_kernel_setup");
	workers = 1;
}

/* The disturber sends the signals from another CPU. */
static void *fake_kernel_disturber(void *arg)
{
	fake_kernel_leave_cpu0();
	return disturber(arg);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	pthread_t threads[WORKERS], dist;
	struct rs_pool_stats stats;
	struct timespec pause = { (time_t)seconds,
				  (long)((seconds - (time_t)seconds) * 1e9) };
	int i;

	fake = argc > 2 && !strcmp(argv[2], "--fake-kernel");
	if (fake)
		use_fake_kernel();
	fprintf(stderr, "# mode %s%s\n", rs_mode_name(rs_mode()),
		getenv("RESTARTABLE_POOL_DEBUG") ? ", RESTARTABLE_POOL_DEBUG" : "");
	pool = rs_pool_create(OBJECT_SIZE, OBJECTS);
	REQUIRE(pool, "rs_pool_create");
	REQUIRE(rs_thread_register() == 0, "rs_thread_register");
	check_exhaustion();
	check_bad_input();

	if (!fake)
		signal(SIGUSR1, on_signal);
	for (i = 0; i < workers; i++)
		pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i);
	pthread_create(&dist, NULL, fake ? fake_kernel_disturber : disturber, NULL);
	nanosleep(&pause, NULL);
	atomic_store(&stop, 1);
	for (i = 0; i < workers; i++)
		pthread_join(threads[i], NULL);
	pthread_join(dist, NULL);

	CHECK(rs_pool_stats(pool, &stats) == 0,
	      "a list holds an object twice or one not free (or, debug, the bitmap disagrees)");
	CHECK(stats.allocated == 0 && stats.shared_free + stats.percpu_free == OBJECTS,
	      "%zu allocated, %zu + %zu free of %zu", stats.allocated,
	      stats.shared_free, stats.percpu_free, stats.objects);
	fprintf(stderr, "# %zu on the shared list, %zu on CPU lists\n",
		stats.shared_free, stats.percpu_free);
	for (i = 0; i < OBJECTS; i++)
		CHECK(!atomic_load(&holder[i]), "object %d still held", i);
	if (fake) {
		fprintf(stderr, "# %ld sequences aborted by events\n",
			fake_kernel_aborts());
		CHECK(fake_kernel_aborts() > 0, "no event aborted a sequence");
	}
	rs_pool_destroy(pool);
	return check_result();
}

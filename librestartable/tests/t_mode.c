// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The process gets the mode it should, and the mode works: usage
 * t_mode kernel|rseq|atomic [--fake-kernel]. With --fake-kernel the
 * system call is answered by tests/fake_kernel.c, and the test also
 * checks the registration's life (made on first use, owned, a new one
 * for each new thread, dropped by rs_thread_unregister()) and that the
 * per-CPU cache sees an event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include "restartable.h"
#include "check.h"
#include "fake_kernel.h"

static struct rs_percpu_word words[CPU_SETSIZE];

/* Each sequence of the table is well formed: start < post-commit, and
 * the abort address follows the signature of its kind. */
static void check_table(void)
{
	const struct rs_seq_entry *e;
	size_t n = rs_seq_table(&e), i;
	uint32_t signature;

	CHECK(n >= 12, "%zu sequences in the table", n);
	for (i = 0; i < n; i++) {
		memcpy(&signature, (const void *)(uintptr_t)(e[i].abort - 4), 4);
		CHECK(e[i].start < e[i].post_commit, "entry %zu: empty", i);
		CHECK(e[i].kind == RS_SEQ_KIND_KERNEL ? signature == 0x5253b90f :
			      e[i].kind == RS_SEQ_KIND_RSEQ && signature == 0x53053053,
		      "entry %zu: kind %lu, signature %#x", i,
		      (unsigned long)e[i].kind, signature);
	}
}

static void *thread_use(void *arg)
{
	(void)arg;
	CHECK(RETRY(rs_add(words, RS_CPU_CURRENT, 1, NULL)) == RS_DONE, "add in a thread");
	CHECK(rs_thread_owner() == RS_OWNER_SELF, "thread's owner %d",
	      rs_thread_owner());
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
}

/*
 * An event between rs_cache_get() and the check: the cache must see it
 * although the element did not change (the stand-in kernel's events are
 * the signals).
 */
static void check_cache_event(void)
{
	static struct rs_percpu_cache cache[CPU_SETSIZE];
	static char object;
	struct rs_cache_token token;
	void *ptr;

	REQUIRE(!fake_kernel_events(SIGUSR1, on_signal), "fake_kernel_events");
	CHECK(rs_cache_get(cache, RS_CPU_CURRENT, &ptr, &token) == RS_DONE, "get");
	CHECK(rs_cache_unchanged(&token), "unchanged right after get");
	raise(SIGUSR1);
	CHECK(!rs_cache_unchanged(&token), "an event went unseen");
	CHECK(rs_cache_replace(&token, &object) == RS_ABORTED,
	      "replace after an event");
	CHECK(rs_cache_get(cache, RS_CPU_CURRENT, &ptr, &token) == RS_DONE &&
	      rs_cache_replace(&token, &object) == RS_DONE, "replace");
}

/* Registration per thread and its end (only with the stand-in kernel). */
static void check_registrations(void)
{
	struct fake_kernel_calls before, after;
	pthread_t thread;
	int i;

	CHECK(fake_kernel_registered(), "first use did not register");
	CHECK(rs_thread_owner() == RS_OWNER_SELF, "owner %d", rs_thread_owner());
	fake_kernel_calls(&before);
	for (i = 0; i < 3; i++) {
		pthread_create(&thread, NULL, thread_use, NULL);
		pthread_join(thread, NULL);
	}
	fake_kernel_calls(&after);
	CHECK(after.registrations == before.registrations + 3,
	      "%ld registrations for 3 threads",
	      after.registrations - before.registrations);
	CHECK(rs_thread_unregister() == 1, "the owner did not unregister");
	CHECK(!fake_kernel_registered(), "still registered");
	CHECK(RETRY(rs_add(words, RS_CPU_CURRENT, 1, NULL)) == RS_DONE, "add after re-use");
	CHECK(fake_kernel_registered(), "use after unregistering did not register");
}

int main(int argc, char **argv)
{
	const char *expected = argc > 1 ? argv[1] : "";
	int fake = argc > 2 && !strcmp(argv[2], "--fake-kernel");
	uint32_t count;
	cpu_set_t one;
	int ret;

	/* One CPU: the stand-in kernel cannot follow migrations. */
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	REQUIRE(!sched_setaffinity(0, sizeof(one), &one), "sched_setaffinity");
	if (fake)
		REQUIRE(!fake_kernel_install(), "fake_kernel_install");
	fprintf(stderr, "# mode %s\n", rs_mode_name(rs_mode()));
	CHECK(!strcmp(rs_mode_name(rs_mode()), expected), "mode %s, expected %s",
	      rs_mode_name(rs_mode()), expected);
	CHECK(rs_thread_register() == 0, "rs_thread_register");
	CHECK(rs_nr_cpus() > 0 && rs_nr_cpus() <= CPU_SETSIZE, "%d CPUs",
	      rs_nr_cpus());
	CHECK(rs_current_cpu() == 0, "on CPU %d, pinned to 0", rs_current_cpu());
	ret = RETRY(rs_add(words, RS_CPU_CURRENT, 5, NULL));
	CHECK(ret == RS_DONE && words[0].value == 5, "add: %d, %ld", ret,
	      (long)words[0].value);
	ret = rs_event_count(&count);
	CHECK(rs_mode() == RS_MODE_KERNEL ? ret == RS_DONE : ret == RS_UNAVAILABLE,
	      "event count: %d", ret);
	check_table();
	if (fake) {
		check_cache_event();
		check_registrations();
	}
	return check_result();
}

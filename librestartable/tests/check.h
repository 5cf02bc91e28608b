/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What every test program shares: CHECK() records a failure and says
 * why on stderr; the program exits 1 if any failed (tests/run-tests turns
 * exit statuses into TAP lines). Not installed.
 */
#ifndef RS_TEST_CHECK_H
#define RS_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int check_failed;

/* The first few failures say enough; a storm of them says nothing more. */
#define CHECK_REPORTS_MAX 10

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond) &&						\
		    __atomic_add_fetch(&check_failed, 1, __ATOMIC_RELAXED) <= \
			    CHECK_REPORTS_MAX) {			\
			fprintf(stderr, "# %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
		}							\
	} while (0)

/* For setup steps a test cannot go on without. */
#define REQUIRE(cond, ...)						\
	do {								\
		int __ok = !!(cond);					\
									\
		CHECK(__ok, __VA_ARGS__);				\
		if (!__ok)						\
			exit(1);					\
	} while (0)

/*
 * An operation, tried again while it aborts: pinned or not, a thread can
 * be preempted or signalled inside its sequence. At most 1000 tries, so
 * that a library that aborts every time fails the check instead of
 * spinning until the test's timeout.
 */
#define RETRY(op)							\
	({								\
		int __r, __tries = 0;					\
									\
		do							\
			__r = (op);					\
		while (__r == RS_ABORTED && ++__tries < 1000);		\
		__r;							\
	})

static inline int check_result(void)
{
	return check_failed ? 1 : 0;
}

#endif /* RS_TEST_CHECK_H */

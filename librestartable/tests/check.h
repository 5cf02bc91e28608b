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

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			check_failed = 1;				\
			fprintf(stderr, "# %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
		}							\
	} while (0)

/* For setup steps a test cannot go on without. */
#define REQUIRE(cond, ...)						\
	do {								\
		CHECK(cond, __VA_ARGS__);				\
		if (!(cond))						\
			exit(1);					\
	} while (0)

static inline int check_result(void)
{
	return check_failed ? 1 : 0;
}

#endif /* RS_TEST_CHECK_H */

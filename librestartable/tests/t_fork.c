// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A fork()ed child keeps its parent's registration: the library goes on
 * using it, makes no restartable_sequences() call for it and still owns
 * it. Usage: t_fork [--fake-kernel]; without the stand-in kernel the
 * child checks only that its mode works as the parent's did.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "restartable.h"
#include "check.h"
#include "fake_kernel.h"

static struct rs_percpu_word words[CPU_SETSIZE];

static int child(int fake, enum rs_mode mode, enum rs_owner owner)
{
	struct fake_kernel_calls before, after;
	int ret;

	fake_kernel_calls(&before);
	ret = RETRY(rs_add(words, RS_CPU_CURRENT, 1, NULL));
	CHECK(ret == RS_DONE, "add in the child: %d", ret);
	CHECK(rs_mode() == mode, "mode %d in the child, %d in the parent",
	      rs_mode(), mode);
	CHECK(rs_thread_owner() == owner, "owner %d in the child, %d in the parent",
	      rs_thread_owner(), owner);
	fake_kernel_calls(&after);
	if (fake) {
		CHECK(fake_kernel_registered(), "the child is not registered");
		CHECK(!memcmp(&before, &after, sizeof(before)),
		      "the child called restartable_sequences() (%ld/%ld/%ld)",
		      after.registrations - before.registrations,
		      after.queries - before.queries,
		      after.unregistrations - before.unregistrations);
	}
	return check_result();
}

int main(int argc, char **argv)
{
	int fake = argc > 1 && !strcmp(argv[1], "--fake-kernel");
	enum rs_owner owner;
	enum rs_mode mode;
	cpu_set_t one;
	int status;
	pid_t pid;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	REQUIRE(!sched_setaffinity(0, sizeof(one), &one), "sched_setaffinity");
	if (fake)
		REQUIRE(!fake_kernel_install(), "fake_kernel_install");
	REQUIRE(RETRY(rs_add(words, RS_CPU_CURRENT, 1, NULL)) == RS_DONE, "add");
	fprintf(stderr, "# mode %s, owner %d\n", rs_mode_name(rs_mode()),
		rs_thread_owner());
	mode = rs_mode();
	owner = rs_thread_owner();
	pid = fork();
	REQUIRE(pid >= 0, "fork");
	if (pid == 0)
		_exit(child(fake, mode, owner));
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed");
	CHECK(RETRY(rs_add(words, RS_CPU_CURRENT, 1, NULL)) == RS_DONE, "add after fork");
	return check_result();
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A seccomp filter makes restartable_sequences() fail with EPERM: the
 * library must fall back as on a kernel without it. Usage:
 * t_seccomp rseq|atomic (the mode expected after the fallback).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "restartable.h"
#include "check.h"

#define NR_RESTARTABLE_SEQUENCES 473
#define ADDS 100000

static struct rs_percpu_word words[CPU_SETSIZE];

static void deny_restartable_sequences(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_RESTARTABLE_SEQUENCES, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]),
				   .filter = filter };

	REQUIRE(!prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
	REQUIRE(!prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), "seccomp");
}

static void *adder(void *arg)
{
	int i, r;

	(void)arg;
	for (i = 0; i < ADDS; i++) {
		do
			r = rs_add(words, RS_CPU_CURRENT, 1, NULL);
		while (r == RS_ABORTED);
		CHECK(r == RS_DONE, "add: %d", r);
		if (r != RS_DONE)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *expected = argc > 1 ? argv[1] : "";
	uint64_t a, b;
	pthread_t threads[2];
	long sum = 0;
	int i;

	deny_restartable_sequences();
	REQUIRE(syscall(NR_RESTARTABLE_SEQUENCES, 2, &a, &b) == -1 && errno == EPERM,
		"the filter does not deny the call");
	fprintf(stderr, "# mode %s\n", rs_mode_name(rs_mode()));
	CHECK(!strcmp(rs_mode_name(rs_mode()), expected), "mode %s, expected %s",
	      rs_mode_name(rs_mode()), expected);
	CHECK(rs_thread_register() == 0, "rs_thread_register");
	for (i = 0; i < 2; i++)
		pthread_create(&threads[i], NULL, adder, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < rs_nr_cpus(); i++)
		sum += words[i].value;
	CHECK(sum == 2 * ADDS, "%ld adds of %d", sum, 2 * ADDS);
	return check_result();
}

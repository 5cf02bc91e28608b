// SPDX-License-Identifier: GPL-2.0
/*
 * The inferior of tests/tools/restartable_seq_gdb_test.sh: gdb_target [N]
 *
 * Registers the thread and runs the selftests header's per-CPU add
 * (rs_percpu_add(), one sequence) N times (default 1000), retrying each
 * aborted try, then checks that the per-CPU words add up to exactly N.
 * Prints "sum S of N, A aborts" and exits 0 when S == N, 1 otherwise.
 *
 * Built -g -O0 -static, so that gdb finds:
 *   gdb_before_sequence   a global label in main(), right before each call
 *                         of the operation: outside any sequence;
 *   gdb_inside_sequence   a global label inside the sequence, right before
 *                         its commit store (placed there through the
 *                         header's RS_INJECT_ASM hook);
 *   gdb_seq_start, gdb_seq_post_commit, gdb_seq_abort
 *                         the sequence's first instruction, its
 *                         post-commit address and its abort address,
 *                         found at start-up (before the first call);
 *   gdb_post_commit_word  the address of the thread's *post_commit (a
 *                         thread-local word: a static program gives gdb
 *                         no libthread_db to find it by name).
 * The sequence's labels are local to the header's asm, so the program
 * reads the addresses from the header's table (__rs_seq_table) and the
 * abort address from the sequence's first instruction, which loads it
 * into RCX (step 2).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A global label inside the sequence, right before the commit. At -O0
 * rs_percpu_add() is emitted once, out of line, and it is the only
 * operation this program uses, so the label is defined once.
 */
#define RS_INJECT_ASM	".globl gdb_inside_sequence\n\t"		\
			"gdb_inside_sequence:\n\t"
/* The hook's memory operand, unused by the label above */
static long gdb_inject_unused;
#define RS_INJECT_DATA	gdb_inject_unused

#include "restartable_seq.h"

/* The labels the asm defines */
extern const char gdb_inside_sequence[], gdb_before_sequence[];

/* Read by gdb; volatile so that -O0 or not, they are kept in memory */
volatile unsigned long gdb_seq_start;
volatile unsigned long gdb_seq_post_commit;
volatile unsigned long gdb_seq_abort;
unsigned long *volatile gdb_post_commit_word;

/*
 * The add sequence's addresses from the header's table: its first
 * instruction (step 2, "leaq rel32(%rip), %rcx", 48 8d 0d rel32) gives the
 * abort address, which must follow the signature. 0, or 1 with a message.
 */
static int find_the_sequence(void)
{
	const struct rs_seq_entry *e, *add = NULL;
	const unsigned char *insn;
	int32_t rel;
	uint32_t signature;

	for (e = __start___rs_seq_table; e < __stop___rs_seq_table; e++) {
		if (strcmp(e->name, "add"))
			continue;
		if (add) {
			fprintf(stderr, "more than one add sequence in the table\n");
			return 1;
		}
		add = e;
	}
	if (!add) {
		fprintf(stderr, "no add sequence in __rs_seq_table\n");
		return 1;
	}
	insn = (const unsigned char *)add->start;
	if (insn[0] != 0x48 || insn[1] != 0x8d || insn[2] != 0x0d) {
		fprintf(stderr, "the sequence does not start with leaq rel32(%%rip), %%rcx\n");
		return 1;
	}
	memcpy(&rel, insn + 3, sizeof(rel));
	gdb_seq_abort = add->start + 7 + (long)rel;
	memcpy(&signature, (const void *)(gdb_seq_abort - 4), sizeof(signature));
	if (signature != RESTARTABLE_SEQ_ABORT_SIGNATURE) {
		fprintf(stderr, "no signature before the abort address %#lx\n",
			gdb_seq_abort);
		return 1;
	}
	gdb_seq_start = add->start;
	gdb_seq_post_commit = add->post_commit;
	return 0;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? atol(argv[1]) : 1000;
	long nr_cpus = sysconf(_SC_NPROCESSORS_CONF);
	struct rs_percpu_word *words;
	long i, sum = 0, aborts = 0;
	int ret;

	ret = rs_register();
	if (ret) {
		fprintf(stderr, "registration failed: %s\n", strerror(-ret));
		return 1;
	}
	gdb_post_commit_word = &rs_self.post_commit;
	if (find_the_sequence())
		return 1;
	words = aligned_alloc(64, nr_cpus * sizeof(*words));
	if (!words)
		return 1;
	memset(words, 0, nr_cpus * sizeof(*words));
	printf("sequence %#lx-%#lx, abort %#lx, inside %p\n", gdb_seq_start,
	       gdb_seq_post_commit, gdb_seq_abort, (void *)gdb_inside_sequence);
	fflush(stdout);

	for (i = 0; i < iterations; i++) {
		/* Outside any sequence: *post_commit is 0 here */
		asm volatile(".globl gdb_before_sequence\n\t"
			     "gdb_before_sequence:\n\t" ::: "memory");
		while ((ret = rs_percpu_add(words, 1)) == RS_ABORT)
			aborts++;
		if (ret != RS_OK) {
			fprintf(stderr, "rs_percpu_add: %d\n", ret);
			return 1;
		}
	}
	for (i = 0; i < nr_cpus; i++)
		sum += words[i].v;
	printf("sum %ld of %ld, %ld aborts\n", sum, iterations, aborts);
	return sum == iterations ? 0 : 1;
}

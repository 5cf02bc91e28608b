// SPDX-License-Identifier: GPL-2.0
/*
 * The rows of librestartable_bench built on the selftests' hand-written
 * sequences: restartable_seq.h (restartable_sequences()) and rseq.h
 * (rseq(), on the C library's registration). scripts/bench compiles this
 * file with -Drs_self=hw_rs_self: restartable_seq.h defines the thread's
 * words under the same name as librestartable's own thread state.
 *
 * The operations are those the library offers, written as a caller of
 * the header would write them:
 *   add       words[cpu] += 1 on the thread's CPU
 *   cmpstore  read the thread's CPU and its word, then compare-and-store
 *             word + 1 on that CPU (load-compare-store)
 *   list      pop a node from the CPU's list and push it back
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rseq.h"
#include "restartable_seq.h"
#include "librestartable_bench.h"

#define HW_CPUS		CPU_SETSIZE
#define HW_NODES	8	/* per list: enough for every thread to hold one */

static struct rs_percpu_word rs_add_words[HW_CPUS];
static struct rs_percpu_word rs_cmp_words[HW_CPUS];
static struct rs_percpu_list rs_lists[HW_CPUS];

struct hw_word {
	intptr_t v;
} __aligned(64);

struct hw_list {
	struct rs_node *head;
} __aligned(64);

static struct hw_word rseq_add_words[HW_CPUS];
static struct hw_word rseq_cmp_words[HW_CPUS];
static struct hw_list rseq_lists[HW_CPUS];

/* --- restartable_sequences(), restartable_seq.h -------------------------- */

static inline void hw_rs_add(long *retries)
{
	while (rs_percpu_add(rs_add_words, 1) != RS_OK)
		(*retries)++;
}

static inline void hw_rs_cmpstore(long *retries)
{
	unsigned int cpu;
	intptr_t v;

	for (;;) {
		cpu = rs_cpu();
		v = RSEQ_READ_ONCE(rs_cmp_words[cpu].v);
		if (rs_percpu_cmpstore(rs_cmp_words, cpu, v, v + 1) == RS_OK)
			return;
		(*retries)++;
	}
}

static inline void hw_rs_list(long *retries)
{
	struct rs_node *node;
	int ret;

	while ((ret = rs_percpu_pop(rs_lists, &node)) == RS_ABORT)
		(*retries)++;
	if (ret != RS_OK)
		abort();	/* every list holds enough nodes */
	while (rs_percpu_push(rs_lists, node) != RS_OK)
		(*retries)++;
}

static void hw_rs_thread_init(void)
{
	int ret = rs_register();

	if (ret) {
		fprintf(stderr, "restartable_sequences(): %s\n", strerror(-ret));
		exit(1);
	}
}

/* --- rseq(), rseq.h ---------------------------------------------------------- */

static inline void hw_rseq_add(long *retries)
{
	uint32_t cpu;

	for (;;) {
		cpu = rseq_cpu_start();
		if (!rseq_addv(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID,
			       &rseq_add_words[cpu].v, 1, cpu))
			return;
		(*retries)++;
	}
}

static inline void hw_rseq_cmpstore(long *retries)
{
	uint32_t cpu;
	intptr_t v;

	for (;;) {
		cpu = rseq_cpu_start();
		v = RSEQ_READ_ONCE(rseq_cmp_words[cpu].v);
		if (!rseq_cmpeqv_storev(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID,
					&rseq_cmp_words[cpu].v, v, v + 1, cpu))
			return;
		(*retries)++;
	}
}

static inline void hw_rseq_list(long *retries)
{
	struct rs_node *node, *first;
	intptr_t *head;
	uint32_t cpu;
	int ret;

	for (;;) {
		cpu = rseq_cpu_start();
		ret = rseq_cmpnev_storeoffp_load(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID,
						 (intptr_t *)&rseq_lists[cpu].head,
						 (intptr_t)NULL,
						 offsetof(struct rs_node, next),
						 (intptr_t *)&node, cpu);
		if (ret >= 0)
			break;
		(*retries)++;
	}
	if (ret > 0)
		abort();	/* every list holds enough nodes */
	for (;;) {
		cpu = rseq_cpu_start();
		head = (intptr_t *)&rseq_lists[cpu].head;
		first = (struct rs_node *)RSEQ_READ_ONCE(*head);
		node->next = first;
		if (!rseq_cmpeqv_storev(RSEQ_MO_RELAXED, RSEQ_PERCPU_CPU_ID, head,
					(intptr_t)first, (intptr_t)node, cpu))
			return;
		(*retries)++;
	}
}

/* The C library registered rseq() for the thread: rseq.c takes its area. */
static void hw_rseq_thread_init(void)
{
	if (rseq_register_current_thread()) {
		fprintf(stderr, "rseq(): no registration to use (%s)\n", strerror(errno));
		exit(1);
	}
}

BENCH_LOOP(loop_rs_add, hw_rs_add)
BENCH_LOOP(loop_rs_cmpstore, hw_rs_cmpstore)
BENCH_LOOP(loop_rs_list, hw_rs_list)
BENCH_LOOP(loop_rseq_add, hw_rseq_add)
BENCH_LOOP(loop_rseq_cmpstore, hw_rseq_cmpstore)
BENCH_LOOP(loop_rseq_list, hw_rseq_list)

const struct bench_row hw_rows[] = {
	{ "add", "hw-rs", "restartable_seq.h rs_percpu_add()", loop_rs_add,
	  hw_rs_thread_init },
	{ "add", "hw-rseq", "rseq.h rseq_addv()", loop_rseq_add,
	  hw_rseq_thread_init },
	{ "cmpstore", "hw-rs", "rs_cpu(), load, rs_percpu_cmpstore()",
	  loop_rs_cmpstore, hw_rs_thread_init },
	{ "cmpstore", "hw-rseq", "rseq_cpu_start(), load, rseq_cmpeqv_storev()",
	  loop_rseq_cmpstore, hw_rseq_thread_init },
	{ "list", "hw-rs", "rs_percpu_pop() + rs_percpu_push()", loop_rs_list,
	  hw_rs_thread_init },
	{ "list", "hw-rseq", "rseq_cmpnev_storeoffp_load() + rseq_cmpeqv_storev()",
	  loop_rseq_list, hw_rseq_thread_init },
};

const int hw_nr_rows = sizeof(hw_rows) / sizeof(hw_rows[0]);

/* Seed the lists; 1 if restartable_sequences() is there to measure. */
int hw_setup(void)
{
	int cpu, i;

	for (cpu = 0; cpu < HW_CPUS; cpu++) {
		for (i = 0; i < HW_NODES; i++) {
			struct rs_node *n = calloc(2, sizeof(*n));

			if (!n)
				abort();
			n[0].next = rs_lists[cpu].head;
			rs_lists[cpu].head = &n[0];
			n[1].next = rseq_lists[cpu].head;
			rseq_lists[cpu].head = &n[1];
		}
	}
	return rs_supported();
}

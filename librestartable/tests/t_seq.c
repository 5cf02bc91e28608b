// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The rseq() sequences check their CPU themselves: called for another CPU
 * than the C library's area names, each one aborts and stores nothing.
 * The public operations compare the CPU before they start a sequence, so
 * only a migration in between reaches this check; calling the sequences
 * directly (the static archive's hidden symbols) reaches it every time.
 * Exits 77 (skipped) when the C library registered no rseq() area.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <sys/rseq.h>

#include "check.h"
#include "../src/internal.h"

static struct __rs_rseq_area *rseq_area(void)
{
	return (struct __rs_rseq_area *)((char *)__builtin_thread_pointer() +
					 __rseq_offset);
}

/* Pin the thread where it runs and return that CPU as rseq() names it. */
static uint32_t pin_here(struct __rs_rseq_area *rs)
{
	uint32_t cpu = __atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	REQUIRE(!sched_setaffinity(0, sizeof(set), &set), "pin to CPU %u", cpu);
	return __atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
}

int main(void)
{
	struct rs_node node = { 0 }, *head = NULL, *popped = NULL;
	struct __rs_rseq_area *rs;
	intptr_t v = 0;
	uint32_t cpu, other;
	int ret;

	if (!__rseq_size || (int32_t)rseq_area()->cpu_id < 0) {
		printf("# skip: the C library registered no rseq() area\n");
		return 77;
	}
	rs = rseq_area();
	cpu = pin_here(rs);
	other = cpu + 1;

	ret = rs_r_add(rs, other, &v, 1);
	CHECK(ret == RS_ABORTED && v == 0, "add for CPU %u on CPU %u: %d, v %ld",
	      other, cpu, ret, (long)v);
	ret = rs_r_cmpstore(rs, other, &v, 0, 5);
	CHECK(ret == RS_ABORTED && v == 0, "cmpstore for CPU %u on CPU %u: %d, v %ld",
	      other, cpu, ret, (long)v);
	ret = rs_r_push(rs, other, &head, &node);
	CHECK(ret == RS_ABORTED && !head, "push for CPU %u on CPU %u: %d", other, cpu, ret);

	/* The same calls for the CPU the thread runs on commit (retried after a preemption). */
	while ((ret = rs_r_add(rs, cpu, &v, 1)) == RS_ABORTED)
		;
	CHECK(ret == RS_DONE && v == 1, "add on its own CPU: %d, v %ld", ret, (long)v);
	while ((ret = rs_r_push(rs, cpu, &head, &node)) == RS_ABORTED)
		;
	CHECK(ret == RS_DONE && head == &node, "push on its own CPU: %d", ret);
	ret = rs_r_pop(rs, other, &head, &popped);
	CHECK(ret == RS_ABORTED && head == &node && !popped,
	      "pop for CPU %u on CPU %u: %d", other, cpu, ret);
	return check_result();
}

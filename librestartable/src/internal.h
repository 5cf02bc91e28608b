/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Definitions shared by the library's source files, not installed. */
#ifndef RS_INTERNAL_H
#define RS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "restartable.h"

#define RS_HIDDEN __attribute__((visibility("hidden")))

/* The restartable_sequences() ABI (x86-64). */
#ifndef __NR_restartable_sequences
#define __NR_restartable_sequences 473
#endif
#define RESTARTABLE_SEQ_FLAG_UNREGISTER 0x1U
#define RESTARTABLE_SEQ_FLAG_QUERY 0x2U
#define RESTARTABLE_SEQ_CPU_UNREGISTERED 0xffffffffU
#define RESTARTABLE_SEQ_EVENT_SHIFT 32

/*
 * The work of a memcpy-then-commit sequence, the same in both modes:
 * copy %[len] bytes from %[src] to %[dst] one by one (a sequence makes no
 * call), then the commit, %[newv] into %[v]. Clobbers rax, rdi, rsi, rdx.
 */
#define RS_ASM_COPY_THEN_COMMIT				\
	"movq %[dst], %%rdi\n\t"				\
	"movq %[src], %%rsi\n\t"				\
	"movq %[len], %%rdx\n\t"				\
	"testq %%rdx, %%rdx\n\t"				\
	"jz 8f\n"						\
	"7:\tmovb (%%rsi), %%al\n\t"				\
	"movb %%al, (%%rdi)\n\t"				\
	"incq %%rsi\n\t"					\
	"incq %%rdi\n\t"					\
	"decq %%rdx\n\t"					\
	"jnz 7b\n"						\
	"8:\tmovq %[newv], (%[v])\n\t"

/* Per-thread state of this copy of the library. */
struct rs_thread_state {
	uint64_t *counter;	/* the registered words this copy uses, */
	uint64_t *post_commit;	/* NULL when none */
	struct __rs_rseq_area *rseq; /* the C library's, RS_MODE_RSEQ */
	uint8_t set_up;		/* rs_thread_setup() ran for this thread */
	uint8_t owner;		/* enum rs_owner */
};

extern __thread struct rs_thread_state rs_self RS_HIDDEN;
extern enum rs_mode rs_process_mode RS_HIDDEN;
/* Possible CPUs; valid once the mode is decided (any thread set up). */
#define rs_cpus (__rs_process.nr_cpus)

RS_HIDDEN void rs_decide_mode(void);
RS_HIDDEN void rs_thread_setup(void);

static inline uint32_t rs_counter_cpu(uint64_t counter)
{
	return (uint32_t)counter;
}

static inline uint32_t rs_counter_events(uint64_t counter)
{
	return counter >> RESTARTABLE_SEQ_EVENT_SHIFT;
}

/* The calling thread's state, set up on first use. */
static inline struct rs_thread_state *rs_thread(void)
{
	if (__builtin_expect(!rs_self.set_up, 0))
		rs_thread_setup();
	return &rs_self;
}

/* Sequences, one file per mechanism; same results as the public calls. */
RS_HIDDEN int rs_k_add(uint64_t *counter, uint64_t *pc, uint64_t start,
		       intptr_t *v, intptr_t inc);
RS_HIDDEN int rs_k_cmpstore(uint64_t *counter, uint64_t *pc, uint64_t start,
			    intptr_t *v, intptr_t expect, intptr_t newv);
RS_HIDDEN int rs_k_push(uint64_t *counter, uint64_t *pc, uint64_t start,
			struct rs_node **head, struct rs_node *node);
RS_HIDDEN int rs_k_pop(uint64_t *counter, uint64_t *pc, uint64_t start,
		       struct rs_node **head, struct rs_node **node);
RS_HIDDEN int rs_k_cmp_store2(uint64_t *counter, uint64_t *pc, uint64_t start,
			      intptr_t *v, intptr_t expect, intptr_t *other,
			      intptr_t other_value, intptr_t newv);
RS_HIDDEN int rs_k_memcpy_commit(uint64_t *counter, uint64_t *pc,
				 uint64_t start, intptr_t *v, intptr_t expect,
				 void *dst, const void *src, size_t len,
				 intptr_t newv);

RS_HIDDEN int rs_r_add(struct __rs_rseq_area *rs, uint32_t cpu, intptr_t *v,
		       intptr_t inc);
RS_HIDDEN int rs_r_cmpstore(struct __rs_rseq_area *rs, uint32_t cpu, intptr_t *v,
			    intptr_t expect, intptr_t newv);
RS_HIDDEN int rs_r_push(struct __rs_rseq_area *rs, uint32_t cpu,
			struct rs_node **head, struct rs_node *node);
RS_HIDDEN int rs_r_pop(struct __rs_rseq_area *rs, uint32_t cpu,
		       struct rs_node **head, struct rs_node **node);
RS_HIDDEN int rs_r_cmp_store2(struct __rs_rseq_area *rs, uint32_t cpu, intptr_t *v,
			      intptr_t expect, intptr_t *other,
			      intptr_t other_value, intptr_t newv);
RS_HIDDEN int rs_r_memcpy_commit(struct __rs_rseq_area *rs, uint32_t cpu,
				 intptr_t *v, intptr_t expect, void *dst,
				 const void *src, size_t len, intptr_t newv);

#endif /* RS_INTERNAL_H */

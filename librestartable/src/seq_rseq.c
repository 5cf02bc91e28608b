// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The operations as rseq() critical sections (x86-64), on the rseq area
 * the C library registered for the thread.
 *
 * Each sequence has a struct rseq_cs descriptor in __rseq_cs and an entry
 * in __restartable_seq_table; restartable_inline.h describes them and
 * holds their text, the same for its inline copies and these.
 */
#include "internal.h"

#define RSEQ_BEGIN __RS_RSEQ_BEGIN
#define RSEQ_END __RS_RSEQ_END
#define RSEQ_OPERANDS __RS_RSEQ_OPERANDS(rs, cpu)
#define RSEQ_CLOBBERS __RS_RSEQ_CLOBBERS

int rs_r_add(struct __rs_rseq_area *rs, uint32_t cpu, intptr_t *v, intptr_t inc)
{
	__asm__ goto(RSEQ_BEGIN
		 __RS_ASM_ADD
		 RSEQ_END
		 : /* no outputs */
		 : RSEQ_OPERANDS, [v] "r" (v), [inc] "r" (inc)
		 : RSEQ_CLOBBERS
		 : aborted);
	return RS_DONE;
aborted:
	return RS_ABORTED;
}

int rs_r_cmpstore(struct __rs_rseq_area *rs, uint32_t cpu, intptr_t *v,
		  intptr_t expect, intptr_t newv)
{
	__asm__ goto(RSEQ_BEGIN
		 __RS_ASM_CMPSTORE("%l[failed]")
		 RSEQ_END
		 : /* no outputs */
		 : RSEQ_OPERANDS, [v] "r" (v), [expect] "r" (expect),
		   [newv] "r" (newv)
		 : RSEQ_CLOBBERS
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

int rs_r_push(struct __rs_rseq_area *rs, uint32_t cpu, struct rs_node **head,
	      struct rs_node *node)
{
	__asm__ goto(RSEQ_BEGIN
		 __RS_ASM_PUSH
		 RSEQ_END
		 : /* no outputs */
		 : RSEQ_OPERANDS, [head] "r" (head), [node] "r" (node),
		   [next] "i" (offsetof(struct rs_node, next))
		 : RSEQ_CLOBBERS
		 : aborted);
	return RS_DONE;
aborted:
	return RS_ABORTED;
}

int rs_r_pop(struct __rs_rseq_area *rs, uint32_t cpu, struct rs_node **head,
	     struct rs_node **node)
{
	__asm__ goto(RSEQ_BEGIN
		 __RS_ASM_POP("%l[failed]")
		 RSEQ_END
		 : /* no outputs */
		 : RSEQ_OPERANDS, [head] "r" (head), [node] "r" (node),
		   [next] "i" (offsetof(struct rs_node, next))
		 : RSEQ_CLOBBERS
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

int rs_r_cmp_store2(struct __rs_rseq_area *rs, uint32_t cpu, intptr_t *v,
		    intptr_t expect, intptr_t *other, intptr_t other_value,
		    intptr_t newv)
{
	__asm__ goto(RSEQ_BEGIN
		 "cmpq %[expect], (%[v])\n\t"
		 "jne %l[failed]\n\t"
		 "movq %[ovalue], (%[other])\n\t"
		 "movq %[newv], (%[v])\n\t"
		 RSEQ_END
		 : /* no outputs */
		 : RSEQ_OPERANDS, [v] "r" (v), [expect] "r" (expect),
		   [other] "r" (other), [ovalue] "r" (other_value),
		   [newv] "r" (newv)
		 : RSEQ_CLOBBERS
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

int rs_r_memcpy_commit(struct __rs_rseq_area *rs, uint32_t cpu, intptr_t *v,
		       intptr_t expect, void *dst, const void *src, size_t len,
		       intptr_t newv)
{
	__asm__ goto(RSEQ_BEGIN
		 "cmpq %[expect], (%[v])\n\t"
		 "jne %l[failed]\n\t"
		 RS_ASM_COPY_THEN_COMMIT
		 RSEQ_END
		 : /* no outputs */
		 : RSEQ_OPERANDS, [v] "r" (v), [expect] "r" (expect),
		   [dst] "rm" (dst), [src] "rm" (src), [len] "rm" (len),
		   [newv] "r" (newv)
		 : RSEQ_CLOBBERS, "rdi", "rsi", "rdx"
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The operations as restartable_sequences() sequences (x86-64).
 *
 * Every function gets the words the thread uses (counter and post_commit:
 * its own, registered by this copy, or another component's) and the
 * counter value it read in step 1 (whose CPU names the slot), and runs
 * steps 2 to 6 as restartable_inline.h describes, with its text: the
 * inline copies in callers and these are the same sequences. "rep movs" is
 * out (rcx is the abort address), so rs_k_memcpy_commit() copies bytes in
 * a loop. Each sequence has an entry in __restartable_seq_table.
 */
#include "internal.h"

#define KSEQ_BEGIN __RS_KSEQ_BEGIN
#define KSEQ_END __RS_KSEQ_END
#define KSEQ_END_FAILED __RS_KSEQ_END_FAILED
#define KSEQ_OPERANDS __RS_KSEQ_OPERANDS(*counter, *pc, start)
#define KSEQ_CLOBBERS __RS_KSEQ_CLOBBERS

int rs_k_add(uint64_t *counter, uint64_t *pc, uint64_t start, intptr_t *v,
	     intptr_t inc)
{
	__asm__ goto(KSEQ_BEGIN
		 __RS_ASM_ADD
		 KSEQ_END
		 : /* no outputs */
		 : KSEQ_OPERANDS, [v] "r" (v), [inc] "r" (inc)
		 : KSEQ_CLOBBERS
		 : aborted);
	return RS_DONE;
aborted:
	return RS_ABORTED;
}

int rs_k_cmpstore(uint64_t *counter, uint64_t *pc, uint64_t start,
		  intptr_t *v, intptr_t expect, intptr_t newv)
{
	__asm__ goto(KSEQ_BEGIN
		 __RS_ASM_CMPSTORE("6f")
		 KSEQ_END_FAILED
		 : /* no outputs */
		 : KSEQ_OPERANDS, [v] "r" (v), [expect] "r" (expect),
		   [newv] "r" (newv)
		 : KSEQ_CLOBBERS
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

/* node is still private to the caller: its next pointer is no commit. */
int rs_k_push(uint64_t *counter, uint64_t *pc, uint64_t start,
	      struct rs_node **head, struct rs_node *node)
{
	__asm__ goto(KSEQ_BEGIN
		 __RS_ASM_PUSH
		 KSEQ_END
		 : /* no outputs */
		 : KSEQ_OPERANDS, [head] "r" (head), [node] "r" (node),
		   [next] "i" (offsetof(struct rs_node, next))
		 : KSEQ_CLOBBERS
		 : aborted);
	return RS_DONE;
aborted:
	return RS_ABORTED;
}

/* *node is the caller's variable: storing to it is no commit either. */
int rs_k_pop(uint64_t *counter, uint64_t *pc, uint64_t start,
	     struct rs_node **head, struct rs_node **node)
{
	__asm__ goto(KSEQ_BEGIN
		 __RS_ASM_POP("6f")
		 KSEQ_END_FAILED
		 : /* no outputs */
		 : KSEQ_OPERANDS, [head] "r" (head), [node] "r" (node),
		   [next] "i" (offsetof(struct rs_node, next))
		 : KSEQ_CLOBBERS
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

/*
 * The store to *other is speculative: an abort after it leaves it done
 * but uncommitted, so *other must be data the committed word publishes.
 */
int rs_k_cmp_store2(uint64_t *counter, uint64_t *pc, uint64_t start,
		    intptr_t *v, intptr_t expect, intptr_t *other,
		    intptr_t other_value, intptr_t newv)
{
	__asm__ goto(KSEQ_BEGIN
		 "cmpq %[expect], (%[v])\n\t"
		 "jne 6f\n\t"
		 "movq %[ovalue], (%[other])\n\t"
		 "movq %[newv], (%[v])\n\t"
		 KSEQ_END_FAILED
		 : /* no outputs */
		 : KSEQ_OPERANDS, [v] "r" (v), [expect] "r" (expect),
		   [other] "r" (other), [ovalue] "r" (other_value),
		   [newv] "r" (newv)
		 : KSEQ_CLOBBERS
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

/* The copy is speculative like the store of rs_k_cmp_store2(). */
int rs_k_memcpy_commit(uint64_t *counter, uint64_t *pc, uint64_t start,
		       intptr_t *v, intptr_t expect, void *dst,
		       const void *src, size_t len, intptr_t newv)
{
	__asm__ goto(KSEQ_BEGIN
		 "cmpq %[expect], (%[v])\n\t"
		 "jne 6f\n\t"
		 RS_ASM_COPY_THEN_COMMIT
		 KSEQ_END_FAILED
		 : /* no outputs */
		 : KSEQ_OPERANDS, [v] "r" (v), [expect] "r" (expect),
		   [dst] "rm" (dst), [src] "rm" (src), [len] "rm" (len),
		   [newv] "r" (newv)
		 : KSEQ_CLOBBERS, "rdi", "rsi", "rdx"
		 : aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

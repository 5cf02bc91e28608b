// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The operations as restartable_sequences() sequences (x86-64).
 *
 * Every function gets the words the thread registered (counter and
 * post_commit), the counter value it read in step 1 (whose CPU names the
 * slot) and runs steps 2 to 6:
 *
 *	1:  rcx = abort (label 4)                         step 2
 *	    *post_commit = label 3                        step 3
 *	    if (*counter != start) goto early exit 5      step 4
 *	    <work>, <commit store>                        step 5
 *	3:  *post_commit = 0                              step 6
 *
 * Label 4, the abort address, follows the signature the kernel checks; it
 * and the early exits live in .text.unlikely, off the straight path. An
 * early exit clears *post_commit before it leaves, so an event can only
 * send it to the abort label, which leaves too. Nothing inside a sequence
 * may touch rcx: "rep movs" is out, rs_k_memcpy_commit() copies bytes in a
 * loop. Each sequence has an entry in __restartable_seq_table.
 */
#include <stddef.h>
#include "internal.h"

#define __rs_str1(x) #x
#define __rs_str(x) __rs_str1(x)

#ifdef RS_BREAK_KERNEL_NO_STEP4
#define KSEQ_STEP4 ""
#else
#define KSEQ_STEP4 "cmpq %[start], (%[counter])\n\t" "jne 5f\n\t"
#endif
#ifdef RS_BREAK_KERNEL_NO_SIGNATURE
#define KSEQ_SIGNATURE ""
#else
#define KSEQ_SIGNATURE ".long " RS_KERNEL_SIGNATURE "\n"
#endif

#define KSEQ_BEGIN							\
	".pushsection __restartable_seq_table, \"aw\"\n\t"		\
	".balign 8\n\t"							\
	".quad 1f, 3f, 4f, " __rs_str(RS_SEQ_KIND_KERNEL) "\n\t"	\
	".popsection\n"							\
	"1:\tleaq 4f(%%rip), %%rcx\n\t"					\
	"leaq 3f(%%rip), %%rax\n\t"					\
	"movq %%rax, (%[pc])\n\t"					\
	KSEQ_STEP4

#define KSEQ_END							\
	"3:\tmovq $0, (%[pc])\n\t"					\
	".pushsection .text.unlikely.restartable, \"ax\"\n"		\
	"5:\tmovq $0, (%[pc])\n\t"					\
	"jmp %l[aborted]\n\t"						\
	KSEQ_SIGNATURE							\
	"4:\tjmp %l[aborted]\n\t"					\
	".popsection\n\t"

/* For sequences that leave through label 6 when the data is not as expected. */
#define KSEQ_END_FAILED							\
	KSEQ_END							\
	".pushsection .text.unlikely.restartable, \"ax\"\n"		\
	"6:\tmovq $0, (%[pc])\n\t"					\
	"jmp %l[failed]\n\t"						\
	".popsection\n\t"

#define KSEQ_OPERANDS							\
	[counter] "r" (counter), [pc] "r" (pc), [start] "r" (start)

#define KSEQ_CLOBBERS "rax", "rcx", "memory", "cc"

int rs_k_add(uint64_t *counter, uint64_t *pc, uint64_t start, intptr_t *v,
	     intptr_t inc)
{
	__asm__ goto(KSEQ_BEGIN
		 "addq %[inc], (%[v])\n\t"
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
		 "cmpq %[expect], (%[v])\n\t"
		 "jne 6f\n\t"
		 "movq %[newv], (%[v])\n\t"
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
		 "movq (%[head]), %%rax\n\t"
		 "movq %%rax, %c[next](%[node])\n\t"
		 "movq %[node], (%[head])\n\t"
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
		 "movq (%[head]), %%rax\n\t"
		 "testq %%rax, %%rax\n\t"
		 "jz 6f\n\t"
		 "movq %%rax, (%[node])\n\t"
		 "movq %c[next](%%rax), %%rax\n\t"
		 "movq %%rax, (%[head])\n\t"
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

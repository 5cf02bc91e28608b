// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The operations as rseq() critical sections (x86-64), on the rseq area
 * the C library registered for the thread.
 *
 * Each sequence has a struct rseq_cs descriptor (version 0, flags 0,
 * start 1, length 3 - 1, abort 4) in __rseq_cs and an entry in
 * __restartable_seq_table:
 *
 *	    rseq->rseq_cs = &descriptor
 *	1:  if (rseq->cpu_id != cpu) goto abort 4         the slot's CPU
 *	    <work>, <commit store>
 *	3:
 *
 * The kernel clears rseq_cs itself, lazily, so the exits need no store.
 * The abort label follows the signature the C library registered with
 * (RSEQ_SIG of x86); it lives in .text.unlikely, outside [1, 3).
 */
#include <stddef.h>
#include "internal.h"

#define __rs_str1(x) #x
#define __rs_str(x) __rs_str1(x)

#ifdef RS_BREAK_RSEQ_NO_CPU_CHECK
#define RSEQ_CPU_CHECK ""
#else
#define RSEQ_CPU_CHECK "cmpl %[cpu], %c[cpu_id](%[rs])\n\t" "jne 4f\n\t"
#endif

#define RSEQ_BEGIN							\
	".pushsection __rseq_cs, \"aw\"\n\t"				\
	".balign 32\n"							\
	"9:\t.long 0, 0\n\t"						\
	".quad 1f, 3f - 1f, 4f\n\t"					\
	".popsection\n\t"						\
	".pushsection __restartable_seq_table, \"aw\"\n\t"		\
	".balign 8\n\t"							\
	".quad 1f, 3f, 4f, " __rs_str(RS_SEQ_KIND_RSEQ) "\n\t"		\
	".popsection\n\t"						\
	"leaq 9b(%%rip), %%rax\n\t"					\
	"movq %%rax, %c[rseq_cs](%[rs])\n"				\
	"1:\t" RSEQ_CPU_CHECK

#define RSEQ_END							\
	"3:\n\t"							\
	".pushsection .text.unlikely.restartable, \"ax\"\n\t"		\
	".long " RS_RSEQ_SIGNATURE "\n"					\
	"4:\tjmp %l[aborted]\n\t"					\
	".popsection\n\t"

#define RSEQ_OPERANDS							\
	[rs] "r" (rs), [cpu] "r" (cpu),					\
	[cpu_id] "i" (offsetof(struct rseq_area, cpu_id)),		\
	[rseq_cs] "i" (offsetof(struct rseq_area, rseq_cs))

#define RSEQ_CLOBBERS "rax", "memory", "cc"

int rs_r_add(struct rseq_area *rs, uint32_t cpu, intptr_t *v, intptr_t inc)
{
	__asm__ goto(RSEQ_BEGIN
		 "addq %[inc], (%[v])\n\t"
		 RSEQ_END
		 : /* no outputs */
		 : RSEQ_OPERANDS, [v] "r" (v), [inc] "r" (inc)
		 : RSEQ_CLOBBERS
		 : aborted);
	return RS_DONE;
aborted:
	return RS_ABORTED;
}

int rs_r_cmpstore(struct rseq_area *rs, uint32_t cpu, intptr_t *v,
		  intptr_t expect, intptr_t newv)
{
	__asm__ goto(RSEQ_BEGIN
		 "cmpq %[expect], (%[v])\n\t"
		 "jne %l[failed]\n\t"
		 "movq %[newv], (%[v])\n\t"
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

int rs_r_push(struct rseq_area *rs, uint32_t cpu, struct rs_node **head,
	      struct rs_node *node)
{
	__asm__ goto(RSEQ_BEGIN
		 "movq (%[head]), %%rax\n\t"
		 "movq %%rax, %c[next](%[node])\n\t"
		 "movq %[node], (%[head])\n\t"
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

int rs_r_pop(struct rseq_area *rs, uint32_t cpu, struct rs_node **head,
	     struct rs_node **node)
{
	__asm__ goto(RSEQ_BEGIN
		 "movq (%[head]), %%rax\n\t"
		 "testq %%rax, %%rax\n\t"
		 "jz %l[failed]\n\t"
		 "movq %%rax, (%[node])\n\t"
		 "movq %c[next](%%rax), %%rax\n\t"
		 "movq %%rax, (%[head])\n\t"
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

int rs_r_cmp_store2(struct rseq_area *rs, uint32_t cpu, intptr_t *v,
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

int rs_r_memcpy_commit(struct rseq_area *rs, uint32_t cpu, intptr_t *v,
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

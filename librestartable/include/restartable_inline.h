/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * librestartable: the inline fast paths of the hot operations. Included
 * by restartable.h (inside its extern "C"); not to be included directly.
 *
 * rs_add(), rs_cmpstore(), rs_push(), rs_pop(), rs_current_cpu() and
 * rs_nr_cpus() are GNU inline definitions here (gnu_inline: used for
 * inlining only; the symbols, and so the ABI, stay the library's). Their
 * common case in kernel mode runs the sequence in the caller: the words
 * this copy of the library registered for the thread (__rs_words,
 * initial-exec TLS) name a CPU below rs_nr_cpus(). That one compare says
 * all the library's checks would: only this copy, in kernel mode,
 * registers these words, and their CPU field is
 * RESTARTABLE_SEQ_CPU_UNREGISTERED until it has (and again once it
 * unregistered them).
 *
 * Everything else calls the library: rseq mode (whose own fast path, at
 * the top of those functions, skips the thread state), first use, words
 * registered by another component, atomic mode, a CPU out of range. The
 * library does what it always did there, errors included. Only kernel
 * mode is inline: with the rseq() path too, a caller's loop around two
 * operations outgrows what GCC inlines (max-inline-insns-single), and
 * kernel mode loses more than rseq mode gains.
 *
 * Each inline copy of a sequence lists itself in the
 * __restartable_seq_table section of the object it is compiled into: one
 * entry per copy, see restartable(3).
 *
 * Define RS_NO_INLINE before including restartable.h to call the library
 * for everything.
 */
#ifndef RESTARTABLE_INLINE_H
#define RESTARTABLE_INLINE_H

#ifndef RESTARTABLE_H
#error "include <restartable.h>, not <restartable_inline.h>"
#endif

/*
 * What the inline paths read; part of the ABI from version 0.2 on, not an
 * interface for programs.
 */

/* The two words this copy of the library registers for a thread. */
struct __rs_words {
	uint64_t counter;	/* CPU in the low 32 bits, event count above */
	uint64_t post_commit;
} __attribute__((__aligned__(16)));

/* Set once per process, when the library decides its mode; the library's
 * own rseq() fast path reads rseq_cpus, then (acquire) rseq_offset. */
struct __rs_process {
	int32_t nr_cpus;	/* rs_nr_cpus(); 0 until decided */
	int32_t rseq_cpus;	/* nr_cpus in RS_MODE_RSEQ, else 0; set last */
	int64_t rseq_offset;	/* the C library's __rseq_offset, RS_MODE_RSEQ */
};

/* The kernel's struct rseq, the fields the sequences use. */
struct __rs_rseq_area {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
};

/*
 * Initial-exec: one %fs-relative access, no __tls_get_addr(). A copy in a
 * dlopen()ed library takes these 16 bytes from the C library's static TLS
 * reserve.
 */
extern __thread struct __rs_words __rs_words
	__attribute__((__tls_model__("initial-exec")));
extern struct __rs_process __rs_process;

/* The library's full paths (the same functions as rs_add() and so on). */
int __rs_add_slow(struct rs_percpu_word *words, int cpu, intptr_t inc,
		  int *cpu_used);
int __rs_cmpstore_slow(struct rs_percpu_word *words, int cpu, intptr_t expect,
		       intptr_t newv);
int __rs_push_slow(struct rs_percpu_list *lists, int cpu, struct rs_node *node,
		   int *cpu_used);
int __rs_pop_slow(struct rs_percpu_list *lists, int cpu, struct rs_node **node,
		  int *cpu_used);
int __rs_current_cpu_slow(void);
int __rs_nr_cpus_slow(void);

/*
 * The sequences' text, shared by these inline copies and the library's
 * own (src/seq_kernel.c, src/seq_rseq.c). The RS_BREAK_* switches break
 * them on purpose for tests/check-breakage; never define them otherwise.
 */
#define __RS_STR1(x) #x
#define __RS_STR(x) __RS_STR1(x)
#define __RS_KERNEL_SIGNATURE 0x5253b90f
#define __RS_RSEQ_SIGNATURE 0x53053053

/*
 * restartable_sequences(): the operands [counter] and [pc] are the
 * thread's registered words as memory operands, [start] the counter value
 * of step 1 (whose CPU names the data):
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
 * may touch rcx.
 */
#ifdef RS_BREAK_KERNEL_NO_STEP4
#define __RS_KSEQ_STEP4 ""
#else
#define __RS_KSEQ_STEP4 "cmpq %[start], %[counter]\n\t" "jne 5f\n\t"
#endif
#ifdef RS_BREAK_KERNEL_NO_SIGNATURE
#define __RS_KSEQ_SIGNATURE ""
#else
#define __RS_KSEQ_SIGNATURE ".long " __RS_STR(__RS_KERNEL_SIGNATURE) "\n"
#endif

#define __RS_KSEQ_BEGIN							\
	".pushsection __restartable_seq_table, \"aw\"\n\t"		\
	".balign 8\n\t"							\
	".quad 1f, 3f, 4f, 1\n\t"					\
	".popsection\n"							\
	"1:\tleaq 4f(%%rip), %%rcx\n\t"					\
	"leaq 3f(%%rip), %%rax\n\t"					\
	"movq %%rax, %[pc]\n\t"						\
	__RS_KSEQ_STEP4

#define __RS_KSEQ_END							\
	"3:\tmovq $0, %[pc]\n\t"					\
	".pushsection .text.unlikely.restartable, \"ax\"\n"		\
	"5:\tmovq $0, %[pc]\n\t"					\
	"jmp %l[aborted]\n\t"						\
	__RS_KSEQ_SIGNATURE						\
	"4:\tjmp %l[aborted]\n\t"					\
	".popsection\n\t"

/* For sequences that leave through label 6 when the data is not as expected. */
#define __RS_KSEQ_END_FAILED						\
	__RS_KSEQ_END							\
	".pushsection .text.unlikely.restartable, \"ax\"\n"		\
	"6:\tmovq $0, %[pc]\n\t"					\
	"jmp %l[failed]\n\t"						\
	".popsection\n\t"

#define __RS_KSEQ_OPERANDS(counter_word, pc_word, start)		\
	[counter] "m" (counter_word), [pc] "m" (pc_word), [start] "r" (start)

#define __RS_KSEQ_CLOBBERS "rax", "rcx", "memory", "cc"

/*
 * rseq(): a struct rseq_cs descriptor (version 0, flags 0, start 1,
 * length 3 - 1, abort 4) in __rseq_cs, then
 *
 *	    rseq->rseq_cs = &descriptor
 *	1:  if (rseq->cpu_id != cpu) goto abort 4         the data's CPU
 *	    <work>, <commit store>
 *	3:
 *
 * The kernel clears rseq_cs itself, lazily, so the exits need no store.
 * The abort label follows the C library's signature (RSEQ_SIG of x86).
 */
#ifdef RS_BREAK_RSEQ_NO_CPU_CHECK
#define __RS_RSEQ_CPU_CHECK ""
#else
#define __RS_RSEQ_CPU_CHECK "cmpl %[cpu], %c[cpu_id](%[rs])\n\t" "jne 4f\n\t"
#endif

#define __RS_RSEQ_BEGIN							\
	".pushsection __rseq_cs, \"aw\"\n\t"				\
	".balign 32\n"							\
	"9:\t.long 0, 0\n\t"						\
	".quad 1f, 3f - 1f, 4f\n\t"					\
	".popsection\n\t"						\
	".pushsection __restartable_seq_table, \"aw\"\n\t"		\
	".balign 8\n\t"							\
	".quad 1f, 3f, 4f, 2\n\t"					\
	".popsection\n\t"						\
	"leaq 9b(%%rip), %%rax\n\t"					\
	"movq %%rax, %c[rseq_cs](%[rs])\n"				\
	"1:\t" __RS_RSEQ_CPU_CHECK

#define __RS_RSEQ_END							\
	"3:\n\t"							\
	".pushsection .text.unlikely.restartable, \"ax\"\n\t"		\
	".long " __RS_STR(__RS_RSEQ_SIGNATURE) "\n"			\
	"4:\tjmp %l[aborted]\n\t"					\
	".popsection\n\t"

#define __RS_RSEQ_OPERANDS(area, cpu_value)				\
	[rs] "r" (area), [cpu] "r" (cpu_value),				\
	[cpu_id] "i" (offsetof(struct __rs_rseq_area, cpu_id)),		\
	[rseq_cs] "i" (offsetof(struct __rs_rseq_area, rseq_cs))

#define __RS_RSEQ_CLOBBERS "rax", "memory", "cc"

/* The works, the same in both mechanisms; the last store commits. */
#define __RS_ASM_ADD "addq %[inc], (%[v])\n\t"
#define __RS_ASM_CMPSTORE(fail)						\
	"cmpq %[expect], (%[v])\n\t"					\
	"jne " fail "\n\t"						\
	"movq %[newv], (%[v])\n\t"
/* node is still private to the caller: its next pointer is no commit. */
#define __RS_ASM_PUSH							\
	"movq (%[head]), %%rax\n\t"					\
	"movq %%rax, %c[next](%[node])\n\t"				\
	"movq %[node], (%[head])\n\t"
/* *node is the caller's variable: storing to it is no commit either. */
#define __RS_ASM_POP(fail)						\
	"movq (%[head]), %%rax\n\t"					\
	"testq %%rax, %%rax\n\t"					\
	"jz " fail "\n\t"						\
	"movq %%rax, (%[node])\n\t"					\
	"movq %c[next](%%rax), %%rax\n\t"				\
	"movq %%rax, (%[head])\n\t"

#if !defined(RS_NO_INLINE) && defined(__x86_64__) && defined(__GNUC__) && \
	defined(__OPTIMIZE__)

#define __RS_INLINE extern __inline__					\
	__attribute__((__gnu_inline__, __always_inline__))
#define __RS_LIKELY(x) __builtin_expect(!!(x), 1)

/*
 * "asm inline" (GCC 9): count each sequence as one instruction when
 * deciding what to inline; its table and abort lines are not code on the
 * path, and without it GCC keeps the caller's loop body out of line.
 */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ < 9)
#define __RS_ASM_GOTO __asm__ goto
#else
#define __RS_ASM_GOTO __asm__ __inline__ goto
#endif

/* A CPU field of __rs_words below rs_nr_cpus(): kernel mode, thread set up. */
__RS_INLINE uint32_t __rs_kernel_cpu(uint64_t *start)
{
	*start = __atomic_load_n(&__rs_words.counter, __ATOMIC_RELAXED);
	return (uint32_t)*start;
}

/*
 * A plain read, so that it can be a compare's memory operand: it is set
 * before this thread's words were registered, and never changes after.
 */
__RS_INLINE uint32_t __rs_kernel_cpus(void)
{
	return (uint32_t)__rs_process.nr_cpus;
}

/*
 * Does the caller's cpu name the current one, c? RS_CPU_CURRENT, when it
 * is a constant, costs nothing; -1 at run time never equals a c below the
 * limit and takes the library's path, which handles it.
 */
#define __RS_CPU_IS_CURRENT(cpu)					\
	(__builtin_constant_p(cpu) && (cpu) == RS_CPU_CURRENT)
#define __RS_CPU_MATCHES(cpu, c)					\
	(__RS_CPU_IS_CURRENT(cpu) || (uint32_t)(cpu) == (c))
/*
 * The slot, once the CPU matched: indexed by the caller's own cpu when it
 * gave one, so that the compiler can share the address with the caller's
 * (as in "cpu = rs_current_cpu(); v = words[cpu].value; rs_cmpstore()").
 */
#define __RS_SLOT(array, cpu, c)					\
	(__RS_CPU_IS_CURRENT(cpu) ? &(array)[c] : &(array)[cpu])

__RS_INLINE int rs_nr_cpus(void)
{
	int n = __atomic_load_n(&__rs_process.nr_cpus, __ATOMIC_RELAXED);

	return __RS_LIKELY(n) ? n : __rs_nr_cpus_slow();
}

__RS_INLINE int rs_current_cpu(void)
{
	uint64_t start;
	uint32_t c = __rs_kernel_cpu(&start);


	if (__RS_LIKELY(c < __rs_kernel_cpus()))
		return c;
	return __rs_current_cpu_slow();
}

__RS_INLINE int rs_add(struct rs_percpu_word *words, int cpu, intptr_t inc,
		       int *cpu_used)
{
	uint32_t c;
	uint64_t start;
	intptr_t *v;

	c = __rs_kernel_cpu(&start);
	if (__RS_LIKELY(c < __rs_kernel_cpus() && __RS_CPU_MATCHES(cpu, c))) {
		v = &__RS_SLOT(words, cpu, c)->value;
		if (cpu_used)
			*cpu_used = c;
		__RS_ASM_GOTO(__RS_KSEQ_BEGIN __RS_ASM_ADD __RS_KSEQ_END
			     : /* no outputs */
			     : __RS_KSEQ_OPERANDS(__rs_words.counter,
						  __rs_words.post_commit, start),
			       [v] "r" (v), [inc] "er" (inc)
			     : __RS_KSEQ_CLOBBERS
			     : aborted);
		return RS_DONE;
	}
	return __rs_add_slow(words, cpu, inc, cpu_used);
aborted:
	return RS_ABORTED;
}

__RS_INLINE int rs_cmpstore(struct rs_percpu_word *words, int cpu,
			    intptr_t expect, intptr_t newv)
{
	uint32_t c;
	uint64_t start;
	intptr_t *v;

	c = __rs_kernel_cpu(&start);
	if (__RS_LIKELY(__RS_CPU_MATCHES(cpu, c) && c < __rs_kernel_cpus())) {
		v = &__RS_SLOT(words, cpu, c)->value;
		__RS_ASM_GOTO(__RS_KSEQ_BEGIN __RS_ASM_CMPSTORE("6f")
			     __RS_KSEQ_END_FAILED
			     : /* no outputs */
			     : __RS_KSEQ_OPERANDS(__rs_words.counter,
						  __rs_words.post_commit, start),
			       [v] "r" (v), [expect] "r" (expect),
			       [newv] "r" (newv)
			     : __RS_KSEQ_CLOBBERS
			     : aborted, failed);
		return RS_DONE;
	}
	return __rs_cmpstore_slow(words, cpu, expect, newv);
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

__RS_INLINE int rs_push(struct rs_percpu_list *lists, int cpu,
			struct rs_node *node, int *cpu_used)
{
	struct rs_node **head;
	uint32_t c;
	uint64_t start;

	c = __rs_kernel_cpu(&start);
	if (__RS_LIKELY(c < __rs_kernel_cpus() && __RS_CPU_MATCHES(cpu, c))) {
		head = &__RS_SLOT(lists, cpu, c)->head;
		if (cpu_used)
			*cpu_used = c;
		__RS_ASM_GOTO(__RS_KSEQ_BEGIN __RS_ASM_PUSH __RS_KSEQ_END
			     : /* no outputs */
			     : __RS_KSEQ_OPERANDS(__rs_words.counter,
						  __rs_words.post_commit, start),
			       [head] "r" (head), [node] "r" (node),
			       [next] "i" (offsetof(struct rs_node, next))
			     : __RS_KSEQ_CLOBBERS
			     : aborted);
		return RS_DONE;
	}
	return __rs_push_slow(lists, cpu, node, cpu_used);
aborted:
	return RS_ABORTED;
}

__RS_INLINE int rs_pop(struct rs_percpu_list *lists, int cpu,
		       struct rs_node **node, int *cpu_used)
{
	struct rs_node **head;
	uint32_t c;
	uint64_t start;

	c = __rs_kernel_cpu(&start);
	if (__RS_LIKELY(c < __rs_kernel_cpus() && __RS_CPU_MATCHES(cpu, c))) {
		head = &__RS_SLOT(lists, cpu, c)->head;
		if (cpu_used)
			*cpu_used = c;
		__RS_ASM_GOTO(__RS_KSEQ_BEGIN __RS_ASM_POP("6f")
			     __RS_KSEQ_END_FAILED
			     : /* no outputs */
			     : __RS_KSEQ_OPERANDS(__rs_words.counter,
						  __rs_words.post_commit, start),
			       [head] "r" (head), [node] "r" (node),
			       [next] "i" (offsetof(struct rs_node, next))
			     : __RS_KSEQ_CLOBBERS
			     : aborted, failed);
		return RS_DONE;
	}
	return __rs_pop_slow(lists, cpu, node, cpu_used);
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}

#undef __RS_ASM_GOTO
#undef __RS_SLOT
#undef __RS_CPU_MATCHES
#undef __RS_CPU_IS_CURRENT
#undef __RS_LIKELY
#undef __RS_INLINE

#endif /* inline paths */

#endif /* RESTARTABLE_INLINE_H */

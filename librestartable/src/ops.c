// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The public operations: pick the slot, then run the sequence of the
 * process's mode. RS_MODE_ATOMIC has no sequences: it works on the slot of
 * sched_getcpu() (or the caller's CPU) with atomic instructions, and with
 * the slot's lock where a sequence would make more than one store. The
 * modes must not be mixed on the same data; a process has only one.
 *
 * Callers compiled with restartable.h run the common case of rs_add(),
 * rs_cmpstore(), rs_push(), rs_pop() and rs_current_cpu() inline
 * (restartable_inline.h) and come here, through the __rs_*_slow aliases,
 * for the rest: first use, words another component registered, atomic
 * mode, bad input. These are the complete operations either way.
 */
#define _GNU_SOURCE
#define RS_NO_INLINE	/* this file defines the functions */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include "internal.h"

/* rs_slot() found the slot: run the sequence. */
#define RS_GO (-1000)

/* User-space pointers fit in 48 bits; the cache keeps a tag above them. */
#define RS_CACHE_PTR_BITS 48
#define RS_CACHE_PTR_MASK ((1ULL << RS_CACHE_PTR_BITS) - 1)

extern const struct rs_seq_entry __start___restartable_seq_table[] RS_HIDDEN;
extern const struct rs_seq_entry __stop___restartable_seq_table[] RS_HIDDEN;

/*
 * Which CPU's slot the operation works on (*slot), and the counter value
 * of step 1 (*start, RS_MODE_KERNEL): RS_GO, or the result to return. A
 * caller's CPU other than the thread's aborts: only the thread on that CPU
 * may run a sequence on its data. Atomic mode can work on any slot.
 */
static int rs_slot(const struct rs_thread_state *t, int cpu, uint64_t *start,
		   uint32_t *slot)
{
	uint32_t current;
	int nr = rs_cpus;	/* decided: the thread is set up */

	if (cpu < RS_CPU_CURRENT || cpu >= nr)
		return -EINVAL;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		if (!t->counter)
			return RS_UNAVAILABLE;
		*start = __atomic_load_n(t->counter, __ATOMIC_RELAXED);
		current = rs_counter_cpu(*start);
		if (current == RESTARTABLE_SEQ_CPU_UNREGISTERED)
			return RS_UNAVAILABLE;
		break;
	case RS_MODE_RSEQ:
		if (!t->rseq)
			return RS_UNAVAILABLE;
		current = __atomic_load_n(&t->rseq->cpu_id_start, __ATOMIC_RELAXED);
		break;
	default:
		if (cpu != RS_CPU_CURRENT) {
			*slot = cpu;
			return RS_GO;
		}
		current = sched_getcpu();
		break;
	}
	if (current >= (uint32_t)nr)
		return RS_UNAVAILABLE;
	if (cpu != RS_CPU_CURRENT && current != (uint32_t)cpu)
		return RS_ABORTED;
	*slot = current;
	return RS_GO;
}

/*
 * RS_MODE_RSEQ, the common case, first: a CPU in the C library's area of
 * the thread below rseq_cpus (0 in the other modes; written after
 * rseq_offset, so read before it) is all rs_slot() would check: the C
 * library registered the thread (cpu_id is negative until then) and the
 * CPU is in range. 1 and *area, *slot set if the sequence can run now on
 * cpu's slot.
 */
static inline int rs_rseq_fast(int cpu, struct __rs_rseq_area **area,
			       uint32_t *slot)
{
	uint32_t n = __atomic_load_n(&__rs_process.rseq_cpus, __ATOMIC_ACQUIRE);
	char *tp;

	if (!n)
		return 0;
	__asm__("movq %%fs:0, %0" : "=r" (tp));
	*area = (struct __rs_rseq_area *)(tp + __rs_process.rseq_offset);
	*slot = __atomic_load_n(&(*area)->cpu_id, __ATOMIC_RELAXED);
	return *slot < n && (cpu == RS_CPU_CURRENT || (uint32_t)cpu == *slot);
}

/* The slot lock of atomic mode, for operations of more than one store. */
static void rs_lock(uint32_t *lock)
{
	unsigned int spins = 0;

	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE)) {
		/* The holder may be preempted: let it run. */
		if (++spins % 64 == 0)
			sched_yield();
		else
			__builtin_ia32_pause();
	}
}

static void rs_unlock(uint32_t *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

static int rs_atomic_cmpstore(intptr_t *v, intptr_t expect, intptr_t newv)
{
	return __atomic_compare_exchange_n(v, &expect, newv, 0, __ATOMIC_SEQ_CST,
					   __ATOMIC_RELAXED) ?
		       RS_DONE : RS_COMPARE_FAILED;
}

/*
 * Each public operation below tries rs_rseq_fast() and otherwise calls
 * its *_full() variant, the complete operation, kept out of line so that
 * the fast path needs no stack frame (GCC would set up the full one's
 * before the first test).
 */
static __attribute__((noinline)) int
rs_add_full(struct rs_percpu_word *words, int cpu, intptr_t inc, int *cpu_used)
{
	struct rs_thread_state *t;
	uint64_t start = 0;
	uint32_t c;
	int ret;

	t = rs_thread();
	ret = rs_slot(t, cpu, &start, &c);

	if (ret != RS_GO)
		return ret;
	if (cpu_used)
		*cpu_used = c;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		return rs_k_add(t->counter, t->post_commit, start,
				&words[c].value, inc);
	case RS_MODE_RSEQ:
		return rs_r_add(t->rseq, c, &words[c].value, inc);
	default:
#ifdef RS_BREAK_ATOMIC_PLAIN
		words[c].value = *(volatile intptr_t *)&words[c].value + inc;
#else
		__atomic_fetch_add(&words[c].value, inc, __ATOMIC_RELAXED);
#endif
		return RS_DONE;
	}
}

int rs_add(struct rs_percpu_word *words, int cpu, intptr_t inc, int *cpu_used)
{
	struct __rs_rseq_area *rs;
	uint32_t rc;

	if (__builtin_expect(rs_rseq_fast(cpu, &rs, &rc), 1)) {
		if (cpu_used)
			*cpu_used = rc;
		return rs_r_add(rs, rc, &words[rc].value, inc);
	}
	return rs_add_full(words, cpu, inc, cpu_used);
}

static __attribute__((noinline)) int
rs_cmpstore_full(struct rs_percpu_word *words, int cpu, intptr_t expect,
		intptr_t newv)
{
	struct rs_thread_state *t;
	uint64_t start = 0;
	uint32_t c;
	int ret;

	t = rs_thread();
	ret = rs_slot(t, cpu, &start, &c);

	if (ret != RS_GO)
		return ret;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		return rs_k_cmpstore(t->counter, t->post_commit, start,
				     &words[c].value, expect, newv);
	case RS_MODE_RSEQ:
		return rs_r_cmpstore(t->rseq, c, &words[c].value, expect, newv);
	default:
		return rs_atomic_cmpstore(&words[c].value, expect, newv);
	}
}

int rs_cmpstore(struct rs_percpu_word *words, int cpu, intptr_t expect,
		intptr_t newv)
{
	struct __rs_rseq_area *rs;
	uint32_t rc;

	if (__builtin_expect(rs_rseq_fast(cpu, &rs, &rc), 1)) {
		return rs_r_cmpstore(rs, rc, &words[rc].value, expect, newv);
	}
	return rs_cmpstore_full(words, cpu, expect, newv);
}

static __attribute__((noinline)) int
rs_push_full(struct rs_percpu_list *lists, int cpu, struct rs_node *node,
	    int *cpu_used)
{
	struct rs_thread_state *t;
	struct rs_node *old;
	uint64_t start = 0;
	uint32_t c;
	int ret;

	t = rs_thread();
	ret = rs_slot(t, cpu, &start, &c);

	if (ret != RS_GO)
		return ret;
	if (cpu_used)
		*cpu_used = c;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		return rs_k_push(t->counter, t->post_commit, start,
				 &lists[c].head, node);
	case RS_MODE_RSEQ:
		return rs_r_push(t->rseq, c, &lists[c].head, node);
	default:
		/* Pushes need no lock: a pop cannot be fooled by one. */
		old = __atomic_load_n(&lists[c].head, __ATOMIC_RELAXED);
		do
			node->next = old;
		while (!__atomic_compare_exchange_n(&lists[c].head, &old, node, 1,
						    __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED));
		return RS_DONE;
	}
}

int rs_push(struct rs_percpu_list *lists, int cpu, struct rs_node *node,
	    int *cpu_used)
{
	struct __rs_rseq_area *rs;
	uint32_t rc;

	if (__builtin_expect(rs_rseq_fast(cpu, &rs, &rc), 1)) {
		if (cpu_used)
			*cpu_used = rc;
		return rs_r_push(rs, rc, &lists[rc].head, node);
	}
	return rs_push_full(lists, cpu, node, cpu_used);
}

/*
 * Atomic pop: the lock keeps other pops out, so the first node cannot be
 * popped and pushed back between our load and our compare-exchange (ABA);
 * concurrent pushes only make the compare-exchange retry.
 */
static int rs_atomic_pop(struct rs_percpu_list *list, struct rs_node **node)
{
	struct rs_node *first;

	rs_lock(&list->lock);
	first = __atomic_load_n(&list->head, __ATOMIC_ACQUIRE);
	do {
		if (!first) {
			rs_unlock(&list->lock);
			return RS_COMPARE_FAILED;
		}
	} while (!__atomic_compare_exchange_n(&list->head, &first, first->next, 1,
					      __ATOMIC_ACQUIRE,
					      __ATOMIC_ACQUIRE));
	rs_unlock(&list->lock);
	*node = first;
	return RS_DONE;
}

static __attribute__((noinline)) int
rs_pop_full(struct rs_percpu_list *lists, int cpu, struct rs_node **node,
	   int *cpu_used)
{
	struct rs_thread_state *t;
	uint64_t start = 0;
	uint32_t c;
	int ret;

	t = rs_thread();
	ret = rs_slot(t, cpu, &start, &c);

	if (ret != RS_GO)
		return ret;
	if (cpu_used)
		*cpu_used = c;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		return rs_k_pop(t->counter, t->post_commit, start,
				&lists[c].head, node);
	case RS_MODE_RSEQ:
		return rs_r_pop(t->rseq, c, &lists[c].head, node);
	default:
		return rs_atomic_pop(&lists[c], node);
	}
}

int rs_pop(struct rs_percpu_list *lists, int cpu, struct rs_node **node,
	   int *cpu_used)
{
	struct __rs_rseq_area *rs;
	uint32_t rc;

	if (__builtin_expect(rs_rseq_fast(cpu, &rs, &rc), 1)) {
		if (cpu_used)
			*cpu_used = rc;
		return rs_r_pop(rs, rc, &lists[rc].head, node);
	}
	return rs_pop_full(lists, cpu, node, cpu_used);
}

int rs_cmp_store2(struct rs_percpu_word *words, int cpu, intptr_t expect,
		  intptr_t *other, intptr_t other_value, intptr_t newv)
{
	struct rs_thread_state *t = rs_thread();
	uint64_t start = 0;
	uint32_t c;
	int ret = rs_slot(t, cpu, &start, &c);

	if (ret != RS_GO)
		return ret;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		return rs_k_cmp_store2(t->counter, t->post_commit, start,
				       &words[c].value, expect, other,
				       other_value, newv);
	case RS_MODE_RSEQ:
		return rs_r_cmp_store2(t->rseq, c, &words[c].value, expect,
				       other, other_value, newv);
	default:
		/* The lock keeps other stores to *other out until the commit. */
		rs_lock(&words[c].lock);
		ret = RS_COMPARE_FAILED;
		if (__atomic_load_n(&words[c].value, __ATOMIC_RELAXED) == expect) {
			__atomic_store_n(other, other_value, __ATOMIC_RELAXED);
			ret = rs_atomic_cmpstore(&words[c].value, expect, newv);
		}
		rs_unlock(&words[c].lock);
		return ret;
	}
}

int rs_memcpy_commit(struct rs_percpu_word *words, int cpu, intptr_t expect,
		     void *dst, const void *src, size_t len, intptr_t newv)
{
	struct rs_thread_state *t = rs_thread();
	uint64_t start = 0;
	uint32_t c;
	int ret;

	/* A sequence must stay short: the longer, the likelier an abort. */
	if (len > RS_MEMCPY_MAX)
		return -EINVAL;
	ret = rs_slot(t, cpu, &start, &c);
	if (ret != RS_GO)
		return ret;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		return rs_k_memcpy_commit(t->counter, t->post_commit, start,
					  &words[c].value, expect, dst, src,
					  len, newv);
	case RS_MODE_RSEQ:
		return rs_r_memcpy_commit(t->rseq, c, &words[c].value, expect,
					  dst, src, len, newv);
	default:
		rs_lock(&words[c].lock);
		ret = RS_COMPARE_FAILED;
		if (__atomic_load_n(&words[c].value, __ATOMIC_RELAXED) == expect) {
			memcpy(dst, src, len);
			ret = rs_atomic_cmpstore(&words[c].value, expect, newv);
		}
		rs_unlock(&words[c].lock);
		return ret;
	}
}

/* The CPU the thread runs on, or -1 (errno ENOTSUP) if nobody says. */
int rs_current_cpu(void)
{
	struct __rs_rseq_area *rs;
	struct rs_thread_state *t;
	uint64_t start;
	uint32_t c;
	int ret;

	if (rs_rseq_fast(RS_CPU_CURRENT, &rs, &c))
		return c;
	t = rs_thread();
	ret = rs_slot(t, RS_CPU_CURRENT, &start, &c);

	if (ret != RS_GO) {
		errno = ENOTSUP;
		return -1;
	}
	return c;
}

/*
 * The event count of the thread's counter. It only promises to change on
 * an event; only restartable_sequences() keeps one.
 */
int rs_event_count(uint32_t *count)
{
	struct rs_thread_state *t = rs_thread();
	uint64_t counter;

	if (rs_process_mode != RS_MODE_KERNEL || !t->counter)
		return RS_UNAVAILABLE;
	counter = __atomic_load_n(t->counter, __ATOMIC_RELAXED);
	if (rs_counter_cpu(counter) == RESTARTABLE_SEQ_CPU_UNREGISTERED)
		return RS_UNAVAILABLE;
	*count = rs_counter_events(counter);
	return RS_DONE;
}

/*
 * The per-CPU cache. rs_cache_get() reads the slot of a CPU and the
 * thread's counter; as long as the counter has not changed, no other
 * thread has run on this CPU in user mode since (the caller must make no
 * system call in between: a thread that sleeps in one and comes back to
 * the same CPU keeps its count). Without restartable_sequences() the slot's
 * 16-bit tag, bumped by every replacement, stands in for the count.
 */
int rs_cache_get(struct rs_percpu_cache *cache, int cpu, void **ptr,
		 struct rs_cache_token *token)
{
	struct rs_thread_state *t = rs_thread();
	uint64_t start = 0;
	uint32_t c;
	int ret = rs_slot(t, cpu, &start, &c);

	if (ret != RS_GO)
		return ret;
	token->slot = &cache[c];
	token->counter = start;
	token->word = __atomic_load_n(&cache[c].word, __ATOMIC_ACQUIRE);
	token->cpu = c;
	*ptr = (void *)(uintptr_t)(token->word & RS_CACHE_PTR_MASK);
	return RS_DONE;
}

/* 1 if nothing happened on the token's CPU since rs_cache_get(), else 0. */
int rs_cache_unchanged(const struct rs_cache_token *token)
{
	struct rs_thread_state *t = rs_thread();

	if (rs_process_mode == RS_MODE_KERNEL)
		return t->counter &&
		       __atomic_load_n(t->counter, __ATOMIC_RELAXED) == token->counter;
	return __atomic_load_n(&token->slot->word, __ATOMIC_ACQUIRE) == token->word;
}

/* Replace the cached pointer if nothing happened since rs_cache_get(). */
int rs_cache_replace(const struct rs_cache_token *token, void *ptr)
{
	struct rs_thread_state *t = rs_thread();
	intptr_t *word = (intptr_t *)&token->slot->word;
	uint64_t newv;

	if ((uintptr_t)ptr & ~RS_CACHE_PTR_MASK)
		return -EINVAL;
	newv = (((token->word >> RS_CACHE_PTR_BITS) + 1) << RS_CACHE_PTR_BITS) |
	       (uintptr_t)ptr;
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		if (!t->counter)
			return RS_UNAVAILABLE;
		/* The sequence starts from the counter rs_cache_get() saw. */
		return rs_k_cmpstore(t->counter, t->post_commit, token->counter,
				     word, token->word, newv);
	case RS_MODE_RSEQ:
		if (!t->rseq)
			return RS_UNAVAILABLE;
		return rs_r_cmpstore(t->rseq, token->cpu, word, token->word, newv);
	default:
		return rs_atomic_cmpstore(word, token->word, newv);
	}
}

/* What the inline paths of restartable_inline.h call when they cannot. */
#define RS_SLOW_ALIAS(name) \
	extern __typeof__(name) __##name##_slow __attribute__((alias(#name)))
RS_SLOW_ALIAS(rs_add);
RS_SLOW_ALIAS(rs_cmpstore);
RS_SLOW_ALIAS(rs_push);
RS_SLOW_ALIAS(rs_pop);
RS_SLOW_ALIAS(rs_current_cpu);

size_t rs_seq_table(const struct rs_seq_entry **entries)
{
	*entries = __start___restartable_seq_table;
	return __stop___restartable_seq_table - __start___restartable_seq_table;
}

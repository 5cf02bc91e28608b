/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * librestartable: per-CPU, lock-free operations on top of the
 * restartable_sequences() system call (x86-64), with fallbacks on kernels
 * that lack it. See restartable(3) and README.md. rs_add(), rs_cmpstore(),
 * rs_push(), rs_pop(), rs_current_cpu() and rs_nr_cpus() run inline in
 * their common case (restartable_inline.h); the symbols stay the library's.
 */
#ifndef RESTARTABLE_H
#define RESTARTABLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What an operation did. Negative values are -errno (bad arguments). */
enum rs_result {
	RS_DONE = 0,		/* the commit store happened */
	RS_COMPARE_FAILED = 1,	/* the data was not as expected: nothing stored */
	RS_ABORTED = 2,		/* an event or another CPU: nothing committed, retry */
	RS_UNAVAILABLE = 3,	/* this thread cannot run per-CPU sequences */
};

/* How this process runs its sequences, decided once, at first use. */
enum rs_mode {
	RS_MODE_NONE = 0,	/* not decided yet (never returned by rs_mode()) */
	RS_MODE_KERNEL = 1,	/* restartable_sequences() */
	RS_MODE_RSEQ = 2,	/* rseq() through the C library's registration */
	RS_MODE_ATOMIC = 3,	/* atomic instructions on the slot of sched_getcpu() */
};

/* Who registered the calling thread's words (rs_thread_owner()). */
enum rs_owner {
	RS_OWNER_NONE = 0,	/* no restartable_sequences() registration in use */
	RS_OWNER_SELF = 1,	/* this copy of the library registered them */
	RS_OWNER_OTHER = 2,	/* someone else did; this copy only uses them */
};

/* Pass as cpu to operate on the CPU the thread runs on. */
#define RS_CPU_CURRENT (-1)

/*
 * Per-CPU data: arrays of rs_nr_cpus() elements, one cache line each.
 * The lock word is used in RS_MODE_ATOMIC only; initialize with zeroes.
 */
struct rs_percpu_word {
	intptr_t value;
	uint32_t lock;
} __attribute__((aligned(64)));

struct rs_node {
	struct rs_node *next;
};

struct rs_percpu_list {
	struct rs_node *head;
	uint32_t lock;
} __attribute__((aligned(64)));

/* A cached pointer and a 16-bit tag, (tag << 48) | pointer. */
struct rs_percpu_cache {
	uint64_t word;
	uint32_t lock;
} __attribute__((aligned(64)));

/* What rs_cache_get() saw; rs_cache_unchanged/replace check it. */
struct rs_cache_token {
	struct rs_percpu_cache *slot;	/* the CPU's element of the cache */
	uint64_t counter;		/* the event counter (RS_MODE_KERNEL) */
	uint64_t word;			/* the slot's word */
	int cpu;
};

/* Longest copy rs_memcpy_commit() makes inside one sequence. */
#define RS_MEMCPY_MAX 4096

/* Mode, CPUs, thread registration. */
enum rs_mode rs_mode(void);
const char *rs_mode_name(enum rs_mode mode);
int rs_nr_cpus(void);
int rs_current_cpu(void);
int rs_event_count(uint32_t *count);
int rs_thread_register(void);
int rs_thread_unregister(void);
enum rs_owner rs_thread_owner(void);

/* Operations: each returns an enum rs_result or -errno. */
int rs_add(struct rs_percpu_word *words, int cpu, intptr_t inc, int *cpu_used);
int rs_cmpstore(struct rs_percpu_word *words, int cpu, intptr_t expect,
		intptr_t newv);
int rs_push(struct rs_percpu_list *lists, int cpu, struct rs_node *node,
	    int *cpu_used);
int rs_pop(struct rs_percpu_list *lists, int cpu, struct rs_node **node,
	   int *cpu_used);
int rs_cmp_store2(struct rs_percpu_word *words, int cpu, intptr_t expect,
		  intptr_t *other, intptr_t other_value, intptr_t newv);
int rs_memcpy_commit(struct rs_percpu_word *words, int cpu, intptr_t expect,
		     void *dst, const void *src, size_t len, intptr_t newv);

/* A per-CPU pointer cache validated by the event count. */
int rs_cache_get(struct rs_percpu_cache *cache, int cpu, void **ptr,
		 struct rs_cache_token *token);
int rs_cache_unchanged(const struct rs_cache_token *token);
int rs_cache_replace(const struct rs_cache_token *token, void *ptr);

/* A per-CPU allocator of fixed-size objects. */
struct rs_pool;

struct rs_pool_stats {
	size_t objects;		/* how many the pool holds */
	size_t allocated;	/* handed out and not freed */
	size_t shared_free;	/* on the shared free list */
	size_t percpu_free;	/* on the per-CPU free lists */
};

struct rs_pool *rs_pool_create(size_t object_size, size_t nr_objects);
void rs_pool_destroy(struct rs_pool *pool);
void *rs_pool_alloc(struct rs_pool *pool, size_t size);
int rs_pool_free(struct rs_pool *pool, void *object);
int rs_pool_drain(struct rs_pool *pool, int cpu);
int rs_pool_stats(struct rs_pool *pool, struct rs_pool_stats *stats);

/* The sequence table: one entry per sequence of this copy of the library. */
struct rs_seq_entry {
	uint64_t start;		/* first instruction of the sequence */
	uint64_t post_commit;	/* just past the commit store */
	uint64_t abort;		/* abort address, after its signature */
	uint64_t kind;		/* RS_SEQ_KIND_* */
};

#define RS_SEQ_KIND_KERNEL 1	/* restartable_sequences() sequence */
#define RS_SEQ_KIND_RSEQ 2	/* rseq() critical section */

size_t rs_seq_table(const struct rs_seq_entry **entries);

/*
 * Where the calling thread's registered words are, without a system call:
 * set by the library that registered or found them, NULL otherwise. Other
 * components declare these weak and read them (see restartable(3)).
 */
extern __thread uint64_t *__restartable_seq_counter;
extern __thread uint64_t *__restartable_seq_post_commit;

/* The hot operations' inline fast paths (RS_NO_INLINE: none). */
#include "restartable_inline.h"

#ifdef __cplusplus
}
#endif

#endif /* RESTARTABLE_H */

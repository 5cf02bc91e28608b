// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A per-CPU allocator of fixed-size objects.
 *
 * The objects live in one mapping. Free objects sit on a per-CPU list
 * (rs_push/rs_pop, inline sequences from restartable_inline.h) or on the
 * shared list under the pool's mutex. A per-CPU count of each list paces
 * the drains; in kernel mode the push or pop updates it in its own
 * sequence, elsewhere an rs_add() follows. An allocation pops from its CPU's
 * list, refilling it with a batch from the shared list when it is empty; a
 * free pushes onto its CPU's list and, when that list has grown past a
 * limit, moves a batch back to the shared list.
 *
 * The fast paths make no division and no locked instruction:
 *
 *  - "is this one of the pool's objects": a range check and a
 *    divisibility check by multiplication (the inverse of the object
 *    size's odd part, rotated by its power of two);
 *  - "is it free": a free object holds, after its list pointer, a mark,
 *    the pool's key xor the object's address; an allocation checks the
 *    mark of what it popped (a free list holding anything else means
 *    something wrote to a freed object: abort) and clears it; a free
 *    refuses an object that holds its mark (a double free) and writes it.
 *    The mark is checked and written outside the push sequence, so two
 *    frees of one object at the same time, in two threads, can both pass:
 *    the object is then listed twice and handed out twice.
 *
 * RESTARTABLE_POOL_DEBUG=1 at rs_pool_create() adds the exact check: a
 * bitmap of allocated objects, changed with atomic instructions, refuses
 * every double free, concurrent ones too, at the cost of two locked
 * instructions per allocation and free.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/types.h>
#include "internal.h"

#define RS_POOL_MAGIC 0x72736c70U	/* tells a pool from other memory */
#define RS_POOL_BATCH 32		/* objects moved per refill or drain */
#define RS_POOL_PERCPU_MAX 128		/* a CPU list drains above this */
#define RS_POOL_ALIGN 16		/* also room for the list pointer and mark */

#define rs_unlikely(x) __builtin_expect(!!(x), 0)
#define rs_likely(x) __builtin_expect(!!(x), 1)

/* What a free object starts with. */
struct rs_pool_free_object {
	struct rs_node node;
	uintptr_t mark;		/* key ^ address while free, 0 once handed out */
};

struct rs_pool {
	uint32_t magic;
	unsigned int shift;			/* trailing zero bits of object_size */
	size_t object_size;
	uintptr_t key;				/* odd: a mark is never 0 */
	char *base;
	size_t map_size;
	uint64_t inverse;			/* of object_size >> shift, mod 2^64 */
	uint64_t max_index;			/* UINT64_MAX / object_size */
	struct rs_percpu_list *percpu_free;
	struct rs_percpu_word *percpu_count;	/* about the list lengths */
	uint64_t *allocated;			/* RESTARTABLE_POOL_DEBUG: a bit per object */
	size_t nr_objects;
	int nr_cpus;
	pthread_mutex_t lock;			/* protects shared_free */
	struct rs_node *shared_free;
};

static int rs_pool_valid(const struct rs_pool *pool)
{
	return pool && pool->magic == RS_POOL_MAGIC;
}

/* The inverse of an odd number mod 2^64 (Newton: each step doubles the bits). */
static uint64_t rs_inverse(uint64_t odd)
{
	uint64_t x = odd;	/* right to 3 bits: odd * odd == 1 mod 8 */
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - odd * x;
	return x;
}

static uintptr_t rs_pool_new_key(const struct rs_pool *pool)
{
	uintptr_t key;
	struct timespec ts;

	/* Not a secret: only unlikely to be in an object by chance. */
	if (getrandom(&key, sizeof(key), GRND_NONBLOCK) != sizeof(key)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		key = ((uintptr_t)pool ^ (uintptr_t)ts.tv_nsec) * 0x9e3779b97f4a7c15ULL;
	}
	return key | 1;
}

static int rs_pool_debug_wanted(void)
{
	const char *debug = secure_getenv("RESTARTABLE_POOL_DEBUG");

	return debug && *debug && strcmp(debug, "0");
}

struct rs_pool *rs_pool_create(size_t object_size, size_t nr_objects)
{
	struct rs_pool *pool;
	size_t i, size;
	int debug = rs_pool_debug_wanted();

	if (object_size == 0 || nr_objects == 0 || object_size > SIZE_MAX / 2) {
		errno = EINVAL;
		return NULL;
	}
	size = (object_size + RS_POOL_ALIGN - 1) & ~(size_t)(RS_POOL_ALIGN - 1);
	if (nr_objects > SIZE_MAX / size) {
		errno = EINVAL;
		return NULL;
	}
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->nr_cpus = rs_nr_cpus();
	pool->object_size = size;
	pool->shift = __builtin_ctzll(size);
	pool->inverse = rs_inverse(size >> pool->shift);
	pool->max_index = UINT64_MAX / size;
	pool->key = rs_pool_new_key(pool);
	pool->nr_objects = nr_objects;
	pool->map_size = size * nr_objects;
	pool->base = mmap(NULL, pool->map_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (debug)
		pool->allocated = calloc((nr_objects + 63) / 64, sizeof(uint64_t));
	pool->percpu_free = aligned_alloc(64, pool->nr_cpus * sizeof(*pool->percpu_free));
	pool->percpu_count = aligned_alloc(64, pool->nr_cpus * sizeof(*pool->percpu_count));
	if (pool->base == MAP_FAILED || (debug && !pool->allocated) ||
	    !pool->percpu_free || !pool->percpu_count) {
		if (pool->base != MAP_FAILED)
			munmap(pool->base, pool->map_size);
		free(pool->allocated);
		free(pool->percpu_free);
		free(pool->percpu_count);
		free(pool);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < (size_t)pool->nr_cpus; i++) {
		pool->percpu_free[i] = (struct rs_percpu_list){ 0 };
		pool->percpu_count[i] = (struct rs_percpu_word){ 0 };
	}
	pthread_mutex_init(&pool->lock, NULL);
	/* Object 0 ends up first on the shared list. */
	for (i = nr_objects; i-- > 0;) {
		struct rs_pool_free_object *obj =
			(struct rs_pool_free_object *)(pool->base + i * size);

		obj->mark = pool->key ^ (uintptr_t)obj;
		obj->node.next = pool->shared_free;
		pool->shared_free = &obj->node;
	}
	pool->magic = RS_POOL_MAGIC;
	return pool;
}

/* Only when no thread uses the pool any more. */
void rs_pool_destroy(struct rs_pool *pool)
{
	if (!rs_pool_valid(pool))
		return;
	pool->magic = 0;
	munmap(pool->base, pool->map_size);
	pthread_mutex_destroy(&pool->lock);
	free(pool->allocated);
	free(pool->percpu_free);
	free(pool->percpu_count);
	free(pool);
}

/*
 * Index of object, or -1 if it is not the start of one of the pool's: the
 * offset times the inverse of the size's odd part, rotated right by the
 * size's power of two, is the quotient when the size divides the offset
 * and above UINT64_MAX / size when it does not.
 */
static inline ssize_t rs_pool_index(const struct rs_pool *pool, const void *object)
{
	uint64_t offset = (uintptr_t)object - (uintptr_t)pool->base;
	uint64_t q = offset * pool->inverse;

	q = (q >> pool->shift) | (q << ((64 - pool->shift) & 63));
	if (offset >= pool->map_size || q > pool->max_index)
		return -1;
	return q;
}

static inline uintptr_t rs_pool_mark_of(const struct rs_pool *pool,
					const void *object)
{
	return pool->key ^ (uintptr_t)object;
}

/* RESTARTABLE_POOL_DEBUG: flip the bit from !set to set; -1 if it already was. */
static int rs_pool_bit(struct rs_pool *pool, size_t index, int set)
{
	uint64_t bit = 1ULL << (index % 64);
	uint64_t *word = &pool->allocated[index / 64];
	uint64_t old;

	if (set)
		old = __atomic_fetch_or(word, bit, __ATOMIC_ACQ_REL);
	else
		old = __atomic_fetch_and(word, ~bit, __ATOMIC_ACQ_REL);
	return !!(old & bit) == set ? -1 : 0;
}

/* Take up to max objects off the shared list, as a NULL-ended chain. */
static struct rs_node *rs_pool_take_shared(struct rs_pool *pool, size_t max)
{
	struct rs_node *first, *last;
	size_t n = 1;

	pthread_mutex_lock(&pool->lock);
	first = pool->shared_free;
	if (first) {
		for (last = first; n < max && last->next; n++)
			last = last->next;
		pool->shared_free = last->next;
		last->next = NULL;
	}
	pthread_mutex_unlock(&pool->lock);
	return first;
}

static void rs_pool_give_shared(struct rs_pool *pool, struct rs_node *node)
{
	pthread_mutex_lock(&pool->lock);
	node->next = pool->shared_free;
	pool->shared_free = node;
	pthread_mutex_unlock(&pool->lock);
}

#if !defined(RS_NO_INLINE) && defined(__x86_64__) && defined(__GNUC__) && \
	defined(__OPTIMIZE__)
/*
 * Kernel mode, this copy's words registered: the push or pop and the
 * count's update in one sequence, the count's add or sub before the
 * commit (the store to the list head). An abort between the two leaves
 * the count one off; it only paces drains. RS_COMPARE_FAILED from the
 * pop: the list is empty. -1: not kernel mode or not set up, the caller
 * takes the library's operations.
 */
#ifdef RS_BREAK_POOL_COMMIT_FIRST
/* Broken on purpose (tests/check-breakage): the count after the commit. */
#define RS_POOL_COUNT_BEFORE_COMMIT(count_op) ""
#define RS_POOL_COUNT_AFTER_COMMIT(count_op) count_op
#else
#define RS_POOL_COUNT_BEFORE_COMMIT(count_op) count_op
#define RS_POOL_COUNT_AFTER_COMMIT(count_op) ""
#endif

#define RS_POOL_COUNTED_OPERANDS(pool, c, node, start)			\
	__RS_KSEQ_OPERANDS(__rs_words.counter, __rs_words.post_commit, start), \
	[head] "r" (&(pool)->percpu_free[c].head), [node] "r" (node),	\
	[count] "r" (&(pool)->percpu_count[c].value),			\
	[next] "i" (offsetof(struct rs_node, next))

static inline __attribute__((always_inline)) int
rs_pool_push_counted(struct rs_pool *pool, struct rs_node *node, int *cpu)
{
	uint64_t start;
	uint32_t c = __rs_kernel_cpu(&start);

	if (rs_unlikely(c >= __rs_kernel_cpus()))
		return -1;
	*cpu = c;
	__asm__ __inline__ goto(__RS_KSEQ_BEGIN
		RS_POOL_COUNT_BEFORE_COMMIT("addq $1, (%[count])\n\t")
		__RS_ASM_PUSH
		RS_POOL_COUNT_AFTER_COMMIT("addq $1, (%[count])\n\t")
		__RS_KSEQ_END
		: /* no outputs */
		: RS_POOL_COUNTED_OPERANDS(pool, c, node, start)
		: __RS_KSEQ_CLOBBERS
		: aborted);
	return RS_DONE;
aborted:
	return RS_ABORTED;
}

static inline __attribute__((always_inline)) int
rs_pool_pop_counted(struct rs_pool *pool, struct rs_node **node)
{
	uint64_t start;
	uint32_t c = __rs_kernel_cpu(&start);

	if (rs_unlikely(c >= __rs_kernel_cpus()))
		return -1;
	__asm__ __inline__ goto(__RS_KSEQ_BEGIN
		"movq (%[head]), %%rax\n\t"
		"testq %%rax, %%rax\n\t"
		"jz 6f\n\t"
		"movq %%rax, (%[node])\n\t"
		"movq %c[next](%%rax), %%rax\n\t"
		RS_POOL_COUNT_BEFORE_COMMIT("subq $1, (%[count])\n\t")
		"movq %%rax, (%[head])\n\t"
		RS_POOL_COUNT_AFTER_COMMIT("subq $1, (%[count])\n\t")
		__RS_KSEQ_END_FAILED
		: /* no outputs */
		: RS_POOL_COUNTED_OPERANDS(pool, c, node, start)
		: __RS_KSEQ_CLOBBERS
		: aborted, failed);
	return RS_DONE;
aborted:
	return RS_ABORTED;
failed:
	return RS_COMPARE_FAILED;
}
#else
static inline int rs_pool_push_counted(struct rs_pool *pool, struct rs_node *node, int *cpu)
{
	(void)pool, (void)node, (void)cpu;
	return -1;
}

static inline int rs_pool_pop_counted(struct rs_pool *pool, struct rs_node **node)
{
	(void)pool, (void)node;
	return -1;
}
#endif

/* The library's push, then the count: every mode but the above. */
static inline __attribute__((always_inline)) int
rs_pool_push_then_count(struct rs_pool *pool, struct rs_node *node, int *cpu)
{
	int ret;

	do
		ret = rs_push(pool->percpu_free, RS_CPU_CURRENT, node, cpu);
	while (ret == RS_ABORTED);
	/* The count may miss an update after an abort: it only paces drains. */
	if (ret == RS_DONE)
		rs_add(pool->percpu_count, *cpu, 1, NULL);
	return ret;
}

/*
 * Push onto the thread's CPU list, else (no sequences) the shared one.
 * Inline: in rs_pool_free() it is the fast path.
 */
static inline __attribute__((always_inline)) void
rs_pool_put(struct rs_pool *pool, struct rs_node *node)
{
	int cpu = 0, ret;

	do
		ret = rs_pool_push_counted(pool, node, &cpu);
	while (rs_unlikely(ret == RS_ABORTED));
	if (rs_unlikely(ret != RS_DONE) &&
	    rs_pool_push_then_count(pool, node, &cpu) != RS_DONE) {
		rs_pool_give_shared(pool, node);
		return;
	}
	if (rs_unlikely(__atomic_load_n(&pool->percpu_count[cpu].value,
					__ATOMIC_RELAXED) > RS_POOL_PERCPU_MAX))
		rs_pool_drain(pool, cpu);
}

/* Refill the thread's CPU list; the first object goes to the caller. */
static struct rs_node *rs_pool_refill(struct rs_pool *pool)
{
	struct rs_node *chain = rs_pool_take_shared(pool, RS_POOL_BATCH);
	struct rs_node *first = chain, *next;

	if (!chain)
		return NULL;
	for (chain = chain->next; chain; chain = next) {
		next = chain->next;
		rs_pool_put(pool, chain);
	}
	return first;
}

/* The CPU's list could not give an object (ret): the shared list. */
static __attribute__((noinline)) struct rs_node *
rs_pool_alloc_slow(struct rs_pool *pool, int ret)
{
	int cpu = 0;
	struct rs_node *node = NULL;

	while (ret == RS_ABORTED)
		ret = rs_pool_pop_counted(pool, &node);
	if (ret == -1) {
		do
			ret = rs_pop(pool->percpu_free, RS_CPU_CURRENT, &node, &cpu);
		while (ret == RS_ABORTED);
		if (ret == RS_DONE)
			rs_add(pool->percpu_count, cpu, -1, NULL);
	}
	if (ret == RS_DONE)
		return node;
	/* Empty or no sequences. */
	node = ret == RS_COMPARE_FAILED ? rs_pool_refill(pool) :
					  rs_pool_take_shared(pool, 1);
	if (!node)
		errno = ENOMEM;
	return node;
}

static __attribute__((noinline, noreturn)) void
rs_pool_corrupted(struct rs_pool *pool, void *object)
{
	/*
	 * A free list held a foreign or an allocated object: something wrote
	 * to a freed object. Do not spread the damage.
	 */
	fprintf(stderr, "librestartable: pool %p is corrupted at %p\n",
		(void *)pool, object);
	abort();
}

/* malloc-like: an object of at least size bytes, or NULL and errno. */
void *rs_pool_alloc(struct rs_pool *pool, size_t size)
{
	struct rs_pool_free_object *obj;
	struct rs_node *node;
	int cpu = 0, ret;

	if (rs_unlikely(!rs_pool_valid(pool) || size > pool->object_size)) {
		errno = EINVAL;
		return NULL;
	}
	ret = rs_pool_pop_counted(pool, &node);
	if (rs_unlikely(ret == -1)) {
		/* The library's pop, then the count: every other mode */
		ret = rs_pop(pool->percpu_free, RS_CPU_CURRENT, &node, &cpu);
		if (rs_likely(ret == RS_DONE))
			rs_add(pool->percpu_count, cpu, -1, NULL);
	}
	if (rs_unlikely(ret != RS_DONE)) {
		node = rs_pool_alloc_slow(pool, ret);
		if (!node)
			return NULL;
	}
	obj = (struct rs_pool_free_object *)node;
	if (rs_unlikely(obj->mark != rs_pool_mark_of(pool, obj)))
		rs_pool_corrupted(pool, obj);
	if (rs_unlikely(pool->allocated)) {
		ssize_t index = rs_pool_index(pool, obj);

		if (index < 0 || rs_pool_bit(pool, index, 1))
			rs_pool_corrupted(pool, obj);
	}
	obj->mark = 0;
	return obj;
}

/* 0, or -1 and errno EINVAL: not a pool, not an object of it, not allocated. */
int rs_pool_free(struct rs_pool *pool, void *object)
{
	struct rs_pool_free_object *obj = object;
	ssize_t index;

	if (rs_unlikely(!rs_pool_valid(pool)))
		goto invalid;
	index = rs_pool_index(pool, object);
	if (rs_unlikely(index < 0 || obj->mark == rs_pool_mark_of(pool, obj)))
		goto invalid;
	if (rs_unlikely(pool->allocated) && rs_pool_bit(pool, index, 0))
		goto invalid;
	obj->mark = rs_pool_mark_of(pool, obj);
	rs_pool_put(pool, &obj->node);
	return 0;
invalid:
	errno = EINVAL;
	return -1;
}

/*
 * Move up to a batch of objects from the list of cpu to the shared list:
 * the number moved, or -1 and errno EINVAL (no pool, cpu out of range).
 * Sequences only reach the list of the CPU the thread runs on: elsewhere
 * this moves nothing (0), except in RS_MODE_ATOMIC.
 */
int rs_pool_drain(struct rs_pool *pool, int cpu)
{
	struct rs_node *node;
	int moved = 0;

	if (!rs_pool_valid(pool) || cpu < 0 || cpu >= pool->nr_cpus) {
		errno = EINVAL;
		return -1;
	}
	while (moved < RS_POOL_BATCH &&
	       rs_pop(pool->percpu_free, cpu, &node, NULL) == RS_DONE) {
		rs_pool_give_shared(pool, node);
		moved++;
	}
	if (moved)
		rs_add(pool->percpu_count, cpu, -moved, NULL);
	return moved;
}

/*
 * Length of a free list; *corrupt set if it holds an object that is not
 * the pool's, not marked free, already seen on a list (seen: a bit per
 * object) or allocated by the debug bitmap.
 */
static size_t rs_pool_walk(const struct rs_pool *pool, const struct rs_node *node,
			   uint64_t *seen, int *corrupt)
{
	const struct rs_pool_free_object *obj;
	size_t n = 0;
	ssize_t index;

	for (; node; node = node->next, n++) {
		obj = (const struct rs_pool_free_object *)node;
		index = rs_pool_index(pool, node);
		if (index < 0 || obj->mark != rs_pool_mark_of(pool, obj) ||
		    seen[index / 64] & (1ULL << (index % 64)) ||
		    (pool->allocated &&
		     pool->allocated[index / 64] & (1ULL << (index % 64)))) {
			*corrupt = 1;
			break;
		}
		seen[index / 64] |= 1ULL << (index % 64);
	}
	return n;
}

/*
 * Count every object, walking the lists: only when no thread uses the
 * pool. 0, or -1 and errno EINVAL if the pool is not one, ENOMEM, or
 * EUCLEAN if a list holds an object twice, or one not free; with
 * RESTARTABLE_POOL_DEBUG, also if the lists and the bitmap disagree (an
 * object lost). Without it, allocated is what the lists do not hold.
 */
int rs_pool_stats(struct rs_pool *pool, struct rs_pool_stats *stats)
{
	uint64_t *seen;
	size_t i, words;
	int cpu, corrupt = 0;

	if (!rs_pool_valid(pool) || !stats) {
		errno = EINVAL;
		return -1;
	}
	words = (pool->nr_objects + 63) / 64;
	seen = calloc(words, sizeof(*seen));
	if (!seen) {
		errno = ENOMEM;
		return -1;
	}
	*stats = (struct rs_pool_stats){ .objects = pool->nr_objects };
	pthread_mutex_lock(&pool->lock);
	stats->shared_free = rs_pool_walk(pool, pool->shared_free, seen, &corrupt);
	pthread_mutex_unlock(&pool->lock);
	for (cpu = 0; cpu < pool->nr_cpus; cpu++)
		stats->percpu_free += rs_pool_walk(pool, pool->percpu_free[cpu].head,
						   seen, &corrupt);
	free(seen);
	if (pool->allocated) {
		for (i = 0; i < words; i++)
			stats->allocated += __builtin_popcountll(pool->allocated[i]);
	} else if (!corrupt) {
		stats->allocated = pool->nr_objects - stats->shared_free -
				   stats->percpu_free;
	}
	if (corrupt || stats->allocated + stats->shared_free +
			       stats->percpu_free != pool->nr_objects) {
		errno = EUCLEAN;
		return -1;
	}
	return 0;
}

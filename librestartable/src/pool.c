// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A per-CPU allocator of fixed-size objects.
 *
 * The objects live in one mapping. Free objects sit on a per-CPU list
 * (rs_push/rs_pop) or on the shared list under the pool's mutex. An
 * allocation pops from its CPU's list, refilling it with a batch from the
 * shared list when it is empty; a free pushes onto its CPU's list and,
 * when that list has grown past a limit, moves a batch back to the shared
 * list. A bitmap of allocated objects, changed atomically, turns a double
 * or foreign free into EINVAL instead of a corrupted list.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/types.h>
#include "internal.h"

#define RS_POOL_MAGIC 0x72736c70U	/* tells a pool from other memory */
#define RS_POOL_BATCH 32		/* objects moved per refill or drain */
#define RS_POOL_PERCPU_MAX 128		/* a CPU list drains above this */
#define RS_POOL_ALIGN 16

struct rs_pool {
	uint32_t magic;
	int nr_cpus;
	size_t object_size;
	size_t nr_objects;
	char *base;
	size_t map_size;
	uint64_t *allocated;			/* one bit per object */
	struct rs_percpu_list *percpu_free;
	struct rs_percpu_word *percpu_count;	/* about the list lengths */
	pthread_mutex_t lock;			/* protects shared_free */
	struct rs_node *shared_free;
};

static int rs_pool_valid(const struct rs_pool *pool)
{
	return pool && pool->magic == RS_POOL_MAGIC;
}

struct rs_pool *rs_pool_create(size_t object_size, size_t nr_objects)
{
	struct rs_pool *pool;
	size_t i, size;

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
	pool->nr_objects = nr_objects;
	pool->map_size = size * nr_objects;
	pool->base = mmap(NULL, pool->map_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pool->allocated = calloc((nr_objects + 63) / 64, sizeof(uint64_t));
	pool->percpu_free = aligned_alloc(64, pool->nr_cpus * sizeof(*pool->percpu_free));
	pool->percpu_count = aligned_alloc(64, pool->nr_cpus * sizeof(*pool->percpu_count));
	if (pool->base == MAP_FAILED || !pool->allocated || !pool->percpu_free ||
	    !pool->percpu_count) {
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
		struct rs_node *node = (struct rs_node *)(pool->base + i * size);

		node->next = pool->shared_free;
		pool->shared_free = node;
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

/* Index of object, or -1 if it is not the start of one of the pool's. */
static ssize_t rs_pool_index(const struct rs_pool *pool, const void *object)
{
	uintptr_t offset = (uintptr_t)object - (uintptr_t)pool->base;

	if ((uintptr_t)object < (uintptr_t)pool->base ||
	    offset >= pool->map_size || offset % pool->object_size)
		return -1;
	return offset / pool->object_size;
}

/* Flip the object's bit from !set to set: 0, or -1 if it already was. */
static int rs_pool_mark(struct rs_pool *pool, size_t index, int set)
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

/* Push onto the thread's CPU list, else (no sequences) the shared one. */
static void rs_pool_put(struct rs_pool *pool, struct rs_node *node)
{
	int cpu = 0, ret;

	do
		ret = rs_push(pool->percpu_free, RS_CPU_CURRENT, node, &cpu);
	while (ret == RS_ABORTED);
	if (ret != RS_DONE) {
		rs_pool_give_shared(pool, node);
		return;
	}
	/* The count may miss an update after an abort: it only paces drains. */
	if (rs_add(pool->percpu_count, cpu, 1, NULL) == RS_DONE &&
	    __atomic_load_n(&pool->percpu_count[cpu].value, __ATOMIC_RELAXED) >
		    RS_POOL_PERCPU_MAX)
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

/* malloc-like: an object of at least size bytes, or NULL and errno. */
void *rs_pool_alloc(struct rs_pool *pool, size_t size)
{
	struct rs_node *node = NULL;
	ssize_t index;
	int cpu = 0, ret;

	if (!rs_pool_valid(pool) || size > pool->object_size) {
		errno = EINVAL;
		return NULL;
	}
	for (;;) {
		ret = rs_pop(pool->percpu_free, RS_CPU_CURRENT, &node, &cpu);
		if (ret == RS_DONE) {
			rs_add(pool->percpu_count, cpu, -1, NULL);
			break;
		}
		if (ret == RS_ABORTED)
			continue;
		/* Empty or no sequences: the shared list. */
		node = ret == RS_COMPARE_FAILED ? rs_pool_refill(pool) :
						  rs_pool_take_shared(pool, 1);
		if (!node) {
			errno = ENOMEM;
			return NULL;
		}
		break;
	}
	index = rs_pool_index(pool, node);
	if (index < 0 || rs_pool_mark(pool, index, 1)) {
		/*
		 * A free list held a foreign or an allocated object: something
		 * wrote to a freed object. Do not spread the damage.
		 */
		fprintf(stderr, "librestartable: pool %p is corrupted at %p\n",
			(void *)pool, (void *)node);
		abort();
	}
	return node;
}

/* 0, or -1 and errno EINVAL: not a pool, not an object of it, not allocated. */
int rs_pool_free(struct rs_pool *pool, void *object)
{
	ssize_t index;

	if (!rs_pool_valid(pool)) {
		errno = EINVAL;
		return -1;
	}
	index = rs_pool_index(pool, object);
	if (index < 0 || rs_pool_mark(pool, index, 0)) {
		errno = EINVAL;
		return -1;
	}
	rs_pool_put(pool, object);
	return 0;
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
 * the pool's or is allocated, or is longer than the pool (a cycle).
 */
static size_t rs_pool_walk(const struct rs_pool *pool,
			   const struct rs_node *node, int *corrupt)
{
	size_t n = 0;
	ssize_t index;

	for (; node; node = node->next, n++) {
		index = rs_pool_index(pool, node);
		if (n >= pool->nr_objects || index < 0 ||
		    pool->allocated[index / 64] & (1ULL << (index % 64))) {
			*corrupt = 1;
			break;
		}
	}
	return n;
}

/*
 * Count every object, walking the lists: only when no thread uses the
 * pool. 0, or -1 and errno EINVAL if the pool is not one, or EUCLEAN if
 * the lists and the bitmap disagree (an object lost or listed twice).
 */
int rs_pool_stats(struct rs_pool *pool, struct rs_pool_stats *stats)
{
	size_t i;
	int cpu, corrupt = 0;

	if (!rs_pool_valid(pool) || !stats) {
		errno = EINVAL;
		return -1;
	}
	*stats = (struct rs_pool_stats){ .objects = pool->nr_objects };
	for (i = 0; i < (pool->nr_objects + 63) / 64; i++)
		stats->allocated += __builtin_popcountll(pool->allocated[i]);
	pthread_mutex_lock(&pool->lock);
	stats->shared_free = rs_pool_walk(pool, pool->shared_free, &corrupt);
	pthread_mutex_unlock(&pool->lock);
	for (cpu = 0; cpu < pool->nr_cpus; cpu++)
		stats->percpu_free += rs_pool_walk(pool, pool->percpu_free[cpu].head,
						   &corrupt);
	if (corrupt || stats->allocated + stats->shared_free +
			       stats->percpu_free != pool->nr_objects) {
		errno = EUCLEAN;
		return -1;
	}
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the two halves of librestartable_bench share: the clock and the
 * row table. librestartable_bench.c measures; librestartable_bench_hw.c
 * holds the rows built on the selftests' hand-written sequences
 * (restartable_seq.h, rseq.h), whose names clash with the library's
 * header, so the two never meet in one source file.
 */
#ifndef LIBRESTARTABLE_BENCH_H
#define LIBRESTARTABLE_BENCH_H

#include <stdint.h>
#include <time.h>

/* 1: RDTSC counts guest instructions (QEMU -icount); 0: CLOCK_MONOTONIC ns. */
extern int bench_icount;

static inline uint64_t bench_stamp(void)
{
	struct timespec ts;
	uint32_t lo, hi;

	if (bench_icount) {
		/* Under icount RDTSC ends its translation block: exact. */
		asm volatile("lfence\n\trdtsc" : "=a" (lo), "=d" (hi) : : "memory");
		return ((uint64_t)hi << 32) | lo;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * A row's loop: warm operations, then n between two stamps; returns the
 * ticks of the n and adds the retries (aborted or raced sequences) of
 * the n to *retries. The operation is inlined into the loop, as a caller
 * would have it; the loop's own increment, compare and branch are in
 * every row.
 */
typedef uint64_t (*bench_loop_fn)(long warm, long n, long *retries);

struct bench_row {
	const char *op;		/* add, cmpstore, list, alloc */
	const char *impl;	/* hw-rs, hw-rseq, lock, ..., lib-kernel */
	const char *label;	/* what the row measures, for the table */
	bench_loop_fn loop;
	void (*thread_init)(void);	/* in every thread that runs it */
	int one_thread;		/* not measured at several threads */
};

#define BENCH_LOOP(name, op)						\
static __attribute__((__noinline__)) uint64_t name(long warm, long n, \
					       long *retries)		\
{									\
	uint64_t t0;							\
	long i, r = 0;							\
									\
	for (i = 0; i < warm; i++)					\
		op(&r);							\
	r = 0;								\
	t0 = bench_stamp();						\
	for (i = 0; i < n; i++)						\
		op(&r);							\
	t0 = bench_stamp() - t0;					\
	*retries += r;							\
	return t0;							\
}

/* librestartable_bench_hw.c */
extern const struct bench_row hw_rows[];
extern const int hw_nr_rows;
int hw_setup(void);	/* 1 if the kernel has restartable_sequences() */

#endif /* LIBRESTARTABLE_BENCH_H */

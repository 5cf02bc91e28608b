// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program that uses an installed librestartable through pkg-config
 * alone: cc hits.c $(pkg-config --cflags --libs librestartable)
 * It counts per-CPU hits from two threads and checks the total.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <restartable.h>

#define HITS 100000

static struct rs_percpu_word *hits;

static void *hit(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < HITS; i++)
		while (rs_add(hits, RS_CPU_CURRENT, 1, NULL) == RS_ABORTED)
			;
	return NULL;
}

int main(void)
{
	size_t size = rs_nr_cpus() * sizeof(*hits);
	pthread_t threads[2];
	long total = 0;
	int cpu;

	hits = aligned_alloc(64, size);
	if (!hits)
		return 1;
	memset(hits, 0, size);
	for (cpu = 0; cpu < 2; cpu++)
		pthread_create(&threads[cpu], NULL, hit, NULL);
	for (cpu = 0; cpu < 2; cpu++)
		pthread_join(threads[cpu], NULL);
	for (cpu = 0; cpu < rs_nr_cpus(); cpu++)
		total += hits[cpu].value;
	printf("mode %s: %ld hits of %d\n", rs_mode_name(rs_mode()), total, 2 * HITS);
	return total == 2 * HITS ? 0 : 1;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
// The public header compiles as C++ and links from C++ (extern "C"), its
// inline fast paths (restartable_inline.h) included.
#include <restartable.h>

int main()
{
	static struct rs_percpu_word words[1024];
	static struct rs_percpu_list lists[1024];
	struct rs_node node, *popped = 0;
	int cpu = 0, ret;

	if (rs_nr_cpus() > 1024)
		return 0;
	if (rs_add(words, RS_CPU_CURRENT, 1, &cpu) < 0)
		return 1;
	do {
		cpu = rs_current_cpu();
		if (cpu < 0)
			return 0;	/* RS_UNAVAILABLE in this thread */
		ret = rs_cmpstore(words, cpu, words[cpu].value, words[cpu].value + 1);
	} while (ret == RS_ABORTED || ret == RS_COMPARE_FAILED);
	if (ret < 0)
		return 1;
	while ((ret = rs_push(lists, RS_CPU_CURRENT, &node, &cpu)) == RS_ABORTED)
		;
	if (ret != RS_DONE)
		return ret == RS_UNAVAILABLE ? 0 : 1;
	while ((ret = rs_pop(lists, RS_CPU_CURRENT, &popped, 0)) == RS_ABORTED)
		;
	/* Migrated in between: the node is on the other CPU's list. */
	return ret == RS_DONE ? popped != &node : ret != RS_COMPARE_FAILED;
}

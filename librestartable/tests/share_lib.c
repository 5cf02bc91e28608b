// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A library with its own copy of librestartable.a, built twice
 * (libshare_a.so, libshare_b.so) for t_share. Its map exports only the
 * functions below and the library's exported words pointers.
 */
#include "restartable.h"

struct share_report {
	int result;		/* of the add */
	int mode;		/* enum rs_mode */
	int owner;		/* enum rs_owner */
	uint64_t *published;	/* __restartable_seq_counter, as this copy sees it */
};

void share_use(struct rs_percpu_word *words, struct share_report *report)
{
	do
		report->result = rs_add(words, RS_CPU_CURRENT, 1, NULL);
	while (report->result == RS_ABORTED);
	report->mode = rs_mode();
	report->owner = rs_thread_owner();
	report->published = __restartable_seq_counter;
}

int share_release(void)
{
	return rs_thread_unregister();
}

int share_register(void)
{
	return rs_thread_register();
}

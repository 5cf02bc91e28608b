// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The process's mode and each thread's registration.
 *
 * Ownership (README.md, "Who owns the registration", says the same): a
 * thread has at most one restartable_sequences() registration, and every
 * user of the thread shares its two words. This copy of the library looks
 * for them before it registers its own:
 *
 *  1. __restartable_seq_counter/__restartable_seq_post_commit, exported
 *     thread-local pointers: set by whoever registered or found the words;
 *     every copy whose references bind to the same definition (the first
 *     one in the global scope) finds them without a system call;
 *  2. restartable_sequences(RESTARTABLE_SEQ_FLAG_QUERY): the kernel names
 *     the words of a registration nobody published where we look;
 *  3. only then it registers words of its own thread-local storage, and
 *     owns that registration: only the owner unregisters (the kernel drops
 *     it at thread exit and exec). A copy that registered makes itself
 *     undeletable (RTLD_NODELETE), so that a dlclose() cannot unmap words
 *     the kernel keeps writing and other copies keep using.
 */
#define _GNU_SOURCE
#define RS_NO_INLINE	/* this file defines rs_nr_cpus() */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include "internal.h"

/*
 * A static program has no dynamic loader to pin this copy against: no
 * _DYNAMIC, and maybe no dladdr() or dlopen() either.
 */
#pragma weak dladdr
#pragma weak dlopen
extern const char _DYNAMIC[] __attribute__((weak));

/*
 * The words this copy registers when nobody else has; see above. Exported
 * for the inline paths (restartable_inline.h): their CPU field is a valid
 * CPU only while this copy's registration is the thread's, and then the
 * process is in kernel mode and the thread set up.
 */
__thread struct __rs_words __rs_words
	__attribute__((tls_model("initial-exec"))) = {
	.counter = RESTARTABLE_SEQ_CPU_UNREGISTERED,
};

/* Written by rs_decide_mode() only, before and as it decides. */
struct __rs_process __rs_process;

__thread struct rs_thread_state rs_self;
__thread uint64_t *__restartable_seq_counter;
__thread uint64_t *__restartable_seq_post_commit;

enum rs_mode rs_process_mode;
static pthread_once_t rs_once = PTHREAD_ONCE_INIT;

static long sys_restartable_sequences(unsigned int flags, uint64_t *counter,
				      uint64_t *post_commit)
{
	return syscall(__NR_restartable_sequences, flags, counter, post_commit);
}

/* Keep this copy mapped: its thread-local words are registered. */
static void rs_pin_this_copy(void)
{
	static int pinned;
	Dl_info info;

#ifdef RS_BREAK_NO_PIN
	return;
#endif
	if (__atomic_exchange_n(&pinned, 1, __ATOMIC_RELAXED) || !_DYNAMIC ||
	    !dladdr || !dlopen)
		return;
	if (dladdr((void *)rs_pin_this_copy, &info) && info.dli_fname)
		dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void rs_use_words(struct rs_thread_state *t, uint64_t *counter,
			 uint64_t *post_commit)
{
	t->counter = counter;
	t->post_commit = post_commit;
	t->owner = counter == &__rs_words.counter ? RS_OWNER_SELF :
						      RS_OWNER_OTHER;
#ifndef RS_BREAK_NO_EXPORT
	__restartable_seq_counter = counter;
	__restartable_seq_post_commit = post_commit;
#endif
}

static int rs_words_registered(const uint64_t *counter)
{
	uint64_t value = __atomic_load_n(counter, __ATOMIC_RELAXED);

	return rs_counter_cpu(value) != RESTARTABLE_SEQ_CPU_UNREGISTERED;
}

/* Find or make the calling thread's registration: 0 or -errno. */
static int rs_kernel_attach(struct rs_thread_state *t)
{
	uint64_t query_counter, query_post_commit;

#ifndef RS_BREAK_NO_QUERY
	if (__restartable_seq_counter && __restartable_seq_post_commit &&
	    rs_words_registered(__restartable_seq_counter)) {
		rs_use_words(t, __restartable_seq_counter,
			     __restartable_seq_post_commit);
		return 0;
	}
	if (sys_restartable_sequences(RESTARTABLE_SEQ_FLAG_QUERY, &query_counter,
				      &query_post_commit) >= 0) {
		rs_use_words(t, (uint64_t *)(uintptr_t)query_counter,
			     (uint64_t *)(uintptr_t)query_post_commit);
		return 0;
	}
	if (errno != ENOENT)
		return -errno;
#else
	(void)query_counter;
	(void)query_post_commit;
#endif
	/* Nobody keeps the counter until the kernel says otherwise. */
	__rs_words.counter |= RESTARTABLE_SEQ_CPU_UNREGISTERED;
	__rs_words.post_commit = 0;
	if (sys_restartable_sequences(0, &__rs_words.counter,
				      &__rs_words.post_commit) < 0)
		return -errno;
	rs_pin_this_copy();
	rs_use_words(t, &__rs_words.counter, &__rs_words.post_commit);
	return 0;
}

/* The C library's rseq area of the calling thread, if it registered one. */
static struct __rs_rseq_area *rs_glibc_rseq_area(void)
{
	struct __rs_rseq_area *area;
	char *tp;

#ifndef RS_BREAK_IGNORE_RSEQ_STATE
	if (__rseq_size == 0)
		return NULL;
#endif
	__asm__("movq %%fs:0, %0" : "=r"(tp));
	area = (struct __rs_rseq_area *)(tp + __rseq_offset);
#ifndef RS_BREAK_IGNORE_RSEQ_STATE
	/* RSEQ_CPU_ID_UNINITIALIZED or RSEQ_CPU_ID_REGISTRATION_FAILED */
	if ((int32_t)__atomic_load_n(&area->cpu_id, __ATOMIC_RELAXED) < 0)
		return NULL;
#endif
	return area;
}

/* Possible CPUs, from sysfs: CPU numbers can exceed the online count. */
static int rs_count_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	int first, last, max = -1;
	char sep;

	if (f) {
		/* "0-3,8-11" or "0": the last number is the highest CPU. */
		while (fscanf(f, "%d", &first) == 1) {
			last = first;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-' &&
			    fscanf(f, "%d", &last) == 1)
				fscanf(f, "%c", &sep);
			if (last > max)
				max = last;
		}
		fclose(f);
	}
	return max >= 0 ? max + 1 : get_nprocs_conf();
}

/* RESTARTABLE_MODE=rseq or =atomic caps the mode (tests, debugging). */
static enum rs_mode rs_mode_cap(void)
{
	const char *cap = secure_getenv("RESTARTABLE_MODE");

#ifdef RS_BREAK_IGNORE_MODE_ENV
	cap = NULL;
#endif
	if (cap && !strcmp(cap, "atomic"))
		return RS_MODE_ATOMIC;
	if (cap && !strcmp(cap, "rseq"))
		return RS_MODE_RSEQ;
	return RS_MODE_KERNEL;
}

#ifdef RS_BREAK_FORK_RESET
static void rs_forget_thread(void)
{
	memset(&rs_self, 0, sizeof(rs_self));
	__restartable_seq_counter = NULL;
	__restartable_seq_post_commit = NULL;
}
#endif

/*
 * Decide the mode once per process, on the first thread that needs it:
 * restartable_sequences() unless the kernel lacks it (ENOSYS) or a seccomp
 * filter denies it (EPERM), else the C library's rseq(), else atomics.
 */
void rs_decide_mode(void)
{
	enum rs_mode cap = rs_mode_cap();
	int err = -ENOSYS;

	__atomic_store_n(&rs_cpus, rs_count_cpus(), __ATOMIC_RELAXED);
#ifdef RS_BREAK_FORK_RESET
	pthread_atfork(NULL, NULL, rs_forget_thread);
#endif
	if (cap == RS_MODE_KERNEL) {
		err = rs_kernel_attach(&rs_self);
#ifdef RS_BREAK_EPERM_FATAL
		if (err == -EPERM)
			err = 0;
#endif
	}
	if (cap == RS_MODE_KERNEL && err != -ENOSYS && err != -EPERM)
		rs_process_mode = RS_MODE_KERNEL;
	else if (cap <= RS_MODE_RSEQ && rs_glibc_rseq_area())
		rs_process_mode = RS_MODE_RSEQ;
	else
		rs_process_mode = RS_MODE_ATOMIC;
	/*
	 * The inline rseq() paths read rseq_cpus first (acquire) and only then
	 * the offset: release it last. In the other modes it stays 0, which
	 * sends those paths to the library.
	 */
	if (rs_process_mode == RS_MODE_RSEQ) {
		__rs_process.rseq_offset = __rseq_offset;
		__atomic_store_n(&__rs_process.rseq_cpus, rs_cpus, __ATOMIC_RELEASE);
	}
}

void rs_thread_setup(void)
{
	struct rs_thread_state *t = &rs_self;

	pthread_once(&rs_once, rs_decide_mode);
	if (rs_process_mode == RS_MODE_KERNEL && !t->counter)
		rs_kernel_attach(t);
	else if (rs_process_mode == RS_MODE_RSEQ)
		t->rseq = rs_glibc_rseq_area();
	t->set_up = 1;
}

enum rs_mode rs_mode(void)
{
	pthread_once(&rs_once, rs_decide_mode);
	return rs_process_mode;
}

const char *rs_mode_name(enum rs_mode mode)
{
	switch (mode) {
	case RS_MODE_KERNEL:
		return "kernel";
	case RS_MODE_RSEQ:
		return "rseq";
	case RS_MODE_ATOMIC:
		return "atomic";
	default:
		return "none";
	}
}

int rs_nr_cpus(void)
{
	pthread_once(&rs_once, rs_decide_mode);
	return rs_cpus;
}

/* What the inline rs_nr_cpus() calls before the mode is decided. */
extern __typeof__(rs_nr_cpus) __rs_nr_cpus_slow
	__attribute__((alias("rs_nr_cpus")));

/* Can the calling thread, set up, run sequences in the process's mode? */
static int rs_thread_ready(const struct rs_thread_state *t)
{
	switch (rs_process_mode) {
	case RS_MODE_KERNEL:
		return t->counter && rs_words_registered(t->counter);
	case RS_MODE_RSEQ:
		return t->rseq != NULL;
	default:
		return 1;
	}
}

/*
 * Set the calling thread up now, or again if it cannot run sequences (the
 * owner of the words it used unregistered them, say): 0 if it can, else
 * -ENOTSUP. Not in a vfork() child: it would register the parent's words.
 */
int rs_thread_register(void)
{
	struct rs_thread_state *t = &rs_self;

	if (t->set_up && !rs_thread_ready(t))
		memset(t, 0, sizeof(*t));
	rs_thread();
	return rs_thread_ready(t) ? 0 : -ENOTSUP;
}

/*
 * Stop using the thread's words: 1 if this copy registered them and
 * unregistered them now, 0 if it only forgot them (someone else owns them),
 * -errno if the kernel refused.
 */
int rs_thread_unregister(void)
{
	struct rs_thread_state *t = &rs_self;
	int unregistered = 0;

	if (!t->counter) {
		t->set_up = 0;
		return 0;
	}
#ifndef RS_BREAK_UNREGISTER_ANY
	if (t->owner == RS_OWNER_SELF)
#endif
	{
		if (sys_restartable_sequences(RESTARTABLE_SEQ_FLAG_UNREGISTER,
					      t->counter, t->post_commit) < 0)
			return -errno;
		*t->counter |= RESTARTABLE_SEQ_CPU_UNREGISTERED;
		if (__restartable_seq_counter == t->counter) {
			__restartable_seq_counter = NULL;
			__restartable_seq_post_commit = NULL;
		}
		unregistered = 1;
	}
	t->counter = NULL;
	t->post_commit = NULL;
	t->owner = RS_OWNER_NONE;
	t->set_up = 0;
	return unregistered;
}

enum rs_owner rs_thread_owner(void)
{
	return rs_thread()->owner;
}

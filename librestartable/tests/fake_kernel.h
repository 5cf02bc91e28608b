/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A stand-in for restartable_sequences() on kernels without it: a seccomp
 * filter traps the system call and a SIGSYS handler keeps the per-thread
 * registration as the ABI describes it (register, unregister, query, their
 * errors; the counter gets the CPU and a new count at registration). Its
 * only events are the signals fake_kernel_events() names: it serves tests
 * run by one thread (at a time) pinned to one CPU.
 */
#ifndef RS_TEST_FAKE_KERNEL_H
#define RS_TEST_FAKE_KERNEL_H

#include <stdint.h>

/* restartable_sequences() calls the stand-in answered, by flags. */
struct fake_kernel_calls {
	long registrations, unregistrations, queries;
};

int fake_kernel_install(void);
/*
 * Make signal sig an event, as the kernel would: before handler runs, the
 * counter gets a new count and a sequence the thread was in (instruction
 * pointer below *post_commit) resumes at its abort address, after the
 * signature is checked (a wrong one ends the process, status 3).
 */
int fake_kernel_events(int sig, void (*handler)(int));
/*
 * What the tests that use it do first: the whole process pinned to CPU 0
 * (the stand-in follows no migration), the stand-in installed and signal
 * sig made an event. 0 or a negative errno.
 */
int fake_kernel_setup(int sig, void (*handler)(int));
/* Move the calling thread, which sends the events, to CPU 1 if it exists. */
void fake_kernel_leave_cpu0(void);
/* How many sequences the events aborted. */
long fake_kernel_aborts(void);
void fake_kernel_calls(struct fake_kernel_calls *calls);
/* The calling thread's registered counter, NULL if none. */
uint64_t *fake_kernel_registered(void);

#endif /* RS_TEST_FAKE_KERNEL_H */

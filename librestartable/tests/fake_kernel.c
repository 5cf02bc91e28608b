// SPDX-License-Identifier: LGPL-2.1-or-later
/* See fake_kernel.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "fake_kernel.h"

#define NR_RESTARTABLE_SEQUENCES 473

#define ABORT_SIGNATURE 0x5253b90f

static __thread uint64_t *fake_counter, *fake_post_commit;
static struct fake_kernel_calls fake_calls;
static void (*fake_event_handler)(int);
static long fake_aborts;

static int overlap(const uint64_t *a, const uint64_t *b)
{
	return a == b;
}

static long fake_register(uint64_t *counter, uint64_t *post_commit)
{
	__atomic_add_fetch(&fake_calls.registrations, 1, __ATOMIC_RELAXED);
	if (!counter || !post_commit || overlap(counter, post_commit) ||
	    ((uintptr_t)counter | (uintptr_t)post_commit) & 7)
		return -EINVAL;
	if (fake_counter)
		return -EBUSY;
	fake_counter = counter;
	fake_post_commit = post_commit;
	*counter = (((*counter >> 32) + 1) << 32) | (uint32_t)sched_getcpu();
	return 0;
}

static long fake_unregister(uint64_t *counter, uint64_t *post_commit)
{
	__atomic_add_fetch(&fake_calls.unregistrations, 1, __ATOMIC_RELAXED);
	if (!fake_counter || counter != fake_counter || post_commit != fake_post_commit)
		return -EINVAL;
	*counter |= 0xffffffffULL;
	fake_counter = NULL;
	fake_post_commit = NULL;
	return 0;
}

static long fake_query(uint64_t *counter, uint64_t *post_commit)
{
	__atomic_add_fetch(&fake_calls.queries, 1, __ATOMIC_RELAXED);
	if (!counter || !post_commit || overlap(counter, post_commit) ||
	    counter == fake_counter || counter == fake_post_commit ||
	    post_commit == fake_counter || post_commit == fake_post_commit)
		return -EINVAL;
	if (!fake_counter)
		return -ENOENT;
	*counter = (uintptr_t)fake_counter;
	*post_commit = (uintptr_t)fake_post_commit;
	return 0;
}

static void fake_sigsys(int sig, siginfo_t *info, void *context)
{
	greg_t *regs = ((ucontext_t *)context)->uc_mcontext.gregs;
	uint64_t *a = (uint64_t *)regs[REG_RSI], *b = (uint64_t *)regs[REG_RDX];
	long ret;

	(void)sig;
	if (info->si_syscall != NR_RESTARTABLE_SEQUENCES) {
		regs[REG_RAX] = -ENOSYS;
		return;
	}
	switch ((unsigned int)regs[REG_RDI]) {
	case 0:
		ret = fake_register(a, b);
		break;
	case 1:
		ret = fake_unregister(a, b);
		break;
	case 2:
		ret = fake_query(a, b);
		break;
	default:
		ret = -EINVAL;
	}
	regs[REG_RAX] = ret;
}

int fake_kernel_install(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_RESTARTABLE_SEQUENCES, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]),
				   .filter = filter };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fake_sigsys;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

/* The rule, on the interrupted context, then the handler. */
static void fake_event(int sig, siginfo_t *info, void *context)
{
	greg_t *regs = ((ucontext_t *)context)->uc_mcontext.gregs;
	static const char bad[] = "fake kernel: no signature before the abort address\n";
	uint64_t post_commit;
	uint32_t signature;

	(void)info;
	if (fake_counter) {
		*fake_counter = (((*fake_counter >> 32) + 1) << 32) |
				(uint32_t)sched_getcpu();
		post_commit = *fake_post_commit;
		*fake_post_commit = 0;
		if (post_commit && (uint64_t)regs[REG_RIP] < post_commit) {
			memcpy(&signature, (void *)(regs[REG_RCX] - 4), 4);
			if (signature != ABORT_SIGNATURE) {
				write(2, bad, sizeof(bad) - 1);
				_exit(3);
			}
			regs[REG_RIP] = regs[REG_RCX];
			__atomic_add_fetch(&fake_aborts, 1, __ATOMIC_RELAXED);
		}
	}
	fake_event_handler(sig);
}

int fake_kernel_events(int sig, void (*handler)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fake_event;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	fake_event_handler = handler;
	return sigaction(sig, &sa, NULL) ? -errno : 0;
}

int fake_kernel_setup(int sig, void (*handler)(int))
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		return -errno;
	return fake_kernel_install() ?: fake_kernel_events(sig, handler);
}

void fake_kernel_leave_cpu0(void)
{
	cpu_set_t other;

	CPU_ZERO(&other);
	CPU_SET(1, &other);
	sched_setaffinity(0, sizeof(other), &other);
}

long fake_kernel_aborts(void)
{
	return __atomic_load_n(&fake_aborts, __ATOMIC_RELAXED);
}

void fake_kernel_calls(struct fake_kernel_calls *calls)
{
	__atomic_load(&fake_calls.registrations, &calls->registrations, __ATOMIC_RELAXED);
	__atomic_load(&fake_calls.unregistrations, &calls->unregistrations, __ATOMIC_RELAXED);
	__atomic_load(&fake_calls.queries, &calls->queries, __ATOMIC_RELAXED);
}

uint64_t *fake_kernel_registered(void)
{
	return fake_counter;
}

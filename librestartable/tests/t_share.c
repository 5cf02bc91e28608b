// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Two libraries that each link their own copy of librestartable.a
 * (libshare_a.so, libshare_b.so, dlopen()ed RTLD_LOCAL) and the program's
 * copy (librestartable.so, dlopen()ed RTLD_GLOBAL as if linked) share one
 * registration per thread, under the stand-in kernel of fake_kernel.c:
 *
 *  copies-a-b, copies-b-a: A registers, B finds A's words (QUERY) and does
 *	not own them; B's rs_thread_unregister() leaves them registered; then
 *	A (or B) is dlclose()d first: A stays mapped (its thread-local words
 *	are registered) and the other copy goes on working.
 *  program-first: the program's copy registers; A and B find the words
 *	through the exported pointers, without a system call.
 *  program-last: A registers; the program's copy, loaded later, finds the
 *	words and does not own them.
 *  owner-leaves: A unregisters; B then reports RS_UNAVAILABLE, registers
 *	its own words when its thread calls rs_thread_register(), and A uses
 *	them.
 *
 * Usage: t_share (every scenario, each in a child process).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "restartable.h"
#include "check.h"
#include "fake_kernel.h"

struct share_report {
	int result, mode, owner;
	uint64_t *published;
};

struct copy {
	const char *name;
	void *handle;
	void (*use)(struct rs_percpu_word *words, struct share_report *report);
	int (*release)(void);
	int (*reg)(void);
};

static struct rs_percpu_word words[CPU_SETSIZE];
static char dir[PATH_MAX];
static long uses;

static char *path_of(const char *file)
{
	static char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return path;
}

static void load(struct copy *c, const char *file)
{
	c->name = file;
	c->handle = dlopen(path_of(file), RTLD_NOW | RTLD_LOCAL);
	REQUIRE(c->handle, "dlopen %s: %s", file, dlerror());
	c->use = (void (*)(struct rs_percpu_word *, struct share_report *))
		dlsym(c->handle, "share_use");
	c->release = (int (*)(void))dlsym(c->handle, "share_release");
	c->reg = (int (*)(void))dlsym(c->handle, "share_register");
	REQUIRE(c->use && c->release && c->reg, "dlsym in %s", file);
}

/* One add through the copy: done, by the owner expected. */
static void use(struct copy *c, enum rs_owner owner)
{
	struct share_report r;

	c->use(words, &r);
	CHECK(r.result == RS_DONE, "%s: add: %d", c->name, r.result);
	CHECK(r.mode == RS_MODE_KERNEL, "%s: mode %d", c->name, r.mode);
	CHECK(r.owner == (int)owner, "%s: owner %d, expected %d", c->name,
	      r.owner, owner);
	CHECK(r.published == fake_kernel_registered(),
	      "%s: publishes %p, registered %p", c->name, (void *)r.published,
	      (void *)fake_kernel_registered());
	if (r.result == RS_DONE)
		uses++;
}

static void check_sum(void)
{
	long sum = 0;
	int cpu;

	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		sum += words[cpu].value;
	CHECK(sum == uses, "%ld adds, %ld done", sum, uses);
}

static void copies(int close_a_first)
{
	struct fake_kernel_calls calls;
	struct copy a, b;
	uint64_t *registered;
	void *again;

	load(&a, "libshare_a.so");
	load(&b, "libshare_b.so");
	use(&a, RS_OWNER_SELF);
	registered = fake_kernel_registered();
	use(&b, RS_OWNER_OTHER);
	fake_kernel_calls(&calls);
	CHECK(calls.registrations == 1, "%ld registrations", calls.registrations);
	CHECK(b.release() == 0, "B unregistered words it does not own");
	CHECK(fake_kernel_registered() == registered, "B's release ended A's registration");
	use(&b, RS_OWNER_OTHER);
	if (close_a_first) {
		dlclose(a.handle);
		again = dlopen(path_of("libshare_a.so"), RTLD_NOW | RTLD_NOLOAD);
		CHECK(again, "A was unmapped with its registered words");
		if (again)
			dlclose(again);
		use(&b, RS_OWNER_OTHER);
	} else {
		dlclose(b.handle);
		use(&a, RS_OWNER_SELF);
	}
	CHECK(fake_kernel_registered() == registered, "registration changed");
	check_sum();
}

/* The program's copy, loaded into the global scope as if linked. */
static struct copy program_copy(void)
{
	struct copy p = { .name = "librestartable.so" };

	p.handle = dlopen(path_of("../librestartable.so"), RTLD_NOW | RTLD_GLOBAL);
	REQUIRE(p.handle, "dlopen librestartable.so: %s", dlerror());
	return p;
}

static void program_use(struct copy *p, enum rs_owner owner)
{
	int (*add)(struct rs_percpu_word *, int, intptr_t, int *) =
		(int (*)(struct rs_percpu_word *, int, intptr_t, int *))
			dlsym(p->handle, "rs_add");
	enum rs_owner (*owner_of)(void) =
		(enum rs_owner (*)(void))dlsym(p->handle, "rs_thread_owner");
	int r;

	REQUIRE(add && owner_of, "dlsym rs_add");
	do
		r = add(words, RS_CPU_CURRENT, 1, NULL);
	while (r == RS_ABORTED);
	CHECK(r == RS_DONE, "program: add: %d", r);
	CHECK(owner_of() == owner, "program: owner %d, expected %d", owner_of(),
	      owner);
	if (r == RS_DONE)
		uses++;
}

static void program_first(void)
{
	struct fake_kernel_calls before, after;
	struct copy p = program_copy(), a, b;

	program_use(&p, RS_OWNER_SELF);
	fake_kernel_calls(&before);
	load(&a, "libshare_a.so");
	load(&b, "libshare_b.so");
	use(&a, RS_OWNER_OTHER);
	use(&b, RS_OWNER_OTHER);
	fake_kernel_calls(&after);
	CHECK(!memcmp(&before, &after, sizeof(before)),
	      "the copies called restartable_sequences() (%ld queries, %ld registrations)",
	      after.queries - before.queries,
	      after.registrations - before.registrations);
	check_sum();
}

static void program_last(void)
{
	struct copy a, p;

	load(&a, "libshare_a.so");
	use(&a, RS_OWNER_SELF);
	p = program_copy();
	program_use(&p, RS_OWNER_OTHER);
	check_sum();
}

/*
 * The owner unregisters: the other copy cannot run sequences on the dead
 * words, and registers its own when its thread asks.
 */
static void owner_leaves(int unused)
{
	struct share_report r;
	struct copy a, b;

	(void)unused;
	load(&a, "libshare_a.so");
	load(&b, "libshare_b.so");
	use(&a, RS_OWNER_SELF);
	use(&b, RS_OWNER_OTHER);
	CHECK(a.release() == 1, "the owner did not unregister");
	CHECK(!fake_kernel_registered(), "still registered");
	b.use(words, &r);
	CHECK(r.result == RS_UNAVAILABLE, "B used unregistered words: %d", r.result);
	CHECK(b.reg() == 0, "B could not register");
	use(&b, RS_OWNER_SELF);
	use(&a, RS_OWNER_OTHER);
	check_sum();
}

static int run(const char *name, void (*scenario)(int), int arg)
{
	int status;
	pid_t pid = fork();

	REQUIRE(pid >= 0, "fork");
	if (pid == 0) {
		scenario(arg);
		_exit(check_result());
	}
	REQUIRE(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "scenario %s failed",
	      name);
	return 0;
}

static void program_first_scenario(int unused)
{
	(void)unused;
	program_first();
}

static void program_last_scenario(int unused)
{
	(void)unused;
	program_last();
}

int main(void)
{
	cpu_set_t one;
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);

	REQUIRE(n > 0, "readlink /proc/self/exe");
	dir[n] = 0;
	*strrchr(dir, '/') = 0;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	REQUIRE(!sched_setaffinity(0, sizeof(one), &one), "sched_setaffinity");
	REQUIRE(!fake_kernel_install(), "fake_kernel_install");
	run("copies-a-b", copies, 1);
	run("copies-b-a", copies, 0);
	run("program-first", program_first_scenario, 0);
	run("program-last", program_last_scenario, 0);
	run("owner-leaves", owner_leaves, 0);
	return check_result();
}

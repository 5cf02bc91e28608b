// SPDX-License-Identifier: LGPL-2.1-or-later
// The public header compiles as C++ and links from C++ (extern "C").
#include <restartable.h>

int main()
{
	static struct rs_percpu_word words[1024];
	int cpu = 0;

	if (rs_nr_cpus() > 1024)
		return 0;
	return rs_add(words, RS_CPU_CURRENT, 1, &cpu) < 0;
}

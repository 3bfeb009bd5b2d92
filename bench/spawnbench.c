/*
 * spawnbench: p50 and p99 of fork + exec + wait of a command (by default
 * /bin/true), the yardstick for the code-mode sandbox floor; with -f, of
 * fork + _exit + wait of this small process, the least a fresh process per
 * program can cost on the machine. With -p, it pauses PAUSE_US between two
 * (a yardstick paced like the calls it is compared with: an idle machine's
 * vCPUs halt, and waking them is part of what a paced call costs).
 *
 * With -w PAGES (and -f), the child first writes one byte to each of PAGES
 * pages before it exits, to price the pages a worker touches
 * (docs/internals/SANDBOX.md, "The floor, sixth pass"): -m cow, pages the
 * parent wrote before the fork (each a copy-on-write fault in the child);
 * -m fresh, pages the child maps itself; -m huge, pages of one transparent
 * huge page the child maps itself (at most 512).
 *
 *   spawnbench [-n N] [-p PAUSE_US] [-w PAGES -m cow|fresh|huge] [-f | COMMAND]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define PAGE 4096ul
#define HUGE (2ul << 20)

/* An anonymous mapping of n bytes; with huge, of one huge page, aligned to
 * it and advised to be one (n is then at most a huge page). */
static char *map(size_t n, int huge)
{
	size_t len = huge ? HUGE : n;
	char *m = mmap(NULL, len + (huge ? HUGE : 0), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (huge)
		m = (char *)(((unsigned long)m + HUGE - 1) & ~(HUGE - 1));
	madvise(m, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return m;
}

int main(int argc, char **argv)
{
	int n = 1000, a = 1;
	const char *cmd = "/bin/true";
	const char *mode = "cow";
	int bare = 0, pause = 0, pages = 0;
	char *cow = NULL;
	double *lat;

	for (; a + 1 < argc && argv[a][0] == '-' && argv[a][1] && !argv[a][2] &&
	       strchr("npwm", argv[a][1]); a += 2) {
		if (argv[a][1] == 'n')
			n = atoi(argv[a + 1]);
		else if (argv[a][1] == 'p')
			pause = atoi(argv[a + 1]);
		else if (argv[a][1] == 'w')
			pages = atoi(argv[a + 1]);
		else
			mode = argv[a + 1];
	}
	if (pages < 0 || pages > 512 || (strcmp(mode, "cow") && strcmp(mode, "fresh") &&
					  strcmp(mode, "huge")))
		return 2;
	if (pages && !strcmp(mode, "cow")) {
		if (!(cow = map(pages * PAGE, 0)))
			return 1;
		memset(cow, 1, pages * PAGE);
	}
	if (a < argc && !strcmp(argv[a], "-f"))
		bare = 1;
	else if (a < argc)
		cmd = argv[a];
	if (n < 1)
		return 2;
	lat = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		double t0;
		if (pause > 0 && i > 0)
			usleep((useconds_t)pause);
		t0 = now_us();
		pid_t p = fork();
		if (p == 0) {
			char *at = cow;
			if (pages && !at && !(at = map(pages * PAGE, !strcmp(mode, "huge"))))
				_exit(1);
			for (int k = 0; k < pages; k++)
				at[k * PAGE] = 2;
			if (bare)
				_exit(0);
			execl(cmd, cmd, (char *)NULL);
			_exit(127);
		}
		waitpid(p, NULL, 0);
		lat[i] = now_us() - t0;
	}
	sort_latencies(lat, (size_t)n);
	printf("%.1f %.1f\n", lat[n / 2], lat[(size_t)(n * 0.99)]);
	free(lat);
	return 0;
}

/*
 * spawnbench: p50 and p99 of fork + exec + wait of a command (by default
 * /bin/true), the yardstick for the code-mode sandbox floor; with -f, of
 * fork + _exit + wait of this small process, the least a fresh process per
 * program can cost on the machine. With -p, it pauses PAUSE_US between two
 * (a yardstick paced like the calls it is compared with: an idle machine's
 * vCPUs halt, and waking them is part of what a paced call costs).
 *
 *   spawnbench [-n N] [-p PAUSE_US] [-f | COMMAND]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
	int n = 1000, a = 1;
	const char *cmd = "/bin/true";
	int bare = 0, pause = 0;
	double *lat;

	for (; a + 1 < argc && argv[a][0] == '-' && argv[a][1] && !argv[a][2] &&
	       strchr("np", argv[a][1]); a += 2) {
		if (argv[a][1] == 'n')
			n = atoi(argv[a + 1]);
		else
			pause = atoi(argv[a + 1]);
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

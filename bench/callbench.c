/*
 * callbench: latency of small tools/call requests over stdio.
 *
 *   callbench -n 2000 -t TOOL [-a ARGS_JSON] [-p PAUSE_US] -- COMMAND [ARGS...]
 *
 * Starts COMMAND, does the MCP handshake, sends n sequential tools/call
 * requests for TOOL with ARGS (default {"message":"hi"}) and prints p50,
 * p99 and calls/s. With -p, it pauses between calls (a model's calls do not
 * arrive back to back; the pause lets work done between calls finish).
 * Used by bench/run.sh to compare a direct upstream with the same upstream
 * through sluice in one run.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Reads lines until one carries "id":id; returns 0 or -1 on EOF. */
static int wait_id(FILE *in, int id)
{
	char *line = NULL, want[32];
	size_t cap = 0;
	int rc = -1;
	snprintf(want, sizeof(want), "\"id\":%d", id);
	while (getline(&line, &cap, in) > 0)
		if (strstr(line, want)) {
			rc = 0;
			break;
		}
	free(line);
	return rc;
}

int main(int argc, char **argv)
{
	int n = 2000, to[2], from[2], i, a = 1, pause = 0;
	const char *tool = "echo", *args = "{\"message\":\"hi\"}";
	double *lat, t0, total;
	FILE *out, *in;
	pid_t pid;

	for (; a < argc && strcmp(argv[a], "--") != 0; a++) {
		if (!strcmp(argv[a], "-n") && a + 1 < argc)
			n = atoi(argv[++a]);
		else if (!strcmp(argv[a], "-t") && a + 1 < argc)
			tool = argv[++a];
		else if (!strcmp(argv[a], "-a") && a + 1 < argc)
			args = argv[++a];
		else if (!strcmp(argv[a], "-p") && a + 1 < argc)
			pause = atoi(argv[++a]);
	}
	if (a + 1 >= argc || n < 1) {
		fprintf(stderr, "usage: callbench [-n N] [-t TOOL] [-a ARGS] -- COMMAND [ARGS...]\n");
		return 2;
	}
	if (pipe(to) < 0 || pipe(from) < 0)
		return 1;
	pid = fork();
	if (pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		execvp(argv[a + 1], argv + a + 1);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	out = fdopen(to[1], "w");
	in = fdopen(from[0], "r");
	fprintf(out, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"callbench\",\"version\":\"1\"}}}\n"
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
	fflush(out);
	if (wait_id(in, 0) < 0 || wait_id(in, 1) < 0) {
		fprintf(stderr, "callbench: handshake failed\n");
		return 1;
	}
	lat = calloc((size_t)n, sizeof(double));
	total = now_us();
	for (i = 0; i < n; i++) {
		if (pause)
			usleep((useconds_t)pause);
		t0 = now_us();
		fprintf(out, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
			"\"%s\",\"arguments\":%s}}\n", i + 2, tool, args);
		fflush(out);
		if (wait_id(in, i + 2) < 0) {
			fprintf(stderr, "callbench: no answer to call %d\n", i);
			return 1;
		}
		lat[i] = now_us() - t0;
	}
	total = now_us() - total;
	fclose(out);
	waitpid(pid, NULL, 0);
	sort_latencies(lat, (size_t)n);
	/* calls/s is only meaningful without pauses */
	printf("%.1f %.1f %.0f\n", lat[n / 2], lat[(size_t)(n * 0.99)], pause ? 0 : n / (total / 1e6));
	free(lat);
	return 0;
}

/*
 * Throughput of the redaction engine (sl_redact_text, every built-in
 * pattern) on a 1 MB tool result: JSON text shaped like a GitHub issue
 * listing, once with a secret sprinkled into every 40th record and once
 * without any. Prints one line per text: MB/s and replacements.
 *
 *   redact [-n iterations]
 */
#include "pipeline/call.h"
#include "stages/redaction.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern const struct sl_stage sl_stage_redaction;

static struct sl_redaction *red; /* the stage's state with the defaults */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void rnd(char *b, const char *set, size_t n)
{
	size_t m = strlen(set);
	for (size_t i = 0; i < n; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		b[i] = set[rng % m];
	}
	b[n] = '\0';
}

#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define HEX "0123456789abcdef"

/* A secret for record i, built from pieces (no real-looking secret in the
 * source). */
static void secret(char *out, int i)
{
	char r[128];
	switch (i % 5) {
	case 0: rnd(r, ALNUM, 36); sprintf(out, "token gh" "p_%s", r); break;
	case 1: rnd(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16); sprintf(out, "key AK" "IA%s", r); break;
	case 2: rnd(r, ALNUM, 40); sprintf(out, "DB_PASS" "WORD=%s", r); break;
	case 3: rnd(r, ALNUM, 24); sprintf(out, "sk" "_live_%s", r); break;
	default: rnd(r, ALNUM, 12); sprintf(out, "postgres://app:%s@db:5432/x", r); break;
	}
}

static char *make_text(size_t size, bool secrets, size_t *len)
{
	static const char *const words[] = {
		"the", "request", "fails", "when", "retry", "handler", "timeout", "after", "deploy",
		"cache", "returns", "stale", "data", "for", "users", "with", "expired", "sessions",
		"see", "logs", "in", "staging", "and", "production", "fix", "regression", "from",
		"release", "password", "reset", "flow", "token", "refresh", "api", "key", "rotation",
	};
	char *b = malloc(size + 4096), sha[41], id[37], w[64], s[256];
	size_t n = 0;
	int i = 0;

	n += (size_t)sprintf(b, "[");
	while (n < size - 2048) {
		rnd(sha, HEX, 40);
		rnd(id, HEX, 32);
		n += (size_t)sprintf(b + n,
				     "%s{\"id\":%d,\"number\":%d,\"title\":\"Issue %d: ", i ? "," : "",
				     100000 + i, i, i);
		for (int k = 0; k < 6; k++)
			n += (size_t)sprintf(b + n, "%s ", words[(size_t)(i * 7 + k * 3) % SL_COUNT(words)]);
		n += (size_t)sprintf(b + n, "\",\"body\":\"");
		for (int k = 0; k < 40; k++) {
			snprintf(w, sizeof(w), "%s", words[(size_t)(i * 13 + k * 5) % SL_COUNT(words)]);
			n += (size_t)sprintf(b + n, "%s%s", w, k % 9 == 8 ? ". " : " ");
		}
		if (secrets && i % 40 == 0) {
			secret(s, i / 40);
			n += (size_t)sprintf(b + n, "config: %s ", s);
		}
		n += (size_t)sprintf(b + n,
				     "\",\"state\":\"open\",\"user\":{\"login\":\"dev%d\",\"id\":%d},"
				     "\"labels\":[\"bug\",\"p%d\"],\"head_sha\":\"%s\","
				     "\"node_id\":\"%.8s-%.4s-%.4s-%.4s-%.12s\","
				     "\"created_at\":\"2024-05-%02dT10:%02d:00Z\","
				     "\"html_url\":\"https://github.com/acme/api/issues/%d\"}",
				     i % 50, 9000 + i % 50, i % 4, sha, id, id + 8, id + 12, id + 16,
				     id + 20, 1 + i % 28, i % 60, i);
		i++;
	}
	n += (size_t)sprintf(b + n, "]");
	*len = n;
	return b;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run(const char *label, bool secrets, int iters)
{
	size_t len, count = 0;
	char *text = make_text(1u << 20, secrets, &len), *out;
	double best = 1e9;

	for (int it = 0; it < iters; it++) {
		double t0 = now_s(), dt;
		count = sl_redact_text(red, text, len, &out);
		dt = now_s() - t0;
		if (count == SL_REDACT_FAILED) {
			fprintf(stderr, "redact: the engine failed\n");
			exit(1);
		}
		free(out);
		if (dt < best)
			best = dt;
	}
	printf("| %-34s | %9.2f | %9.1f | %12zu |\n", label, (double)len / 1e6,
	       (double)len / 1e6 / best, count);
	free(text);
}

int main(int argc, char **argv)
{
	struct sl_err err;
	void *st = NULL;
	int iters = 10, opt;

	while ((opt = getopt(argc, argv, "n:")) != -1)
		if (opt == 'n')
			iters = atoi(optarg);
	if (sl_stage_redaction.init(NULL, NULL, &st, &err) < 0) {
		fprintf(stderr, "redact: %s\n", err.msg);
		return 1;
	}
	red = st;
	printf("| %-34s | %9s | %9s | %12s |\n", "text (best of runs)", "MB", "MB/s", "replacements");
	printf("|%s|%s|%s|%s|\n", "------------------------------------", "-----------",
	       "-----------", "--------------");
	run("1 MB JSON result, secrets sprinkled", true, iters);
	run("1 MB JSON result, no secrets", false, iters);
	sl_stage_redaction.fini(red);
	return 0;
}

/*
 * Fuzz target: the metrics registry and its Prometheus text
 * (src/pipeline/metrics.c), fed server and tool names as an upstream may
 * send them: the input is split at NUL bytes into names, taken in pairs
 * (server, tool), each pair one call, into a registry bounded at 10 pairs.
 *
 * Invariants checked:
 *   - the registry stays bounded: at most 10 + SL_METRICS_OTHER_MAX + 1
 *     pairs, no kept name over SL_METRICS_LABEL_MAX bytes;
 *   - the exposition is valid UTF-8 with no control character but the
 *     line ends, and every sample line reads as name{label="value",...}
 *     followed by one space and a number, each value's escapes being
 *     \\, \" or \n only;
 *   - every call is counted once: the calls counter's samples sum to the
 *     number of calls.
 *
 * fuzz-flags: -max_len=8192
 */
#include "fuzz.h"

#include "core/log.h"
#include "pipeline/call.h"
#include "pipeline/metrics.h"

#include <string.h>

static size_t utf8_ok(const unsigned char *s, size_t n)
{
	size_t k;
	unsigned cp;

	if (s[0] < 0x80)
		return 1;
	k = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;
	if (s[0] < 0xC2 || s[0] > 0xF4 || n < k)
		return 0;
	cp = s[0] & (0x7F >> k);
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return k;
}

/* One sample line (not a comment): its value, or -1 if it does not read. */
static double sample(const char *l, size_t n)
{
	size_t i = 0;
	char num[64];

	while (i < n && (l[i] == '_' || l[i] == ':' || (l[i] >= 'a' && l[i] <= 'z') ||
			 (l[i] >= 'A' && l[i] <= 'Z') || (i && l[i] >= '0' && l[i] <= '9')))
		i++;
	ASSERT(i > 0);
	if (i < n && l[i] == '{') {
		i++;
		while (i < n && l[i] != '}') {
			while (i < n && l[i] != '=')
				ASSERT(l[i] == '_' || (l[i] >= 'a' && l[i] <= 'z')), i++;
			ASSERT(i + 1 < n && l[i + 1] == '"');
			for (i += 2; i < n && l[i] != '"'; i++)
				if (l[i] == '\\') {
					ASSERT(i + 1 < n && strchr("\\\"n", l[i + 1]));
					i++;
				}
			ASSERT(i < n);
			i++;
			if (i < n && l[i] == ',')
				i++;
		}
		ASSERT(i < n);
		i++;
	}
	ASSERT(i < n && l[i] == ' ');
	ASSERT(n - i - 1 > 0 && n - i - 1 < sizeof(num));
	memcpy(num, l + i + 1, n - i - 1);
	num[n - i - 1] = '\0';
	return strtod(num, NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sl_log_set_level(SL_LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_metrics *m = sl_metrics_new(10);
	char *copy = malloc(size + 2), *names[512], *text;
	size_t nnames = 0, ncalls = 0, len, i;
	struct sl_buf b;
	double total = 0;

	memcpy(copy, data, size);
	copy[size] = copy[size + 1] = '\0';
	for (char *p = copy; p <= copy + size && nnames < 512; p += strlen(p) + 1)
		names[nnames++] = p;
	for (i = 0; i + 1 < nnames; i += 2) {
		struct sl_upstream up = { .name = names[i] };
		struct sl_call c = { .up = &up, .tool = names[i + 1],
				     .origin = (enum sl_origin)(i % 3),
				     .outcome = (enum sl_outcome)(i % 7),
				     .finished_us = (uint64_t)i * 997 };
		sl_metrics_call(m, &c);
		ncalls++;
	}
	ASSERT(m->npairs <= 10 + SL_METRICS_OTHER_MAX + 1);
	for (i = 0; i < m->npairs; i++)
		ASSERT(strlen(m->pairs[i].server) <= SL_METRICS_LABEL_MAX &&
		       strlen(m->pairs[i].tool) <= SL_METRICS_LABEL_MAX);

	sl_buf_init(&b, SIZE_MAX);
	sl_metrics_render(m, &b);
	text = sl_buf_take(&b, &len);
	for (i = 0; i < len;) {
		size_t k = utf8_ok((const unsigned char *)text + i, len - i);
		ASSERT(k > 0);
		ASSERT(text[i] == '\n' || (unsigned char)text[i] >= 0x20);
		i += k;
	}
	for (char *l = text; l < text + len;) {
		char *end = memchr(l, '\n', (size_t)(text + len - l));
		ASSERT(end);
		if (*l != '#') {
			double v = sample(l, (size_t)(end - l));
			if (!strncmp(l, "sluice_tool_calls_total{", 24))
				total += v;
		}
		l = end + 1;
	}
	ASSERT(total == (double)ncalls);
	free(text);
	free(copy);
	sl_metrics_unref(m);
	return 0;
}

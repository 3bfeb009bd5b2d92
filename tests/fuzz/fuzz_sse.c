/*
 * Fuzz target: the server-sent events parser (src/proto/sse.c) that reads
 * every answer and stream of a remote (HTTP) upstream, fed the same bytes
 * whole and in chunks of every size the input's first byte picks.
 *
 * Invariants checked:
 *   - the events (type, data, or oversize edges and total) are the same
 *     however the bytes are cut, and so are the last event id and retry;
 *   - no event's data is longer than the cap, and an oversize event's
 *     edges are within the edge size; the total of an oversize event is
 *     over the cap;
 *   - memory stays bounded: the parser's buffers never hold much more than
 *     the cap, whatever the stream.
 *
 * fuzz-flags: -max_len=16384 -dict=tests/fuzz/sse.dict
 */
#include "fuzz.h"

#include "core/log.h"
#include "proto/sse.h"

#include <string.h>

#define CAP 512
#define DIGEST_MAX 64

struct seen {
	uint64_t hash;  /* of everything reported, in order */
	size_t events;
};

static void mix(struct seen *s, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		s->hash = (s->hash ^ c[i]) * 1099511628211ull;
	s->hash = (s->hash ^ 0xff) * 1099511628211ull;
}

static int on_event(void *ctx, const char *type, const char *data, size_t len)
{
	struct seen *s = ctx;
	ASSERT(len <= CAP);
	ASSERT(strlen(type) < 64);
	mix(s, type, strlen(type));
	mix(s, data, len);
	s->events++;
	return 0;
}

static int on_oversize(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
		       size_t total)
{
	struct seen *s = ctx;
	ASSERT(hl <= SL_LINES_EDGE && tl <= SL_LINES_EDGE);
	ASSERT(total > CAP);
	mix(s, &total, sizeof(total));
	s->events++;
	return 0;
}

static const struct sl_sse_ops ops = { on_event, on_oversize };

static void run(const uint8_t *data, size_t size, size_t chunk, struct seen *out,
		char *last_id, long *retry)
{
	struct sl_sse p;

	memset(out, 0, sizeof(*out));
	out->hash = 14695981039346656037ull;
	sl_sse_init(&p, CAP, &ops, out);
	for (size_t i = 0; i < size; i += chunk) {
		sl_sse_feed(&p, (const char *)data + i, size - i < chunk ? size - i : chunk);
		ASSERT(p.data.alloc <= 4 * CAP + 1024);
		ASSERT(p.lines.buf.alloc <= 4 * CAP + 1024);
	}
	memcpy(last_id, p.last_id, sizeof(p.last_id));
	*retry = p.retry_ms;
	sl_sse_dispose(&p);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	sl_log_set_level(SL_LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole, cut;
	char id_whole[256], id_cut[256];
	long retry_whole, retry_cut;
	size_t chunk;

	if (size == 0)
		return 0;
	chunk = 1 + data[0] % 37;
	run(data + 1, size - 1, size, &whole, id_whole, &retry_whole);
	run(data + 1, size - 1, chunk, &cut, id_cut, &retry_cut);
	ASSERT(whole.events == cut.events);
	ASSERT(whole.hash == cut.hash);
	ASSERT(strcmp(id_whole, id_cut) == 0);
	ASSERT(retry_whole == retry_cut);
	return 0;
}

/* Unit tests of src/proto/sse.c: events across chunk boundaries, fields,
 * ids and retry, comments, and the cap with bounded memory. */
#include "unit.h"

#include "proto/sse.h"

#include <stdio.h>
#include <stdlib.h>

#define MAX_EVENTS 32

struct got {
	int n;
	char ev[MAX_EVENTS][256]; /* "type|data" or "O:total|head|tail" */
};

static int on_event(void *ctx, const char *type, const char *data, size_t len)
{
	struct got *g = ctx;
	if (g->n < MAX_EVENTS)
		snprintf(g->ev[g->n++], 256, "%s|%.*s", type, (int)len, data);
	return 0;
}

static int on_oversize(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
		       size_t total)
{
	struct got *g = ctx;
	if (g->n < MAX_EVENTS)
		snprintf(g->ev[g->n++], 256, "O:%zu|%.*s|%.*s", total, (int)(hl > 8 ? 8 : hl), head,
			 (int)(tl > 8 ? 8 : tl), tl > 8 ? tail + tl - 8 : tail);
	return 0;
}

static const struct sl_sse_ops ops = { on_event, on_oversize };

/* Feeds in in chunks of `chunk` bytes; the parser is left for inspection. */
static void feed(struct sl_sse *s, struct got *g, size_t max, const char *in, size_t chunk)
{
	size_t n = strlen(in);
	memset(g, 0, sizeof(*g));
	sl_sse_init(s, max, &ops, g);
	for (size_t i = 0; i < n; i += chunk)
		CHECK_INT(sl_sse_feed(s, in + i, n - i < chunk ? n - i : chunk), 0);
}

TEST(sse_events_fields_and_chunking)
{
	const char *in = "\xEF\xBB\xBF: a comment, a heartbeat\n"
			 "id: 7\nretry: 500\ndata:\n\n"       /* priming: empty data */
			 "event: message\ndata: {\"a\":1}\n\n"
			 "data: line one\r\ndata:line two\r\n\r\n"
			 "event: endpoint\ndata: /messages?s=1\nid: 9\n\n"
			 "data: never ended";
	for (size_t chunk = 1; chunk <= strlen(in); chunk++) {
		struct sl_sse s;
		struct got g;
		feed(&s, &g, 1024, in, chunk);
		CHECK_INT(g.n, 4);
		CHECK_STR(g.ev[0], "message|");
		CHECK_STR(g.ev[1], "message|{\"a\":1}");
		CHECK_STR(g.ev[2], "message|line one\nline two");
		CHECK_STR(g.ev[3], "endpoint|/messages?s=1");
		CHECK_STR(s.last_id, "9");
		CHECK_INT(s.retry_ms, 500);
		sl_sse_dispose(&s);
	}
}

TEST(sse_ignores_bad_id_and_retry)
{
	struct sl_sse s;
	struct got g;
	char in[600];

	/* A retry that is not all digits, and an id too long to keep, change nothing. */
	memset(in, 0, sizeof(in));
	strcpy(in, "id: ok\nretry: 12x\nretry: -1\ndata: x\n\nid: ");
	memset(in + strlen(in), 'z', 300);
	strcat(in, "\ndata: y\n\n");
	feed(&s, &g, 1024, in, 5);
	CHECK_INT(g.n, 2);
	CHECK_STR(s.last_id, "ok");
	CHECK_INT(s.retry_ms, -1);
	sl_sse_dispose(&s);
}

TEST(sse_oversize_event_bounded)
{
	struct sl_sse s;
	struct got g;
	size_t big = 100000;
	char *in = malloc(big + 64);
	size_t n = 0;

	/* One long data line, then several short ones summing over the cap. */
	n += (size_t)sprintf(in, "data: AB");
	memset(in + n, 'x', big);
	n += big;
	n += (size_t)sprintf(in + n, "YZ\n\ndata: ok\n\n");
	in[n] = '\0';
	feed(&s, &g, 4096, in, 4093);
	CHECK_INT(g.n, 2);
	CHECK(strncmp(g.ev[0], "O:100004|ABxxxxxx|xxxxxxYZ", 26) == 0);
	CHECK_STR(g.ev[1], "message|ok");
	CHECK(s.data.alloc <= 8192); /* nothing near the event's size was kept */
	sl_sse_dispose(&s);

	n = 0;
	for (int i = 0; i < 100; i++)
		n += (size_t)sprintf(in + n, "data: 0123456789012345678901234567890123456789\n");
	n += (size_t)sprintf(in + n, "\n");
	feed(&s, &g, 1000, in, 7);
	CHECK_INT(g.n, 1);
	CHECK(strncmp(g.ev[0], "O:4099|", 7) == 0); /* 100 x 40 bytes and 99 newlines */
	sl_sse_dispose(&s);
	free(in);
}

TEST(sse_json_body_under_the_same_cap)
{
	struct sl_sse s;
	struct got g;

	memset(&g, 0, sizeof(g));
	sl_sse_init(&s, 16, &ops, &g);
	sl_sse_body_append(&s, "{\"id\":1,", 8);
	sl_sse_body_append(&s, "\"x\":2}", 6);
	sl_sse_body_end(&s);
	sl_sse_body_append(&s, "{\"id\":2,\"result\":{}}  ", 22);
	sl_sse_body_end(&s);
	CHECK_INT(g.n, 2);
	CHECK_STR(g.ev[0], "message|{\"id\":1,\"x\":2}");
	CHECK(strncmp(g.ev[1], "O:22|{\"id\":2,", 13) == 0);
	sl_sse_dispose(&s);
}

TEST(sse_json_body_of_several_objects_one_per_line)
{
	struct sl_sse s;
	struct got g;
	const char *nd = "{\"method\":\"notifications/progress\"}\n{\"id\":1,\"result\":{}}\n";
	const char *one = "{\n  \"id\": 2,\n  \"result\": {\"a\": [{}, {}]}\n}\n";

	memset(&g, 0, sizeof(g));
	sl_sse_init(&s, 4096, &ops, &g);
	sl_sse_body_append(&s, nd, strlen(nd));
	sl_sse_body_end(&s);
	CHECK_INT(g.n, 2);
	CHECK_STR(g.ev[0], "message|{\"method\":\"notifications/progress\"}");
	CHECK_STR(g.ev[1], "message|{\"id\":1,\"result\":{}}\n");
	/* One pretty-printed message stays one. */
	sl_sse_body_append(&s, one, strlen(one));
	sl_sse_body_end(&s);
	CHECK_INT(g.n, 3);
	CHECK(strncmp(g.ev[2], "message|{\n  \"id\": 2,", 20) == 0);
	sl_sse_dispose(&s);
}

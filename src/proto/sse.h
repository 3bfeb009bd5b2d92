/*
 * Server-sent events (the WHATWG EventSource format) as a client reads
 * them: lines of "field: value", an event ending at a blank line. Used by
 * HTTP upstreams, whose POST answers and GET streams are SSE.
 *
 * Bytes come in any chunking. An event's data over the cap is not kept:
 * the parser keeps its first and last bytes (enough to find a JSON-RPC id)
 * and reports it as oversize when it ends, so memory stays bounded.
 *
 *   struct sl_sse s; sl_sse_init(&s, max, &ops, ctx);
 *   sl_sse_feed(&s, data, n);    calls ops.event per complete event
 *   s.last_id, s.retry_ms        the stream's state, for reconnecting
 *   sl_sse_dispose(&s);
 */
#ifndef SL_PROTO_SSE_H
#define SL_PROTO_SSE_H

#include "proto/lines.h"

struct sl_sse_ops {
	/* One event: its type ("message" if none was given) and data, borrowed.
	 * Return nonzero to stop feeding. */
	int (*event)(void *ctx, const char *type, const char *data, size_t len);
	/* An event whose data was over the cap. */
	int (*oversize)(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
			size_t total);
};

struct sl_sse {
	struct sl_lines lines;       /* framing: one field per line */
	const struct sl_sse_ops *ops;
	void *ctx;
	size_t max;
	struct sl_buf data;          /* the event being read */
	char type[64];
	bool has_data;
	bool discarding;             /* its data went over max */
	size_t total;
	char head[SL_LINES_EDGE];
	size_t head_len;
	char tail[SL_LINES_EDGE];
	size_t tail_len;
	char last_id[256];           /* the last event id seen ("" if none) */
	long retry_ms;               /* the last retry field (-1 if none) */
	bool bom_checked;
};

void sl_sse_init(struct sl_sse *s, size_t max, const struct sl_sse_ops *ops, void *ctx);
void sl_sse_dispose(struct sl_sse *s);
/* Returns nonzero if a callback asked to stop. */
int sl_sse_feed(struct sl_sse *s, const char *p, size_t n);
/* A body that is not a stream (an application/json answer): append its
 * bytes, then end it to have it reported like one event's data, under the
 * same cap for the whole body. A body of several JSON objects, one per
 * line (as a 2026-07-28 server may send a notification before the answer,
 * the conformance suite's reference server among them), is reported as one
 * event per object. */
void sl_sse_body_append(struct sl_sse *s, const char *p, size_t n);
int sl_sse_body_end(struct sl_sse *s);

#endif

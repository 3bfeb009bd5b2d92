/*
 * Line framing for the stdio transports (MCP stdio: one JSON-RPC message per
 * line, no embedded newlines). Bytes come in any chunking; complete lines go
 * out through a callback. A line longer than the cap is never buffered whole:
 * the framer keeps its first and last bytes (enough to find a JSON-RPC id),
 * discards the rest as it streams by, and reports it once it ends.
 *
 * API:
 *   struct sl_lines l; sl_lines_init(&l, max, &ops, ctx);
 *   sl_lines_feed(&l, data, n);   calls ops.line / ops.oversize per line
 *   sl_lines_dispose(&l);
 */
#ifndef SL_PROTO_LINES_H
#define SL_PROTO_LINES_H

#include "core/buf.h"

#define SL_LINES_EDGE 160 /* bytes kept of each end of an oversize line */

struct sl_lines_ops {
	/* A complete line, without its "\n" or "\r\n"; borrowed for the call.
	 * Return nonzero to stop feeding (e.g. the owner is closing). */
	int (*line)(void *ctx, const char *line, size_t len);
	/* A line over the cap: its first and last bytes and its full length. */
	int (*oversize)(void *ctx, const char *head, size_t head_len,
			const char *tail, size_t tail_len, size_t total);
};

struct sl_lines {
	struct sl_buf buf;
	const struct sl_lines_ops *ops;
	void *ctx;
	bool discarding;
	size_t discarded;            /* length of the oversize line so far */
	char head[SL_LINES_EDGE];
	size_t head_len;
	char tail[SL_LINES_EDGE];    /* ring of the last bytes seen */
	size_t tail_pos;
};

void sl_lines_init(struct sl_lines *l, size_t max, const struct sl_lines_ops *ops, void *ctx);
void sl_lines_dispose(struct sl_lines *l);
/* Returns nonzero if a callback asked to stop. */
int sl_lines_feed(struct sl_lines *l, const char *p, size_t n);

#endif

/* Line framing with a hard cap and bounded memory for oversize lines. */
#include "proto/lines.h"

#include <string.h>

void sl_lines_init(struct sl_lines *l, size_t max, const struct sl_lines_ops *ops, void *ctx)
{
	memset(l, 0, sizeof(*l));
	sl_buf_init(&l->buf, max);
	l->ops = ops;
	l->ctx = ctx;
}

void sl_lines_dispose(struct sl_lines *l)
{
	sl_buf_dispose(&l->buf);
}

static void tail_add(struct sl_lines *l, const char *p, size_t n)
{
	if (n > SL_LINES_EDGE) {
		p += n - SL_LINES_EDGE;
		n = SL_LINES_EDGE;
	}
	for (size_t i = 0; i < n; i++)
		l->tail[(l->tail_pos++) % SL_LINES_EDGE] = p[i];
}

/* Fills the head while it has room (a short cap starts discarding early). */
static void head_add(struct sl_lines *l, const char *p, size_t n)
{
	size_t room = SL_LINES_EDGE - l->head_len;
	if (n > room)
		n = room;
	memcpy(l->head + l->head_len, p, n);
	l->head_len += n;
}

static void start_discard(struct sl_lines *l, const char *p, size_t n)
{
	/* The buffered part plus this chunk exceed the cap: keep the edges. */
	size_t h = l->buf.len < SL_LINES_EDGE ? l->buf.len : SL_LINES_EDGE;
	if (h) /* an empty buffer may have no storage at all */
		memcpy(l->head, l->buf.data, h);
	l->head_len = h;
	head_add(l, p, n);
	l->tail_pos = 0;
	tail_add(l, l->buf.data, l->buf.len);
	tail_add(l, p, n);
	l->discarding = true;
	l->discarded = l->buf.len + n;
	sl_buf_reset(&l->buf);
}

static int end_discard(struct sl_lines *l, const char *p, size_t n)
{
	char tail[SL_LINES_EDGE];
	size_t tl, start;

	tail_add(l, p, n);
	l->discarded += n;
	tl = l->tail_pos < SL_LINES_EDGE ? l->tail_pos : SL_LINES_EDGE;
	start = l->tail_pos - tl;
	for (size_t i = 0; i < tl; i++)
		tail[i] = l->tail[(start + i) % SL_LINES_EDGE];
	l->discarding = false;
	return l->ops->oversize(l->ctx, l->head, l->head_len, tail, tl, l->discarded);
}

static size_t trim_cr(const char *s, size_t n)
{
	return n && s[n - 1] == '\r' ? n - 1 : n;
}

int sl_lines_feed(struct sl_lines *l, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t seg = nl ? (size_t)(nl - p) : n;
		int rc = 0;

		if (l->discarding) {
			head_add(l, p, seg);
			if (!nl) {
				tail_add(l, p, n);
				l->discarded += n;
				return 0;
			}
			rc = end_discard(l, p, seg);
		} else if (!nl) {
			if (sl_buf_append(&l->buf, p, n) < 0)
				start_discard(l, p, n);
			return 0;
		} else if (l->buf.len == 0) {
			/* Common case: a whole line inside this chunk, no copy. */
			if (seg > l->buf.max) {
				start_discard(l, p, seg);
				rc = end_discard(l, p + seg, 0);
			} else {
				rc = l->ops->line(l->ctx, p, trim_cr(p, seg));
			}
		} else if (sl_buf_append(&l->buf, p, seg) < 0) {
			start_discard(l, p, seg);
			rc = end_discard(l, p + seg, 0);
		} else {
			rc = l->ops->line(l->ctx, l->buf.data, trim_cr(l->buf.data, l->buf.len));
			sl_buf_reset(&l->buf);
		}
		if (rc)
			return rc;
		p += seg + 1;
		n -= seg + 1;
	}
	return 0;
}

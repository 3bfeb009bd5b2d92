/* Server-sent events, client side, with a hard cap per event. */
#include "proto/sse.h"

#include <stdlib.h>
#include <string.h>

#define FIELD_SLACK 64 /* "data: " and the like, on top of the data cap */

static int on_line(void *ctx, const char *line, size_t len);
static int on_long_line(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
			size_t total);
static const struct sl_lines_ops line_ops = { on_line, on_long_line };

void sl_sse_init(struct sl_sse *s, size_t max, const struct sl_sse_ops *ops, void *ctx)
{
	memset(s, 0, sizeof(*s));
	sl_lines_init(&s->lines, max + FIELD_SLACK, &line_ops, s);
	sl_buf_init(&s->data, max);
	s->ops = ops;
	s->ctx = ctx;
	s->max = max;
	s->retry_ms = -1;
}

void sl_sse_dispose(struct sl_sse *s)
{
	sl_lines_dispose(&s->lines);
	sl_buf_dispose(&s->data);
}

static void keep_tail(struct sl_sse *s, const char *p, size_t n)
{
	if (n >= SL_LINES_EDGE) {
		memcpy(s->tail, p + n - SL_LINES_EDGE, SL_LINES_EDGE);
		s->tail_len = SL_LINES_EDGE;
		return;
	}
	if (s->tail_len + n > SL_LINES_EDGE) {
		size_t drop = s->tail_len + n - SL_LINES_EDGE;
		memmove(s->tail, s->tail + drop, s->tail_len - drop);
		s->tail_len -= drop;
	}
	memcpy(s->tail + s->tail_len, p, n);
	s->tail_len += n;
}

/* Over the cap: keep what is buffered as the edges and count the rest. */
static void start_discard(struct sl_sse *s)
{
	size_t h = s->data.len < SL_LINES_EDGE ? s->data.len : SL_LINES_EDGE;
	if (h)
		memcpy(s->head, s->data.data, h);
	s->head_len = h;
	s->tail_len = 0;
	if (s->data.len)
		keep_tail(s, s->data.data, s->data.len);
	s->total = s->data.len;
	s->discarding = true;
	sl_buf_reset(&s->data);
}

static void data_add(struct sl_sse *s, const char *p, size_t n)
{
	if (!s->discarding && sl_buf_append(&s->data, p, n) < 0)
		start_discard(s);
	if (s->discarding) {
		size_t room = SL_LINES_EDGE - s->head_len;
		if (room) {
			memcpy(s->head + s->head_len, p, n < room ? n : room);
			s->head_len += n < room ? n : room;
		}
		keep_tail(s, p, n);
		s->total += n;
	}
}

static void event_reset(struct sl_sse *s)
{
	sl_buf_reset(&s->data);
	s->type[0] = '\0';
	s->has_data = false;
	s->discarding = false;
	s->total = s->head_len = s->tail_len = 0;
}

static int dispatch(struct sl_sse *s)
{
	int rc = 0;

	if (s->discarding)
		rc = s->ops->oversize(s->ctx, s->head, s->head_len, s->tail, s->tail_len, s->total);
	else if (s->has_data)
		rc = s->ops->event(s->ctx, s->type[0] ? s->type : "message",
				   s->data.len ? s->data.data : "", s->data.len);
	event_reset(s);
	return rc;
}

static bool field_is(const char *f, size_t fl, const char *name)
{
	return fl == strlen(name) && memcmp(f, name, fl) == 0;
}

static int on_line(void *ctx, const char *line, size_t len)
{
	struct sl_sse *s = ctx;
	const char *colon, *v;
	size_t fl, vl;

	if (!s->bom_checked) {
		s->bom_checked = true;
		if (len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
			line += 3;
			len -= 3;
		}
	}
	if (len == 0)
		return dispatch(s);
	if (line[0] == ':') /* a comment: heartbeats */
		return 0;
	colon = memchr(line, ':', len);
	fl = colon ? (size_t)(colon - line) : len;
	v = colon ? colon + 1 : line + len;
	vl = len - (size_t)(v - line);
	if (vl && *v == ' ') {
		v++;
		vl--;
	}
	if (field_is(line, fl, "data")) {
		if (s->has_data)
			data_add(s, "\n", 1);
		s->has_data = true;
		data_add(s, v, vl);
	} else if (field_is(line, fl, "event")) {
		size_t n = vl < sizeof(s->type) - 1 ? vl : sizeof(s->type) - 1;
		memcpy(s->type, v, n);
		s->type[n] = '\0';
	} else if (field_is(line, fl, "id")) {
		/* An id with NUL is ignored (WHATWG); one too long to keep is too. */
		if (!memchr(v, '\0', vl) && vl < sizeof(s->last_id)) {
			memcpy(s->last_id, v, vl);
			s->last_id[vl] = '\0';
		}
	} else if (field_is(line, fl, "retry")) {
		long ms = 0;
		size_t i;
		for (i = 0; i < vl && v[i] >= '0' && v[i] <= '9' && ms < 86400000; i++)
			ms = ms * 10 + (v[i] - '0');
		if (vl && i == vl)
			s->retry_ms = ms;
	}
	return 0;
}

/* One line over the framer's cap: only a data line can be that long in a
 * sane stream, and its data is then over the event cap too. */
static int on_long_line(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
			size_t total)
{
	struct sl_sse *s = ctx;
	size_t skip = hl >= 6 && memcmp(head, "data: ", 6) == 0 ? 6 : 0;

	if (!s->discarding)
		start_discard(s);
	if (s->has_data)
		s->total++; /* the newline joining it to the data before */
	s->has_data = true;
	if (s->head_len == 0) {
		memcpy(s->head, head + skip, hl - skip);
		s->head_len = hl - skip;
	}
	keep_tail(s, tail, tl);
	s->total += total - skip;
	return 0;
}

int sl_sse_feed(struct sl_sse *s, const char *p, size_t n)
{
	return sl_lines_feed(&s->lines, p, n);
}

void sl_sse_body_append(struct sl_sse *s, const char *p, size_t n)
{
	s->has_data = true;
	data_add(s, p, n);
}

static bool json_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Where a body of JSON objects one after another splits: a newline with
 * '}' last before it and '{' first after it (whitespace aside). A raw
 * newline is never inside a JSON string, and no single JSON value has an
 * object follow an object without a comma, so one message never splits. */
static bool splits_at(const char *d, size_t len, size_t nl, size_t start)
{
	size_t a = nl, b = nl + 1;

	while (a > start && json_ws(d[a - 1]))
		a--;
	while (b < len && json_ws(d[b]))
		b++;
	return a > start && d[a - 1] == '}' && b < len && d[b] == '{';
}

int sl_sse_body_end(struct sl_sse *s)
{
	const char *d = s->data.data;
	size_t len = s->data.len, start = 0;
	int rc = 0;

	if (s->discarding || !s->has_data || !len)
		return dispatch(s);
	for (size_t i = 0; i < len && !rc; i++) {
		if (d[i] != '\n' || !splits_at(d, len, i, start))
			continue;
		rc = s->ops->event(s->ctx, "message", d + start, i - start);
		start = i + 1;
	}
	if (!rc)
		rc = s->ops->event(s->ctx, "message", d + start, len - start);
	event_reset(s);
	return rc;
}

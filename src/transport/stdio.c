/* The stdio transport: lines in from fd 0, lines out to fd 1. */
#include "transport/stdio.h"
#include "core/log.h"
#include "event/handles.h"
#include "event/write.h"
#include "proto/lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sl_stdio {
	uv_loop_t *loop;
	struct sl_session *session;
	struct sl_lines lines;
	size_t max_line;
	union {
		uv_pipe_t pipe;
		uv_tty_t tty;
	} in, out;
	bool in_stream;   /* fd 0 is a pipe/tty/socket (else a file, read with uv_fs) */
	bool out_stream;  /* fd 1 likewise (else blocking writes) */
	uv_fs_t fs;
	char fsbuf[65536];
	int64_t offset;
	struct sl_handles handles;
	bool closed;     /* every handle, after sl_stdio_free */
	bool ended;
	bool freeing;
	bool fs_busy;     /* a uv_fs_read is in flight */
	sl_stdio_end_fn on_end;
	void *ctx;
};

/* io->send: stdout carries every message in order, whatever its kind. */
static void send_out(void *ctx, struct sl_out *o)
{
	struct sl_stdio *t = ctx;
	char *line;
	size_t len;
	if (t->out_stream) {
		if (sl_write_spliced((uv_stream_t *)&t->out, o->line, o->len, o->splice_at,
				     o->splice, o->splice_off, o->splice_len) < 0)
			sl_log(SL_LOG_DEBUG, "stdout is closed: a message was dropped");
		return;
	}
	sl_out_join(o);
	line = o->line;
	len = o->len;
	for (size_t off = 0; off < len;) {
		ssize_t n = write(1, line + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(line);
}

static const struct sl_session_io io = { .send = send_out };

static int on_line(void *ctx, const char *line, size_t len)
{
	struct sl_stdio *t = ctx;
	if (len)
		sl_session_input(t->session, line, len);
	return 0;
}

static int on_oversize(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
		       size_t total)
{
	struct sl_stdio *t = ctx;
	sl_session_oversize(t->session, head, hl, tail, tl, total, t->max_line);
	return 0;
}

static const struct sl_lines_ops lines_ops = { on_line, on_oversize };

static void end(struct sl_stdio *t)
{
	if (t->ended)
		return;
	t->ended = true;
	/* A last line without its newline still counts. */
	if (t->lines.buf.len)
		sl_lines_feed(&t->lines, "\n", 1);
	t->on_end(t->ctx);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct sl_stdio *t = h->data;
	buf->base = t->fsbuf;
	buf->len = sizeof(t->fsbuf);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct sl_stdio *t = s->data;
	if (n > 0) {
		sl_lines_feed(&t->lines, buf->base, (size_t)n);
	} else if (n < 0) {
		uv_read_stop(s);
		end(t);
	}
}

static void maybe_free(struct sl_stdio *t)
{
	if (t->closed && !t->fs_busy)
		free(t);
}

static void read_file(struct sl_stdio *t);

static void on_fs_read(uv_fs_t *req)
{
	struct sl_stdio *t = req->data;
	ssize_t n = req->result;
	uv_fs_req_cleanup(req);
	t->fs_busy = false;
	if (t->freeing) {
		maybe_free(t);
		return;
	}
	if (n <= 0) {
		end(t);
		return;
	}
	t->offset += n;
	sl_lines_feed(&t->lines, t->fsbuf, (size_t)n);
	if (!t->ended)
		read_file(t);
}

static void read_file(struct sl_stdio *t)
{
	uv_buf_t b = uv_buf_init(t->fsbuf, sizeof(t->fsbuf));
	t->fs.data = t;
	if (uv_fs_read(t->loop, &t->fs, 0, &b, 1, -1, on_fs_read) < 0) {
		sl_log(SL_LOG_ERROR, "cannot read standard input");
		end(t);
		return;
	}
	t->fs_busy = true;
}

static bool open_stream(uv_loop_t *loop, int fd, void *h, bool readable)
{
	switch (uv_guess_handle(fd)) {
	case UV_TTY:
		return uv_tty_init(loop, h, fd, readable) == 0;
	case UV_NAMED_PIPE:
	case UV_TCP:
		return uv_pipe_init(loop, h, 0) == 0 && uv_pipe_open(h, fd) == 0;
	default:
		return false;
	}
}

struct sl_stdio *sl_stdio_start(uv_loop_t *loop, struct sl_gateway *gw, size_t max_line,
				sl_stdio_end_fn on_end, void *ctx)
{
	struct sl_stdio *t = sl_alloc(sizeof(*t));
	t->loop = loop;
	t->max_line = max_line;
	t->on_end = on_end;
	t->ctx = ctx;
	sl_lines_init(&t->lines, max_line, &lines_ops, t);
	sl_handles_init(&t->handles);
	t->session = sl_session_new(gw, &io, t);
	t->out_stream = open_stream(loop, 1, &t->out, false);
	if (t->out_stream) {
		t->out.pipe.data = t;
		sl_handles_add(&t->handles, &t->out);
	}
	t->in_stream = open_stream(loop, 0, &t->in, true);
	if (t->in_stream) {
		t->in.pipe.data = t;
		sl_handles_add(&t->handles, &t->in);
		uv_read_start((uv_stream_t *)&t->in, on_alloc, on_read);
	} else {
		read_file(t);
	}
	return t;
}

void sl_stdio_close(struct sl_stdio *t)
{
	if (t->in_stream && !t->ended)
		uv_read_stop((uv_stream_t *)&t->in);
	t->ended = true;
	/* MCP 2026-07-28 subscriptions: open listens end gracefully. */
	sl_session_end_listens(t->session);
	sl_session_close(t->session);
}

static void on_closed(void *arg)
{
	struct sl_stdio *t = arg;
	t->closed = true;
	maybe_free(t);
}

void sl_stdio_free(struct sl_stdio *t)
{
	sl_session_free(t->session);
	sl_lines_dispose(&t->lines);
	t->freeing = true;
	sl_handles_close(&t->handles, on_closed, t);
}

struct sl_session *sl_stdio_session(struct sl_stdio *t)
{
	return t->session;
}

/*
 * Streams: the responses that wait for lines (a POST's answered as SSE, a
 * session's GET stream). SSE framing with event ids, the history kept for
 * a resumption, the reader that suspends the connection when it has
 * nothing to write, a listen's peer watch, and GET /mcp: the session's
 * stream, or a resumption from Last-Event-ID (MCP 2025-11-25 transports,
 * resumability).
 */
#include "transport/http_int.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_MAX (1u << 20) /* bytes of past events a stream keeps for resumption */
#define RETRY_MS 1000 /* SSE retry: a cut-off client reconnects after this long */

/* ---- lines and streams ---------------------------------------------------- */

struct line *http_line_new(char *data, size_t len)
{
	struct line *l = sl_alloc(sizeof(*l));
	l->data = data;
	l->len = len;
	return l;
}

void http_lines_free(struct line *l)
{
	while (l) {
		struct line *n = l->next;
		free(l->data);
		free(l);
		l = n;
	}
}

/* HTTP+SSE has no event ids: its client (an EventSource) would take a
 * priming event for a message, and the transport has no resumption. */
static bool resumable(const struct stream *st)
{
	return st->hs && !st->hs->ephemeral && !st->hs->sse;
}

void http_stream_unlink(struct stream *st)
{
	struct hsess *hs = st->hs;
	if (!hs)
		return;
	http_detached_del(st);
	sl_list_remove(&st->link);
	if (hs->get == st)
		hs->get = NULL;
	hs->bytes -= st->bytes; /* from now on counted in all only */
	st->hs = NULL;
}

void http_stream_free(struct stream *st)
{
	struct hsess *hs = st->hs;
	http_stream_unlink(st);
	http_unwatch(st);
	http_lines_free(st->head);
	http_lines_free(st->hist);
	http_release(st->h, NULL, st, st->bytes);
	free(st->key);
	free(st->token);
	free(st);
	/* A 2026-07-28 request's session lives as long as its one stream,
	 * and so does an HTTP+SSE session (MCP 2024-11-05 transports). */
	if (hs && (hs->ephemeral || hs->sse))
		http_session_end(hs);
}

/* Keeps an event for a resumption: at most HISTORY_MAX per stream, oldest
 * given up first, and only what the budget allows. */
static void remember(struct stream *st, const struct line *l)
{
	struct line *c;
	if (!l->n || st->lost || !resumable(st))
		return;
	c = http_line_new(sl_strndup(l->data, l->len), l->len);
	c->n = l->n;
	while (st->hist_bytes + c->len > HISTORY_MAX ||
	       http_reserve(st->h, NULL, st, http_cost(c)) != FITS) {
		if (!st->hist) {
			st->dropped = c->n;
			http_lines_free(c);
			return;
		}
		http_hist_drop_oldest(st);
	}
	*st->hist_tail = c;
	st->hist_tail = &c->next;
	st->hist_bytes += c->len;
}

/* MCP 2025-11-25 transports: each JSON-RPC message is one SSE event; in a
 * session each has an id "<stream>-<n>" so a client can resume after it. */
struct line *http_sse_frame(struct stream *st, const char *json, size_t len)
{
	struct line *l;
	char *f;
	while (len && (json[len - 1] == '\n' || json[len - 1] == '\r'))
		len--;
	if (!resumable(st)) {
		f = sl_printf("event: message\ndata: %.*s\n\n", (int)len, json);
		return http_line_new(f, strlen(f));
	}
	f = sl_printf("id: %u-%u\nevent: message\ndata: %.*s\n\n", st->no, ++st->nevents, (int)len,
		      json);
	l = http_line_new(f, strlen(f));
	l->n = st->nevents;
	return l;
}

/* Resumes the stream's connection if it waits for something to write. */
void http_wake(struct stream *st)
{
	if (st->suspended) {
		st->suspended = false;
		MHD_resume_connection(st->conn);
		http_kick(st->h);
	}
}

/* ---- a listen's client going away ------------------------------------------ */

static void on_watch_closed(uv_handle_t *hd)
{
	free(hd);
}

void http_unwatch(struct stream *st)
{
	if (!st->watch)
		return;
	uv_close((uv_handle_t *)st->watch, on_watch_closed);
	st->watch = NULL;
}

/* The client of a listen's stream closed its end (MCP 2026-07-28: closing
 * the stream ends the listen). A suspended connection is not read by
 * libmicrohttpd, so without this a closed listen would hold its slot
 * until the next heartbeat failed to write. Data instead of an end (a
 * pipelined request) is libmicrohttpd's to read later: stop watching. */
static void on_watch(uv_poll_t *p, int status, int events)
{
	struct stream *st = p->data;
	char c;
	ssize_t n = 0;

	if (status == 0 && !(events & UV_DISCONNECT)) {
		n = recv(st->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return;
	}
	http_unwatch(st);
	if (n > 0)
		return;
	st->killed = true;
	http_lines_release(st, st->head);
	st->head = NULL;
	st->tail = &st->head;
	http_wake(st);
}

void http_watch_peer(struct stream *st)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || st->watch)
		return;
	st->watch = sl_alloc(sizeof(*st->watch));
	st->fd = ci->connect_fd;
	if (uv_poll_init_socket(st->h->loop, st->watch, st->fd) != 0) {
		free(st->watch);
		st->watch = NULL;
		return;
	}
	st->watch->data = st;
	uv_poll_start(st->watch, UV_READABLE | UV_DISCONNECT, on_watch);
}

/* Queues l (taken) on st, charged to the budget; must: a small control
 * line (priming event, heartbeat, the error an answer became) charged
 * whatever the bound. At a bound l is freed and the bound returned. */
enum bound http_stream_push(struct stream *st, struct line *l, bool must)
{
	enum bound b = FITS;
	if (st->detached || st->killed) {
		/* Nobody reads: the event is in the history for a resumption. */
		remember(st, l);
		http_lines_free(l);
		return FITS;
	}
	if (must)
		http_charge(st->h, NULL, st, http_cost(l));
	else if ((b = http_reserve(st->h, NULL, st, http_cost(l))) != FITS) {
		http_lines_free(l);
		return b;
	}
	remember(st, l);
	*st->tail = l;
	st->tail = &l->next;
	http_wake(st);
	return FITS;
}

/* Ends a stream once what it holds is written. */
void http_stream_end(struct stream *st)
{
	st->done = true;
	http_wake(st);
}

/* The stream's client stopped reading and what waits for it reached the
 * budget: its queue is given up and its connection shut down, so that
 * libmicrohttpd, blocked writing to it, closes it (and the stream detaches
 * as any cut one). Logged once per stream. */
void http_kill_stream(struct stream *st, enum bound b)
{
	const union MHD_ConnectionInfo *ci;
	char *why = http_busy_why(st->h, b);
	sl_log(SL_LOG_WARN, "http: session %.8s…: the client of stream %u is not reading; ended (%s)",
	       st->hs ? st->hs->id : "", st->no, why);
	free(why);
	st->killed = true;
	http_unwatch(st);
	http_lines_release(st, st->head);
	st->head = NULL;
	st->tail = &st->head;
	ci = MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		shutdown(ci->connect_fd, SHUT_RDWR);
	http_wake(st);
}

void http_on_stream_freed(void *cls)
{
	struct stream *st = cls;
	http_unwatch(st);
	if (st->req) {
		st->req->st = NULL;
		st->req = NULL;
	}
	/* MCP 2025-11-25 transports, resumability: a session's stream whose
	 * client went away before its end (even with its last events in
	 * MHD's buffer) waits for a GET with Last-Event-ID. */
	if ((st->cut || !st->done) && resumable(st) && !st->hs->ended && !st->lost) {
		st->cut = st->killed = false;
		http_lines_release(st, st->head);
		st->head = NULL;
		st->tail = &st->head;
		st->conn = NULL;
		st->suspended = false;
		http_detached_add(st);
		return;
	}
	http_stream_free(st);
}

static ssize_t on_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	size_t n = 0;

	if (st->killed) {
		http_unwatch(st);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	while (st->head && n < max) {
		struct line *l = st->head;
		size_t k = l->len - l->off;
		if (k > max - n)
			k = max - n;
		memcpy(buf + n, l->data + l->off, k);
		n += k;
		l->off += k;
		if (l->off == l->len) {
			st->head = l->next;
			if (!st->head)
				st->tail = &st->head;
			l->next = NULL;
			http_lines_release(st, l);
		}
	}
	if (n)
		return (ssize_t)n;
	if (st->done) {
		http_unwatch(st);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	/* Nothing to write yet: a routed line resumes us (no busy wait). */
	st->suspended = true;
	MHD_suspend_connection(st->conn);
	return 0;
}

/* A stream for hs's request on c, keyed by key and token (taken), its
 * memory charged; NULL (and *b says why) at a bound: the request is
 * refused before any work. */
struct stream *http_stream_new(struct sl_http *h, struct hsess *hs, struct MHD_Connection *c,
			       char *key, char *token, enum bound *b)
{
	struct stream *st;
	size_t n = sizeof(*st) + (key ? strlen(key) : 0) + (token ? strlen(token) : 0);
	if ((*b = http_reserve(h, hs, NULL, n)) != FITS) {
		free(key);
		free(token);
		return NULL;
	}
	st = sl_alloc(sizeof(*st));
	st->h = h;
	st->conn = c;
	st->key = key;
	st->token = token;
	st->tail = &st->head;
	st->hs = hs;
	st->hist_tail = &st->hist;
	st->no = ++hs->nstreams;
	sl_list_push_front(&hs->streams, &st->link);
	st->bytes = n; /* charged above, to hs and in all */
	return st;
}

/* MCP 2025-11-25 transports: a stream starts with a priming event (an id,
 * empty data) so that a client cut off before any message can resume; its
 * retry field tells the client how long to wait before it does (SEP-1699). */
void http_prime(struct stream *st)
{
	struct line *l;
	if (!resumable(st))
		return;
	l = http_line_new(sl_printf("id: %u-0\nretry: %u\ndata: \n\n", st->no, RETRY_MS), 0);
	l->len = strlen(l->data);
	http_stream_push(st, l, true);
}

enum MHD_Result http_open_sse(struct MHD_Connection *c, struct stream *st, struct hsess *hs,
			      struct req *q)
{
	struct MHD_Response *r = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 16384, on_stream_read, st, http_on_stream_freed);
	enum MHD_Result ret;
	/* The request hears how the connection ended (cut or complete). */
	st->req = q;
	q->st = st;
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	/* MCP 2026-07-28 transports: reverse proxies must not buffer SSE. */
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
	if (hs && hs->id[0])
		MHD_add_response_header(r, SL_MCP_HDR_SESSION, hs->id);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- GET: the session's stream, or a resumption ------------------------------------ */

/* GET with Last-Event-ID "<stream>-<n>": the events of that stream after
 * n, then the rest of the stream as it comes, on this connection. */
static enum MHD_Result resume(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      struct hsess *hs, const char *last)
{
	unsigned no, n;
	char end;
	struct stream *st;
	struct sl_list *sn;
	size_t total = 0;
	enum bound b;

	if (sscanf(last, "%u-%u%c", &no, &n, &end) != 2)
		return http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, NULL, "Bad Request: unknown Last-Event-ID");
	st = NULL;
	sl_list_each(sn, &hs->streams)
		if (sl_list_entry(sn, struct stream, link)->no == no) {
			st = sl_list_entry(sn, struct stream, link);
			break;
		}
	if (!st || !st->detached)
		return http_fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL,
				 "Not Found: no stream to resume with that Last-Event-ID");
	/* Events given up (HISTORY_MAX, the memory budget) are never skipped
	 * silently: the resumption fails instead. */
	if (st->lost || n < st->dropped)
		return http_fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL,
				 "Not Found: the events after that Last-Event-ID are no longer kept "
				 "(the memory budget, sluice.limits)");
	for (struct line *l = st->hist; l; l = l->next)
		if (l->n > n)
			total += http_cost(l);
	if ((b = http_reserve(h, NULL, st, total)) != FITS) {
		char *why = http_busy_why(h, b);
		enum MHD_Result ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		return ret;
	}
	http_detached_del(st);
	st->detached = false;
	st->conn = c;
	for (struct line *l = st->hist; l; l = l->next)
		if (l->n > n) { /* charged above; copies are not events to remember again */
			struct line *copy = http_line_new(sl_strndup(l->data, l->len), l->len);
			*st->tail = copy;
			st->tail = &copy->next;
		}
	return http_open_sse(c, st, hs, r);
}

enum MHD_Result http_get(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			 const struct sl_caller *who)
{
	const char *last;
	enum MHD_Result ret;
	struct hsess *hs;
	struct stream *st;
	enum bound b;

	if (!(hs = http_find_session(h, c, who, &ret)))
		return ret;
	if ((last = http_header(c, "Last-Event-ID"))) {
		uint32_t first = hs->first_no ? hs->first_no : 1;
		unsigned no = 0;

		if (!sl_http_event_id_foreign(last, first, hs->nstreams - first + 1))
			return resume(h, c, r, hs, last);
		/* The stream was another replica's (it died, or the balancer moved
		 * the client): its events went with it. A new stream, so that what
		 * comes from now on reaches the client; a 404 would say the session
		 * is gone, and clients that do not initialize again on it (the SDK
		 * 1.x) would stay without a stream. The number, not the header, is
		 * logged. */
		sscanf(last, "%u", &no);
		sl_log(SL_LOG_INFO, "http: session %.8s…: Last-Event-ID of stream %u, another "
		       "replica's: a new stream, nothing replayed", hs->id, no);
	}
	if (hs->get && !hs->get->detached)
		return http_fail(c, MHD_HTTP_CONFLICT, SL_RPC_SERVER_ERROR, NULL,
				 "Conflict: this session's stream is already open");
	if (hs->get)
		http_stream_free(hs->get); /* a new stream replaces one nobody resumed */
	if (!(st = http_stream_new(h, hs, c, NULL, NULL, &b))) {
		char *why = http_busy_why(h, b);
		ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		return ret;
	}
	st->is_get = st->sse = true;
	hs->get = st;
	http_prime(st);
	while (hs->backlog) {
		/* Within the budget already: from the backlog to the stream. */
		struct line *l = hs->backlog;
		hs->backlog = l->next;
		hs->nbacklog--;
		hs->backlog_bytes -= http_cost(l);
		http_release(h, hs, NULL, http_cost(l));
		http_stream_push(st, http_sse_frame(st, l->data, l->len), true);
		l->next = NULL;
		http_lines_free(l);
	}
	hs->backlog_tail = &hs->backlog;
	return http_open_sse(c, st, hs, r);
}

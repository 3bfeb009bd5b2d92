/*
 * The Streamable HTTP transport (MCP 2025-11-25 transports, "Streamable
 * HTTP"; MCP 2026-07-28 HTTP headers). libmicrohttpd parses HTTP; this file
 * decides what each request means and routes each line a session sends.
 *
 * Objects:
 *   struct hsess    one MCP session: its struct sl_session, its id, the
 *                   credential that opened it and its open streams.
 *   struct stream   one response that is waiting for lines: a POST's (keyed
 *                   by the JSON-RPC id of its request, and by its
 *                   progressToken) or the session's GET stream.
 *   struct req      one HTTP request while its body arrives.
 *
 * A stream that answers later is a response from callback: when it has
 * nothing to write, the reader suspends the connection, and a line routed
 * to it resumes the connection. Sessions are freed from the loop (the reap
 * list), never inside the session's own callbacks.
 */
#include "transport/http.h"
#include "core/buf.h"
#include "core/digest.h"
#include "core/log.h"
#include "event/handles.h"
#include "proto/mcp.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define BACKLOG_MAX 64        /* lines kept for a GET stream not yet open */
#define SWEEP_MS 1000
#define HEARTBEAT ": keep-alive\n\n"
#define HISTORY_MAX (1u << 20) /* bytes of past events a stream keeps for resumption */

#define WAIT_MS 50 /* a POST's answer this quick comes as JSON (settle()) */
#define RETRY_MS 1000 /* SSE retry: a cut-off client reconnects after this long */

struct line {
	struct line *next;
	char *data;
	size_t len, off;
	uint32_t n;                  /* the event's number in its stream (history) */
};

struct hsess;
struct req;

struct stream {
	struct sl_http *h;
	struct hsess *hs;            /* NULL once the session ended */
	struct stream *next;         /* in hs->streams */
	struct MHD_Connection *conn;
	char *key;                   /* POST: the request's id as JSON */
	char *token;                 /* POST: its progressToken as JSON, or NULL */
	struct line *head, **tail;
	bool sse;                    /* lines are framed as SSE events */
	bool answered;               /* the answer is queued */
	bool failed;                 /* the answer is a JSON-RPC error */
	bool done;                   /* end once the queue is written */
	bool suspended;
	bool is_get;
	bool detached;               /* the client went away; resumable by Last-Event-ID */
	bool cut;                    /* the connection ended before the response did */
	struct req *req;             /* the HTTP request writing it, while both live */
	uint32_t no;                 /* the stream's number in its session (event ids) */
	uint32_t nevents;
	struct line *hist, **hist_tail; /* events sent, for replay (at most HISTORY_MAX) */
	size_t hist_bytes;
};

struct hsess {
	struct sl_http *h;
	struct hsess *next;          /* in h->sessions or h->reap */
	struct sl_session *s;
	char id[33];                 /* 128 random bits in hex; "" when ephemeral */
	char *token;                 /* the bearer token that opened it */
	struct stream *streams;
	struct stream *get;
	struct line *backlog, **backlog_tail;
	size_t nbacklog;
	uint32_t nstreams;           /* streams numbered so far */
	uint64_t last_ms;
	bool ephemeral;              /* 2026-07-28: one request, no id */
	bool ended;
};

struct sl_http {
	uv_loop_t *loop;
	struct sl_gateway *gw;
	const struct sl_http_config *cfg;
	struct MHD_Daemon *d;
	uv_poll_t poll;
	uv_timer_t timer, kick, sweep, beat, wait;
	struct sl_handles handles;
	bool stopping, freeing;
	char host[256];              /* the listen host as written */
	bool wildcard;               /* bound to 0.0.0.0 or :: */
	bool loopback;
	uint16_t port;
	struct hsess *sessions, *reap;
	struct sl_map by_id;
	uint32_t nsessions;
};

struct req {
	struct sl_buf body;
	bool over;
	size_t total;
	bool waiting;                /* suspended before any response: see settle() */
	uint64_t since_ms;           /* when it began to wait */
	struct stream *st;           /* the stream it answers with, while both live */
};

static void run_mhd(struct sl_http *h);
static void on_kick(uv_timer_t *t);

/* Runs MHD (and frees ended sessions) soon, from the loop. */
static void kick(struct sl_http *h)
{
	if (!h->freeing)
		uv_timer_start(&h->kick, on_kick, 0, 0);
}

/* ---- lines and streams ---------------------------------------------------- */

static struct line *line_new(char *data, size_t len)
{
	struct line *l = sl_alloc(sizeof(*l));
	l->data = data;
	l->len = len;
	return l;
}

static bool resumable(const struct stream *st)
{
	return st->hs && !st->hs->ephemeral;
}

static void remember(struct stream *st, const struct line *l)
{
	struct line *c = line_new(sl_strndup(l->data, l->len), l->len);
	c->n = l->n;
	*st->hist_tail = c;
	st->hist_tail = &c->next;
	st->hist_bytes += c->len;
	while (st->hist_bytes > HISTORY_MAX && st->hist) {
		struct line *old = st->hist;
		st->hist = old->next;
		if (!st->hist)
			st->hist_tail = &st->hist;
		st->hist_bytes -= old->len;
		free(old->data);
		free(old);
	}
}

/* MCP 2025-11-25 transports: each JSON-RPC message is one SSE event; in a
 * session each has an id "<stream>-<n>" so a client can resume after it. */
static struct line *sse_frame(struct stream *st, const char *json, size_t len)
{
	struct line *l;
	char *f;
	while (len && (json[len - 1] == '\n' || json[len - 1] == '\r'))
		len--;
	if (!resumable(st)) {
		f = sl_printf("event: message\ndata: %.*s\n\n", (int)len, json);
		return line_new(f, strlen(f));
	}
	f = sl_printf("id: %u-%u\nevent: message\ndata: %.*s\n\n", st->no, ++st->nevents, (int)len,
		      json);
	l = line_new(f, strlen(f));
	l->n = st->nevents;
	remember(st, l);
	return l;
}

/* Resumes the stream's connection if it waits for something to write. */
static void wake(struct stream *st)
{
	if (st->suspended) {
		st->suspended = false;
		MHD_resume_connection(st->conn);
		kick(st->h);
	}
}

static void stream_push(struct stream *st, struct line *l)
{
	if (st->detached) {
		/* Nobody reads: the event is in the history for a resumption. */
		free(l->data);
		free(l);
		return;
	}
	*st->tail = l;
	st->tail = &l->next;
	wake(st);
}

/* Ends a stream once what it holds is written. */
static void stream_end(struct stream *st)
{
	st->done = true;
	wake(st);
}

static void lines_free(struct line *l)
{
	while (l) {
		struct line *n = l->next;
		free(l->data);
		free(l);
		l = n;
	}
}

static void stream_unlink(struct stream *st)
{
	struct hsess *hs = st->hs;
	if (!hs)
		return;
	for (struct stream **p = &hs->streams; *p; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			break;
		}
	if (hs->get == st)
		hs->get = NULL;
	st->hs = NULL;
}

static void session_end(struct hsess *hs);

static void stream_free(struct stream *st)
{
	struct hsess *hs = st->hs;
	stream_unlink(st);
	lines_free(st->head);
	lines_free(st->hist);
	free(st->key);
	free(st->token);
	free(st);
	/* A 2026-07-28 request's session lives as long as its one stream. */
	if (hs && hs->ephemeral)
		session_end(hs);
}

static void on_stream_freed(void *cls)
{
	struct stream *st = cls;
	if (st->req) {
		st->req->st = NULL;
		st->req = NULL;
	}
	/* MCP 2025-11-25 transports, resumability: a session's stream whose
	 * client went away before its end (even with its last events in
	 * MHD's buffer) waits for a GET with Last-Event-ID. */
	if ((st->cut || !st->done) && resumable(st) && !st->hs->ended) {
		st->cut = false;
		lines_free(st->head);
		st->head = NULL;
		st->tail = &st->head;
		st->conn = NULL;
		st->suspended = false;
		st->detached = true;
		return;
	}
	stream_free(st);
}

static ssize_t on_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	size_t n = 0;

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
			free(l->data);
			free(l);
		}
	}
	if (n)
		return (ssize_t)n;
	if (st->done)
		return MHD_CONTENT_READER_END_OF_STREAM;
	/* Nothing to write yet: a routed line resumes us (no busy wait). */
	st->suspended = true;
	MHD_suspend_connection(st->conn);
	return 0;
}

static struct stream *stream_new(struct sl_http *h, struct hsess *hs, struct MHD_Connection *c)
{
	struct stream *st = sl_alloc(sizeof(*st));
	st->h = h;
	st->conn = c;
	st->tail = &st->head;
	st->hs = hs;
	st->hist_tail = &st->hist;
	st->no = ++hs->nstreams;
	st->next = hs->streams;
	hs->streams = st;
	return st;
}

/* ---- routing what a session sends ------------------------------------------ */

static char *json_key(yyjson_val *v)
{
	return v ? yyjson_val_write(v, 0, NULL) : NULL;
}

static void to_get_stream(struct hsess *hs, char *line, size_t len)
{
	if (hs->get) {
		stream_push(hs->get, sse_frame(hs->get, line, len));
		free(line);
		return;
	}
	/* Over HTTP, list_changed sent before the client opens its GET
	 * stream would be lost: keep a few. */
	if (hs->nbacklog >= BACKLOG_MAX || hs->ephemeral) {
		sl_log(SL_LOG_DEBUG, "http: no stream for a server message: dropped");
		free(line);
		return;
	}
	struct line *l = line_new(line, len);
	*hs->backlog_tail = l;
	hs->backlog_tail = &l->next;
	hs->nbacklog++;
}

static void deliver(struct stream *st, char *line, size_t len)
{
	if (st->sse) {
		stream_push(st, sse_frame(st, line, len));
		free(line);
	} else {
		stream_push(st, line_new(line, len));
	}
}

/* io->send: one outgoing message, routed by what the session says it is.
 * The rule (docs/internals/HTTP.md): an answer goes to the POST that
 * carried its request; a progress notification to the POST whose request
 * carries its token; a server-to-client request to the only POST still
 * waiting in the session (with several, to the GET stream); anything else
 * to the GET stream. */
static void send_out(void *ctx, struct sl_out *o)
{
	struct hsess *hs = ctx;
	struct stream *target = NULL;
	char *key = NULL;

	if (hs->ended) {
		free(o->line);
		return;
	}
	switch (o->kind) {
	case SL_OUT_RESPONSE:
		key = json_key(o->id);
		for (struct stream *st = hs->streams; st && key; st = st->next)
			if (!st->is_get && !st->answered && st->key && !strcmp(st->key, key)) {
				target = st;
				break;
			}
		free(key);
		if (!target) {
			sl_log(SL_LOG_DEBUG, "http: an answer whose request is gone: dropped");
			free(o->line);
			return;
		}
		target->answered = true;
		target->failed = o->error;
		deliver(target, o->line, o->len);
		if (target->sse)
			stream_end(target);
		return;
	case SL_OUT_NOTIFICATION:
		key = json_key(o->token);
		for (struct stream *st = hs->streams; st && key; st = st->next)
			if (!st->is_get && !st->answered && st->token && !strcmp(st->token, key)) {
				target = st;
				break;
			}
		free(key);
		break;
	case SL_OUT_REQUEST: {
		int waiting = 0;
		for (struct stream *st = hs->streams; st; st = st->next)
			if (!st->is_get && !st->answered) {
				waiting++;
				target = st;
			}
		if (waiting != 1)
			target = NULL;
		break;
	}
	}
	if (target)
		deliver(target, o->line, o->len);
	else
		to_get_stream(hs, o->line, o->len);
}

static const struct sl_session_io io = { send_out };

/* ---- sessions --------------------------------------------------------------- */

static struct hsess *session_new(struct sl_http *h, bool ephemeral, const char *token)
{
	struct hsess *hs = sl_alloc(sizeof(*hs));
	hs->h = h;
	hs->ephemeral = ephemeral;
	hs->backlog_tail = &hs->backlog;
	hs->token = token ? sl_strdup(token) : NULL;
	hs->last_ms = sl_now_ms();
	if (!ephemeral) {
		unsigned char r[16];
		/* MCP 2025-11-25 transports: a globally unique, secure session id. */
		if (getrandom(r, sizeof(r), 0) != sizeof(r))
		{
			sl_log(SL_LOG_ERROR, "getrandom failed: no session id can be made");
			abort();
		}
		for (int i = 0; i < 16; i++)
			snprintf(hs->id + 2 * i, 3, "%02x", r[i]);
		sl_map_put(&h->by_id, hs->id, hs);
		h->nsessions++;
	}
	hs->next = h->sessions;
	h->sessions = hs;
	hs->s = sl_session_new(h->gw, &io, hs);
	return hs;
}

/* Ends a session: its calls are cancelled, its streams end, and it is
 * freed later from the loop. */
static void session_end(struct hsess *hs)
{
	struct sl_http *h = hs->h;
	if (hs->ended)
		return;
	hs->ended = true;
	for (struct hsess **p = &h->sessions; *p; p = &(*p)->next)
		if (*p == hs) {
			*p = hs->next;
			break;
		}
	if (!hs->ephemeral) {
		sl_map_del(&h->by_id, hs->id);
		h->nsessions--;
	}
	sl_session_close(hs->s);
	while (hs->streams) {
		struct stream *st = hs->streams;
		if (st->detached) {
			stream_free(st); /* no response holds it */
			continue;
		}
		stream_unlink(st);
		stream_end(st);
	}
	hs->next = h->reap;
	h->reap = hs;
	kick(h);
}

static void reap(struct sl_http *h)
{
	while (h->reap) {
		struct hsess *hs = h->reap;
		h->reap = hs->next;
		sl_session_free(hs->s);
		lines_free(hs->backlog);
		free(hs->token);
		free(hs);
	}
}

/* ---- checks -------------------------------------------------------------------- */

static bool same_secret(const char *a, const char *b)
{
	/* Constant time: compare digests, so neither length nor content leaks. */
	char da[SL_SHA256_HEX], db[SL_SHA256_HEX];
	unsigned char diff = 0;
	sl_sha256_hex(a, strlen(a), da);
	sl_sha256_hex(b, strlen(b), db);
	for (size_t i = 0; i < sizeof(da); i++)
		diff |= (unsigned char)(da[i] ^ db[i]);
	return diff == 0;
}

/* "http://localhost:*" matches that origin with any port or none. */
static bool origin_matches(const char *pat, const char *origin)
{
	size_t pl = strlen(pat);
	if (!strcmp(pat, "*") || !strcmp(pat, origin))
		return true;
	if (pl >= 2 && !strcmp(pat + pl - 2, ":*")) {
		size_t bl = pl - 2;
		if (strncmp(pat, origin, bl) != 0)
			return false;
		if (origin[bl] == '\0')
			return true;
		if (origin[bl] != ':' || !origin[bl + 1])
			return false;
		for (const char *p = origin + bl + 1; *p; p++)
			if (*p < '0' || *p > '9')
				return false;
		return true;
	}
	return false;
}

static bool origin_allowed(struct sl_http *h, const char *origin)
{
	static const char *const defaults[] = { "http://localhost:*", "http://127.0.0.1:*",
						"http://[::1]:*" };
	if (!origin)
		return true;
	if (!h->cfg->allowed_origins) {
		for (size_t i = 0; i < SL_COUNT(defaults); i++)
			if (origin_matches(defaults[i], origin))
				return true;
		return false;
	}
	for (size_t i = 0; i < h->cfg->norigins; i++)
		if (origin_matches(h->cfg->allowed_origins[i], origin))
			return true;
	return false;
}

/* DNS rebinding: the Host header must name the address we listen on (or
 * localhost when that is a loopback address), with our port if any. */
static bool host_allowed(struct sl_http *h, const char *host)
{
	char name[256];
	const char *port = NULL;
	size_t n;

	if (!host)
		return false;
	if (h->wildcard)
		return true;
	if (host[0] == '[') {
		const char *e = strchr(host, ']');
		if (!e)
			return false;
		n = (size_t)(e - host) + 1;
		if (e[1] == ':')
			port = e + 2;
		else if (e[1])
			return false;
	} else {
		const char *c = strrchr(host, ':');
		n = c ? (size_t)(c - host) : strlen(host);
		if (c)
			port = c + 1;
	}
	if (n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (port) {
		char *end;
		if (!*port || strtoul(port, &end, 10) != h->port || *end)
			return false;
	}
	if (!strcasecmp(name, h->host))
		return true;
	return h->loopback && (!strcasecmp(name, "localhost") || !strcmp(name, "127.0.0.1") ||
			       !strcmp(name, "[::1]"));
}

/* Accept must allow both kinds of answer (MCP 2025-11-25 transports). */
static bool accepts(const char *accept, const char *type)
{
	return accept && (strstr(accept, type) || strstr(accept, "*/*"));
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* ---- responses ------------------------------------------------------------------ */

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *ctype,
			       const char *body, size_t len, const struct hsess *hs)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	if (ctype)
		MHD_add_response_header(r, "Content-Type", ctype);
	if (hs && hs->id[0])
		MHD_add_response_header(r, SL_MCP_HDR_SESSION, hs->id);
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer realm=\"sluice\"");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, "Allow", "GET, POST, DELETE");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* An HTTP error with a JSON-RPC error body (id when known). */
static enum MHD_Result fail(struct MHD_Connection *c, unsigned status, int code, yyjson_val *id,
			    const char *msg)
{
	enum MHD_Result ret;
	size_t len;
	char *s = sl_rpc_error_line(id, code, msg, &len);

	ret = respond(c, status, "application/json", s, len - 1, NULL);
	free(s);
	return ret;
}

/* MCP 2025-11-25 transports: a stream starts with a priming event (an id,
 * empty data) so that a client cut off before any message can resume; its
 * retry field tells the client how long to wait before it does (SEP-1699). */
static void prime(struct stream *st)
{
	struct line *l;
	if (!resumable(st))
		return;
	l = line_new(sl_printf("id: %u-0\nretry: %u\ndata: \n\n", st->no, RETRY_MS), 0);
	l->len = strlen(l->data);
	stream_push(st, l);
}

static enum MHD_Result open_sse(struct MHD_Connection *c, struct stream *st, struct hsess *hs,
				struct req *q)
{
	struct MHD_Response *r = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 16384, on_stream_read, st, on_stream_freed);
	enum MHD_Result ret;
	/* The request hears how the connection ended (cut or complete). */
	st->req = q;
	q->st = st;
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	MHD_add_response_header(r, "Cache-Control", "no-cache");
	if (hs && hs->id[0])
		MHD_add_response_header(r, SL_MCP_HDR_SESSION, hs->id);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- POST ------------------------------------------------------------------------ */

/* MCP 2026-07-28 HTTP: Mcp-Method always, Mcp-Name for the methods that
 * name a thing, both equal to the body's. NULL if they match, else why. */
static const char *modern_headers(struct MHD_Connection *c, yyjson_val *root)
{
	const char *m = yyjson_get_str(yyjson_obj_get(root, "method"));
	const char *hm = header(c, SL_MCP_HDR_METHOD), *hn = header(c, SL_MCP_HDR_NAME);
	const char *field = NULL, *name;

	if (!m)
		return NULL; /* a response: nothing to name */
	if (!hm)
		return "the Mcp-Method header is missing";
	if (strcmp(hm, m) != 0)
		return "the Mcp-Method header does not match the body's method";
	if (!strcmp(m, "tools/call") || !strcmp(m, "prompts/get"))
		field = "name";
	else if (!strcmp(m, "resources/read"))
		field = "uri";
	if (!field)
		return NULL;
	name = yyjson_get_str(yyjson_obj_get(yyjson_obj_get(root, "params"), field));
	if (!hn)
		return "the Mcp-Name header is missing";
	if (!name || strcmp(hn, name) != 0)
		return "the Mcp-Name header does not match the body";
	return NULL;
}

/* A cancelled request is never answered (MCP: cancellation): its stream
 * ends now rather than when the client gives up on it. */
static void end_cancelled(struct hsess *hs, yyjson_val *rid)
{
	char *key = json_key(rid);
	for (struct stream *st = hs->streams; st && key; st = st->next)
		if (!st->is_get && !st->answered && st->key && !strcmp(st->key, key)) {
			st->answered = true;
			stream_end(st);
			break;
		}
	free(key);
}

/* The rule (docs/internals/HTTP.md): JSON when the answer is the first
 * line for the request and no progress was asked for; SSE otherwise, with
 * what is queued so far framed as events and the rest streamed. */
static enum MHD_Result answer(struct MHD_Connection *c, struct req *r, struct stream *st)
{
	struct hsess *hs = st->hs;
	struct line *old;
	enum MHD_Result ret;

	if (st->answered && st->head && !st->head->next && !st->token) {
		struct line *l = st->head;
		size_t len = l->len;
		while (len && l->data[len - 1] == '\n')
			len--;
		ret = respond(c, MHD_HTTP_OK, "application/json", l->data, len, hs);
		stream_free(st);
		return ret;
	}
	old = st->head;
	st->head = NULL;
	st->tail = &st->head;
	st->sse = true;
	prime(st);
	for (struct line *l = old; l; l = l->next)
		stream_push(st, sse_frame(st, l->data, l->len));
	lines_free(old);
	if (st->answered)
		st->done = true;
	return open_sse(c, st, hs, r);
}

/* A POST that waited resumes: something was routed to it, its session
 * ended, or it waited WAIT_MS and streams from now on (a slow call's stream
 * starts with its priming event, so a client cut off later can resume). */
static enum MHD_Result settle(struct MHD_Connection *c, struct req *r)
{
	struct stream *st = r->st;
	r->waiting = false;
	r->st = NULL;
	st->req = NULL;
	return answer(c, r, st);
}

static void on_wait(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	uint64_t now = sl_now_ms();
	bool more = false;
	for (struct hsess *hs = h->sessions; hs; hs = hs->next)
		for (struct stream *st = hs->streams; st; st = st->next)
			if (!st->sse && st->req && st->req->waiting) {
				if (now - st->req->since_ms >= WAIT_MS)
					wake(st);
				else
					more = true;
			}
	if (!more)
		uv_timer_stop(t);
}

static enum MHD_Result post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			    const char *token, bool modern)
{
	const char *ctype = header(c, "Content-Type");
	const char *pv = header(c, SL_MCP_HDR_VERSION);
	const char *sid = header(c, SL_MCP_HDR_SESSION);
	yyjson_doc *doc = NULL;
	yyjson_val *root, *id, *method, *meta;
	struct hsess *hs = NULL;
	struct stream *st;
	enum MHD_Result ret;
	bool is_init;

	/* MCP 2025-11-25 transports: the client accepts both answers. */
	if (!accepts(header(c, "Accept"), "application/json") ||
	    !accepts(header(c, "Accept"), "text/event-stream"))
		return fail(c, MHD_HTTP_NOT_ACCEPTABLE, SL_RPC_SERVER_ERROR, NULL,
			    "Not Acceptable: Accept must allow application/json and text/event-stream");
	if (r->over) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the request body is over sluice.http.maxBodyBytes (%zu bytes)",
			 h->cfg->max_body_bytes);
		return fail(c, MHD_HTTP_CONTENT_TOO_LARGE, SL_RPC_INVALID_REQUEST, NULL, msg);
	}
	if (!ctype || strncasecmp(ctype, "application/json", 16) != 0)
		return fail(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, SL_RPC_SERVER_ERROR, NULL,
			    "Content-Type must be application/json");
	doc = yyjson_read(r->body.data ? r->body.data : "", r->body.len, 0);
	root = yyjson_doc_get_root(doc);
	if (!doc) {
		ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_PARSE_ERROR, NULL, "Parse error: the body is not JSON");
		goto out;
	}
	if (!yyjson_is_obj(root)) {
		ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL,
			   "Invalid Request: one JSON-RPC message per POST (no batches)");
		goto out;
	}
	id = yyjson_obj_get(root, "id");
	/* Answered here: the session would answer with a null id, which no
	 * stream waits for, and the POST would hold its slot for good. */
	if (id && !sl_rpc_valid_id(id)) {
		ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL, SL_RPC_BAD_ID_WHY);
		goto out;
	}
	/* The depth gate (core/json.h), before anything walks the body. */
	if (!sl_json_depth_ok(root)) {
		ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, id,
			   "Invalid Request: " SL_JSON_DEPTH_WHY);
		goto out;
	}
	method = yyjson_obj_get(root, "method");
	is_init = method && id && yyjson_equals_str(method, SL_MCP_INITIALIZE);

	if (modern) {
		const char *why = modern_headers(c, root);
		if (why) {
			ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_HEADER_MISMATCH, id, why);
			goto out;
		}
		if (!method || !id) {
			/* No session to tell: a notification or response has nowhere to go. */
			ret = respond(c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
			goto out;
		}
		hs = session_new(h, true, token);
	} else if (is_init) {
		if (h->nsessions >= h->cfg->max_sessions) {
			ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id,
				   "too many sessions (sluice.http.maxSessions)");
			goto out;
		}
		hs = session_new(h, false, token);
	} else {
		/* MCP 2025-11-25 transports: after initialize, the session id is
		 * required (400 without it, 404 when unknown or ended). */
		if (!sid) {
			ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
				   "Bad Request: Mcp-Session-Id header is required");
			goto out;
		}
		hs = sl_map_get(&h->by_id, sid);
		/* A session answers only the credential that opened it. */
		if (!hs || (hs->token && (!token || !same_secret(hs->token, token)))) {
			ret = fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, id, "Session not found");
			goto out;
		}
		if (pv && !sl_mcp_legacy_version(pv)) {
			ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
				   "Bad Request: unsupported MCP-Protocol-Version");
			goto out;
		}
		hs->last_ms = sl_now_ms();
	}

	if (method && id && !hs->ephemeral) {
		uint32_t n = 0;
		for (struct stream *x = hs->streams; x; x = x->next)
			n += !x->is_get && !x->answered;
		if (n >= h->cfg->max_requests) {
			ret = fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
				   "too many requests in flight in this session "
				   "(sluice.http.maxRequestsPerSession)");
			goto out;
		}
	}

	if (!method || !id) {
		/* A notification or a response: 202, no body. */
		sl_session_input(hs->s, r->body.data, r->body.len);
		if (method && yyjson_equals_str(method, SL_MCP_CANCELLED))
			end_cancelled(hs, yyjson_obj_get(yyjson_obj_get(root, "params"), "requestId"));
		ret = respond(c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
		goto out;
	}

	st = stream_new(h, hs, c);
	st->key = json_key(id);
	meta = yyjson_obj_get(yyjson_obj_get(root, "params"), "_meta");
	st->token = json_key(yyjson_obj_get(meta, "progressToken"));
	sl_session_input(hs->s, r->body.data, r->body.len);

	if (!st->head && !st->token) {
		/* Nothing yet: wait for the first line routed to this request
		 * before choosing JSON or SSE (settle()). */
		st->req = r;
		r->st = st;
		r->waiting = true;
		r->since_ms = sl_now_ms();
		st->suspended = true;
		MHD_suspend_connection(c);
		if (!uv_is_active((uv_handle_t *)&h->wait))
			uv_timer_start(&h->wait, on_wait, WAIT_MS / 2, WAIT_MS / 2);
		ret = MHD_YES;
		goto out;
	}
	if (is_init && st->answered && st->failed) {
		ret = answer(c, r, st);
		session_end(hs); /* a failed initialize opens no session */
		goto out;
	}
	ret = answer(c, r, st);
out:
	yyjson_doc_free(doc);
	return ret;
}

/* ---- GET and DELETE ---------------------------------------------------------------- */

static struct hsess *find_session(struct sl_http *h, struct MHD_Connection *c, const char *token,
				  enum MHD_Result *ret)
{
	const char *sid = header(c, SL_MCP_HDR_SESSION);
	struct hsess *hs;
	if (!sid) {
		*ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, NULL,
			    "Bad Request: Mcp-Session-Id header is required");
		return NULL;
	}
	hs = sl_map_get(&h->by_id, sid);
	if (!hs || (hs->token && (!token || !same_secret(hs->token, token)))) {
		*ret = fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL, "Session not found");
		return NULL;
	}
	hs->last_ms = sl_now_ms();
	return hs;
}

/* GET with Last-Event-ID "<stream>-<n>": the events of that stream after
 * n, then the rest of the stream as it comes, on this connection. */
static enum MHD_Result resume(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      struct hsess *hs, const char *last)
{
	unsigned no, n;
	char end;
	struct stream *st;

	if (sscanf(last, "%u-%u%c", &no, &n, &end) != 2)
		return fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, NULL, "Bad Request: unknown Last-Event-ID");
	for (st = hs->streams; st; st = st->next)
		if (st->no == no)
			break;
	if (!st || !st->detached)
		return fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL,
			    "Not Found: no stream to resume with that Last-Event-ID");
	st->detached = false;
	st->conn = c;
	for (struct line *l = st->hist; l; l = l->next)
		if (l->n > n) {
			struct line *copy = line_new(sl_strndup(l->data, l->len), l->len);
			stream_push(st, copy);
		}
	return open_sse(c, st, hs, r);
}

static enum MHD_Result get(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			   const char *token)
{
	const char *last;
	enum MHD_Result ret;
	struct hsess *hs;
	struct stream *st;

	if (!accepts(header(c, "Accept"), "text/event-stream"))
		return fail(c, MHD_HTTP_NOT_ACCEPTABLE, SL_RPC_SERVER_ERROR, NULL,
			    "Not Acceptable: Accept must allow text/event-stream");
	if (!(hs = find_session(h, c, token, &ret)))
		return ret;
	if ((last = header(c, "Last-Event-ID")))
		return resume(h, c, r, hs, last);
	if (hs->get && !hs->get->detached)
		return fail(c, MHD_HTTP_CONFLICT, SL_RPC_SERVER_ERROR, NULL,
			    "Conflict: this session's stream is already open");
	if (hs->get)
		stream_free(hs->get); /* a new stream replaces one nobody resumed */
	st = stream_new(h, hs, c);
	st->is_get = st->sse = true;
	hs->get = st;
	prime(st);
	while (hs->backlog) {
		struct line *l = hs->backlog;
		hs->backlog = l->next;
		stream_push(st, sse_frame(st, l->data, l->len));
		free(l->data);
		free(l);
	}
	hs->backlog_tail = &hs->backlog;
	hs->nbacklog = 0;
	return open_sse(c, st, hs, r);
}

static enum MHD_Result del(struct sl_http *h, struct MHD_Connection *c, const char *token)
{
	enum MHD_Result ret;
	struct hsess *hs = find_session(h, c, token, &ret);
	if (!hs)
		return ret;
	session_end(hs);
	return respond(c, MHD_HTTP_OK, NULL, "", 0, NULL);
}

/* ---- the request handler ------------------------------------------------------------ */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct sl_http *h = cls;
	struct req *r = *con_cls;
	const char *auth, *token = NULL, *pv;
	bool modern;

	if (!r) {
		r = sl_alloc(sizeof(*r));
		sl_buf_init(&r->body, h->cfg->max_body_bytes);
		*con_cls = r;
		return MHD_YES;
	}
	if (r->waiting)
		return settle(c, r);
	if (*upload_size) {
		/* Every buffer fed by a peer has a cap: past it, read and drop. */
		if (!r->over && sl_buf_append(&r->body, upload, *upload_size) < 0) {
			r->over = true;
			sl_buf_dispose(&r->body);
			sl_buf_init(&r->body, 0);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (h->stopping)
		return fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, "shutting down");
	/* MCP 2025-11-25 transports, security: validate Host and Origin
	 * (DNS rebinding), then the credential. */
	if (!host_allowed(h, header(c, "Host")))
		return fail(c, MHD_HTTP_FORBIDDEN, SL_RPC_SERVER_ERROR, NULL, "Forbidden: Host not allowed");
	if (!origin_allowed(h, header(c, "Origin")))
		return fail(c, MHD_HTTP_FORBIDDEN, SL_RPC_SERVER_ERROR, NULL, "Forbidden: Origin not allowed");
	auth = header(c, "Authorization");
	if (auth && !strncasecmp(auth, "Bearer ", 7))
		token = auth + 7;
	if (h->cfg->bearer_token && (!token || !same_secret(token, h->cfg->bearer_token)))
		return fail(c, MHD_HTTP_UNAUTHORIZED, SL_RPC_SERVER_ERROR, NULL,
			    "Unauthorized: a valid bearer token is required");
	if (strcmp(url, "/mcp") != 0)
		return fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL, "Not Found: the endpoint is /mcp");
	pv = header(c, SL_MCP_HDR_VERSION);
	modern = pv && !strcmp(pv, SL_MCP_MODERN);
	if (!strcmp(method, "POST"))
		return post(h, c, r, token, modern);
	/* MCP 2026-07-28: no GET stream, no sessions to delete. */
	if (modern || (strcmp(method, "GET") && strcmp(method, "DELETE")))
		return fail(c, MHD_HTTP_METHOD_NOT_ALLOWED, SL_RPC_SERVER_ERROR, NULL, "Method Not Allowed");
	return !strcmp(method, "GET") ? get(h, c, r, token) : del(h, c, token);
}

/* libmicrohttpd's own messages (a peer's malformed request, a failed socket
 * call) go through the log like every line: --log-level governs them, and
 * the text, which can quote what a peer sent, is escaped there. */
SL_PRINTF(2, 0) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t n;

	(void)cls;
	if (!sl_log_enabled(SL_LOG_WARN))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n') /* its messages end with one */
		msg[--n] = '\0';
	sl_log(SL_LOG_WARN, "http: %s", msg);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct req *r = *con_cls;
	if (!r)
		return;
	if (r->st && r->waiting) {
		/* Gone before any response owned the stream. */
		r->st->cut = true;
		r->st->req = NULL;
		r->st->suspended = false;
		on_stream_freed(r->st);
	} else if (r->st) {
		r->st->cut = why != MHD_REQUEST_TERMINATED_COMPLETED_OK;
		r->st->req = NULL;
	}
	sl_buf_dispose(&r->body);
	free(r);
	*con_cls = NULL;
}

/* ---- the loop -------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t)
{
	run_mhd(t->data);
}

static void on_kick(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	reap(h);
	run_mhd(h);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	run_mhd(p->data);
}

static void run_mhd(struct sl_http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	if (!h->d)
		return;
	MHD_run(h->d);
	if (MHD_get_timeout(h->d, &ms) == MHD_YES)
		uv_timer_start(&h->timer, on_timer, ms, 0);
	else
		uv_timer_stop(&h->timer);
}

static void on_sweep(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	uint64_t now = sl_now_ms();
	struct hsess *hs = h->sessions, *next;
	for (; hs; hs = next) {
		bool open = false;
		next = hs->next;
		for (struct stream *st = hs->streams; st; st = st->next)
			open |= !st->detached;
		if (!hs->ephemeral && !open && now - hs->last_ms > h->cfg->idle_timeout_ms) {
			sl_log(SL_LOG_INFO, "http: session %.8s… idle, ended", hs->id);
			session_end(hs);
		}
	}
}

static void on_beat(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	/* An SSE comment keeps proxies and clients from timing the stream
	 * out, and lets a suspended connection notice a vanished peer. */
	for (struct hsess *hs = h->sessions; hs; hs = hs->next)
		for (struct stream *st = hs->streams; st; st = st->next)
			if (st->sse && !st->head && !st->done && !st->detached)
				stream_push(st, line_new(sl_strdup(HEARTBEAT), strlen(HEARTBEAT)));
}

/* ---- start and stop ---------------------------------------------------------------------- */

static int parse_listen(struct sl_http *h, const char *listen, struct sockaddr_storage *ss,
			struct sl_err *err)
{
	const char *colon = strrchr(listen, ':');
	char host[256];
	size_t n;
	char *end;
	unsigned long port;

	if (!colon || colon == listen || (n = (size_t)(colon - listen)) >= sizeof(host)) {
		sl_err_set(err, "--http: \"%s\" is not host:port", listen);
		return SL_ERR_INVALID;
	}
	memcpy(host, listen, n);
	host[n] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port > 65535) {
		sl_err_set(err, "--http: \"%s\" has no valid port", listen);
		return SL_ERR_INVALID;
	}
	snprintf(h->host, sizeof(h->host), "%s", host);
	h->port = (uint16_t)port;
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[n - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		host[n - 1] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons(h->port);
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
			goto bad;
		h->loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
		h->wildcard = IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons(h->port);
		if (!strcmp(host, "localhost"))
			a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			goto bad;
		h->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
		h->wildcard = a->sin_addr.s_addr == htonl(INADDR_ANY);
	}
	return SL_OK;
bad:
	sl_err_set(err, "--http: \"%s\" is not an IP address (or localhost)", host);
	return SL_ERR_INVALID;
}

int sl_http_start(uv_loop_t *loop, struct sl_gateway *gw, const struct sl_config *cfg,
		  const char *listen, struct sl_http **out, struct sl_err *err)
{
	struct sl_http *h = sl_alloc(sizeof(*h));
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	int rc;

	h->loop = loop;
	h->gw = gw;
	h->cfg = &cfg->http;
	sl_map_init(&h->by_id);
	if ((rc = parse_listen(h, listen, &ss, err)) < 0)
		goto out;
	if (!h->loopback && !cfg->http.bearer_token) {
		sl_err_set(err, "refusing to serve HTTP on %s without sluice.http.bearerToken: "
			   "anyone who can reach that address could use every tool. Listen on "
			   "127.0.0.1, or set a bearer token", listen);
		rc = SL_ERR_INVALID;
		goto out;
	}
	h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
					(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				h->port, NULL, NULL, on_request, h,
				/* First, so that no message goes to MHD's own logger. */
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
				MHD_OPTION_END);
	if (!h->d) {
		sl_err_set(err, "cannot listen on %s (address in use, or not this machine's?)", listen);
		rc = SL_ERR_IO;
		goto out;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	if (info && info->port)
		h->port = info->port;
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	sl_handles_init(&h->handles);
	uv_poll_init(loop, &h->poll, info->epoll_fd);
	sl_handles_add(&h->handles, &h->poll);
	uv_timer_t *timers[] = { &h->timer, &h->kick, &h->sweep, &h->beat, &h->wait };
	for (size_t i = 0; i < SL_COUNT(timers); i++) {
		uv_timer_init(loop, timers[i]);
		sl_handles_add(&h->handles, timers[i]);
	}
	h->poll.data = h->timer.data = h->kick.data = h->sweep.data = h->beat.data = h->wait.data = h;
	uv_poll_start(&h->poll, UV_READABLE, on_poll);
	uv_timer_start(&h->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
	uv_timer_start(&h->beat, on_beat, cfg->http.heartbeat_ms, cfg->http.heartbeat_ms);
	run_mhd(h);
	sl_log(SL_LOG_INFO, "listening on http://%s:%u/mcp", h->host, h->port);
	*out = h;
	return SL_OK;
out:
	sl_map_dispose(&h->by_id);
	free(h);
	return rc;
}

void sl_http_stop(struct sl_http *h)
{
	if (h->stopping)
		return;
	h->stopping = true;
	while (h->sessions)
		session_end(h->sessions);
	/* Let the ended streams finish before the daemon goes. */
	run_mhd(h);
}

void sl_http_free(struct sl_http *h)
{
	reap(h);
	sl_handles_close_one(&h->handles, &h->poll, NULL);
	/* Streams still open are freed by MHD (their sessions are gone). */
	MHD_stop_daemon(h->d);
	h->d = NULL;
	h->freeing = true;
	reap(h);
	sl_map_dispose(&h->by_id);
	sl_handles_close(&h->handles, free, h);
}

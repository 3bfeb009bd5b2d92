/*
 * The Streamable HTTP transport (MCP 2025-11-25 transports, "Streamable
 * HTTP"; MCP 2026-07-28 HTTP headers), and the older HTTP+SSE transport
 * (MCP 2024-11-05 transports: GET /sse, POST /messages?sessionId=) for
 * clients that speak only that. libmicrohttpd parses HTTP; this file
 * decides what each request means and routes each line a session sends.
 *
 * Objects:
 *   struct conn     one TCP connection, from accept to close: pending until
 *                   its first request's headers are whole and admitted
 *                   (Host, Origin, token, endpoint, method), then busy or
 *                   idle between requests.
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
 *
 * Bounds (docs/internals/HTTP.md, "Bounds"): every byte held for a peer is
 * counted by charge()/release() per session and in all, and reserve() makes
 * room in one order (detached histories, then backlogs) or says which
 * bound refused; connections are capped, and the ones not yet admitted are
 * capped per address and in all and timed from accept.
 */
#include "transport/http.h"
#include "auth/auth.h"
#include "core/buf.h"
#include "core/digest.h"
#include "core/log.h"
#include "event/handles.h"
#include "gateway/admin.h"
#include "gateway/gateway.h"
#include "oauth/subject.h"
#include "oauth/weblogin.h"
#include "proto/mcp.h"
#include "shared/sessions.h"
#include "transport/tls.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <microhttpd.h>
#include <nettle/memops.h>
#include <netinet/in.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>

#define BACKLOG_MAX 64        /* lines kept for a GET stream not yet open */
#define SWEEP_MS 1000
#define TRIM_BYTES (8u << 20) /* freed since the last trim: malloc_trim() from the sweep */
#define HEARTBEAT ": keep-alive\n\n"
#define HISTORY_MAX (1u << 20) /* bytes of past events a stream keeps for resumption */
#define FD_HEADROOM 256       /* open files beyond the HTTP connections (upstreams, workers, logs) */
#define PENDING_GRACE_MS 1000 /* pending this long before maxPendingPerAddress may close it */

#define WAIT_MS 50 /* a POST's answer this quick comes as JSON (settle()) */
#define RETRY_MS 1000 /* SSE retry: a cut-off client reconnects after this long */
#define ADOPT_MAX 64 /* requests held while their session is read from Redis (REPLICAS.md) */

struct line {
	struct line *next;
	char *data;
	size_t len, off;
	uint32_t n;                  /* the event's number in its stream (history) */
};

struct hsess;
struct req;
struct adoption;

struct stream {
	struct sl_http *h;
	struct hsess *hs;            /* NULL once the session ended */
	struct stream *next;         /* in hs->streams */
	struct stream *dprev, *dnext; /* in hs's detached list, oldest first */
	struct MHD_Connection *conn;
	char *key;                   /* POST: the request's id as JSON */
	char *token;                 /* POST: its progressToken as JSON, or NULL */
	struct line *head, **tail;
	bool sse;                    /* lines are framed as SSE events */
	bool answered;               /* the answer is queued */
	bool failed;                 /* the answer is a JSON-RPC error */
	uint32_t retry_after;        /* the answer is a rate limit's refusal: seconds to wait */
	bool done;                   /* end once the queue is written */
	bool suspended;
	bool is_get;
	bool detached;               /* the client went away; resumable by Last-Event-ID */
	bool lost;                   /* its history was given up to the budget: not resumable */
	bool killed;                 /* its client stopped reading: ended at the budget */
	bool warned;                 /* a line dropped at the budget was logged */
	bool cut;                    /* the connection ended before the response did */
	struct req *req;             /* the HTTP request writing it, while both live */
	uint32_t no;                 /* the stream's number in its session (event ids) */
	uint32_t nevents;
	uint32_t dropped;            /* the last event given up from the history, 0: none */
	struct line *hist, **hist_tail; /* events sent, for replay (at most HISTORY_MAX) */
	size_t hist_bytes;
	size_t bytes;                /* charged for it: itself, its queue, its history */
	uv_poll_t *watch;            /* a listen's: notices its client closing (watch_peer) */
	int fd;                      /* the connection's socket, while watched */
};

struct hsess {
	struct sl_http *h;
	struct hsess *next;          /* in h->sessions or h->reap */
	struct sl_session *s;
	char id[SL_SESSION_ID_MAX];  /* 128 random bits in hex, sealed with
				      * sluice.shared.secret (shared/sessions.h);
				      * "" when ephemeral */
	char *client_info;           /* initialize's clientInfo (JSON) for the record, or NULL */
	uint64_t stored_ms;          /* its record last written to Redis, 0: never */
	bool record_warned;          /* its record was over the bound: logged once */
	struct sl_caller *who;       /* who opened it (a reference; NULL: no authentication):
				      * it answers only that identity */
	struct stream *streams;
	struct stream *get;
	struct stream *detached, *detached_tail; /* streams to give up first, oldest first */
	struct line *backlog, **backlog_tail;
	size_t nbacklog;
	size_t bytes;                /* charged: its streams and its backlog */
	size_t backlog_bytes;
	uint32_t nstreams;           /* streams numbered so far */
	uint32_t first_no;           /* the first stream number of this process: 1, or a random
				      * base in an adopted session (another replica's numbers,
				      * named by its clients' Last-Event-ID, are not ours) */
	uint64_t last_ms;
	bool ephemeral;              /* 2026-07-28: one request, no id */
	bool sse;                    /* HTTP+SSE (2024-11-05): everything on its GET /sse stream */
	char **inflight;             /* HTTP+SSE: ids (JSON) of requests not answered yet */
	uint32_t ninflight;          /* at most sluice.http.maxRequestsPerSession */
	size_t inflight_bytes;       /* charged for them */
	bool listen;                 /* that request is a subscriptions/listen */
	bool ended;
	bool warned;                 /* a backlog line dropped at the budget was logged */
};

/* One TCP connection (MHD_OPTION_NOTIFY_CONNECTION), from accept to close. */
enum conn_state {
	CONN_PENDING, /* accepted, its first request's headers not yet whole: in h->pending */
	CONN_BUSY,    /* a request in progress, or closing: in no list */
	CONN_IDLE,    /* admitted, between requests: in h->idle */
};

struct conn {
	struct conn *prev, *next;
	enum conn_state state;
	bool seen;                   /* pending at the last enforce_pending() */
	int fd;
	struct sockaddr_storage addr;
	uint64_t since_ms;           /* accepted, or its last request ended */
	uint64_t epoch;              /* h->tls_epoch when accepted */
};

/* Credentials a reload replaced, kept while a connection accepted before
 * the reload is open: its handshake may have taken them (on_cert), and
 * GnuTLS keeps what the retrieve callback gave it for the session's life. */
struct retired {
	struct retired *next;
	struct sl_tls *tls;
	uint64_t epoch;              /* h->tls_epoch before the swap: conns with epoch <= it hold it */
	uint32_t holders;            /* such connections still open */
};

struct conns {
	struct conn *head, *tail;    /* oldest first */
	uint32_t n;
};

struct sl_http {
	uv_loop_t *loop;
	struct sl_gateway *gw;
	const struct sl_http_config *cfg;
	const struct sl_limits *lim;
	struct sl_auth *auth;        /* who may call, and as whom (auth/auth.h) */
	struct MHD_Daemon *d;
	uv_poll_t poll;
	uv_timer_t timer, kick, sweep, beat, wait, deadline;
	struct sl_handles handles;
	bool stopping, freeing;
	char host[256];              /* the listen host as written */
	bool wildcard;               /* bound to 0.0.0.0 or :: */
	bool loopback;
	uint16_t port;
	struct hsess *sessions, *reap;
	struct sl_map by_id;
	uint32_t nsessions;          /* session era */
	uint32_t nephemeral;         /* 2026-07-28 requests in flight, listens aside */
	uint32_t nlistens;           /* 2026-07-28 subscriptions/listen streams */
	size_t bytes;                /* charged, all sessions and bodies */
	size_t bytes_peak;           /* the most charged since the last trim */
	struct conns pending, idle;
	uint32_t nconns;             /* open, from accept to close */
	unsigned warned;             /* bounds already logged (WARNED_*) */
	struct req *held;            /* suspended until auth has what it fetches */
	uint32_t nheld;              /* at most sluice.http.auth.maxWaiting */
	struct req *webs;            /* web login pages waiting (suspended) */
	struct adoption *adoptions;  /* sessions being read from Redis (at most ADOPT_MAX) */
	struct sl_redis_listener *ends; /* sessions DELETEd on other replicas */
	struct sl_admin *admin;      /* the admin page's CSRF token and CSP (gateway/admin.h) */
	uint32_t nadoptions;
	bool tls;                    /* serving HTTPS: tls_now is ours */
	uint64_t tls_epoch;          /* credentials swapped this many times */
	struct retired *retired;
};

/* The credentials a new handshake takes. GnuTLS's retrieve callback
 * (on_cert) gets no pointer of ours, so the one HTTPS front end of the
 * process keeps them here; sl_http_start refuses a second one. */
static struct sl_tls *tls_now;

enum {
	WARNED_PENDING = 1,
	WARNED_PER_ADDRESS = 2,
	WARNED_HEADERS = 4,
	WARNED_CONNECTIONS = 8,
};

struct req {
	struct sl_buf body;
	bool over;
	bool busy;                   /* the body did not fit the budget: 503 */
	size_t charged;              /* of the body, in h->bytes */
	bool waiting;                /* suspended before any response: see settle() */
	struct sl_caller *who;       /* admitted as (a reference), or NULL */
	char *profile;               /* the /mcp/<profile> it came to, or NULL */
	uint64_t since_ms;           /* when it began to wait */
	struct stream *st;           /* the stream it answers with, while both live */
	/* Its credential's check waits for a fetch (auth/auth.h, PENDING):
	 * the connection is suspended and listed in h->held until it ends. */
	bool unchecked;              /* no verdict on its credential yet */
	bool held_suspended;
	struct req *held_next, *held_prev;
	struct MHD_Connection *conn;
	/* A web login page (oauth/weblogin.h): wq while it waits, suspended
	 * and listed in h->webs; then its page, queued on the next call. */
	struct sl_http *h;
	bool web;
	struct sl_weblogin_req *wq;
	unsigned web_status;
	char *web_html;
	struct req *web_next, *web_prev;
	/* A POST to /admin: its form, read under SL_ADMIN_BODY_MAX. */
	bool admin;
	struct sl_admin_form *form;
	struct MHD_PostProcessor *pp;
	size_t form_bytes;
	/* Its session is another replica's: suspended while the record is
	 * read (adopt_start), then asked again. */
	struct adoption *adopt;
	bool adopt_tried;
};

/* One session being adopted from its record in Redis. */
struct adoption {
	struct adoption *next, *prev; /* in h->adoptions */
	struct sl_http *h;           /* NULL once the transport is freed */
	struct req *r;               /* the request waiting, NULL once it ended */
	struct sl_caller *who;       /* a reference */
	char id[SL_SESSION_ID_MAX];
};

static void run_mhd(struct sl_http *h);
static void on_kick(uv_timer_t *t);
static void enforce_pending(struct sl_http *h);

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

static void lines_free(struct line *l)
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

/* ---- the memory budget (sluice.limits.maxSessionBytes, maxBufferedBytes) ----- */

enum bound { FITS, OVER_SESSION, OVER_ALL };

/* What a line costs the budget: its text and its node as the allocator
 * holds them (usable size and chunk header: for the many small events of a
 * progress flood that is about a third more than the bytes themselves). */
static size_t cost(const struct line *l)
{
	return malloc_usable_size((void *)l) + malloc_usable_size(l->data) + 2 * 2 * sizeof(size_t);
}

/* The one place held bytes are counted: in all, in the stream (whose bytes
 * leave its session with it, see stream_unlink) and in its session. A
 * request body has neither stream nor session; a backlog line no stream. */
static void charge(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n)
{
	h->bytes += n;
	if (h->bytes > h->bytes_peak)
		h->bytes_peak = h->bytes;
	if (st) {
		st->bytes += n;
		hs = st->hs;
	}
	if (hs)
		hs->bytes += n;
}

static void release(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n)
{
	h->bytes -= n;
	if (st) {
		st->bytes -= n;
		hs = st->hs;
	}
	if (hs)
		hs->bytes -= n;
}

static enum bound over(const struct sl_http *h, const struct hsess *hs, size_t n)
{
	if (hs && hs->bytes + n > h->lim->max_session_bytes)
		return OVER_SESSION;
	if (h->bytes + n > h->lim->max_buffered_bytes)
		return OVER_ALL;
	return FITS;
}

/* Why new work is refused at a bound; owned by the caller. */
static char *busy_why(const struct sl_http *h, enum bound b)
{
	if (b == OVER_SESSION)
		return sl_printf("busy: sluice.limits.maxSessionBytes (%zu bytes) reached",
				 h->lim->max_session_bytes);
	return sl_printf("busy: sluice.limits.maxBufferedBytes (%zu bytes) reached",
			 h->lim->max_buffered_bytes);
}

static void lines_release(struct stream *st, struct line *l)
{
	while (l) {
		struct line *n = l->next;
		release(st->h, NULL, st, cost(l));
		free(l->data);
		free(l);
		l = n;
	}
}

static void detached_add(struct stream *st)
{
	struct hsess *hs = st->hs;
	st->detached = true;
	st->dnext = NULL;
	st->dprev = hs->detached_tail;
	if (hs->detached_tail)
		hs->detached_tail->dnext = st;
	else
		hs->detached = st;
	hs->detached_tail = st;
}

/* Takes st off its session's list of streams to give up first. */
static void detached_del(struct stream *st)
{
	struct hsess *hs = st->hs;
	if (!hs || !(st->dprev || hs->detached == st))
		return;
	if (st->dprev)
		st->dprev->dnext = st->dnext;
	else
		hs->detached = st->dnext;
	if (st->dnext)
		st->dnext->dprev = st->dprev;
	else
		hs->detached_tail = st->dprev;
	st->dprev = st->dnext = NULL;
}

static void stream_unlink(struct stream *st)
{
	struct hsess *hs = st->hs;
	if (!hs)
		return;
	detached_del(st);
	for (struct stream **p = &hs->streams; *p; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			break;
		}
	if (hs->get == st)
		hs->get = NULL;
	hs->bytes -= st->bytes; /* from now on counted in all only */
	st->hs = NULL;
}

static void session_end(struct hsess *hs);
static void unwatch(struct stream *st);

static void stream_free(struct stream *st)
{
	struct hsess *hs = st->hs;
	stream_unlink(st);
	unwatch(st);
	lines_free(st->head);
	lines_free(st->hist);
	release(st->h, NULL, st, st->bytes);
	free(st->key);
	free(st->token);
	free(st);
	/* A 2026-07-28 request's session lives as long as its one stream,
	 * and so does an HTTP+SSE session (MCP 2024-11-05 transports). */
	if (hs && (hs->ephemeral || hs->sse))
		session_end(hs);
}

static void hist_drop_oldest(struct stream *st)
{
	struct line *old = st->hist;
	st->hist = old->next;
	if (!st->hist)
		st->hist_tail = &st->hist;
	st->hist_bytes -= old->len;
	st->dropped = old->n;
	old->next = NULL;
	lines_release(st, old);
}

/* Gives up a detached stream's history: a resumption of it fails from now
 * on. A stream still waiting for its answer stays (it counts as a request
 * in flight) and is freed once answered; any other goes now. */
static void forget(struct stream *st)
{
	sl_log(SL_LOG_DEBUG, "http: session %.8s…: stream %u's history given up to the memory budget",
	       st->hs->id, st->no);
	detached_del(st);
	st->lost = true;
	lines_release(st, st->hist);
	st->hist = NULL;
	st->hist_tail = &st->hist;
	st->hist_bytes = 0;
	if (st->answered || st->is_get)
		stream_free(st);
}

static void backlog_drop_oldest(struct hsess *hs)
{
	struct line *l = hs->backlog;
	hs->backlog = l->next;
	if (!hs->backlog)
		hs->backlog_tail = &hs->backlog;
	hs->nbacklog--;
	hs->backlog_bytes -= cost(l);
	release(hs->h, hs, NULL, cost(l));
	free(l->data);
	free(l);
}

static bool can_give(const struct hsess *hs, const struct stream *keep)
{
	return (hs->detached && (hs->detached != keep || hs->detached->dnext)) || hs->backlog;
}

/* The order at a bound (docs/internals/HTTP.md, "Bounds"): the oldest
 * detached stream's history, then the oldest backlog line; of hs when its
 * own bound is hit, else of the session holding the most that has either.
 * keep (being charged) is never given up. False when nothing is left. */
static bool make_room(struct sl_http *h, struct hsess *hs, const struct stream *keep)
{
	struct stream *d;
	if (!hs)
		for (struct hsess *x = h->sessions; x; x = x->next)
			if (can_give(x, keep) && (!hs || x->bytes > hs->bytes))
				hs = x;
	if (!hs)
		return false;
	d = hs->detached;
	if (d && d == keep)
		d = d->dnext;
	if (d) {
		forget(d);
		return true;
	}
	if (hs->backlog) {
		backlog_drop_oldest(hs);
		return true;
	}
	return false;
}

/* Charges n bytes to st (or to hs, or in all only when both are NULL),
 * making room in the order above; at a bound that nothing more can be
 * given up for, charges nothing and says which bound. */
static enum bound reserve(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n)
{
	enum bound b;
	if (st)
		hs = st->hs;
	while ((b = over(h, hs, n)) != FITS && make_room(h, b == OVER_SESSION ? hs : NULL, st))
		;
	if (b == FITS)
		charge(h, hs, st, n);
	return b;
}

/* Keeps an event for a resumption: at most HISTORY_MAX per stream, oldest
 * given up first, and only what the budget allows. */
static void remember(struct stream *st, const struct line *l)
{
	struct line *c;
	if (!l->n || st->lost || !resumable(st))
		return;
	c = line_new(sl_strndup(l->data, l->len), l->len);
	c->n = l->n;
	while (st->hist_bytes + c->len > HISTORY_MAX ||
	       reserve(st->h, NULL, st, cost(c)) != FITS) {
		if (!st->hist) {
			st->dropped = c->n;
			lines_free(c);
			return;
		}
		hist_drop_oldest(st);
	}
	*st->hist_tail = c;
	st->hist_tail = &c->next;
	st->hist_bytes += c->len;
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

/* ---- a listen's client going away ------------------------------------------ */

static void on_watch_closed(uv_handle_t *hd)
{
	free(hd);
}

static void unwatch(struct stream *st)
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
	unwatch(st);
	if (n > 0)
		return;
	st->killed = true;
	lines_release(st, st->head);
	st->head = NULL;
	st->tail = &st->head;
	wake(st);
}

static void watch_peer(struct stream *st)
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
static enum bound stream_push(struct stream *st, struct line *l, bool must)
{
	enum bound b = FITS;
	if (st->detached || st->killed) {
		/* Nobody reads: the event is in the history for a resumption. */
		remember(st, l);
		lines_free(l);
		return FITS;
	}
	if (must)
		charge(st->h, NULL, st, cost(l));
	else if ((b = reserve(st->h, NULL, st, cost(l))) != FITS) {
		lines_free(l);
		return b;
	}
	remember(st, l);
	*st->tail = l;
	st->tail = &l->next;
	wake(st);
	return FITS;
}

/* Ends a stream once what it holds is written. */
static void stream_end(struct stream *st)
{
	st->done = true;
	wake(st);
}

/* The stream's client stopped reading and what waits for it reached the
 * budget: its queue is given up and its connection shut down, so that
 * libmicrohttpd, blocked writing to it, closes it (and the stream detaches
 * as any cut one). Logged once per stream. */
static void kill_stream(struct stream *st, enum bound b)
{
	const union MHD_ConnectionInfo *ci;
	char *why = busy_why(st->h, b);
	sl_log(SL_LOG_WARN, "http: session %.8s…: the client of stream %u is not reading; ended (%s)",
	       st->hs ? st->hs->id : "", st->no, why);
	free(why);
	st->killed = true;
	unwatch(st);
	lines_release(st, st->head);
	st->head = NULL;
	st->tail = &st->head;
	ci = MHD_get_connection_info(st->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci)
		shutdown(ci->connect_fd, SHUT_RDWR);
	wake(st);
}

static void on_stream_freed(void *cls)
{
	struct stream *st = cls;
	unwatch(st);
	if (st->req) {
		st->req->st = NULL;
		st->req = NULL;
	}
	/* MCP 2025-11-25 transports, resumability: a session's stream whose
	 * client went away before its end (even with its last events in
	 * MHD's buffer) waits for a GET with Last-Event-ID. */
	if ((st->cut || !st->done) && resumable(st) && !st->hs->ended && !st->lost) {
		st->cut = st->killed = false;
		lines_release(st, st->head);
		st->head = NULL;
		st->tail = &st->head;
		st->conn = NULL;
		st->suspended = false;
		detached_add(st);
		return;
	}
	stream_free(st);
}

static ssize_t on_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	size_t n = 0;

	if (st->killed) {
		unwatch(st);
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
			lines_release(st, l);
		}
	}
	if (n)
		return (ssize_t)n;
	if (st->done) {
		unwatch(st);
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
static struct stream *stream_new(struct sl_http *h, struct hsess *hs, struct MHD_Connection *c,
				 char *key, char *token, enum bound *b)
{
	struct stream *st;
	size_t n = sizeof(*st) + (key ? strlen(key) : 0) + (token ? strlen(token) : 0);
	if ((*b = reserve(h, hs, NULL, n)) != FITS) {
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
	st->next = hs->streams;
	hs->streams = st;
	st->bytes = n; /* charged above, to hs and in all */
	return st;
}

/* ---- routing what a session sends ------------------------------------------ */

static char *json_key(yyjson_val *v)
{
	return v ? yyjson_val_write(v, 0, NULL) : NULL;
}

/* ---- HTTP+SSE: requests in flight ------------------------------------------ */

/* What a request in flight costs the budget: its id and its slot. */
static size_t inflight_cost(const char *key)
{
	return strlen(key) + 1 + sizeof(char *);
}

/* Records a request of an HTTP+SSE session (key, taken) as in flight, so
 * that sluice.http.maxRequestsPerSession bounds them as it bounds POSTs
 * waiting on /mcp; at a bound of the memory budget, charges nothing. */
static enum bound inflight_add(struct hsess *hs, char *key)
{
	enum bound b = reserve(hs->h, hs, NULL, inflight_cost(key));
	if (b != FITS) {
		free(key);
		return b;
	}
	hs->inflight = sl_realloc(hs->inflight, (hs->ninflight + 1) * sizeof(*hs->inflight));
	hs->inflight[hs->ninflight++] = key;
	hs->inflight_bytes += inflight_cost(key);
	return FITS;
}

/* The request whose id is key (JSON) is answered, or cancelled (and so
 * never answered). */
static void inflight_del(struct hsess *hs, const char *key)
{
	for (uint32_t i = 0; key && i < hs->ninflight; i++)
		if (!strcmp(hs->inflight[i], key)) {
			release(hs->h, hs, NULL, inflight_cost(key));
			hs->inflight_bytes -= inflight_cost(key);
			free(hs->inflight[i]);
			hs->inflight[i] = hs->inflight[--hs->ninflight];
			return;
		}
}

static void inflight_clear(struct hsess *hs)
{
	while (hs->ninflight)
		inflight_del(hs, hs->inflight[hs->ninflight - 1]);
	free(hs->inflight);
	hs->inflight = NULL;
}

static void to_get_stream(struct hsess *hs, char *line, size_t len)
{
	struct line *l;
	enum bound b;

	if (hs->get) {
		b = stream_push(hs->get, sse_frame(hs->get, line, len), false);
		free(line);
		if (b != FITS)
			kill_stream(hs->get, b);
		return;
	}
	if (hs->ephemeral) {
		sl_log(SL_LOG_DEBUG, "http: no stream for a server message: dropped");
		free(line);
		return;
	}
	/* Over HTTP, list_changed sent before the client opens its GET
	 * stream would be lost: keep a few, the oldest given up first. */
	if (hs->nbacklog >= BACKLOG_MAX)
		backlog_drop_oldest(hs);
	l = line_new(line, len);
	if ((b = reserve(hs->h, hs, NULL, cost(l))) != FITS) {
		if (!hs->warned) {
			char *why = busy_why(hs->h, b);
			sl_log(SL_LOG_WARN, "http: session %.8s…: a message for its GET stream (not open) "
			       "dropped (%s; logged once)", hs->id, why);
			free(why);
			hs->warned = true;
		}
		lines_free(l);
		return;
	}
	hs->backlog_bytes += cost(l);
	*hs->backlog_tail = l;
	hs->backlog_tail = &l->next;
	hs->nbacklog++;
}

/* Routes one message to a request's stream. At a bound an answer becomes
 * a JSON-RPC error naming it (an answer is never lost silently); anything
 * else is dropped, logged once per stream. */
static void deliver(struct stream *st, const struct sl_out *o)
{
	enum bound b;
	char *why, *e;
	size_t len;

	if (st->sse) {
		b = stream_push(st, sse_frame(st, o->line, o->len), false);
		free(o->line);
	} else {
		b = stream_push(st, line_new(o->line, o->len), false);
	}
	if (b == FITS)
		return;
	if (o->sub && o->kind == SL_OUT_NOTIFICATION) {
		/* A listen's client that stopped reading: its stream ends like a
		 * GET stream's, and the client, seeing no graceful end, may
		 * listen again; a change is never dropped silently. */
		kill_stream(st, b);
		return;
	}
	why = busy_why(st->h, b);
	if (o->kind == SL_OUT_RESPONSE) {
		sl_log(SL_LOG_WARN, "http: session %.8s…: an answer became an error (%s)",
		       st->hs->id, why);
		e = sl_rpc_error_line(o->id, SL_RPC_SERVER_ERROR, why, &len);
		st->failed = true;
		if (st->sse) {
			stream_push(st, sse_frame(st, e, len), true);
			free(e);
		} else {
			stream_push(st, line_new(e, len), true);
		}
	} else if (!st->warned) {
		st->warned = true;
		sl_log(SL_LOG_WARN, "http: session %.8s…: a message for stream %u dropped (%s; logged "
		       "once)", st->hs->id, st->no, why);
	}
	free(why);
}

/* MCP 2024-11-05 transports (HTTP+SSE): every message the session sends
 * is an event of its one stream, in the order sent. At a bound of the
 * budget, an answer while nothing waits to be written (its client reads,
 * the answer alone is too big) becomes a JSON-RPC error naming the bound;
 * anything else means the client stopped reading, and the stream ends, as
 * a GET stream's does, and its session with it. */
static void sse_send(struct hsess *hs, struct sl_out *o)
{
	struct stream *st = hs->get;
	char *key, *why, *e;
	enum bound b;
	size_t len;

	if (o->kind == SL_OUT_RESPONSE) {
		key = json_key(o->id);
		inflight_del(hs, key);
		free(key);
	}
	if (!st) { /* only while the session ends */
		free(o->line);
		return;
	}
	b = stream_push(st, sse_frame(st, o->line, o->len), false);
	free(o->line);
	if (b == FITS)
		return;
	if (o->kind != SL_OUT_RESPONSE || st->head) {
		kill_stream(st, b);
		return;
	}
	why = busy_why(hs->h, b);
	sl_log(SL_LOG_WARN, "http: session %.8s…: an answer became an error (%s)", hs->id, why);
	e = sl_rpc_error_line(o->id, SL_RPC_SERVER_ERROR, why, &len);
	stream_push(st, sse_frame(st, e, len), true);
	free(e);
	free(why);
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
	if (hs->sse) {
		sse_send(hs, o);
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
		target->retry_after = o->retry_after;
		deliver(target, o);
		if (target->detached && target->lost)
			stream_free(target); /* nothing left to resume */
		else if (target->sse)
			stream_end(target);
		return;
	case SL_OUT_NOTIFICATION:
		if (o->sub) {
			/* A listen's: the stream of the POST that opened it, or
			 * nowhere once that is gone (MCP 2026-07-28 subscriptions). */
			key = json_key(o->sub);
			for (struct stream *st = hs->streams; st && key; st = st->next)
				if (!st->is_get && !st->answered && st->key && !strcmp(st->key, key)) {
					target = st;
					break;
				}
			free(key);
			if (target)
				deliver(target, o);
			else
				free(o->line);
			return;
		}
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
		deliver(target, o);
	else
		to_get_stream(hs, o->line, o->len);
}

static void on_changed(void *ctx);
static const struct sl_session_io io = { send_out, on_changed };

/* ---- sessions --------------------------------------------------------------- */

static struct hsess *session_new(struct sl_http *h, bool ephemeral, struct sl_caller *who)
{
	struct hsess *hs = sl_alloc(sizeof(*hs));
	hs->h = h;
	hs->ephemeral = ephemeral;
	hs->backlog_tail = &hs->backlog;
	hs->who = sl_caller_ref(who);
	hs->last_ms = sl_now_ms();
	if (!ephemeral) {
		unsigned char r[16];
		/* MCP 2025-11-25 transports: a globally unique, secure session id. */
		if (h->gw->gen->key_shared) {
			/* One every replica with the secret can verify. */
			sl_session_id_make(h->gw->gen->key, who ? who->key : "", hs->id);
		} else if (getrandom(r, sizeof(r), 0) != sizeof(r)) {
			sl_log(SL_LOG_ERROR, "getrandom failed: no session id can be made");
			abort();
		} else {
			for (int i = 0; i < 16; i++)
				snprintf(hs->id + 2 * i, 3, "%02x", r[i]);
		}
		sl_map_put(&h->by_id, hs->id, hs);
		h->nsessions++;
	} else {
		h->nephemeral++;
	}
	hs->next = h->sessions;
	h->sessions = hs;
	hs->s = sl_session_new(h->gw, &io, hs);
	sl_session_set_caller(hs->s, who);
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
	} else if (hs->listen) {
		h->nlistens--;
	} else {
		h->nephemeral--;
	}
	sl_session_close(hs->s);
	inflight_clear(hs);
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
		while (hs->backlog)
			backlog_drop_oldest(hs);
		sl_caller_unref(hs->who);
		free(hs->client_info);
		free(hs);
	}
}

/* ---- sessions across replicas (shared/sessions.h, REPLICAS.md) ---------------------- */

/* Sessions are kept in Redis for other replicas to adopt: with a shared
 * secret (sealed ids) and a Redis. */
static bool sharing(const struct sl_http *h)
{
	return h->gw->redis && h->gw->gen->key_shared;
}

static void collect_sub(const char *key, void *value, void *ctx)
{
	struct sl_session_record *rec = ctx;
	if (rec->nsubs < SL_SESSION_RECORD_SUBS)
		rec->subs[rec->nsubs++] = key;
}

/* Writes hs's record (again), with a TTL of the idle timeout: a session
 * nobody uses is gone from Redis when every replica has let it go. */
static void store_record(struct hsess *hs)
{
	struct sl_http *h = hs->h;
	struct sl_session_record rec = { 0 };
	yyjson_doc *info = NULL;
	size_t len;
	char *json;

	if (!sharing(h) || hs->ephemeral || hs->sse || hs->ended || hs->s->era != SL_ERA_LEGACY)
		return;
	rec.caller = hs->who ? hs->who->key : "";
	rec.version = hs->s->version;
	rec.caps = hs->s->caps;
	if (hs->client_info && (info = yyjson_read(hs->client_info, strlen(hs->client_info), 0)))
		rec.client_info = yyjson_doc_get_root(info);
	rec.log_level = hs->s->log_level[0] ? hs->s->log_level : NULL;
	rec.subs = sl_alloc((hs->s->subs.live + 1) * sizeof(*rec.subs));
	sl_map_each(&hs->s->subs, collect_sub, &rec);
	json = sl_session_record_build(&rec, &len);
	hs->stored_ms = sl_now_ms();
	if (json && !sl_session_store_put(h->gw->redis, hs->id, json, len, h->cfg->idle_timeout_ms))
		hs->stored_ms = 1; /* Redis is down: again at the next request */
	else if (!json && !hs->record_warned)
		sl_log(SL_LOG_WARN, "http: session %.8s…: its record is over 64 KiB (too many "
		       "subscriptions): another replica cannot adopt it (logged once)", hs->id);
	hs->record_warned |= !json;
	free(json);
	free(rec.subs);
	yyjson_doc_free(info);
}

static void on_changed(void *ctx)
{
	store_record(ctx);
}

/* A session in use keeps its record: written again once a quarter of the
 * TTL has passed (one SET, not one per request). */
static void touch(struct hsess *hs)
{
	uint64_t now = sl_now_ms();
	if (sharing(hs->h) && hs->stored_ms && now - hs->stored_ms >= hs->h->cfg->idle_timeout_ms / 4)
		store_record(hs);
}

/* After a successful initialize: what the record keeps of it. */
static void remember_init(struct hsess *hs, yyjson_val *root)
{
	yyjson_val *info = yyjson_obj_get(yyjson_obj_get(root, "params"), "clientInfo");

	if (!sharing(hs->h) || hs->s->era != SL_ERA_LEGACY)
		return;
	if (yyjson_is_obj(info))
		hs->client_info = sl_json_write_val(info, NULL);
	store_record(hs);
}

/* Another replica ended a session by DELETE: it ends here too. */
static void on_ended_elsewhere(void *ctx, const char *id)
{
	struct sl_http *h = ctx;
	struct hsess *hs = sl_map_get(&h->by_id, id);

	if (!hs || hs->sse)
		return;
	sl_log(SL_LOG_INFO, "http: session %.8s… ended: deleted on another replica", hs->id);
	session_end(hs);
}

/* Streams of an adopted session are numbered from a random base in
 * [2^24, 2^31): the replica that held it before numbered its own from 1 (or
 * its own base), so an event id its client resumes from is told apart from
 * ours (sl_http_event_id_foreign) instead of resuming a stream of ours that
 * happens to have the same number. */
static void adopted_numbering(struct hsess *hs)
{
	uint32_t r;
	sl_random(&r, sizeof(r));
	hs->nstreams = (1u << 24) + r % ((1u << 31) - (1u << 24));
	hs->first_no = hs->nstreams + 1;
}

bool sl_http_event_id_foreign(const char *last, uint32_t first, uint32_t count)
{
	unsigned no, n;
	char end;

	if (!last || sscanf(last, "%u-%u%c", &no, &n, &end) != 2)
		return false;
	return no < first || (uint64_t)no >= (uint64_t)first + count;
}

/* A session made from another replica's record, under the id it had. */
static struct hsess *session_adopted(struct sl_http *h, const char *id, struct sl_caller *who,
				     const struct sl_session_record *rec)
{
	struct hsess *hs = sl_alloc(sizeof(*hs));
	hs->h = h;
	hs->backlog_tail = &hs->backlog;
	hs->who = sl_caller_ref(who);
	hs->last_ms = sl_now_ms();
	snprintf(hs->id, sizeof(hs->id), "%s", id);
	sl_map_put(&h->by_id, hs->id, hs);
	h->nsessions++;
	hs->next = h->sessions;
	h->sessions = hs;
	hs->s = sl_session_new(h->gw, &io, hs);
	sl_session_set_caller(hs->s, who);
	if (rec->client_info)
		hs->client_info = sl_json_write_val(rec->client_info, NULL);
	sl_session_adopt(hs->s, rec->version, rec->caps, rec->log_level, rec->subs, rec->nsubs);
	hs->stored_ms = sl_now_ms();
	adopted_numbering(hs);
	return hs;
}

/* ---- checks -------------------------------------------------------------------- */

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
	/* A page served from this machine; over https too when the front end
	 * is (the rest only where allowedOrigins says so). */
	static const char *const defaults[] = { "http://localhost:*", "http://127.0.0.1:*",
						"http://[::1]:*", "https://localhost:*",
						"https://127.0.0.1:*", "https://[::1]:*" };
	if (!origin)
		return true;
	if (!h->cfg->allowed_origins) {
		for (size_t i = 0; i < (h->tls ? 6 : 3); i++)
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
			       const char *body, size_t len, const struct hsess *hs, bool close)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	if (ctype)
		MHD_add_response_header(r, "Content-Type", ctype);
	if (hs && hs->id[0])
		MHD_add_response_header(r, SL_MCP_HDR_SESSION, hs->id);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, "Allow", "GET, POST, DELETE");
	if (close)
		MHD_add_response_header(r, "Connection", "close");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result error_response(struct MHD_Connection *c, unsigned status, int code,
				      yyjson_val *id, const char *msg, bool close)
{
	enum MHD_Result ret;
	size_t len;
	char *s = sl_rpc_error_line(id, code, msg, &len);

	ret = respond(c, status, "application/json", s, len - 1, NULL, close);
	free(s);
	return ret;
}

/* An HTTP error with a JSON-RPC error body (id when known). */
static enum MHD_Result fail(struct MHD_Connection *c, unsigned status, int code, yyjson_val *id,
			    const char *msg)
{
	return error_response(c, status, code, id, msg, false);
}

/* A request refused at admission, before its body: the connection closes
 * after the answer (libmicrohttpd reads no byte of the body), so a peer
 * that fails the checks holds nothing once answered. */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return error_response(c, status, SL_RPC_SERVER_ERROR, NULL, msg, true);
}

/* 405 with the one method a path takes (the HTTP+SSE paths, the metadata,
 * /status), which differs from /mcp's. */
static enum MHD_Result refuse_method(struct MHD_Connection *c, const char *allow)
{
	size_t len;
	char *s = sl_rpc_error_line(NULL, SL_RPC_SERVER_ERROR, "Method Not Allowed", &len);
	struct MHD_Response *r = MHD_create_response_from_buffer(len - 1, s, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Allow", allow);
	MHD_add_response_header(r, "Connection", "close");
	ret = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
	MHD_destroy_response(r);
	return ret;
}

/* A tool call a rate limit refused, when its answer is the whole body: 429
 * with Retry-After (RFC 9110 §10.2.3, in seconds) and the JSON-RPC error,
 * whose data says the same (stages/quota.c). On an SSE stream the status
 * is already 200 and only the error tells. */
static enum MHD_Result too_many(struct MHD_Connection *c, const char *body, size_t len,
				const struct hsess *hs, uint32_t retry_after)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	char secs[16];

	snprintf(secs, sizeof(secs), "%u", retry_after);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Retry-After", secs);
	if (hs && hs->id[0])
		MHD_add_response_header(r, SL_MCP_HDR_SESSION, hs->id);
	ret = MHD_queue_response(c, MHD_HTTP_TOO_MANY_REQUESTS, r);
	MHD_destroy_response(r);
	return ret;
}

/* 401 (403 for a missing scope) with its challenge (RFC 6750 §3): what was
 * wrong, never the token; or 503 when an authorization server could not
 * answer. The connection closes, as for every refusal at admission. */
static enum MHD_Result unauthorized(struct sl_http *h, struct MHD_Connection *c,
				    const struct sl_auth_denial *why)
{
	bool down = why->status == MHD_HTTP_SERVICE_UNAVAILABLE;
	char *msg = sl_printf("%s: %s", down ? "Service Unavailable"
				  : why->status == MHD_HTTP_FORBIDDEN ? "Forbidden" : "Unauthorized",
			      why->description);
	char *challenge = down ? NULL : sl_auth_challenge(h->auth, why);
	size_t len;
	char *body = sl_rpc_error_line(NULL, SL_RPC_SERVER_ERROR, msg, &len);
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len - 1, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", "application/json");
	if (challenge)
		MHD_add_response_header(r, "WWW-Authenticate", challenge);
	else
		MHD_add_response_header(r, "Retry-After", "5");
	MHD_add_response_header(r, "Connection", "close");
	ret = MHD_queue_response(c, why->status ? why->status : MHD_HTTP_UNAUTHORIZED, r);
	MHD_destroy_response(r);
	free(challenge);
	free(msg);
	return ret;
}

/* RFC 9728 §3: the Protected Resource Metadata, to anyone (a client reads
 * it before it has a token), GET only. */
static enum MHD_Result resource_metadata(struct sl_http *h, struct MHD_Connection *c,
					 const char *method)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *doc;

	if (strcmp(method, "GET") != 0)
		return refuse_method(c, "GET");
	doc = sl_auth_metadata(h->auth, &len);
	r = MHD_create_response_from_buffer(len, doc, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "max-age=3600");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
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
	stream_push(st, l, true);
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
	/* MCP 2026-07-28 transports: reverse proxies must not buffer SSE. */
	MHD_add_response_header(r, "X-Accel-Buffering", "no");
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
	else if (!strcmp(m, "tasks/get") || !strcmp(m, "tasks/update") || !strcmp(m, "tasks/cancel"))
		field = "taskId"; /* SEP-2663: Mcp-Name carries the task id */
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
		ret = st->retry_after ? too_many(c, l->data, len, hs, st->retry_after) :
		      respond(c, MHD_HTTP_OK, "application/json", l->data, len, hs, false);
		stream_free(st);
		return ret;
	}
	old = st->head;
	st->head = NULL;
	st->tail = &st->head;
	st->sse = true;
	if (hs && hs->listen)
		watch_peer(st);
	prime(st);
	/* Already within the budget: framed, they cost a few bytes more. */
	for (struct line *l = old; l; l = l->next)
		stream_push(st, sse_frame(st, l->data, l->len), true);
	lines_release(st, old);
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

/* The 2026-07-28 requests in flight of one identity (without
 * authentication, all of them): one session's worth. */
static uint32_t ephemeral_with(const struct sl_http *h, const struct sl_caller *who)
{
	uint32_t n = 0;
	for (const struct hsess *x = h->sessions; x; x = x->next)
		n += x->ephemeral && !x->listen && sl_caller_same(x->who, who);
	return n;
}

/* The listens open of one identity (sluice.limits.maxListensPerSession). */
static uint32_t listens_with(const struct sl_http *h, const struct sl_caller *who)
{
	uint32_t n = 0;
	for (const struct hsess *x = h->sessions; x; x = x->next)
		n += x->listen && sl_caller_same(x->who, who);
	return n;
}

/* The checks every POST body passes before a session sees it (its size,
 * the budget, one JSON object, its id, its depth). NULL: refused, *ret is
 * the answer; else the parsed body, owned by the caller. */
static yyjson_doc *checked_body(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				enum MHD_Result *ret)
{
	yyjson_doc *doc;
	yyjson_val *root, *id;

	if (r->over) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the request body is over sluice.http.maxBodyBytes (%zu bytes)",
			 h->cfg->max_body_bytes);
		*ret = fail(c, MHD_HTTP_CONTENT_TOO_LARGE, SL_RPC_INVALID_REQUEST, NULL, msg);
		return NULL;
	}
	if (r->busy) {
		char *why = busy_why(h, OVER_ALL);
		*ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		return NULL;
	}
	doc = yyjson_read(r->body.data ? r->body.data : "", r->body.len, 0);
	root = yyjson_doc_get_root(doc);
	if (!doc) {
		*ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_PARSE_ERROR, NULL, "Parse error: the body is not JSON");
		return NULL;
	}
	if (!yyjson_is_obj(root)) {
		*ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL,
			    "Invalid Request: one JSON-RPC message per POST (no batches)");
		goto fail;
	}
	id = yyjson_obj_get(root, "id");
	/* Answered here: the session would answer with a null id, which no
	 * stream waits for, and the POST would hold its slot for good. */
	if (id && !sl_rpc_valid_id(id)) {
		*ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL, SL_RPC_BAD_ID_WHY);
		goto fail;
	}
	/* The depth gate (core/json.h), before anything walks the body. */
	if (!sl_json_depth_ok(root)) {
		*ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, id,
			    "Invalid Request: " SL_JSON_DEPTH_WHY);
		goto fail;
	}
	return doc;
fail:
	yyjson_doc_free(doc);
	return NULL;
}

static enum MHD_Result post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			    struct sl_caller *who, bool modern)
{
	const char *pv = header(c, SL_MCP_HDR_VERSION);
	const char *sid = header(c, SL_MCP_HDR_SESSION);
	yyjson_doc *doc = NULL;
	yyjson_val *root, *id, *method, *meta;
	struct hsess *hs = NULL;
	struct stream *st;
	enum MHD_Result ret;
	enum bound b;
	bool is_init;

	if (!(doc = checked_body(h, c, r, &ret)))
		return ret;
	root = yyjson_doc_get_root(doc);
	id = yyjson_obj_get(root, "id");
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
			ret = respond(c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL, false);
			goto out;
		}
		/* A listen is long-lived: it has bounds of its own
		 * (sluice.limits.maxListens* and the memory budget), and is
		 * neither a session nor a request in flight. */
		if (yyjson_equals_str(method, SL_MCP_LISTEN)) {
			if (listens_with(h, who) >= h->lim->max_listens_per_session) {
				ret = fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
					   "too many subscriptions/listen streams open with this "
					   "credential (sluice.limits.maxListensPerSession)");
				goto out;
			}
			hs = session_new(h, true, who);
			h->nephemeral--;
			h->nlistens++;
			hs->listen = true;
			goto opened;
		}
		/* In flight, it is a live session (maxSessions), and the requests
		 * of one credential are one session's (maxRequestsPerSession). */
		if (h->nsessions + h->nephemeral >= h->cfg->max_sessions) {
			ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id,
				   "too many sessions (sluice.http.maxSessions; a 2026-07-28 request in "
				   "flight counts as one)");
			goto out;
		}
		if (ephemeral_with(h, who) >= h->cfg->max_requests) {
			ret = fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
				   "too many 2026-07-28 requests in flight with this credential "
				   "(sluice.http.maxRequestsPerSession)");
			goto out;
		}
		hs = session_new(h, true, who);
	} else if (is_init) {
		if (h->nsessions + h->nephemeral >= h->cfg->max_sessions) {
			ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id,
				   "too many sessions (sluice.http.maxSessions)");
			goto out;
		}
		hs = session_new(h, false, who);
	} else {
		/* MCP 2025-11-25 transports: after initialize, the session id is
		 * required (400 without it, 404 when unknown or ended). */
		if (!sid) {
			ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
				   "Bad Request: Mcp-Session-Id header is required");
			goto out;
		}
		hs = sl_map_get(&h->by_id, sid);
		/* A session answers only the credential that opened it, and
		 * only on its own transport. */
		if (!hs || hs->sse || !sl_caller_same(hs->who, who)) {
			ret = fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, id, "Session not found");
			goto out;
		}
		if (pv && !sl_mcp_legacy_version(pv)) {
			ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
				   "Bad Request: unsupported MCP-Protocol-Version");
			goto out;
		}
		hs->last_ms = sl_now_ms();
		touch(hs);
	}
opened:

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
		sl_session_input_from(hs->s, who, r->body.data, r->body.len);
		if (method && yyjson_equals_str(method, SL_MCP_CANCELLED))
			end_cancelled(hs, yyjson_obj_get(yyjson_obj_get(root, "params"), "requestId"));
		ret = respond(c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL, false);
		goto out;
	}

	meta = yyjson_obj_get(yyjson_obj_get(root, "params"), "_meta");
	st = stream_new(h, hs, c, json_key(id), json_key(yyjson_obj_get(meta, "progressToken")), &b);
	/* A listen's session keeps its filter for as long as it is open:
	 * the stream carries that cost (at most the body) in the budget. */
	if (st && hs->listen && (b = reserve(h, NULL, st, r->body.len)) != FITS) {
		stream_free(st); /* ends the session too */
		st = NULL;
		hs = NULL;
	}
	if (!st) {
		/* Refused before any work: the memory budget is spent. */
		char *why = busy_why(h, b);
		if (hs && (hs->ephemeral || is_init))
			session_end(hs);
		ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id, why);
		free(why);
		goto out;
	}
	sl_session_input_from(hs->s, who, r->body.data, r->body.len);
	if (is_init)
		remember_init(hs, root);

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

static struct hsess *find_session(struct sl_http *h, struct MHD_Connection *c,
				  const struct sl_caller *who,
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
	if (!hs || hs->sse || !sl_caller_same(hs->who, who)) {
		*ret = fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL, "Session not found");
		return NULL;
	}
	hs->last_ms = sl_now_ms();
	touch(hs);
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
	size_t total = 0;
	enum bound b;

	if (sscanf(last, "%u-%u%c", &no, &n, &end) != 2)
		return fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, NULL, "Bad Request: unknown Last-Event-ID");
	for (st = hs->streams; st; st = st->next)
		if (st->no == no)
			break;
	if (!st || !st->detached)
		return fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL,
			    "Not Found: no stream to resume with that Last-Event-ID");
	/* Events given up (HISTORY_MAX, the memory budget) are never skipped
	 * silently: the resumption fails instead. */
	if (st->lost || n < st->dropped)
		return fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL,
			    "Not Found: the events after that Last-Event-ID are no longer kept "
			    "(the memory budget, sluice.limits)");
	for (struct line *l = st->hist; l; l = l->next)
		if (l->n > n)
			total += cost(l);
	if ((b = reserve(h, NULL, st, total)) != FITS) {
		char *why = busy_why(h, b);
		enum MHD_Result ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		return ret;
	}
	detached_del(st);
	st->detached = false;
	st->conn = c;
	for (struct line *l = st->hist; l; l = l->next)
		if (l->n > n) { /* charged above; copies are not events to remember again */
			struct line *copy = line_new(sl_strndup(l->data, l->len), l->len);
			*st->tail = copy;
			st->tail = &copy->next;
		}
	return open_sse(c, st, hs, r);
}

static enum MHD_Result get(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			   const struct sl_caller *who)
{
	const char *last;
	enum MHD_Result ret;
	struct hsess *hs;
	struct stream *st;
	enum bound b;

	if (!(hs = find_session(h, c, who, &ret)))
		return ret;
	if ((last = header(c, "Last-Event-ID"))) {
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
		return fail(c, MHD_HTTP_CONFLICT, SL_RPC_SERVER_ERROR, NULL,
			    "Conflict: this session's stream is already open");
	if (hs->get)
		stream_free(hs->get); /* a new stream replaces one nobody resumed */
	if (!(st = stream_new(h, hs, c, NULL, NULL, &b))) {
		char *why = busy_why(h, b);
		ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		return ret;
	}
	st->is_get = st->sse = true;
	hs->get = st;
	prime(st);
	while (hs->backlog) {
		/* Within the budget already: from the backlog to the stream. */
		struct line *l = hs->backlog;
		hs->backlog = l->next;
		hs->nbacklog--;
		hs->backlog_bytes -= cost(l);
		release(h, hs, NULL, cost(l));
		stream_push(st, sse_frame(st, l->data, l->len), true);
		l->next = NULL;
		lines_free(l);
	}
	hs->backlog_tail = &hs->backlog;
	return open_sse(c, st, hs, r);
}

static enum MHD_Result del(struct sl_http *h, struct MHD_Connection *c,
			   const struct sl_caller *who)
{
	const char *sid = header(c, SL_MCP_HDR_SESSION);
	enum MHD_Result ret;
	struct hsess *hs;

	/* A session another replica holds, sealed for this caller: it ends
	 * everywhere (no replica adopts it again), without adopting it here. */
	if (sid && sharing(h) && !sl_map_get(&h->by_id, sid) &&
	    sl_session_id_check(h->gw->gen->key, sid, who ? who->key : "")) {
		sl_session_store_end(h->gw->redis, sid);
		return respond(c, MHD_HTTP_OK, NULL, "", 0, NULL, false);
	}
	if (!(hs = find_session(h, c, who, &ret)))
		return ret;
	if (sharing(h))
		sl_session_store_end(h->gw->redis, hs->id);
	session_end(hs);
	return respond(c, MHD_HTTP_OK, NULL, "", 0, NULL, false);
}

/* ---- HTTP+SSE (MCP 2024-11-05 transports) ------------------------------------------------- */

#define SSE_ERA_WHY                                                                                \
	"the HTTP+SSE transport (GET /sse) serves the session era only (2024-11-05 to "            \
	"2025-11-25, after initialize): a 2026-07-28 client uses POST /mcp"

/* GET /sse: a session of its own and its one stream, whose first event
 * names where to POST (MCP 2024-11-05 transports: "the server MUST send an
 * endpoint event containing a URI for the client to use for sending
 * messages"). The session lives as long as the stream (stream_free). */
static enum MHD_Result sse_open(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				struct sl_caller *who)
{
	struct hsess *hs;
	struct stream *st;
	struct line *l;
	enum bound b;

	if (h->nsessions + h->nephemeral >= h->cfg->max_sessions)
		return fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL,
			    "too many sessions (sluice.http.maxSessions)");
	hs = session_new(h, false, who);
	hs->sse = true;
	if (!(st = stream_new(h, hs, c, NULL, NULL, &b))) {
		char *why = busy_why(h, b);
		enum MHD_Result ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		session_end(hs);
		return ret;
	}
	st->is_get = st->sse = true;
	hs->get = st;
	l = line_new(sl_printf("event: endpoint\ndata: /messages?sessionId=%s\n\n", hs->id), 0);
	l->len = strlen(l->data);
	stream_push(st, l, true);
	/* Its client closing the stream ends the session at once, not at
	 * the next heartbeat (a suspended connection is not read). */
	watch_peer(st);
	sl_log(SL_LOG_DEBUG, "http: session %.8s… opened over HTTP+SSE", hs->id);
	return open_sse(c, st, NULL, r);
}

/* POST /messages?sessionId=: one message for an HTTP+SSE session, 202 at
 * once; whatever the session sends goes on its stream. */
static enum MHD_Result sse_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				const struct sl_caller *who)
{
	const char *sid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sessionId");
	const char *pv = header(c, SL_MCP_HDR_VERSION);
	yyjson_doc *doc;
	yyjson_val *root, *id, *method, *meta;
	struct hsess *hs;
	enum MHD_Result ret;
	enum bound b;

	if (!(doc = checked_body(h, c, r, &ret)))
		return ret;
	root = yyjson_doc_get_root(doc);
	id = yyjson_obj_get(root, "id");
	method = yyjson_obj_get(root, "method");
	meta = yyjson_obj_get(yyjson_obj_get(root, "params"), "_meta");
	if (!sid) {
		ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
			   "Bad Request: the sessionId query parameter is required");
		goto out;
	}
	hs = sl_map_get(&h->by_id, sid);
	/* Its stream gone, the session is gone; one opened with another
	 * credential, or on /mcp, is not found either. */
	if (!hs || !hs->sse || !sl_caller_same(hs->who, who)) {
		ret = fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, id, "Session not found");
		goto out;
	}
	if ((pv && !strcmp(pv, SL_MCP_MODERN)) || yyjson_obj_get(meta, SL_MCP_META_VERSION)) {
		ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, id,
			   "Invalid Request: " SSE_ERA_WHY);
		goto out;
	}
	if (pv && !sl_mcp_legacy_version(pv)) {
		ret = fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
			   "Bad Request: unsupported MCP-Protocol-Version");
		goto out;
	}
	if (method && id) {
		if (hs->ninflight >= h->cfg->max_requests) {
			ret = fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
				   "too many requests in flight in this session "
				   "(sluice.http.maxRequestsPerSession)");
			goto out;
		}
		/* Before the session sees it: it may answer at once. */
		if ((b = inflight_add(hs, json_key(id))) != FITS) {
			char *why = busy_why(h, b);
			ret = fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id, why);
			free(why);
			goto out;
		}
	}
	hs->last_ms = sl_now_ms();
	sl_session_input_from(hs->s, r->who, r->body.data, r->body.len);
	if (method && !id && yyjson_equals_str(method, SL_MCP_CANCELLED)) {
		/* A cancelled request is never answered: no longer in flight. */
		char *key = json_key(yyjson_obj_get(yyjson_obj_get(root, "params"), "requestId"));
		if (!hs->ended)
			inflight_del(hs, key);
		free(key);
	}
	ret = respond(c, MHD_HTTP_ACCEPTED, "text/plain", "Accepted", 8, NULL, false);
out:
	yyjson_doc_free(doc);
	return ret;
}

/* ---- connections: admission before work ---------------------------------------------- */

static void conns_add(struct conns *l, struct conn *x)
{
	x->next = NULL;
	x->prev = l->tail;
	if (l->tail)
		l->tail->next = x;
	else
		l->head = x;
	l->tail = x;
	l->n++;
}

static void conns_del(struct conns *l, struct conn *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		l->head = x->next;
	if (x->next)
		x->next->prev = x->prev;
	else
		l->tail = x->prev;
	x->prev = x->next = NULL;
	l->n--;
}

/* Takes x out of the list of its state; it is then busy (or closing). */
static void conn_busy(struct sl_http *h, struct conn *x)
{
	if (x->state == CONN_PENDING)
		conns_del(&h->pending, x);
	else if (x->state == CONN_IDLE)
		conns_del(&h->idle, x);
	x->state = CONN_BUSY;
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static bool same_address(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
	return false;
}

static void warn_once(struct sl_http *h, unsigned what, const char *msg)
{
	if (h->warned & what)
		return;
	h->warned |= what;
	sl_log(SL_LOG_WARN, "http: %s (logged once)", msg);
}

/* Closes a connection libmicrohttpd owns: shutting its socket down makes
 * libmicrohttpd see the end and close it itself (the fd is never closed
 * here, so it cannot be reused under libmicrohttpd). */
static void conn_close(struct sl_http *h, struct conn *x)
{
	conn_busy(h, x);
	shutdown(x->fd, SHUT_RDWR);
}

static uint64_t deadline_of(const struct sl_http *h, const struct conn *x)
{
	return x->since_ms + (x->state == CONN_PENDING ? h->lim->header_timeout_ms
						       : h->lim->idle_timeout_ms);
}

static void on_deadline(uv_timer_t *t);

static void arm_deadline(struct sl_http *h)
{
	uint64_t next = UINT64_MAX, now = sl_now_ms();
	if (h->pending.head)
		next = deadline_of(h, h->pending.head);
	if (h->idle.head && deadline_of(h, h->idle.head) < next)
		next = deadline_of(h, h->idle.head);
	if (next == UINT64_MAX)
		uv_timer_stop(&h->deadline);
	else
		uv_timer_start(&h->deadline, on_deadline, next > now ? next - now : 0, 0);
}

/* Both lists are in the order of their deadlines (one timeout each). The
 * times are totals, not idle times: a peer trickling a byte now and then
 * is closed as surely as a silent one. */
static void on_deadline(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	uint64_t now = sl_now_ms();
	while (h->pending.head && deadline_of(h, h->pending.head) <= now) {
		warn_once(h, WARNED_HEADERS, "a connection did not send its request's headers within "
			  "sluice.limits.headerTimeoutMs: closed");
		conn_close(h, h->pending.head);
	}
	while (h->idle.head && deadline_of(h, h->idle.head) <= now)
		conn_close(h, h->idle.head);
	arm_deadline(h);
}

/* The bounds on pending connections, after each run of libmicrohttpd:
 * over sluice.limits.maxPendingPerAddress pending from one address, that
 * address's oldest are closed, then over maxPendingConnections the oldest
 * of all, so that a flood of half-open sockets pushes out only its own
 * kind. libmicrohttpd accepts connections before it reads any, and a
 * client opening many at once writes their headers a little later: a
 * connection goes for its address's bound only once pending for
 * PENDING_GRACE_MS, and for the bound of all once it was pending at the
 * previous pass (it had one run to be read). */
static void enforce_pending(struct sl_http *h)
{
	struct conn *x, *next;
	uint64_t now = sl_now_ms();
	for (x = h->pending.head; x && now - x->since_ms >= PENDING_GRACE_MS; x = next) {
		uint32_t n = 0;
		next = x->next;
		for (struct conn *y = x; y && n <= h->lim->max_pending_per_ip; y = y->next)
			n += same_address(&x->addr, &y->addr);
		if (n > h->lim->max_pending_per_ip) {
			warn_once(h, WARNED_PER_ADDRESS, "connections not yet admitted from one address "
				  "over sluice.limits.maxPendingPerAddress: closing the oldest");
			conn_close(h, x);
		}
	}
	while (h->pending.n > h->lim->max_pending && h->pending.head->seen) {
		warn_once(h, WARNED_PENDING, "connections not yet admitted over "
			  "sluice.limits.maxPendingConnections: closing the oldest");
		conn_close(h, h->pending.head);
	}
	for (x = h->pending.head; x; x = x->next)
		x->seen = true;
}

/* ---- TLS ------------------------------------------------------------------------------- */

/* gnutls_certificate_retrieve_function2, at every handshake: the current
 * credentials. GnuTLS neither frees nor changes what it is given, and uses
 * it for the session's life; a connection's close releases it
 * (tls_release). */
static int on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca, int nreq,
		   const gnutls_pk_algorithm_t *pk, int npk, gnutls_pcert_st **pcert,
		   unsigned *npcert, gnutls_privkey_t *key)
{
	if (!tls_now)
		return -1;
	*pcert = tls_now->pcert;
	*npcert = tls_now->npcert;
	*key = tls_now->key;
	return 0;
}

/* A connection accepted at epoch closed: every credential retired since
 * then has one holder fewer, and goes with its last. */
static void tls_release(struct sl_http *h, uint64_t epoch)
{
	struct retired **pp = &h->retired, *r;
	while ((r = *pp)) {
		if (r->epoch >= epoch && --r->holders == 0) {
			*pp = r->next;
			sl_log(SL_LOG_DEBUG, "http: TLS certificate serial %s released: the last "
			       "connection that could use it closed", r->tls->serial);
			sl_tls_unref(r->tls);
			free(r);
			continue;
		}
		pp = &r->next;
	}
}

static void tls_describe(const struct sl_tls *t, const struct sl_tls_config *c, const char *what)
{
	sl_log(SL_LOG_INFO, "http: TLS certificate %s%s (serial %s, valid until %s)", c->cert_file,
	       what, *t->serial ? t->serial : "?", *t->until ? t->until : "?");
	if (t->expired)
		sl_log(SL_LOG_WARN, "http: the TLS certificate in %s is outside its validity period "
		       "(until %s): clients will refuse it", c->cert_file, *t->until ? t->until : "?");
}

/* sluice.http.tls at start: libmicrohttpd must have HTTPS and the
 * certificate callback (Debian's is linked with GnuTLS), and the files
 * must load. */
static int tls_start(struct sl_http *h, const struct sl_tls_config *c, struct sl_err *err)
{
	int rc;
	if (tls_now) {
		sl_err_set(err, "sluice.http.tls: one HTTPS front end per process");
		return SL_ERR_STATE;
	}
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
	    MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES) {
		sl_err_set(err, "sluice.http.tls: this libmicrohttpd was built without HTTPS (or "
			   "without MHD_OPTION_HTTPS_CERT_CALLBACK); install one linked with GnuTLS, "
			   "or put a TLS proxy in front");
		return SL_ERR_STATE;
	}
	if ((rc = sl_tls_load(c, &tls_now, err)) < 0)
		return rc;
	h->tls = true;
	tls_describe(tls_now, c, "");
	return SL_OK;
}

int sl_http_tls_load(struct sl_http *h, const struct sl_config *cfg, struct sl_tls **out,
		     struct sl_err *err)
{
	const struct sl_tls_config *c = &cfg->http.tls;
	*out = NULL;
	if (h->tls != (c->cert_file != NULL)) {
		sl_log(SL_LOG_WARN, "config reload: turning sluice.http.tls %s takes a restart; "
		       "the front end keeps serving %s", h->tls ? "off" : "on",
		       h->tls ? "HTTPS with its current certificate" : "plain HTTP");
		return SL_OK;
	}
	return h->tls ? sl_tls_load(c, out, err) : SL_OK;
}

void sl_http_tls_swap(struct sl_http *h, const struct sl_config *cfg, struct sl_tls *t)
{
	if (!t)
		return;
	if (h->nconns) {
		struct retired *r = sl_alloc(sizeof(*r));
		r->tls = tls_now;
		r->epoch = h->tls_epoch;
		r->holders = h->nconns;
		r->next = h->retired;
		h->retired = r;
	} else {
		sl_tls_unref(tls_now);
	}
	tls_now = t;
	h->tls_epoch++;
	tls_describe(t, &cfg->http.tls, " loaded: new connections get it");
}

/* MHD_OPTION_NOTIFY_CONNECTION: a connection accepted, or closed. A new
 * one is pending until its first request's headers are whole. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct sl_http *h = cls;
	struct conn *x = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (x) {
			conn_busy(h, x);
			h->nconns--;
			tls_release(h, x->epoch);
		}
		free(x);
		*socket_context = NULL;
		return;
	}
	x = sl_alloc(sizeof(*x));
	x->fd = -1;
	x->epoch = h->tls_epoch;
	h->nconns++;
	if ((ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD)))
		x->fd = ci->connect_fd;
	if ((ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS)) && ci->client_addr)
		memcpy(&x->addr, ci->client_addr, ci->client_addr->sa_family == AF_INET6
						  ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in));
	x->since_ms = sl_now_ms();
	x->state = CONN_PENDING;
	conns_add(&h->pending, x);
	*socket_context = x;
	arm_deadline(h);
}

/* The headers of a request are whole: the connection is no longer pending. */
static void conn_headers(struct sl_http *h, struct MHD_Connection *c)
{
	struct conn *x = conn_of(c);
	if (x)
		conn_busy(h, x);
}

/* A request ended: the next one's headers are awaited from now on, at
 * most sluice.limits.idleConnectionTimeoutMs. */
static void conn_between(struct sl_http *h, struct MHD_Connection *c)
{
	struct conn *x = conn_of(c);
	if (!x || x->state != CONN_BUSY)
		return;
	x->state = CONN_IDLE;
	x->since_ms = sl_now_ms();
	conns_add(&h->idle, x);
	arm_deadline(h);
}

static bool over_body_cap(struct sl_http *h, struct MHD_Connection *c, enum MHD_Result *ret)
{
	const char *len = header(c, "Content-Length");
	char msg[128];
	if (!len || strtoull(len, NULL, 10) <= h->cfg->max_body_bytes)
		return false;
	snprintf(msg, sizeof(msg), "the request body is over sluice.http.maxBodyBytes (%zu bytes)",
		 h->cfg->max_body_bytes);
	*ret = error_response(c, MHD_HTTP_CONTENT_TOO_LARGE, SL_RPC_INVALID_REQUEST, NULL, msg, true);
	return true;
}

/* The HTTP+SSE endpoints (MCP 2024-11-05 transports), after Host, Origin
 * and token: GET /sse (Accept must allow the stream), POST /messages
 * (Content-Type and the body cap as on /mcp; its client, which reads
 * every answer on its stream, need not send Accept). */
static bool admit_sse(struct sl_http *h, struct MHD_Connection *c, const char *url,
		      const char *method, bool modern, enum MHD_Result *ret)
{
	bool stream = !strcmp(url, "/sse");
	if (strcmp(method, stream ? "GET" : "POST") != 0) {
		*ret = refuse_method(c, stream ? "GET" : "POST");
		return false;
	}
	if (modern) {
		*ret = error_response(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL,
				      "Invalid Request: " SSE_ERA_WHY, true);
		return false;
	}
	if (stream && !accepts(header(c, "Accept"), "text/event-stream")) {
		*ret = refuse(c, MHD_HTTP_NOT_ACCEPTABLE, "Not Acceptable: Accept must allow text/event-stream");
		return false;
	}
	if (!stream && (!header(c, "Content-Type") ||
			strncasecmp(header(c, "Content-Type"), "application/json", 16) != 0)) {
		*ret = refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
		return false;
	}
	return stream || !over_body_cap(h, c, ret);
}

/* /mcp/<name>: a profile of the current config (docs/PROFILES.md). Its
 * requests come from *who through that profile, which binds what they open
 * to it: a session of /mcp/ops is not found through /mcp or /mcp/dev. Over
 * a front end without authentication the caller is anonymous ("none") but
 * carries the profile. "default" is /mcp itself; another unknown name,
 * like a profile a reload removed, is 404. */
static bool profile_route(struct sl_http *h, struct MHD_Connection *c, const char *name,
			  enum MHD_Result *ret)
{
	if (!strcmp(name, "default") || !sl_config_profile(h->gw->cfg, name)) {
		char *msg = sl_printf("Not Found: no profile is served at /mcp/%.100s%s", name,
				      strcmp(name, "default") ? " (sluice.profiles)" :
				      ": the default profile is /mcp");
		*ret = refuse(c, MHD_HTTP_NOT_FOUND, msg);
		free(msg);
		return false;
	}
	return true;
}

/* The caller a request is served as: who its credential names (taken),
 * through the profile its path names (NULL: the default profile, and
 * without authentication no caller at all). */
static struct sl_caller *through_profile(struct sl_caller *who, const char *profile)
{
	struct sl_caller *through;

	if (!profile)
		return who;
	if (who) {
		through = sl_caller_with_profile(who, profile);
		sl_caller_unref(who);
	} else {
		through = sl_caller_new("none");
		sl_caller_set_profile(through, profile);
	}
	return through;
}

void sl_http_address(const struct sl_http *h, char *out, size_t size)
{
	/* h->host is as written: an IPv6 address keeps its brackets. */
	snprintf(out, size, "%s:%u", h->host, h->port);
}

bool sl_http_peer_loopback(const struct sockaddr *sa)
{
	if (sa && sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa && sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		/* ::1, or an IPv4 loopback peer on a dual-stack socket. */
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* The operator's pages (/status, and those of transport/operator.h): a
 * peer on this host, whatever its Host header says, or any peer sending
 * sluice.http.adminToken as a bearer token (compared as SHA-256 digests,
 * in constant time). An MCP credential opens none of them. */
bool sl_http_admin_token_ok(const char *token, const char *authorization)
{
	char want[SL_SHA256_HEX], got[SL_SHA256_HEX];

	if (!token || !authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return false;
	sl_sha256_hex(token, strlen(token), want);
	sl_sha256_hex(authorization + 7, strlen(authorization + 7), got);
	return memeql_sec(want, got, SL_SHA256_HEX);
}

bool sl_http_operator_allowed(struct sl_http *h, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	return (ci && sl_http_peer_loopback(ci->client_addr)) ||
	       sl_http_admin_token_ok(h->cfg->admin_token, header(c, "Authorization"));
}

/* A 200 of an operator's page: body (malloc'd, taken), never cached, the
 * connection closed after it. */
static enum MHD_Result operator_answer(struct MHD_Connection *c, const char *ctype, char *body,
				       size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "Connection", "close");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET /status (docs/stages/quota.md, "sluice status"): the gateway's state
 * for its operator. */
static enum MHD_Result status_page(struct sl_http *h, struct MHD_Connection *c,
				   const char *method)
{
	size_t len;
	char *body;

	if (!sl_http_operator_allowed(h, c))
		return refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /status answers loopback peers "
			      "and sluice.http.adminToken only");
	if (strcmp(method, "GET") != 0)
		return refuse_method(c, "GET");
	body = sl_gateway_status(h->gw, h->nsessions, &len);
	return operator_answer(c, "application/json", body, len);
}

/* GET /metrics (docs/METRICS.md): the Prometheus exposition, behind the
 * same gate as /status. */
static enum MHD_Result metrics_page(struct sl_http *h, struct MHD_Connection *c,
				    const char *method)
{
	struct sl_front_stats f = { .stateless = h->nephemeral, .listens = h->nlistens,
				    .connections = h->nconns, .buffered = h->bytes,
				    .buffered_limit = h->lim->max_buffered_bytes };
	size_t len;
	char *body;

	if (!sl_http_operator_allowed(h, c))
		return refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /metrics answers loopback peers "
			      "and sluice.http.adminToken only");
	if (strcmp(method, "GET") != 0)
		return refuse_method(c, "GET");
	for (struct hsess *hs = h->sessions; hs; hs = hs->next)
		if (!hs->ephemeral && !hs->ended)
			hs->sse ? f.sse_sessions++ : f.sessions++;
	body = sl_gateway_metrics(h->gw, &f, &len);
	return operator_answer(c, "text/plain; version=0.0.4; charset=utf-8", body, len);
}

/* ---- the admin page (gateway/admin.h, docs/ADMIN.md) ------------------------------------ */

static enum MHD_Result admin_answer(struct sl_http *h, struct MHD_Connection *c, unsigned status,
				    const char *notice)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *html = sl_admin_page(h->admin, h->nsessions, notice, &len);

	r = MHD_create_response_from_buffer(len, html, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "Content-Security-Policy", sl_admin_csp(h->admin));
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	/* Not no-referrer: under it a browser sends "Origin: null" with the
	 * page's own forms (Fetch, "serializing a request origin"), and the
	 * origin check could not tell them from anyone's. The page links
	 * nowhere else, so nothing leaves either way. */
	MHD_add_response_header(r, "Referrer-Policy", "same-origin");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Connection", "close");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_form_field(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *filename, const char *content_type,
				     const char *encoding, const char *data, uint64_t off, size_t size)
{
	sl_admin_form_field(cls, key, data, off, size);
	return MHD_YES;
}

/* GET /admin shows the page; a POST's form is read (admin_post), from the
 * page's own origin only. No MCP credential: the operator's gate. */
static enum MHD_Result admin_start(struct sl_http *h, struct MHD_Connection *c, const char *method,
				   void **con_cls)
{
	struct req *r;

	if (!sl_http_operator_allowed(h, c))
		return refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /admin answers loopback peers "
			      "and sluice.http.adminToken only");
	if (!strcmp(method, "GET"))
		return admin_answer(h, c, MHD_HTTP_OK, NULL);
	if (strcmp(method, "POST") != 0)
		return refuse_method(c, "GET, POST");
	/* CSRF, first half: a form another site's page submits carries that
	 * site's Origin (the token is the second half, admin_post). */
	if (!sl_admin_same_origin(h->tls, header(c, "Host"), header(c, "Origin"),
				  header(c, "Sec-Fetch-Site"))) {
		sl_log(SL_LOG_WARN, "admin: refused a POST from another origin (%s)",
		       header(c, "Origin") ? header(c, "Origin") : "no Origin");
		return refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /admin takes forms from its own "
			      "page only");
	}
	r = sl_alloc(sizeof(*r));
	r->conn = c;
	r->h = h;
	r->admin = true;
	sl_buf_init(&r->body, 0);
	r->form = sl_alloc(sizeof(*r->form));
	*r->form = (struct sl_admin_form){ 0 };
	r->pp = MHD_create_post_processor(c, 1024, on_form_field, r->form);
	*con_cls = r;
	if (!r->pp)
		return refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type: /admin "
			      "takes application/x-www-form-urlencoded");
	return MHD_YES;
}

/* The form's body, then its action: the token checked, then carried out
 * and audited (gateway/admin.c), and the page again with what happened. */
static enum MHD_Result admin_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				  const char *upload, size_t *upload_size)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char msg[1024], peer[INET6_ADDRSTRLEN] = "?";
	unsigned status;

	if (*upload_size) {
		r->form_bytes += *upload_size;
		if (r->form_bytes > SL_ADMIN_BODY_MAX ||
		    MHD_post_process(r->pp, upload, *upload_size) != MHD_YES)
			r->form->bad = true;
		*upload_size = 0;
		return MHD_YES;
	}
	/* The post processor hands over the last value when it is destroyed. */
	if (MHD_destroy_post_processor(r->pp) != MHD_YES)
		r->form->bad = true;
	r->pp = NULL;
	if (r->form_bytes > SL_ADMIN_BODY_MAX)
		return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "Content Too Large: a form of /admin "
			      "is at most 8 KiB");
	if (!sl_admin_csrf_ok(h->admin, r->form->csrf)) {
		sl_log(SL_LOG_WARN, "admin: refused a POST without the page's CSRF token");
		return refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: the form's token is missing or "
			      "stale (reload /admin)");
	}
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, peer,
			  sizeof(peer));
	else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr,
			  peer, sizeof(peer));
	status = sl_admin_act(h->admin, r->form, peer, msg, sizeof(msg));
	return admin_answer(h, c, status, msg);
}

/* The checks every request passes at its first callback, when its headers
 * are whole and before any byte of its body is read (MCP 2025-11-25
 * transports, security: Host and Origin against DNS rebinding), before its
 * credential is looked at. The Protected Resource Metadata is answered
 * here, to anyone who passes them. False: answered (refused, or the
 * metadata), *ret is the answer. */
static bool admit_origin(struct sl_http *h, struct MHD_Connection *c, const char *url,
			 const char *method, enum MHD_Result *ret)
{
	if (h->stopping) {
		*ret = refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
		return false;
	}
	if (!host_allowed(h, header(c, "Host"))) {
		*ret = refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: Host not allowed");
		return false;
	}
	if (!origin_allowed(h, header(c, "Origin"))) {
		*ret = refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: Origin not allowed");
		return false;
	}
	/* The operator's pages: their own peer check, and no MCP credential. */
	if (!strcmp(url, "/status")) {
		*ret = status_page(h, c, method);
		return false;
	}
	if (!strcmp(url, "/metrics")) {
		*ret = metrics_page(h, c, method);
		return false;
	}
	if (sl_auth_metadata_path(h->auth, url)) {
		*ret = resource_metadata(h, c, method);
		return false;
	}
	return true;
}

/* The checks of the request itself, after its credential (the endpoint,
 * the method, Accept, Content-Type, the body's announced size). False:
 * refused, *ret is the answer, the connection closes. */
static bool admit(struct sl_http *h, struct MHD_Connection *c, const char *url,
		  const char *method, enum MHD_Result *ret)
{
	const char *pv;
	bool modern, is_post = !strcmp(method, "POST");

	pv = header(c, SL_MCP_HDR_VERSION);
	modern = pv && !strcmp(pv, SL_MCP_MODERN);
	if (!strcmp(url, "/sse") || !strcmp(url, "/messages"))
		return admit_sse(h, c, url, method, modern, ret);
	if (!strncmp(url, "/mcp/", 5)) {
		if (!profile_route(h, c, url + 5, ret))
			return false;
	} else if (strcmp(url, "/mcp") != 0) {
		*ret = refuse(c, MHD_HTTP_NOT_FOUND, "Not Found: the endpoint is /mcp, or "
			      "/mcp/<profile> (and /sse for HTTP+SSE clients, /status and /metrics for the "
			      "operator)");
		return false;
	}
	/* MCP 2026-07-28: no GET stream, no sessions to delete. */
	if (!is_post && (modern || (strcmp(method, "GET") && strcmp(method, "DELETE")))) {
		*ret = refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method Not Allowed");
		return false;
	}
	/* MCP 2025-11-25 transports: a POST's client accepts both answers, a
	 * GET's the stream. */
	if (is_post && (!accepts(header(c, "Accept"), "application/json") ||
			!accepts(header(c, "Accept"), "text/event-stream"))) {
		*ret = refuse(c, MHD_HTTP_NOT_ACCEPTABLE,
			      "Not Acceptable: Accept must allow application/json and text/event-stream");
		return false;
	}
	if (!strcmp(method, "GET") && !accepts(header(c, "Accept"), "text/event-stream")) {
		*ret = refuse(c, MHD_HTTP_NOT_ACCEPTABLE,
			      "Not Acceptable: Accept must allow text/event-stream");
		return false;
	}
	if (is_post && (!header(c, "Content-Type") ||
			strncasecmp(header(c, "Content-Type"), "application/json", 16) != 0)) {
		*ret = refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
		return false;
	}
	return !(is_post && over_body_cap(h, c, ret));
}

/* Gives up what is buffered of a request's body. */
static void body_drop(struct sl_http *h, struct req *r)
{
	release(h, NULL, NULL, r->charged);
	r->charged = 0;
	sl_buf_dispose(&r->body);
	sl_buf_init(&r->body, 0);
}

/* ---- requests held while their credential is checked ------------------------------ */

static void held_remove(struct sl_http *h, struct req *r)
{
	if (!r->held_prev && h->held != r)
		return;
	if (r->held_prev)
		r->held_prev->held_next = r->held_next;
	else
		h->held = r->held_next;
	if (r->held_next)
		r->held_next->held_prev = r->held_prev;
	r->held_next = r->held_prev = NULL;
	h->nheld--;
}

/* auth fetched what some held requests wait for: each asks again. */
static void on_auth_ready(void *arg)
{
	struct sl_http *h = arg;
	for (struct req *r = h->held; r; r = r->held_next)
		if (r->held_suspended) {
			r->held_suspended = false;
			MHD_resume_connection(r->conn);
		}
	kick(h);
}

enum check { CHECKED, HELD, REFUSED };

static void hold(struct req *r)
{
	r->held_suspended = true;
	MHD_suspend_connection(r->conn);
}

/* The credential's verdict for r: CHECKED (r->who set), HELD (listed in
 * h->held; once its body is whole it is suspended until auth's fetch ended,
 * then asked again), or REFUSED (*why filled). At most
 * sluice.http.auth.maxWaiting requests are held at once. */
static enum check check_credential(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				   struct sl_auth_denial *why)
{
	struct sl_caller *who = NULL;
	enum sl_auth_verdict v;

	if (h->stopping) {
		held_remove(h, r);
		memset(why, 0, sizeof(*why));
		why->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		snprintf(why->description, sizeof(why->description), "shutting down");
		return REFUSED;
	}
	v = sl_auth_check(h->auth, header(c, "Authorization"), &who, why);
	if (v == SL_AUTH_PENDING) {
		if (!r->held_prev && h->held != r) {
			if (h->nheld >= h->cfg->auth.max_waiting) {
				memset(why, 0, sizeof(*why));
				why->status = MHD_HTTP_SERVICE_UNAVAILABLE;
				snprintf(why->description, sizeof(why->description),
					 "too many requests wait for the authorization server "
					 "(sluice.http.auth.maxWaiting)");
				return REFUSED;
			}
			r->held_next = h->held;
			if (h->held)
				h->held->held_prev = r;
			h->held = r;
			h->nheld++;
		}
		return HELD;
	}
	held_remove(h, r);
	if (v != SL_AUTH_OK)
		return REFUSED;
	r->who = through_profile(who, r->profile);
	r->unchecked = false;
	/* Token exchange needs the caller's own token (oauth/subject.h). */
	sl_oauth_subject_note(r->who, header(c, "Authorization"));
	return CHECKED;
}

/* ---- the web login's pages (oauth/weblogin.h) ---------------------------------------------- */

static void web_unlist(struct sl_http *h, struct req *r)
{
	if (!r->web_prev && h->webs != r)
		return;
	if (r->web_prev)
		r->web_prev->web_next = r->web_next;
	else
		h->webs = r->web_next;
	if (r->web_next)
		r->web_next->web_prev = r->web_prev;
	r->web_next = r->web_prev = NULL;
}

/* The page is known: kept for the connection's next call; a suspended
 * one resumes (libmicrohttpd then calls on_request again). */
static void on_web_page(void *arg, unsigned status, const char *html)
{
	struct req *r = arg;
	struct sl_http *h = r->h;

	r->wq = NULL;
	r->web_status = status;
	free(r->web_html);
	r->web_html = sl_strdup(html);
	if (r->web_prev || h->webs == r) {
		web_unlist(h, r);
		MHD_resume_connection(r->conn);
		kick(h);
	}
}

/* A browser's page: the web login wants no MCP credential (a browser has
 * none), and its answer comes with headers that keep it out of caches,
 * frames and Referer. */
static enum MHD_Result web_answer(struct MHD_Connection *c, struct req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *html = r->web_html ? r->web_html : sl_strdup("");

	r->web_html = NULL;
	resp = MHD_create_response_from_buffer(strlen(html), html, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(resp, "Content-Type", "text/html; charset=utf-8");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'none'");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Connection", "close");
	ret = MHD_queue_response(c, r->web_status ? r->web_status : MHD_HTTP_INTERNAL_SERVER_ERROR,
				 resp);
	MHD_destroy_response(resp);
	return ret;
}

static const char *arg_of(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* GET /oauth/login/<id> or /oauth/callback: r is made here so that a page
 * that waits (discovery, the token request) can suspend the connection. */
static enum MHD_Result web_start(struct sl_http *h, struct MHD_Connection *c, const char *url,
				 const char *method, void **con_cls)
{
	struct sl_weblogin_args a = { .code = arg_of(c, "code"), .state = arg_of(c, "state"),
				      .iss = arg_of(c, "iss"), .error = arg_of(c, "error"),
				      .error_description = arg_of(c, "error_description") };
	struct req *r;

	if (strcmp(method, "GET") != 0)
		return refuse_method(c, "GET");
	r = sl_alloc(sizeof(*r));
	r->conn = c;
	r->h = h;
	r->web = true;
	sl_buf_init(&r->body, 0);
	*con_cls = r;
	r->wq = sl_weblogin_serve(h->gw->weblogin, url, &a, on_web_page, r);
	if (!r->wq)
		return web_answer(c, r);
	r->web_next = h->webs;
	if (h->webs)
		h->webs->web_prev = r;
	h->webs = r;
	MHD_suspend_connection(c);
	return MHD_YES;
}

/* Shutting down: pages still waiting get 503 now, before the daemon goes. */
static void web_stop(struct sl_http *h)
{
	while (h->webs) {
		struct req *r = h->webs;
		sl_weblogin_cancel(r->wq);
		r->wq = NULL;
		on_web_page(r, MHD_HTTP_SERVICE_UNAVAILABLE,
			    "<!doctype html>\n<title>sluice</title><p>The gateway is shutting down.</p>\n");
	}
}

/* ---- the request handler ------------------------------------------------------------ */

/* ---- adopting another replica's session (shared/sessions.h) -------------------------- */

static void adoption_unlink(struct adoption *ad)
{
	struct sl_http *h = ad->h;
	if (ad->prev)
		ad->prev->next = ad->next;
	else
		h->adoptions = ad->next;
	if (ad->next)
		ad->next->prev = ad->prev;
	h->nadoptions--;
	ad->h = NULL;
}

static void adoption_free(struct adoption *ad)
{
	sl_caller_unref(ad->who);
	free(ad);
}

/* The record came (or not): adopt the session when it is good, then let
 * the request ask again; without a session it gets 404 Session not found
 * (MCP 2025-11-25 transports) and the client initializes anew. */
static void on_record(void *ctx, const char *json, size_t len, const char *error)
{
	struct adoption *ad = ctx;
	struct sl_http *h = ad->h;
	struct sl_session_record rec;
	struct sl_err err;

	if (!h) {
		adoption_free(ad); /* the transport is gone */
		return;
	}
	adoption_unlink(ad);
	if (!ad->r) {
		/* Its request ended meanwhile: nothing waits for the session. */
	} else if (error) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: Redis: %s",
		       ad->id, error);
	} else if (!json) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: no record "
		       "in Redis (ended or expired)", ad->id);
	} else if (sl_session_record_parse(json, len, ad->who ? ad->who->key : "", &rec, &err) < 0) {
		sl_log(SL_LOG_WARN, "http: session %.8s… of another replica not adopted: %s", ad->id,
		       err.msg);
	} else {
		if (sl_map_get(&h->by_id, ad->id)) {
			/* Another request adopted it first. */
		} else if (h->stopping || h->nsessions + h->nephemeral >= h->cfg->max_sessions) {
			sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: %s",
			       ad->id, h->stopping ? "shutting down" :
			       "too many sessions (sluice.http.maxSessions)");
		} else {
			session_adopted(h, ad->id, ad->who, &rec);
			sl_log(SL_LOG_INFO, "http: session %.8s… adopted from another replica (%zu "
			       "subscriptions)", ad->id, rec.nsubs);
		}
		sl_session_record_dispose(&rec);
	}
	if (ad->r) {
		ad->r->adopt = NULL;
		MHD_resume_connection(ad->r->conn);
		kick(h);
	}
	adoption_free(ad);
}

/* Whether r names a session this replica does not hold but another one
 * may: sealed for r's caller, on the session era's endpoint. */
static bool adoptable(struct sl_http *h, struct MHD_Connection *c, const char *url,
		      const char *method, const char *pv, const struct req *r)
{
	const char *sid = header(c, SL_MCP_HDR_SESSION);

	if (r->adopt_tried || !sharing(h) || !sid || (pv && !strcmp(pv, SL_MCP_MODERN)))
		return false;
	/* The HTTP+SSE transport's sessions stay on their replica. */
	if (!strcmp(url, "/messages") || !strcmp(url, "/sse"))
		return false;
	if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0)
		return false;
	return !sl_map_get(&h->by_id, sid) &&
	       sl_session_id_check(h->gw->gen->key, sid, r->who ? r->who->key : "");
}

/* Reads the session's record and suspends r until it came (a Redis reply
 * comes within commandTimeoutMs, else the connection to Redis is dropped
 * and the read fails). False when the read cannot start (Redis down,
 * ADOPT_MAX reads in flight): r goes on, to be answered 404 like any
 * unknown session. */
static bool adopt_start(struct sl_http *h, struct MHD_Connection *c, struct req *r)
{
	const char *sid = header(c, SL_MCP_HDR_SESSION);
	struct adoption *ad;
	struct sl_err err;

	r->adopt_tried = true;
	if (h->nadoptions >= ADOPT_MAX) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: %d "
		       "adoptions are in flight already", sid, ADOPT_MAX);
		return false;
	}
	ad = sl_alloc(sizeof(*ad));
	ad->who = sl_caller_ref(r->who);
	snprintf(ad->id, sizeof(ad->id), "%s", sid);
	if (sl_session_store_get(h->gw->redis, ad->id, on_record, ad, &err) < 0) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: %s",
		       ad->id, err.msg);
		adoption_free(ad);
		return false;
	}
	ad->h = h;
	ad->r = r;
	ad->next = h->adoptions;
	if (h->adoptions)
		h->adoptions->prev = ad;
	h->adoptions = ad;
	h->nadoptions++;
	r->adopt = ad;
	MHD_suspend_connection(c);
	return true;
}

/* Stopping: requests waiting for a record go on (and get 503). */
static void adoptions_release(struct sl_http *h)
{
	for (struct adoption *ad = h->adoptions; ad; ad = ad->next)
		if (ad->r) {
			ad->r->adopt = NULL;
			MHD_resume_connection(ad->r->conn);
			ad->r = NULL;
		}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct sl_http *h = cls;
	struct req *r = *con_cls;
	const char *pv;
	enum MHD_Result ret;

	if (r && r->web)
		return r->wq ? MHD_YES : web_answer(c, r);
	if (r && r->admin)
		return admin_post(h, c, r, upload, upload_size);
	if (!r) {
		struct sl_auth_denial why;
		conn_headers(h, c);
		if (!admit_origin(h, c, url, method, &ret))
			return ret;
		/* The operator's page: its own gate, and no MCP credential. */
		if (!strcmp(url, "/admin"))
			return admin_start(h, c, method, con_cls);
		/* After Host and Origin, before the MCP credential. */
		if (h->gw->weblogin && sl_weblogin_path(url))
			return web_start(h, c, url, method, con_cls);
		r = sl_alloc(sizeof(*r));
		r->conn = c;
		r->unchecked = true;
		if (!strncmp(url, "/mcp/", 5))
			r->profile = sl_strdup(url + 5);
		sl_buf_init(&r->body, h->cfg->max_body_bytes);
		*con_cls = r;
		switch (check_credential(h, c, r, &why)) {
		case CHECKED:
			return admit(h, c, url, method, &ret) ? MHD_YES : ret;
		case REFUSED:
			return unauthorized(h, c, &why);
		case HELD:
			/* The body is read meanwhile (under its caps, like any
			 * body): libmicrohttpd reads none of a connection
			 * suspended here, and drops it after the resume. The
			 * verdict is asked for again at its end. */
			return admit(h, c, url, method, &ret) ? MHD_YES : (held_remove(h, r), ret);
		}
	}
	if (r->unchecked && !*upload_size) {
		struct sl_auth_denial why;
		switch (check_credential(h, c, r, &why)) {
		case HELD:
			hold(r);
			return MHD_YES;
		case REFUSED:
			body_drop(h, r);
			return unauthorized(h, c, &why);
		case CHECKED:
			break;
		}
	}
	if (r->waiting)
		return settle(c, r);
	if (*upload_size) {
		/* Every buffer fed by a peer has a cap, and the memory budget:
		 * past either, read and drop, and answer 413 or 503. */
		if (r->over || r->busy) {
			/* dropped */
		} else if (reserve(h, NULL, NULL, *upload_size) != FITS) {
			r->busy = true;
			body_drop(h, r);
		} else if (sl_buf_append(&r->body, upload, *upload_size) < 0) {
			release(h, NULL, NULL, *upload_size);
			r->over = true;
			body_drop(h, r);
		} else {
			r->charged += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (h->stopping)
		return fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, "shutting down");
	pv = header(c, SL_MCP_HDR_VERSION);
	if (r->adopt)
		return MHD_YES; /* resumed by libmicrohttpd itself: still waiting */
	if (adoptable(h, c, url, method, pv, r) && adopt_start(h, c, r))
		return MHD_YES;
	if (!strcmp(url, "/messages")) {
		ret = sse_post(h, c, r, r->who);
		body_drop(h, r);
		return ret;
	}
	if (!strcmp(url, "/sse"))
		return sse_open(h, c, r, r->who);
	if (!strcmp(method, "POST")) {
		ret = post(h, c, r, r->who, pv && !strcmp(pv, SL_MCP_MODERN));
		body_drop(h, r); /* the session has what it needs */
		return ret;
	}
	return !strcmp(method, "GET") ? get(h, c, r, r->who) : del(h, c, r->who);
}

/* libmicrohttpd's own messages (a peer's malformed request, a failed socket
 * call) go through the log like every line: --log-level governs them, and
 * the text, which can quote what a peer sent, is escaped there. What one
 * peer's bad request or cut connection caused is debug: any client could
 * otherwise fill the log at warn. The server's own trouble is a warning. */
static const char *const peer_caused[] = {
	"Connection socket is closed", "Failed to parse", "Not enough memory in pool",
	"Received malformed", "Failed to receive data", "Failed to send data",
	"Connection reset", "Socket disconnected", "Error processing request",
	"Chunk size", "Received HTTP", "Stopping to read",
	/* A browser that left while its web login page waited (suspended). */
	"Connection was closed by remote side",
	/* A TLS handshake that failed: plain HTTP on the HTTPS port, a client
	 * that does not trust the certificate. */
	"Error: received handshake message out of context",
};

SL_PRINTF(2, 0) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct sl_http *h = cls;
	char msg[1024];
	const char *code, *title, *end;
	size_t n;

	if (!sl_log_enabled(SL_LOG_WARN))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && msg[n - 1] == '\n') /* its messages end with one */
		msg[--n] = '\0';
	if (!strncmp(msg, "Server reached connection limit", 31)) {
		warn_once(h, WARNED_CONNECTIONS, "connections over sluice.limits.maxConnections: "
			  "new ones are closed at once");
		return;
	}
	/* "Error processing request (HTTP response code is 400 ('<html>...
	 * <title>Request malformed</title>...'))": the status and the title. */
	code = strstr(msg, "HTTP response code is ");
	title = strstr(msg, "<title>");
	end = title ? strstr(title, "</title>") : NULL;
	if (code && title && end) {
		sl_log(SL_LOG_DEBUG, "http: refused a request with %.3s (%.*s)",
		       code + strlen("HTTP response code is "), (int)(end - title - 7), title + 7);
		return;
	}
	for (size_t i = 0; i < SL_COUNT(peer_caused); i++)
		if (!strncmp(msg, peer_caused[i], strlen(peer_caused[i]))) {
			sl_log(SL_LOG_DEBUG, "http: %s", msg);
			return;
		}
	sl_log(SL_LOG_WARN, "http: %s", msg);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode why)
{
	struct sl_http *h = cls;
	struct req *r = *con_cls;
	conn_between(h, c);
	if (!r)
		return;
	if (r->web) {
		/* Gone before its page came (shutdown, or the peer): the web
		 * login must not call back into a freed request. */
		sl_weblogin_cancel(r->wq);
		web_unlist(h, r);
		free(r->web_html);
	}
	if (r->admin) {
		if (r->pp)
			MHD_destroy_post_processor(r->pp);
		free(r->form);
	}
	held_remove(h, r);
	if (r->adopt)
		r->adopt->r = NULL; /* its record may still come: nothing waits for it */
	if (r->st && r->waiting) {
		/* Gone before any response owned the stream. */
		r->st->cut = true;
		r->st->req = NULL;
		r->st->suspended = false;
		on_stream_freed(r->st);
	} else if (r->st) {
		r->st->cut = why != MHD_REQUEST_TERMINATED_COMPLETED_OK;
		r->st->req = NULL;
		unwatch(r->st); /* its socket closes next */
	}
	body_drop(h, r);
	sl_buf_dispose(&r->body);
	sl_caller_unref(r->who);
	free(r->profile);
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
	enforce_pending(h);
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
		} else if (hs->who && hs->who->profile &&
			   !sl_config_profile(h->gw->cfg, hs->who->profile)) {
			/* A reload removed its profile: its streams end, and its
			 * next request is 404 like any to that profile. */
			sl_log(SL_LOG_INFO, "http: session %.8s… of profile '%s' ended: the profile "
			       "is no longer configured", hs->ephemeral ? "(request)" : hs->id,
			       hs->who->profile);
			session_end(hs);
		}
	}
	/* The budget's events are small blocks in the heap, which glibc gives
	 * back only from its top: once a flood's worth has been freed, return
	 * the free pages inside it too, so RSS follows the budget down. */
	if (h->bytes_peak - h->bytes > TRIM_BYTES) {
		malloc_trim(0);
		h->bytes_peak = h->bytes;
	}
}

static void on_beat(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	/* An SSE comment keeps proxies and clients from timing the stream
	 * out, and lets a suspended connection notice a vanished peer. */
	for (struct hsess *hs = h->sessions; hs; hs = hs->next)
		for (struct stream *st = hs->streams; st; st = st->next)
			if (st->sse && !st->head && !st->done && !st->detached && !st->killed)
				stream_push(st, line_new(sl_strdup(HEARTBEAT), strlen(HEARTBEAT)), true);
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

/* Room for sluice.limits.maxConnections open sockets: the soft limit on
 * open files is raised toward the hard one. Returns the connections that
 * fit (logged when fewer than configured). */
static unsigned fit_connections(unsigned want)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)want + FD_HEADROOM;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
		return want;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur >= need)
		return want;
	want = rl.rlim_cur > 2 * FD_HEADROOM ? (unsigned)(rl.rlim_cur - FD_HEADROOM) : 16;
	sl_log(SL_LOG_WARN, "http: the open-file limit (%llu, hard %llu) leaves room for %u "
	       "connections, under sluice.limits.maxConnections: raise it (ulimit -n)",
	       (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, want);
	return want;
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
	if (sharing(h))
		h->ends = sl_session_store_listen(gw->redis, on_ended_elsewhere, h);
	h->cfg = &cfg->http;
	h->lim = &cfg->limits;
	sl_map_init(&h->by_id);
	if ((rc = parse_listen(h, listen, &ss, err)) < 0)
		goto out;
	if ((rc = sl_auth_new(loop, &cfg->http, &h->auth, err)) < 0)
		goto out;
	sl_auth_on_ready(h->auth, on_auth_ready, h);
	if (!h->loopback && !sl_auth_required(h->auth)) {
		sl_err_set(err, "refusing to serve HTTP on %s without authentication "
			   "(sluice.http.bearerToken or sluice.http.auth): anyone who can reach that "
			   "address could use every tool. Listen on 127.0.0.1, or configure one", listen);
		rc = SL_ERR_INVALID;
		goto out;
	}
	if (cfg->http.tls.cert_file && (rc = tls_start(h, &cfg->http.tls, err)) < 0)
		goto out;
	/* The certificate callback only with MHD_USE_TLS: without it MHD
	 * warns about the option. */
	struct MHD_OptionItem tls_opts[] = {
		{ h->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0, (void *)on_cert },
		{ MHD_OPTION_END, 0, NULL },
	};
	h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
					(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0) |
					(h->tls ? MHD_USE_TLS : 0),
				h->port, NULL, NULL, on_request, h,
				/* First, so that no message goes to MHD's own logger. */
				MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				MHD_OPTION_CONNECTION_LIMIT, fit_connections(cfg->limits.max_connections),
				/* Whole seconds; a suspended connection (a stream waiting
				 * for its next event) is not timed. */
				MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned)((cfg->limits.idle_timeout_ms + 999) / 1000),
				MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
				MHD_OPTION_ARRAY, tls_opts,
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
	uv_timer_t *timers[] = { &h->timer, &h->kick, &h->sweep, &h->beat, &h->wait, &h->deadline };
	for (size_t i = 0; i < SL_COUNT(timers); i++) {
		uv_timer_init(loop, timers[i]);
		sl_handles_add(&h->handles, timers[i]);
	}
	h->poll.data = h->timer.data = h->kick.data = h->sweep.data = h->beat.data = h->wait.data =
		h->deadline.data = h;
	uv_poll_start(&h->poll, UV_READABLE, on_poll);
	uv_timer_start(&h->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
	uv_timer_start(&h->beat, on_beat, cfg->http.heartbeat_ms, cfg->http.heartbeat_ms);
	run_mhd(h);
	sl_log(SL_LOG_INFO, "listening on %s://%s:%u/mcp", h->tls ? "https" : "http", h->host,
	       h->port);
	if (!h->loopback && !h->tls)
		sl_log(SL_LOG_WARN, "http: serving plain HTTP on %s: credentials and every message "
		       "cross the network in clear; set sluice.http.tls, or put a TLS proxy in front",
		       listen);
	h->admin = sl_admin_new(gw);
	*out = h;
	return SL_OK;
out:
	if (h->tls) {
		sl_tls_unref(tls_now);
		tls_now = NULL;
	}
	sl_session_store_unlisten(h->ends);
	if (h->auth)
		sl_auth_free(h->auth);
	sl_map_dispose(&h->by_id);
	free(h);
	return rc;
}

void sl_http_stop(struct sl_http *h)
{
	if (h->stopping)
		return;
	h->stopping = true;
	/* Requests held for auth are answered 503 (check_credential). */
	on_auth_ready(h);
	adoptions_release(h);
	web_stop(h);
	/* MCP 2026-07-28 subscriptions: listens end gracefully, with their
	 * completion response, before their streams close. */
	for (struct hsess *hs = h->sessions; hs; hs = hs->next)
		sl_session_end_listens(hs->s);
	while (h->sessions)
		session_end(h->sessions);
	/* Let the ended streams finish before the daemon goes. */
	run_mhd(h);
}

void sl_http_free(struct sl_http *h)
{
	web_stop(h); /* a page still suspended would outlive the daemon */
	reap(h);
	sl_handles_close_one(&h->handles, &h->poll, NULL);
	/* Streams still open are freed by MHD (their sessions are gone). */
	MHD_stop_daemon(h->d);
	h->d = NULL;
	h->freeing = true;
	reap(h);
	sl_map_dispose(&h->by_id);
	while (h->adoptions)
		adoption_unlink(h->adoptions); /* freed when their reply comes */
	sl_session_store_unlisten(h->ends);
	sl_auth_free(h->auth);
	h->auth = NULL;
	sl_admin_free(h->admin);
	h->admin = NULL;
	/* MHD closed every connection, and so released what they held. */
	while (h->retired) {
		struct retired *r = h->retired;
		h->retired = r->next;
		sl_tls_unref(r->tls);
		free(r);
	}
	if (h->tls) {
		sl_tls_unref(tls_now);
		tls_now = NULL;
	}
	sl_handles_close(&h->handles, free, h);
}

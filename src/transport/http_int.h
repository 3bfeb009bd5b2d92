/*
 * What the parts of the HTTP transport share (private to src/transport/,
 * included by http*.c only; the public API is transport/http.h):
 *
 *   http.c           the server: libmicrohttpd in the loop, the request
 *                    handler, the answers every part gives, start and stop
 *   http_conn.c      connections and admission: pending and idle bounds,
 *                    Host and Origin, the credential (held while auth
 *                    fetches), the endpoint's own checks
 *   http_tls.c       the HTTPS glue: the certificate callback, reloads
 *   http_budget.c    the memory budget: what is charged, and what is given
 *                    up at a bound
 *   http_stream.c    streams: SSE framing, the reader, a listen's peer
 *                    watch, GET streams and their resumption
 *   http_session.c   sessions: routing what a session sends, lifecycle,
 *                    DELETE, records in Redis and adoption
 *   http_post.c      a POST to /mcp: its body checked and handed to a session
 *   http_legacy.c    the HTTP+SSE transport (GET /sse, POST /messages)
 *   http_operator.c  the operator's pages: /status, /metrics, /admin
 *   http_login.c     the web login's pages (oauth/weblogin.h)
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
 * counted by http_charge()/http_release() per session and in all, and
 * http_reserve() makes room in one order (detached histories, then
 * backlogs) or says which bound refused; connections are capped, and the
 * ones not yet admitted are capped per address and in all and timed from
 * accept.
 */
#ifndef SL_TRANSPORT_HTTP_INT_H
#define SL_TRANSPORT_HTTP_INT_H

#include "transport/http.h"
#include "auth/auth.h"
#include "core/buf.h"
#include "core/list.h"
#include "core/map.h"
#include "event/handles.h"
#include "shared/sessions.h"
#include "transport/tls.h"

#include <microhttpd.h>
#include <sys/socket.h>

/* One SSE event queued for a stream. The one place a list is not a
 * core/list.h list: lines are a singly linked chain (queue, history) that
 * is only ever appended and taken whole or from its head, and each line's
 * node is charged to the memory budget (http_cost): a second pointer would
 * charge every queued event 16 bytes more for an unlink it never does. */
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
	struct sl_list link;         /* in hs->streams, while hs is set */
	struct sl_list dlink;        /* in hs->detached, while detached and not given up */
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
	uv_poll_t *watch;            /* a listen's: notices its client closing (http_watch_peer) */
	int fd;                      /* the connection's socket, while watched */
};

struct hsess {
	struct sl_http *h;
	struct sl_list link;         /* in h->sessions or h->reap */
	struct sl_session *s;
	char id[SL_SESSION_ID_MAX];  /* 128 random bits in hex, sealed with
				      * sluice.shared.secret (shared/sessions.h);
				      * "" when ephemeral */
	char *client_info;           /* initialize's clientInfo (JSON) for the record, or NULL */
	uint64_t stored_ms;          /* its record last written to Redis, 0: never */
	struct sl_list resync;       /* in h->resync while its record waits to be written
				      * again after Redis came back */
	bool record_warned;          /* its record was over the bound: logged once */
	struct sl_caller *who;       /* who opened it (a reference; NULL: no authentication):
				      * it answers only that identity */
	char owner[SL_SHA256_HEX];   /* who's sl_caller_share_key, "" without
				      * authentication: its share of maxSessions (http_session_room) */
	struct sl_list streams;      /* struct stream, newest first */
	struct stream *get;
	struct sl_list detached;     /* streams to give up first, oldest first */
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
	struct sl_list link;         /* in h->pending or h->idle, by its state */
	enum conn_state state;
	bool seen;                   /* pending at the last http_enforce_pending() */
	int fd;
	struct sockaddr_storage addr;
	uint64_t since_ms;           /* accepted, or its last request ended */
	uint64_t epoch;              /* h->tls_epoch when accepted */
};

/* Credentials a reload replaced, kept while a connection accepted before
 * the reload is open: its handshake may have taken them (http_on_cert), and
 * GnuTLS keeps what the retrieve callback gave it for the session's life. */
struct retired {
	struct sl_list link;         /* in h->retired */
	struct sl_tls *tls;
	uint64_t epoch;              /* h->tls_epoch before the swap: conns with epoch <= it hold it */
	uint32_t holders;            /* such connections still open */
};

struct conns {
	struct sl_list list;         /* struct conn, oldest first */
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
	struct sl_list sessions;     /* struct hsess, the most recently used first (http_touch) */
	struct sl_list reap;         /* ended sessions, freed from the loop; newest first */
	struct sl_map by_id;
	uint32_t nsessions;          /* session era */
	uint32_t nephemeral;         /* 2026-07-28 requests in flight, listens aside */
	uint32_t nlistens;           /* 2026-07-28 subscriptions/listen streams */
	size_t bytes;                /* charged, all sessions and bodies */
	size_t bytes_peak;           /* the most charged since the last trim */
	struct conns pending, idle;
	uint32_t nconns;             /* open, from accept to close */
	unsigned warned;             /* bounds already logged (WARNED_*) */
	struct sl_list held;         /* struct req suspended until auth has what it fetches,
				      * newest first */
	uint32_t nheld;              /* at most sluice.http.auth.maxWaiting */
	struct sl_list webs;         /* struct req: web login pages waiting (suspended),
				      * newest first */
	struct sl_list adoptions;    /* sessions being read from Redis (at most ADOPT_MAX),
				      * newest first */
	struct sl_redis_listener *ends; /* sessions DELETEd on other replicas */
	struct sl_list resync;       /* struct hsess (by resync) whose records are written again,
				      * RESYNC_BATCH a turn, after Redis came back (http_on_redis_up) */
	uv_timer_t resync_timer;
	struct sl_admin *admin;      /* the admin page's CSRF token and CSP (gateway/admin.h) */
	uint32_t nadoptions;
	bool tls;                    /* serving HTTPS: tls_now (http_tls.c) is ours */
	uint64_t tls_epoch;          /* credentials swapped this many times */
	struct sl_list retired;      /* struct retired, newest first */
};

enum {
	WARNED_PENDING = 1,
	WARNED_PER_ADDRESS = 2,
	WARNED_HEADERS = 4,
	WARNED_CONNECTIONS = 8,
	WARNED_HOST = 16,
};

struct req {
	struct sl_buf body;
	bool over;
	bool busy;                   /* the body did not fit the budget: 503 */
	size_t charged;              /* of the body, in h->bytes */
	bool waiting;                /* suspended before any response: see http_settle() */
	struct sl_caller *who;       /* admitted as (a reference), or NULL */
	char *profile;               /* the /mcp/<profile> it came to, or NULL */
	uint64_t since_ms;           /* when it began to wait */
	struct stream *st;           /* the stream it answers with, while both live */
	/* Its credential's check waits for a fetch (auth/auth.h, PENDING):
	 * the connection is suspended and listed in h->held until it ends. */
	bool unchecked;              /* no verdict on its credential yet */
	bool held_suspended;
	struct sl_list held_link;    /* in h->held */
	struct MHD_Connection *conn;
	/* A web login page (oauth/weblogin.h): wq while it waits, suspended
	 * and listed in h->webs; then its page, queued on the next call. */
	struct sl_http *h;
	bool web;
	struct sl_weblogin_req *wq;
	unsigned web_status;
	char *web_html;
	char *web_cookie;            /* its Set-Cookie (the login's binder), or NULL */
	struct sl_list web_link;     /* in h->webs */
	/* A POST to /admin: its form, read under SL_ADMIN_BODY_MAX. */
	bool admin;
	struct sl_admin_form *form;
	struct MHD_PostProcessor *pp;
	size_t form_bytes;
	/* Its session is another replica's: suspended while the record is
	 * read (http_adopt_start), then asked again. */
	struct adoption *adopt;
	bool adopt_tried;
};

/* One session being adopted from its record in Redis. */
struct adoption {
	struct sl_list link;         /* in h->adoptions */
	struct sl_http *h;           /* NULL once the transport is freed */
	struct req *r;               /* the request waiting, NULL once it ended */
	struct sl_caller *who;       /* a reference */
	char id[SL_SESSION_ID_MAX];
};

/* What the budget says of n more bytes (http_reserve): they fit, or which bound refused. */
enum bound { FITS, OVER_SESSION, OVER_ALL };

/* A credential's verdict for a request (http_check_credential). */
enum check { CHECKED, HELD, REFUSED };

/* http.c: the server and the answers every part gives */
void http_kick(struct sl_http *h);
bool http_accepts(const char *accept, const char *type);
const char *http_header(struct MHD_Connection *c, const char *name);
enum MHD_Result http_respond(struct MHD_Connection *c, unsigned status, const char *ctype,
			     const char *body, size_t len, const struct hsess *hs, bool close);
enum MHD_Result http_error_response(struct MHD_Connection *c, unsigned status, int code,
				    yyjson_val *id, const char *msg, bool close);
enum MHD_Result http_fail(struct MHD_Connection *c, unsigned status, int code, yyjson_val *id,
			  const char *msg);
enum MHD_Result http_refuse(struct MHD_Connection *c, unsigned status, const char *msg);
enum MHD_Result http_refuse_method(struct MHD_Connection *c, const char *allow);
enum MHD_Result http_too_many(struct MHD_Connection *c, const char *body, size_t len,
			      const struct hsess *hs, uint32_t retry_after);
enum MHD_Result http_resource_metadata(struct sl_http *h, struct MHD_Connection *c,
				       const char *method);

/* http_conn.c: connections and admission */
void http_warn_once(struct sl_http *h, unsigned what, const char *msg);
void http_enforce_pending(struct sl_http *h);
void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode code);
void http_conn_headers(struct sl_http *h, struct MHD_Connection *c);
void http_conn_between(struct sl_http *h, struct MHD_Connection *c);
bool http_over_body_cap(struct sl_http *h, struct MHD_Connection *c, enum MHD_Result *ret);
bool http_admit_origin(struct sl_http *h, struct MHD_Connection *c, const char *url,
		       const char *method, enum MHD_Result *ret);
bool http_admit(struct sl_http *h, struct MHD_Connection *c, const char *url,
		const char *method, enum MHD_Result *ret);
void http_held_remove(struct sl_http *h, struct req *r);
void http_on_auth_ready(void *arg);
void http_hold(struct req *r);
enum check http_check_credential(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				 struct sl_auth_denial *why);

/* http_tls.c: the HTTPS glue */
int http_on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca, int nreq,
		 const gnutls_pk_algorithm_t *pk, int npk, gnutls_pcert_st **pcert,
		 unsigned *npcert, gnutls_privkey_t *key);
void http_tls_release(struct sl_http *h, uint64_t epoch);
int http_tls_start(struct sl_http *h, const struct sl_tls_config *c, struct sl_err *err);
void http_tls_free(struct sl_http *h);

/* http_budget.c: the memory budget */
size_t http_cost(const struct line *l);
void http_charge(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n);
void http_release(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n);
char *http_busy_why(const struct sl_http *h, enum bound b);
void http_lines_release(struct stream *st, struct line *l);
void http_detached_add(struct stream *st);
void http_detached_del(struct stream *st);
void http_hist_drop_oldest(struct stream *st);
void http_backlog_drop_oldest(struct hsess *hs);
enum bound http_reserve(struct sl_http *h, struct hsess *hs, struct stream *st, size_t n);

/* http_stream.c: streams, GET and resumption */
struct line *http_line_new(char *data, size_t len);
void http_lines_free(struct line *l);
void http_stream_unlink(struct stream *st);
void http_stream_free(struct stream *st);
struct line *http_sse_frame(struct stream *st, const char *json, size_t len);
void http_wake(struct stream *st);
void http_unwatch(struct stream *st);
void http_watch_peer(struct stream *st);
enum bound http_stream_push(struct stream *st, struct line *l, bool must);
void http_stream_end(struct stream *st);
void http_kill_stream(struct stream *st, enum bound b);
void http_on_stream_freed(void *cls);
struct stream *http_stream_new(struct sl_http *h, struct hsess *hs, struct MHD_Connection *c,
			       char *key, char *token, enum bound *b);
void http_prime(struct stream *st);
enum MHD_Result http_open_sse(struct MHD_Connection *c, struct stream *st, struct hsess *hs,
			      struct req *q);
enum MHD_Result http_get(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			 const struct sl_caller *who);

/* http_session.c: sessions, routing, replicas */
char *http_json_key(yyjson_val *v);
struct hsess *http_session_new(struct sl_http *h, bool ephemeral, struct sl_caller *who);
void http_session_end(struct hsess *hs);
void http_reap(struct sl_http *h);
bool http_sharing(const struct sl_http *h);
void http_touch(struct hsess *hs);
/* Room for one more session (or 2026-07-28 request) of who under
 * sluice.http.maxSessions: true when there is, or was made by closing an
 * idle session (who's own when who holds its share, maxSessionsPerCaller;
 * else the least recently used); false with *why (static) when none can
 * be closed. */
bool http_session_room(struct sl_http *h, const struct sl_caller *who, const char **why);
char *http_client_info(const struct sl_http *h, yyjson_val *root);
void http_remember_init(struct hsess *hs, char *client_info);
void http_on_ended_elsewhere(void *ctx, const char *id);
void http_on_redis_up(void *ctx);
void http_on_resync(uv_timer_t *t);
struct hsess *http_find_session(struct sl_http *h, struct MHD_Connection *c,
				const struct sl_caller *who,
				enum MHD_Result *ret);
enum MHD_Result http_del(struct sl_http *h, struct MHD_Connection *c,
			 const struct sl_caller *who);
void http_adoption_unlink(struct adoption *ad);
bool http_adoptable(struct sl_http *h, struct MHD_Connection *c, const char *url,
		    const char *method, const char *pv, const struct req *r);
bool http_adopt_start(struct sl_http *h, struct MHD_Connection *c, struct req *r);
void http_adoptions_release(struct sl_http *h);

/* http_post.c: a POST to /mcp */
enum MHD_Result http_settle(struct MHD_Connection *c, struct req *r);
yyjson_doc *http_checked_body(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      enum MHD_Result *ret);
enum MHD_Result http_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			  struct sl_caller *who, bool modern);

/* http_legacy.c: the HTTP+SSE transport */
void http_inflight_clear(struct hsess *hs);
void http_sse_send(struct hsess *hs, struct sl_out *o);
enum MHD_Result http_sse_open(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      struct sl_caller *who);
enum MHD_Result http_sse_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      const struct sl_caller *who);
bool http_admit_sse(struct sl_http *h, struct MHD_Connection *c, const char *url,
		    const char *method, bool modern, enum MHD_Result *ret);

/* http_operator.c: the operator's pages */
enum MHD_Result http_status_page(struct sl_http *h, struct MHD_Connection *c,
				 const char *method);
enum MHD_Result http_metrics_page(struct sl_http *h, struct MHD_Connection *c,
				  const char *method);
enum MHD_Result http_admin_start(struct sl_http *h, struct MHD_Connection *c, const char *method,
				 void **con_cls);
enum MHD_Result http_admin_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				const char *upload, size_t *upload_size);

/* http_login.c: the web login's pages */
void http_web_unlist(struct sl_http *h, struct req *r);
enum MHD_Result http_web_answer(struct MHD_Connection *c, struct req *r);
enum MHD_Result http_web_start(struct sl_http *h, struct MHD_Connection *c, const char *url,
			       const char *method, void **con_cls);
void http_web_stop(struct sl_http *h);

#endif

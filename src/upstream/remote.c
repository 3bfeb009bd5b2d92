/*
 * The remote link: an upstream MCP server over HTTP, through libcurl's
 * multi interface driven by the gateway's libuv loop (curl never blocks).
 *
 * Streamable HTTP (MCP 2025-03-26 and later): every message is a POST to
 * the one endpoint; a request is answered with JSON or an SSE stream; the
 * session id from the initialize answer goes on every later request, with
 * MCP-Protocol-Version once the handshake is done; a GET stream carries
 * what the server sends on its own (405: the server has none); DELETE ends
 * the session. A POST stream that closes before its answer is resumed with
 * GET and Last-Event-ID after the server's retry delay; the GET stream is
 * reopened the same way. HTTP 404 on a session means the server ended it:
 * the link is lost and the upstream starts a new one after its backoff.
 *
 * HTTP+SSE (2024-11-05, "type": "sse"): a GET stream whose first event
 * names the URL to POST messages to; every answer comes on the stream.
 *
 * OAuth (the upstream's client, oauth/client.h): every transfer carries the
 * client's access token. A POST refused for its token (401, or 403
 * insufficient_scope) is held, its line kept, until the client has a new
 * token, then sent once more; a line is held the same way before it is sent
 * when the token is about to expire. The client bounds how many wait
 * (sluice.oauth.maxHeldRequests). "Needs login" ends the link: the upstream
 * waits for a login instead of restarting.
 *
 * Everything curl reports arrives inside its callbacks, where the upstream
 * must not run (it may send, which adds a transfer, or give the link up,
 * which would free the multi handle under curl). So callbacks only queue
 * what they saw; the queue is delivered once curl has returned.
 */
#include "upstream/link.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/list.h"
#include "core/log.h"
#include "event/curl.h"
#include "event/fetch.h"
#include "event/handles.h"
#include "oauth/client.h"
#include "proto/mcp.h"
#include "proto/mcpparam.h"
#include "proto/sse.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_TRANSFERS 256        /* in flight at once: beyond, the server is not keeping up */
#define RETRY_DEFAULT_MS 1000    /* reconnect delay when the server gave none */
#define RETRY_MAX_MS 30000
#define RESUME_MAX 5             /* GETs to resume one answer's stream */
#define DELETE_TIMEOUT_MS 2000
#define POST_SLACK_MS 10000      /* beyond the longest call timeout: curl's own deadline */
/* After the handshake, requests wait at most this long for the GET stream
 * to be answered (remote_established). */
#define STREAM_GATE_MS 1000
#define ERROR_TEXT_MAX 200       /* of an error answer's body, for the message */

enum xfer_kind {
	X_POST,   /* one message; answers (if any) on its body */
	X_STREAM, /* the GET stream (Streamable HTTP) or the event stream (HTTP+SSE) */
	X_RESUME, /* GET with Last-Event-ID, for the answer a POST stream lost */
	X_DELETE, /* ends the session */
};

struct sl_remote;

struct xfer {
	struct sl_list link;      /* in r->xfers, newest first */
	struct sl_remote *r;
	enum xfer_kind kind;
	CURL *easy;
	struct curl_slist *headers;
	char *body;
	int64_t req_id;          /* the request it carries or resumes; -1: none */
	bool answered;           /* a response with req_id came back on it */
	bool started;            /* the first body bytes were seen */
	bool is_sse, is_json;
	bool retried;            /* sent again after a token refusal: not held twice */
	bool cancels;            /* a notifications/cancelled: never held */
	char *used;              /* the access token it carries, or NULL */
	char *www;               /* the answer's WWW-Authenticate, or NULL */
	long status;
	int resumes;             /* X_RESUME: how many before this one */
	struct sl_sse sse;       /* the answer's events, or its JSON body */
	char errtext[ERROR_TEXT_MAX + 1];
	size_t errlen;
};

/* What curl's callbacks saw, delivered once curl has returned. */
enum note_kind { N_MESSAGE, N_OVERSIZE, N_LOST };

struct note {
	struct sl_list link;      /* in r->notes, oldest first */
	enum note_kind kind;
	size_t total;            /* N_OVERSIZE */
	size_t alen, blen;
	char *a, *b;             /* message; or head and tail; or the reason */
};

struct sl_remote {
	struct sl_link link;
	uv_loop_t *loop;
	struct sl_curl_loop cl;  /* curl's multi handle on the loop */
	uv_timer_t kick;         /* delivers notes; reopens streams after their delay */
	struct sl_list xfers;
	unsigned nxfers;
	struct sl_list notes;
	struct sl_handles handles; /* the kick timer, and curl's timer and polls */
	bool sse_transport;      /* "type": "sse" */
	bool delivering;         /* inside deliver(): a detach waits for it */
	bool dead;               /* detached: tear down when delivering ends */
	bool lost;               /* a lost note is queued: report nothing more */
	bool stopping;

	char *session_id;
	char *version;           /* the handshake's protocol version */
	char *endpoint;          /* HTTP+SSE: where to POST (NULL until the first event) */
	struct sl_buf queued;    /* HTTP+SSE: lines sent before the endpoint is known;
				    Streamable HTTP: before the GET stream is answered */
	uint64_t stream_gate;    /* until when lines wait for the first GET stream (0: they do not) */
	bool no_get_stream;      /* the server answered the GET with 405 */
	bool stream_wanted;      /* a GET stream should be open */
	char last_event_id[256]; /* of the GET stream */
	long retry_ms;
	uint64_t stream_due;     /* when to reopen the GET stream (0: not scheduled) */
	struct sl_list resumes;  /* answers to fetch with GET and Last-Event-ID, newest first */

	struct sl_oauth_client *oauth; /* the upstream's, or NULL: no token to send */
	struct sl_list held;     /* lines waiting for a token (the client bounds them), newest first */
	bool stream_held;        /* the GET stream waits for a token */
};

/* A line waiting for a token (oauth/client.h: its callback's arg). */
struct held {
	struct sl_list link;     /* in r->held */
	struct sl_remote *r;
	char *line;
	size_t len;
	int64_t req_id;          /* -1: a notification */
};

struct resume {
	struct sl_list link;     /* in r->resumes */
	uint64_t due;
	int64_t req_id;
	int count;
	char last_id[256];
};

static void xfer_free(struct xfer *x);
static void xfer_done(struct xfer *x, CURLcode rc);
static bool post(struct sl_remote *r, char *line, size_t len, bool retried);
static void open_stream(struct sl_remote *r);
static void schedule(struct sl_remote *r);
static void kick_at(struct sl_remote *r, uint64_t due);

static bool header_safe(const char *v);

static const char *up_name(struct sl_remote *r)
{
	return r->link.up ? r->link.up->name : "?";
}

/* ---- notes --------------------------------------------------------------- */

static void note_add(struct sl_remote *r, enum note_kind k, const char *a, size_t al,
		     const char *b, size_t bl, size_t total)
{
	struct note *n;

	if (r->lost || r->dead)
		return;
	n = sl_alloc(sizeof(*n));
	n->kind = k;
	n->a = sl_strndup(a, al);
	n->alen = al;
	if (b) {
		n->b = sl_strndup(b, bl);
		n->blen = bl;
	}
	n->total = total;
	sl_list_push_back(&r->notes, &n->link);
	if (k == N_LOST)
		r->lost = true;
	kick_at(r, 0);
}

static void note_lost(struct sl_remote *r, const char *fmt, ...) SL_PRINTF(2, 3);
static void note_lost(struct sl_remote *r, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	note_add(r, N_LOST, why, strlen(why), NULL, 0, 0);
}

/* The answer to req_id will not come: an error response in its place, so
 * the call fails with the reason rather than waiting for its timeout. */
static void note_failed(struct sl_remote *r, int64_t req_id, const char *why)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = sl_rpc_envelope(d, yyjson_mut_sint(d, req_id), NULL);
	char *line;
	size_t len;

	sl_rpc_add_error(d, o, SL_RPC_INTERNAL_ERROR, why, NULL);
	line = sl_json_write_line(d, &len);
	note_add(r, N_MESSAGE, line, len, NULL, 0, 0);
	free(line);
	yyjson_mut_doc_free(d);
}

static void note_free(struct note *n)
{
	sl_list_remove(&n->link);
	free(n->a);
	free(n->b);
	free(n);
}

static void notes_free(struct sl_remote *r)
{
	struct sl_list *n;

	while ((n = sl_list_first(&r->notes)))
		note_free(sl_list_entry(n, struct note, link));
}

/* ---- libuv and curl ----------------------------------------------------- */

static void teardown(struct sl_remote *r);

static void finish_transfers(struct sl_remote *r)
{
	CURLMsg *m;
	int left;

	while ((m = sl_curl.multi_info_read(r->cl.multi, &left))) {
		struct xfer *x;
		if (m->msg != CURLMSG_DONE)
			continue;
		sl_curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (x)
			xfer_done(x, m->data.result);
	}
}

/* curl acted on a socket or a timeout (event/curl.h). */
static void on_curl_after(void *arg)
{
	struct sl_remote *r = arg;
	finish_transfers(r);
	schedule(r);
}

/* ---- transfers ---------------------------------------------------------- */

static void add_header(struct xfer *x, const char *name, const char *value)
{
	char *h = sl_printf("%s: %s", name, value);
	x->headers = sl_curl.slist_append(x->headers, h);
	free(h);
}

static int on_sse_event(void *ctx, const char *type, const char *data, size_t len);
static int on_sse_oversize(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
			   size_t total);
static const struct sl_sse_ops sse_ops = { on_sse_event, on_sse_oversize };

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	struct sl_remote *r = x->r;
	size_t len = size * n, vl;
	const char *v;

	/* The end of the GET stream's headers: the server holds the stream now,
	 * so what it sends on its own is not dropped; requests may go. */
	if (x->kind == X_STREAM && r->stream_gate && len <= 2 && (p[0] == '\r' || p[0] == '\n')) {
		long status = 0;
		sl_curl.easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			r->stream_gate = 0;
			kick_at(r, 0);
		}
		return len;
	}
	if (!x->www && sl_curl_header(p, len, "www-authenticate", &v, &vl)) {
		if (vl <= SL_FETCH_HEADER_MAX)
			x->www = sl_strndup(v, vl);
		return len;
	}
	if (!r->sse_transport && sl_curl_header(p, len, "mcp-session-id", &v, &vl)) {
		/* Visible ASCII only (MCP), and not absurdly long. */
		for (size_t i = 0; i < vl; i++)
			if (v[i] < 0x21 || v[i] > 0x7e)
				return len;
		if (vl && vl < 256 && (!r->session_id || x->kind == X_POST)) {
			free(r->session_id);
			r->session_id = sl_strndup(v, vl);
		}
	}
	return len;
}

/* An HTTP status whose JSON body may be the request's JSON-RPC error. */
static bool rpc_error_status(long status)
{
	return status >= 400 && status < 500 && status != 401 && status != 403;
}

static void body_start(struct xfer *x)
{
	const char *ct = NULL;

	x->started = true;
	sl_curl.easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
	sl_curl.easy_getinfo(x->easy, CURLINFO_CONTENT_TYPE, &ct);
	/* MCP 2026-07-28 HTTP: a server's protocol errors (-32020, -32021,
	 * -32022, -32601) come as JSON-RPC errors on a 4xx answer, which the
	 * upstream must read (a version to retry with, a capability the caller
	 * lacks). The body is read as a message, then delivered only if it is
	 * the answer to the request (on_sse_event); 401 and 403 are OAuth's. */
	if (ct && x->kind == X_POST && rpc_error_status(x->status) &&
	    strncasecmp(ct, "application/json", 16) == 0) {
		x->is_json = true;
		return;
	}
	if (x->status < 200 || x->status >= 300 || !ct)
		return;
	if (strncasecmp(ct, "text/event-stream", 17) == 0)
		x->is_sse = true;
	else if (strncasecmp(ct, "application/json", 16) == 0)
		x->is_json = true;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	size_t len = size * n;

	if (!x->started)
		body_start(x);
	if (x->r->dead || x->r->lost)
		return len;
	if (x->is_sse) {
		sl_sse_feed(&x->sse, p, len);
	} else if (x->is_json && x->kind == X_POST) {
		sl_sse_body_append(&x->sse, p, len);
	} else if (x->errlen < ERROR_TEXT_MAX) {
		size_t k = len < ERROR_TEXT_MAX - x->errlen ? len : ERROR_TEXT_MAX - x->errlen;
		memcpy(x->errtext + x->errlen, p, k);
		x->errlen += k;
		x->errtext[x->errlen] = '\0';
	}
	return len;
}

static struct xfer *xfer_new(struct sl_remote *r, enum xfer_kind kind, const char *url)
{
	const struct sl_server_config *c = r->link.up->cfg;
	struct xfer *x = sl_alloc(sizeof(*x));
	CURL *e = sl_curl.easy_init();

	if (!e) {
		free(x);
		return NULL;
	}
	x->r = r;
	x->kind = kind;
	x->easy = e;
	x->req_id = -1;
	sl_sse_init(&x->sse, r->link.up->gcfg->max_upstream_message_bytes, &sse_ops, x);
	for (size_t i = 0; i < c->nheaders; i++)
		add_header(x, c->headers[i].key, c->headers[i].value);
	/* The upstream has a client only when the config sets no
	 * Authorization of its own. */
	if (r->oauth && sl_oauth_client_token(r->oauth) && header_safe(sl_oauth_client_token(r->oauth))) {
		char *h = sl_printf("Bearer %s", sl_oauth_client_token(r->oauth));
		add_header(x, "Authorization", h);
		free(h);
		x->used = sl_strdup(sl_oauth_client_token(r->oauth));
	}
	if (!r->sse_transport && r->session_id)
		add_header(x, "Mcp-Session-Id", r->session_id);
	if (kind != X_POST && r->version && sl_mcp_legacy_version(r->version))
		add_header(x, "MCP-Protocol-Version", r->version);
	sl_curl.easy_setopt(e, CURLOPT_URL, url);
	sl_curl.easy_setopt(e, CURLOPT_PRIVATE, x);
	sl_curl.easy_setopt(e, CURLOPT_USERAGENT, "sluice/" SL_VERSION);
	sl_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	sl_curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	sl_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)r->link.up->gcfg->startup_timeout_ms);
	sl_curl.easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	sl_curl.easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	sl_curl.easy_setopt(e, CURLOPT_HEADERDATA, x);
	sl_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	sl_curl.easy_setopt(e, CURLOPT_WRITEDATA, x);
	return x;
}

static bool xfer_start(struct xfer *x)
{
	struct sl_remote *r = x->r;

	sl_curl.easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
	if (sl_curl.multi_add_handle(r->cl.multi, x->easy) != CURLM_OK) {
		xfer_free(x);
		return false;
	}
	sl_list_push_front(&r->xfers, &x->link);
	r->nxfers++;
	return true;
}

static void xfer_free(struct xfer *x)
{
	struct sl_remote *r = x->r;

	if (sl_list_linked(&x->link)) {
		sl_list_remove(&x->link);
		r->nxfers--;
		sl_curl.multi_remove_handle(r->cl.multi, x->easy);
	}
	sl_curl.easy_cleanup(x->easy);
	sl_curl.slist_free_all(x->headers);
	sl_sse_dispose(&x->sse);
	free(x->body);
	free(x->used);
	free(x->www);
	free(x);
}

/* Visible ASCII and spaces only: what may go in a header as it is. */
static bool header_safe(const char *v)
{
	for (; *v; v++)
		if (*v < 0x20 || *v > 0x7e)
			return false;
	return true;
}

/* MCP 2026-07-28 Streamable HTTP "Custom Headers from Tool Parameters"
 * (SEP-2243): a tools/call mirrors the arguments its tool's inputSchema
 * declares with x-mcp-header into Mcp-Param-<Name> headers, encoded
 * (proto/mcpparam.h). The schema is the server's own listing (a user
 * link's server's, which a user link does not fetch). */
static void param_headers(struct xfer *x, yyjson_val *params)
{
	struct sl_upstream *u = x->r->link.up;
	const struct sl_item_list *l;
	const char *tool = sl_json_str(params, "name");
	struct sl_mcpparam_header hs[SL_MCPPARAM_MAX];
	size_t n = 0;

	if (!u || !tool)
		return;
	l = u->parent ? &u->parent->tools : &u->tools;
	for (size_t i = 0; i < l->n; i++) {
		const char *name = sl_json_str(l->items[i], "name");
		if (name && !strcmp(name, tool)) {
			n = sl_mcpparam_headers(sl_json_obj(l->items[i], "inputSchema"),
						sl_json_obj(params, "arguments"), hs, SL_MCPPARAM_MAX);
			break;
		}
	}
	for (size_t i = 0; i < n; i++) {
		char *h = sl_printf(SL_MCPPARAM_PREFIX "%s", hs[i].name);
		add_header(x, h, hs[i].value);
		free(h);
	}
	sl_mcpparam_headers_free(hs, n);
}

/* Reads what the HTTP layer needs from a message: the id of the request it
 * carries (-1 for a notification or response), and the headers:
 * MCP-Protocol-Version (a 2026-07-28 message's _meta names it, else the
 * session's), and for every message with a method Mcp-Method and, for
 * what names a thing, Mcp-Name (SEP-2243).
 * *listen: it is a subscriptions/listen (its stream has no deadline);
 * *cancels: the request a notifications/cancelled names, else -1. */
static int64_t describe(struct xfer *x, const char *line, size_t len, bool *listen,
			int64_t *cancels)
{
	yyjson_doc *d = yyjson_read(line, len, 0);
	yyjson_val *root = yyjson_doc_get_root(d), *params = sl_json_obj(root, "params");
	const char *method = sl_json_str(root, "method"), *version;
	yyjson_val *name = NULL;
	char *enc;
	int64_t id = -1;

	if (method && yyjson_is_int(yyjson_obj_get(root, "id")))
		id = yyjson_get_sint(yyjson_obj_get(root, "id"));
	*listen = method && id >= 0 && !strcmp(method, SL_MCP_LISTEN);
	*cancels = -1;
	if (method && !strcmp(method, SL_MCP_CANCELLED) &&
	    yyjson_is_int(yyjson_obj_get(params, "requestId")))
		*cancels = yyjson_get_sint(yyjson_obj_get(params, "requestId"));
	version = sl_json_str(sl_json_obj(params, "_meta"), SL_MCP_META_VERSION);
	if (method && version && !sl_mcp_legacy_version(version) && header_safe(version))
		add_header(x, "MCP-Protocol-Version", version);
	else if (x->r->version && sl_mcp_legacy_version(x->r->version))
		add_header(x, "MCP-Protocol-Version", x->r->version);
	/* SEP-2243: every POST names its method (a session-era initialize
	 * too: servers of that era ignore the header). */
	if (method && header_safe(method)) {
		add_header(x, "Mcp-Method", method);
		if (!strcmp(method, "tools/call") || !strcmp(method, "prompts/get"))
			name = yyjson_obj_get(params, "name");
		else if (!strcmp(method, "resources/read"))
			name = yyjson_obj_get(params, "uri");
		/* "Value Encoding": a name or URI that is not header-safe ASCII
		 * goes as =?base64?...?= (proto/mcpparam.h). */
		if (yyjson_is_str(name) && (enc = sl_mcpparam_encode(name))) {
			add_header(x, "Mcp-Name", enc);
			free(enc);
		}
	}
	if (method && id >= 0 && !strcmp(method, "tools/call"))
		param_headers(x, params);
	yyjson_doc_free(d);
	return id;
}

static void held_free(struct held *h)
{
	sl_list_remove(&h->link);
	free(h->line);
	free(h);
}

/* The client has no token for a line: its request fails with why (a
 * notification is dropped). "Needs login" ends the link instead: the
 * upstream fails every call with it and waits for a login. */
static void auth_failed(struct sl_remote *r, int64_t req_id)
{
	const char *why = sl_oauth_client_why(r->oauth);
	char msg[700];

	if (sl_oauth_client_needs_login(r->oauth)) {
		note_lost(r, "%s", why);
		return;
	}
	snprintf(msg, sizeof(msg), "server '%s': %s", up_name(r), why ? why : "cannot be authorized");
	if (req_id >= 0)
		note_failed(r, req_id, msg);
	else
		sl_log(SL_LOG_DEBUG, "%s; a notification to it is dropped", msg);
}

/* The client's answer for a held line: send it with the new token, or
 * fail it. */
static void on_held_ready(void *arg, bool ok)
{
	struct held *h = arg;
	struct sl_remote *r = h->r;

	sl_list_remove(&h->link);
	if (!ok) {
		auth_failed(r, h->req_id);
		held_free(h);
		return;
	}
	if (!post(r, h->line, h->len, true) && h->req_id >= 0)
		note_failed(r, h->req_id, "cannot start an HTTP transfer");
	free(h);
}

/* Holds line (taken) on the client's verdict v for it: true when held. */
static bool hold(struct sl_remote *r, struct held *h, enum sl_oauth_verdict v)
{
	if (v != SL_OAUTH_RETRY)
		return false;
	sl_list_push_front(&r->held, &h->link);
	return true;
}

static struct held *held_new(struct sl_remote *r, char *line, size_t len, int64_t req_id)
{
	struct held *h = sl_alloc(sizeof(*h));

	h->r = r;
	h->line = line;
	h->len = len;
	h->req_id = req_id;
	return h;
}

/* The id of the request line carries, else -1. */
static int64_t request_id(const char *line, size_t len)
{
	yyjson_doc *d = yyjson_read(line, len, 0);
	yyjson_val *root = yyjson_doc_get_root(d), *id = yyjson_obj_get(root, "id");
	int64_t out = yyjson_obj_get(root, "method") && yyjson_is_int(id) ? yyjson_get_sint(id) : -1;

	yyjson_doc_free(d);
	return out;
}

static bool insufficient_scope(const char *www)
{
	struct sl_oauth_challenge ch;
	bool yes;

	if (!www || sl_oauth_challenge_parse(www, strlen(www), &ch) != SL_OK)
		return false;
	yes = ch.error && !strcmp(ch.error, "insufficient_scope");
	sl_oauth_challenge_dispose(&ch);
	return yes;
}

/* A POST the server refused for its token (401, 403 insufficient_scope):
 * held for the client's new token, once; else failed with the client's
 * why. True when it was such a refusal. */
static bool post_refused(struct xfer *x)
{
	struct sl_remote *r = x->r;
	struct held *h;
	char msg[300];

	if (!r->oauth || (x->status != 401 && !(x->status == 403 && insufficient_scope(x->www))))
		return false;
	if (x->cancels)
		return true; /* nothing to wait for */
	if (x->retried && x->status == 401) {
		snprintf(msg, sizeof(msg), "server '%s' refused its new access token too (HTTP 401)",
			 up_name(r));
		if (x->req_id >= 0)
			note_failed(r, x->req_id, msg);
		return true;
	}
	h = held_new(r, x->body, strlen(x->body), x->req_id);
	x->body = NULL;
	if (!hold(r, h, sl_oauth_client_refused(r->oauth, x->status, x->www, x->used,
						on_held_ready, h))) {
		auth_failed(r, h->req_id);
		held_free(h);
	}
	return true;
}

/* Forgets the held request id (it was cancelled). */
static void held_cancel(struct sl_remote *r, int64_t id)
{
	struct sl_list *n;

	sl_list_each(n, &r->held) {
		struct held *h = sl_list_entry(n, struct held, link);
		if (h->req_id == id) {
			sl_oauth_client_forget(r->oauth, h);
			held_free(h);
			return;
		}
	}
}

static bool post(struct sl_remote *r, char *line, size_t len, bool retried)
{
	const char *url = r->sse_transport ? r->endpoint : r->link.up->cfg->url;
	struct xfer *x;
	uint64_t t = r->link.up->gcfg->call_timeout_ms;
	int64_t cancels;
	bool listen;

	if (r->link.up->cfg->timeout_ms > t)
		t = r->link.up->cfg->timeout_ms;
	if (r->link.up->gcfg->startup_timeout_ms > t)
		t = r->link.up->gcfg->startup_timeout_ms;
	if (!(x = xfer_new(r, X_POST, url))) {
		free(line);
		return false;
	}
	x->body = line;
	x->retried = retried;
	x->req_id = describe(x, line, len, &listen, &cancels);
	x->cancels = cancels >= 0;
	if (cancels >= 0 && r->oauth)
		held_cancel(r, cancels);
	/* MCP 2026-07-28 HTTP: closing a request's stream cancels it (a
	 * listen's is how it ends); the notification goes too, for servers
	 * that wait for it. */
	if (cancels >= 0 && r->version && !sl_mcp_legacy_version(r->version)) {
		struct sl_list *n;
		sl_list_each(n, &r->xfers) {
			struct xfer *o = sl_list_entry(n, struct xfer, link);
			if (o->kind == X_POST && o->req_id == cancels && !o->answered) {
				xfer_free(o);
				break;
			}
		}
	}
	add_header(x, "Content-Type", "application/json");
	add_header(x, "Accept", "application/json, text/event-stream");
	sl_curl.easy_setopt(x->easy, CURLOPT_POSTFIELDS, line);
	sl_curl.easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	/* A listen's stream lives until either side ends it. */
	sl_curl.easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, listen ? 0L : (long)(t + POST_SLACK_MS));
	return xfer_start(x);
}

static void open_stream(struct sl_remote *r)
{
	struct xfer *x;

	r->stream_due = 0;
	if (!(x = xfer_new(r, X_STREAM, r->link.up->cfg->url))) {
		note_lost(r, "cannot start an HTTP transfer");
		return;
	}
	add_header(x, "Accept", "text/event-stream");
	if (!r->sse_transport && r->last_event_id[0])
		add_header(x, "Last-Event-ID", r->last_event_id);
	if (!xfer_start(x))
		note_lost(r, "cannot start an HTTP transfer");
}

static void open_resume(struct sl_remote *r, struct resume *rs)
{
	struct xfer *x = xfer_new(r, X_RESUME, r->link.up->cfg->url);

	if (!x) {
		note_failed(r, rs->req_id, "cannot start an HTTP transfer");
		return;
	}
	x->req_id = rs->req_id;
	x->resumes = rs->count;
	snprintf(x->sse.last_id, sizeof(x->sse.last_id), "%s", rs->last_id);
	add_header(x, "Accept", "text/event-stream");
	add_header(x, "Last-Event-ID", rs->last_id);
	if (!xfer_start(x))
		note_failed(r, rs->req_id, "cannot start an HTTP transfer");
}

static long retry_delay(struct sl_remote *r, const struct sl_sse *s)
{
	if (s->retry_ms >= 0)
		r->retry_ms = s->retry_ms;
	return r->retry_ms >= 0 ? r->retry_ms : RETRY_DEFAULT_MS;
}

/* A stream that ended before the answer it owed: resume it after the
 * server's retry delay if it gave an event id, else fail the call. */
static void answer_lost(struct xfer *x, const char *why)
{
	struct sl_remote *r = x->r;
	char msg[300];

	if (x->req_id < 0 || x->answered)
		return;
	if (x->sse.last_id[0] && x->resumes < RESUME_MAX && !r->sse_transport) {
		struct resume *rs = sl_alloc(sizeof(*rs));
		rs->req_id = x->req_id;
		rs->count = x->resumes + 1;
		snprintf(rs->last_id, sizeof(rs->last_id), "%s", x->sse.last_id);
		rs->due = sl_now_ms() + (uint64_t)retry_delay(r, &x->sse);
		sl_list_push_front(&r->resumes, &rs->link);
		kick_at(r, rs->due);
		return;
	}
	snprintf(msg, sizeof(msg), "server '%s' %s before answering", up_name(r), why);
	note_failed(r, x->req_id, msg);
}

static void stream_ended(struct sl_remote *r, struct xfer *x, const char *why)
{
	long delay;

	if (r->sse_transport) {
		note_lost(r, "%s", why);
		return;
	}
	if (!r->stream_wanted || r->stopping)
		return;
	/* Reconnect after the server's delay, or back off while it fails. */
	delay = retry_delay(r, &x->sse);
	if (x->status < 200 || x->status >= 300)
		delay = delay * 4 > RETRY_MAX_MS ? RETRY_MAX_MS : delay * 4;
	r->stream_due = sl_now_ms() + (uint64_t)delay;
	kick_at(r, r->stream_due);
}

/* The client's answer for the GET stream refused for its token. */
static void on_stream_ready(void *arg, bool ok)
{
	struct sl_remote *r = arg;

	r->stream_held = false;
	if (r->lost || r->stopping)
		return;
	if (ok) {
		if (r->sse_transport || r->stream_wanted)
			open_stream(r);
		return;
	}
	if (sl_oauth_client_needs_login(r->oauth) || r->sse_transport) {
		note_lost(r, "%s", sl_oauth_client_why(r->oauth) ? sl_oauth_client_why(r->oauth) :
			  "cannot be authorized");
		return;
	}
	/* Tried again later, as a stream that failed. */
	r->stream_due = sl_now_ms() + 4 * RETRY_DEFAULT_MS;
	kick_at(r, r->stream_due);
}

static void stream_refused(struct sl_remote *r, struct xfer *x)
{
	if (r->stream_held)
		return;
	if (sl_oauth_client_refused(r->oauth, 401, x->www, x->used, on_stream_ready, r) ==
	    SL_OAUTH_RETRY)
		r->stream_held = true;
	else
		on_stream_ready(r, false);
}

static void xfer_done(struct xfer *x, CURLcode rc)
{
	struct sl_remote *r = x->r;
	char why[400];
	long status = 0;

	sl_curl.easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	x->status = status;
	if (x->kind == X_STREAM && x->is_sse && x->sse.last_id[0])
		snprintf(r->last_event_id, sizeof(r->last_event_id), "%s", x->sse.last_id);
	if (rc == CURLE_OK && x->is_json && x->kind == X_POST)
		sl_sse_body_end(&x->sse);

	if (rc != CURLE_OK) {
		snprintf(why, sizeof(why), "cannot be reached at %s: %s", r->link.up->cfg->url,
			 sl_curl.easy_strerror(rc));
	} else if (status == 404 && r->session_id && x->kind != X_DELETE) {
		snprintf(why, sizeof(why), "ended its session (HTTP 404)");
	} else if (status >= 300) {
		snprintf(why, sizeof(why), "answered HTTP %ld%s%s", status, x->errlen ? ": " : "",
			 x->errtext);
		for (char *c = why; *c; c++)
			if (*c == '\n' || *c == '\r')
				*c = ' ';
	} else {
		why[0] = '\0';
	}

	switch (x->kind) {
	case X_DELETE:
		note_lost(r, "stopped");
		break;
	case X_POST:
		if (post_refused(x))
			break;
		/* The server is gone, or ended the session. An HTTP error during
		 * the handshake fails that request alone: the upstream decides
		 * (a refused server/discover probe means a session-era server). */
		if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
		    (status == 404 && r->session_id))
			note_lost(r, "%s", why);
		else if (why[0])
			answer_lost(x, why);
		else if (r->sse_transport)
			; /* HTTP+SSE: every answer comes on the event stream */
		else if (x->is_sse)
			answer_lost(x, "closed the stream");
		else
			answer_lost(x, x->is_json ? "answered with another message" :
						    "answered without a body");
		break;
	case X_RESUME:
		if (why[0] && !(status >= 500))
			note_failed(r, x->req_id, why);
		else
			answer_lost(x, why[0] ? why : "closed the stream");
		break;
	case X_STREAM:
		r->stream_gate = 0; /* answered or failed: nothing to wait for */
		if (status == 401 && r->oauth && !r->stopping) {
			stream_refused(r, x);
		} else if (status == 405 && !r->sse_transport) {
			r->no_get_stream = true; /* allowed: the server sends only on POST answers */
		} else if (status == 404 && r->session_id) {
			note_lost(r, "%s", why);
		} else if (r->sse_transport && !r->endpoint) {
			note_lost(r, "%s", why[0] ? why : "closed its event stream before naming its endpoint");
		} else {
			stream_ended(r, x, why[0] ? why : "closed its event stream");
		}
		break;
	}
	xfer_free(x);
}

/* ---- events -------------------------------------------------------------- */

/* Whether a message is the response to id. */
static bool answers(const char *data, size_t len, int64_t id)
{
	yyjson_doc *d;
	yyjson_val *root, *v;
	bool yes;

	if (id < 0)
		return false;
	d = sl_json_read(data, len, 0, NULL);
	root = yyjson_doc_get_root(d);
	v = yyjson_obj_get(root, "id");
	yes = yyjson_is_obj(root) && !yyjson_obj_get(root, "method") && yyjson_is_int(v) &&
	      yyjson_get_sint(v) == id;
	yyjson_doc_free(d);
	return yes;
}

static void set_endpoint(struct sl_remote *r, const char *data, size_t len)
{
	CURLU *u = sl_curl.url();
	char *rel = sl_strndup(data, len), *abs = NULL;

	/* Relative to the stream's URL, as a browser would resolve it. */
	if (u && sl_curl.url_set(u, CURLUPART_URL, r->link.up->cfg->url, 0) == CURLUE_OK &&
	    sl_curl.url_set(u, CURLUPART_URL, rel, 0) == CURLUE_OK &&
	    sl_curl.url_get(u, CURLUPART_URL, &abs, 0) == CURLUE_OK &&
	    (strncmp(abs, "http://", 7) == 0 || strncmp(abs, "https://", 8) == 0)) {
		free(r->endpoint);
		r->endpoint = sl_strdup(abs);
		kick_at(r, 0); /* send what waited for it */
	} else {
		note_lost(r, "named an endpoint that is not an HTTP URL");
	}
	if (abs)
		sl_curl.free(abs);
	if (u)
		sl_curl.url_cleanup(u);
	free(rel);
}

static int on_sse_event(void *ctx, const char *type, const char *data, size_t len)
{
	struct xfer *x = ctx;
	struct sl_remote *r = x->r;

	if (r->sse_transport && x->kind == X_STREAM && strcmp(type, "endpoint") == 0) {
		if (!r->endpoint)
			set_endpoint(r, data, len);
		return 0;
	}
	if (strcmp(type, "message") != 0 || len == 0) /* priming events carry no data */
		return 0;
	if (answers(data, len, x->req_id)) {
		x->answered = true;
	} else if (x->status >= 300) {
		/* An error answer's body that is not the request's JSON-RPC
		 * answer: its start, for the message saying why it failed. */
		x->errlen = len < ERROR_TEXT_MAX ? len : ERROR_TEXT_MAX;
		memcpy(x->errtext, data, x->errlen);
		x->errtext[x->errlen] = '\0';
		return 0;
	}
	note_add(r, N_MESSAGE, data, len, NULL, 0, 0);
	return 0;
}

static int on_sse_oversize(void *ctx, const char *head, size_t hl, const char *tail, size_t tl,
			   size_t total)
{
	struct xfer *x = ctx;
	/* An error answer's body too big to be its JSON-RPC error: the call
	 * fails with the HTTP status (xfer_done), its start as the reason. */
	if (x->status >= 300) {
		x->errlen = hl < ERROR_TEXT_MAX ? hl : ERROR_TEXT_MAX;
		memcpy(x->errtext, head, x->errlen);
		x->errtext[x->errlen] = '\0';
		return 0;
	}
	note_add(x->r, N_OVERSIZE, head, hl, tail, tl, total);
	x->answered = true; /* the upstream fails the call if it finds the id */
	return 0;
}

/* ---- delivery and timers ------------------------------------------------- */

static void flush_queued(struct sl_remote *r)
{
	size_t i = 0;

	while (i < r->queued.len) {
		char *nl = memchr(r->queued.data + i, '\n', r->queued.len - i);
		size_t n = (size_t)(nl - (r->queued.data + i)) + 1;
		if (!post(r, sl_strndup(r->queued.data + i, n), n, false))
			note_lost(r, "cannot start an HTTP transfer");
		i += n;
	}
	sl_buf_reset(&r->queued);
}

/* Hands the notes to the upstream, then does what is due. */
static void deliver(struct sl_remote *r)
{
	uint64_t now = sl_now_ms();
	struct sl_list *l, *next;

	r->delivering = true;
	while (!r->dead && (l = sl_list_first(&r->notes))) {
		struct note *n = sl_list_entry(l, struct note, link);
		struct sl_upstream *u = r->link.up;
		sl_list_remove(&n->link);
		if (n->kind == N_MESSAGE)
			sl_upstream_link_message(u, n->a, n->alen);
		else if (n->kind == N_OVERSIZE)
			sl_upstream_link_oversize(u, n->a, n->alen, n->b, n->blen, n->total);
		else
			sl_upstream_link_lost(u, n->a);
		note_free(n);
	}
	r->delivering = false;
	if (r->dead) {
		teardown(r);
		return;
	}
	if (r->lost)
		return;
	if (r->stream_gate && r->stream_gate <= now)
		r->stream_gate = 0;
	if (r->queued.len && (r->sse_transport ? r->endpoint != NULL : !r->stream_gate))
		flush_queued(r);
	if (r->stream_due && r->stream_due <= now)
		open_stream(r);
	sl_list_each_safe(l, next, &r->resumes) {
		struct resume *rs = sl_list_entry(l, struct resume, link);
		if (rs->due > now)
			continue;
		sl_list_remove(&rs->link);
		open_resume(r, rs);
		free(rs);
	}
	schedule(r);
}

static void on_kick(uv_timer_t *t)
{
	deliver(t->data);
}

static void kick_at(struct sl_remote *r, uint64_t due)
{
	uint64_t now = sl_now_ms(), at = due > now ? due - now : 0;

	if (r->dead)
		return;
	if (!uv_is_active((uv_handle_t *)&r->kick) ||
	    uv_timer_get_due_in(&r->kick) > at)
		uv_timer_start(&r->kick, on_kick, at, 0);
}

/* After curl ran: deliver at once if there are notes, else wait for the
 * next reconnect that is due. */
static void schedule(struct sl_remote *r)
{
	uint64_t next = 0;
	struct sl_list *n;

	if (r->dead)
		return;
	if (!sl_list_empty(&r->notes)) {
		kick_at(r, 0);
		return;
	}
	if (r->stream_due)
		next = r->stream_due;
	if (r->stream_gate && (!next || r->stream_gate < next))
		next = r->stream_gate;
	sl_list_each(n, &r->resumes) {
		const struct resume *rs = sl_list_entry(n, struct resume, link);
		if (!next || rs->due < next)
			next = rs->due;
	}
	if (next)
		kick_at(r, next);
}

/* ---- the link operations ------------------------------------------------- */

static bool remote_send(struct sl_link *l, char *line, size_t len)
{
	struct sl_remote *r = (struct sl_remote *)l;
	bool ok;

	if (r->lost) {
		/* The link's end is already on its way to the upstream (the next
		 * loop turn): a request sent now fails with that reason, not as
		 * one the server refused to read. */
		free(line);
		return true;
	}
	if (r->stopping || r->nxfers >= MAX_TRANSFERS) {
		free(line);
		return false;
	}
	if ((r->sse_transport && !r->endpoint) || r->stream_gate) {
		ok = sl_buf_append(&r->queued, line, len) == SL_OK;
		free(line);
		return ok;
	}
	/* A token about to expire is refreshed first; if that cannot be now,
	 * the line goes with the one there is (it may still be accepted). */
	if (r->oauth && sl_oauth_client_stale(r->oauth)) {
		struct held *h = held_new(r, line, len, request_id(line, len));
		if (hold(r, h, sl_oauth_client_refresh(r->oauth, on_held_ready, h)))
			return true;
		if (sl_oauth_client_needs_login(r->oauth)) {
			auth_failed(r, h->req_id);
			held_free(h);
			return true;
		}
		line = h->line;
		free(h);
	}
	return post(r, line, len, false);
}

static void remote_established(struct sl_link *l, const char *version)
{
	struct sl_remote *r = (struct sl_remote *)l;

	free(r->version);
	r->version = version ? sl_strdup(version) : NULL;
	/* 2026-07-28 has no GET stream (subscriptions/listen replaces it). */
	if (r->sse_transport || r->no_get_stream || !version || !sl_mcp_legacy_version(version))
		return;
	/* The GET stream, for what the server sends on its own: list_changed,
	 * logging, and requests outside any call. Requests wait until the server
	 * has answered it (at most STREAM_GATE_MS): a server may drop what it
	 * sends on its own while no GET stream is open (the TypeScript SDK's
	 * does), and an elicitation a tool asks that way during the first call
	 * was lost when the call's POST overtook the GET. */
	r->stream_wanted = true;
	r->stream_due = sl_now_ms();
	r->stream_gate = r->stream_due + STREAM_GATE_MS;
	kick_at(r, 0);
}

static void remote_stop(struct sl_link *l)
{
	struct sl_remote *r = (struct sl_remote *)l;
	struct xfer *x;

	if (r->stopping)
		return;
	r->stopping = true;
	r->stream_wanted = false;
	if (r->sse_transport || !r->session_id || r->lost ||
	    !(x = xfer_new(r, X_DELETE, r->link.up->cfg->url))) {
		note_lost(r, "stopped");
		return;
	}
	/* End the session on the server, so it can free it at once. */
	sl_curl.easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
	sl_curl.easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, (long)DELETE_TIMEOUT_MS);
	if (!xfer_start(x))
		note_lost(r, "stopped");
}

static void teardown(struct sl_remote *r)
{
	struct sl_list *n;

	while ((n = sl_list_first(&r->xfers)))
		xfer_free(sl_list_entry(n, struct xfer, link));
	sl_curl_loop_dispose(&r->cl);
	notes_free(r);
	while ((n = sl_list_first(&r->resumes))) {
		sl_list_remove(n);
		free(sl_list_entry(n, struct resume, link));
	}
	sl_buf_dispose(&r->queued);
	free(r->session_id);
	free(r->version);
	free(r->endpoint);
	sl_handles_close(&r->handles, free, r);
}

static void remote_detach(struct sl_link *l)
{
	struct sl_remote *r = (struct sl_remote *)l;
	struct sl_list *n;

	r->link.up = NULL;
	r->dead = true;
	/* The client outlives the link: what waits on it here is forgotten
	 * now, before the upstream (and its client) may be freed. */
	while ((n = sl_list_first(&r->held))) {
		struct held *h = sl_list_entry(n, struct held, link);
		sl_oauth_client_forget(r->oauth, h);
		held_free(h);
	}
	if (r->oauth)
		sl_oauth_client_forget(r->oauth, r);
	if (!r->delivering)
		teardown(r);
}

static const struct sl_link_ops remote_ops = { remote_send, remote_established, remote_stop,
					       remote_detach };

struct sl_link *sl_remote_link_start(struct sl_upstream *u, struct sl_err *err)
{
	struct sl_remote *r;
	char who[128];

	snprintf(who, sizeof(who), "server '%s'", u->name);
	if (!sl_curl_load(who, err))
		return NULL;
	r = sl_alloc(sizeof(*r));
	sl_handles_init(&r->handles);
	if (!sl_curl_loop_init(&r->cl, u->loop, &r->handles, on_curl_after, r)) {
		free(r);
		sl_err_set(err, "server '%s': libcurl failed to start", u->name);
		return NULL;
	}
	r->link.ops = &remote_ops;
	r->link.up = u;
	r->link.gen = sl_link_next_gen();
	r->loop = u->loop;
	r->sse_transport = u->cfg->transport == SL_TRANSPORT_SSE;
	r->oauth = u->oauth;
	r->retry_ms = -1;
	sl_list_init(&r->xfers);
	sl_list_init(&r->notes);
	sl_list_init(&r->resumes);
	sl_list_init(&r->held);
	sl_buf_init(&r->queued, 2 * u->gcfg->max_upstream_message_bytes);
	uv_timer_init(u->loop, &r->kick);
	r->kick.data = r;
	sl_handles_add(&r->handles, &r->kick);
	if (r->sse_transport)
		open_stream(r); /* its first event names where to POST */
	return &r->link;
}

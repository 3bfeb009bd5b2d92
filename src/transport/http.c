/*
 * The Streamable HTTP transport (MCP 2025-11-25 transports, "Streamable
 * HTTP"; MCP 2026-07-28 HTTP headers), and the older HTTP+SSE transport
 * (MCP 2024-11-05 transports: GET /sse, POST /messages?sessionId=) for
 * clients that speak only that. libmicrohttpd parses HTTP; the transport
 * decides what each request means and routes each line a session sends.
 *
 * This file is the server: libmicrohttpd driven from the libuv loop, the
 * request handler (on_request) that takes each request through admission
 * to the part that serves it, the answers every part gives, the sweep and
 * the heartbeat, start and stop. The parts, one concern a file, and the
 * objects they share are listed in http_int.h.
 */
#include "transport/http_int.h"
#include "core/log.h"
#include "gateway/admin.h"
#include "gateway/gateway.h"
#include "oauth/weblogin.h"
#include "proto/mcp.h"
#include "shared/sessions.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define SWEEP_MS 1000
#define TRIM_BYTES (8u << 20) /* freed since the last trim: malloc_trim() from the sweep */
#define HEARTBEAT ": keep-alive\n\n"
#define FD_HEADROOM 256       /* open files beyond the HTTP connections (upstreams, workers, logs) */

static void run_mhd(struct sl_http *h);
static void on_kick(uv_timer_t *t);

/* Runs MHD (and frees ended sessions) soon, from the loop. */
void http_kick(struct sl_http *h)
{
	if (!h->freeing)
		uv_timer_start(&h->kick, on_kick, 0, 0);
}

/* Accept must allow both kinds of answer (MCP 2025-11-25 transports). */
bool http_accepts(const char *accept, const char *type)
{
	return accept && (strstr(accept, type) || strstr(accept, "*/*"));
}

const char *http_header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* ---- responses ------------------------------------------------------------------ */

enum MHD_Result http_respond(struct MHD_Connection *c, unsigned status, const char *ctype,
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

enum MHD_Result http_error_response(struct MHD_Connection *c, unsigned status, int code,
				    yyjson_val *id, const char *msg, bool close)
{
	enum MHD_Result ret;
	size_t len;
	char *s = sl_rpc_error_line(id, code, msg, &len);

	ret = http_respond(c, status, "application/json", s, len - 1, NULL, close);
	free(s);
	return ret;
}

/* An HTTP error with a JSON-RPC error body (id when known). */
enum MHD_Result http_fail(struct MHD_Connection *c, unsigned status, int code, yyjson_val *id,
			  const char *msg)
{
	return http_error_response(c, status, code, id, msg, false);
}

/* A request refused at admission, before its body: the connection closes
 * after the answer (libmicrohttpd reads no byte of the body), so a peer
 * that fails the checks holds nothing once answered. */
enum MHD_Result http_refuse(struct MHD_Connection *c, unsigned status, const char *msg)
{
	return http_error_response(c, status, SL_RPC_SERVER_ERROR, NULL, msg, true);
}

/* 405 with the one method a path takes (the HTTP+SSE paths, the metadata,
 * /status), which differs from /mcp's. */
enum MHD_Result http_refuse_method(struct MHD_Connection *c, const char *allow)
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
enum MHD_Result http_too_many(struct MHD_Connection *c, const char *body, size_t len,
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
enum MHD_Result http_resource_metadata(struct sl_http *h, struct MHD_Connection *c,
				       const char *method)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *doc;

	if (strcmp(method, "GET") != 0)
		return http_refuse_method(c, "GET");
	doc = sl_auth_metadata(h->auth, &len);
	r = MHD_create_response_from_buffer(len, doc, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "max-age=3600");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

void sl_http_address(const struct sl_http *h, char *out, size_t size)
{
	/* h->host is as written: an IPv6 address keeps its brackets. */
	snprintf(out, size, "%s:%u", h->host, h->port);
}

/* Gives up what is buffered of a request's body. */
static void body_drop(struct sl_http *h, struct req *r)
{
	http_release(h, NULL, NULL, r->charged);
	r->charged = 0;
	sl_buf_dispose(&r->body);
	sl_buf_init(&r->body, 0);
}

/* ---- the request handler ------------------------------------------------------------ */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct sl_http *h = cls;
	struct req *r = *con_cls;
	const char *pv;
	enum MHD_Result ret;

	if (r && r->web)
		return r->wq ? MHD_YES : http_web_answer(c, r);
	if (r && r->admin)
		return http_admin_post(h, c, r, upload, upload_size);
	if (!r) {
		struct sl_auth_denial why;
		http_conn_headers(h, c);
		if (!http_admit_origin(h, c, url, method, &ret))
			return ret;
		/* The operator's page: its own gate, and no MCP credential. */
		if (!strcmp(url, "/admin"))
			return http_admin_start(h, c, method, con_cls);
		/* After Host and Origin, before the MCP credential. */
		if (h->gw->weblogin && sl_weblogin_path(url))
			return http_web_start(h, c, url, method, con_cls);
		r = sl_alloc(sizeof(*r));
		r->conn = c;
		r->unchecked = true;
		if (!strncmp(url, "/mcp/", 5))
			r->profile = sl_strdup(url + 5);
		sl_buf_init(&r->body, h->cfg->max_body_bytes);
		*con_cls = r;
		switch (http_check_credential(h, c, r, &why)) {
		case CHECKED:
			return http_admit(h, c, url, method, &ret) ? MHD_YES : ret;
		case REFUSED:
			return unauthorized(h, c, &why);
		case HELD:
			/* The body is read meanwhile (under its caps, like any
			 * body): libmicrohttpd reads none of a connection
			 * suspended here, and drops it after the resume. The
			 * verdict is asked for again at its end. */
			if (http_admit(h, c, url, method, &ret))
				return MHD_YES;
			http_held_remove(h, r);
			return ret;
		}
	}
	if (r->unchecked && !*upload_size) {
		struct sl_auth_denial why;
		switch (http_check_credential(h, c, r, &why)) {
		case HELD:
			http_hold(r);
			return MHD_YES;
		case REFUSED:
			body_drop(h, r);
			return unauthorized(h, c, &why);
		case CHECKED:
			break;
		}
	}
	if (r->waiting)
		return http_settle(c, r);
	if (*upload_size) {
		/* Every buffer fed by a peer has a cap, and the memory budget:
		 * past either, read and drop, and answer 413 or 503. */
		if (r->over || r->busy) {
			/* dropped */
		} else if (http_reserve(h, NULL, NULL, *upload_size) != FITS) {
			r->busy = true;
			body_drop(h, r);
		} else if (sl_buf_append(&r->body, upload, *upload_size) < 0) {
			http_release(h, NULL, NULL, *upload_size);
			r->over = true;
			body_drop(h, r);
		} else {
			r->charged += *upload_size;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (h->stopping)
		return http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, "shutting down");
	pv = http_header(c, SL_MCP_HDR_VERSION);
	if (r->adopt)
		return MHD_YES; /* resumed by libmicrohttpd itself: still waiting */
	if (http_adoptable(h, c, url, method, pv, r) && http_adopt_start(h, c, r))
		return MHD_YES;
	if (!strcmp(url, "/messages")) {
		ret = http_sse_post(h, c, r, r->who);
		body_drop(h, r);
		return ret;
	}
	if (!strcmp(url, "/sse"))
		return http_sse_open(h, c, r, r->who);
	if (!strcmp(method, "POST")) {
		ret = http_post(h, c, r, r->who, pv && !strcmp(pv, SL_MCP_MODERN));
		body_drop(h, r); /* the session has what it needs */
		return ret;
	}
	return !strcmp(method, "GET") ? http_get(h, c, r, r->who) : http_del(h, c, r->who);
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
		http_warn_once(h, WARNED_CONNECTIONS, "connections over sluice.limits.maxConnections: "
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
	http_conn_between(h, c);
	if (!r)
		return;
	if (r->web) {
		/* Gone before its page came (shutdown, or the peer): the web
		 * login must not call back into a freed request. */
		sl_weblogin_cancel(r->wq);
		http_web_unlist(h, r);
		free(r->web_html);
		free(r->web_cookie);
	}
	if (r->admin) {
		if (r->pp)
			MHD_destroy_post_processor(r->pp);
		free(r->form);
	}
	http_held_remove(h, r);
	if (r->adopt)
		r->adopt->r = NULL; /* its record may still come: nothing waits for it */
	if (r->st && r->waiting) {
		/* Gone before any response owned the stream. */
		r->st->cut = true;
		r->st->req = NULL;
		r->st->suspended = false;
		http_on_stream_freed(r->st);
	} else if (r->st) {
		r->st->cut = why != MHD_REQUEST_TERMINATED_COMPLETED_OK;
		r->st->req = NULL;
		http_unwatch(r->st); /* its socket closes next */
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
	http_reap(h);
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
	http_enforce_pending(h);
	if (MHD_get_timeout(h->d, &ms) == MHD_YES)
		uv_timer_start(&h->timer, on_timer, ms, 0);
	else
		uv_timer_stop(&h->timer);
}

static void on_sweep(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	uint64_t now = sl_now_ms();
	struct sl_list *n, *next;
	sl_list_each_safe(n, next, &h->sessions) {
		struct hsess *hs = sl_list_entry(n, struct hsess, link);
		struct sl_list *sn;
		bool open = false;
		sl_list_each(sn, &hs->streams)
			open |= !sl_list_entry(sn, struct stream, link)->detached;
		if (!hs->ephemeral && !open && now - hs->last_ms > h->cfg->idle_timeout_ms) {
			sl_log(SL_LOG_INFO, "http: session %.8s… idle, ended", hs->id);
			http_session_end(hs);
		} else if (hs->who && hs->who->profile &&
			   !sl_config_profile(h->gw->gen->cfg, hs->who->profile)) {
			/* A reload removed its profile: its streams end, and its
			 * next request is 404 like any to that profile. */
			sl_log(SL_LOG_INFO, "http: session %.8s… of profile '%s' ended: the profile "
			       "is no longer configured", hs->ephemeral ? "(request)" : hs->id,
			       hs->who->profile);
			http_session_end(hs);
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
	struct sl_list *n, *next;
	/* An SSE comment keeps proxies and clients from timing the stream
	 * out, and lets a suspended connection notice a vanished peer. */
	sl_list_each_safe(n, next, &h->sessions) {
		struct hsess *hs = sl_list_entry(n, struct hsess, link);
		struct sl_list *sn;
		/* Not _safe: making room may free another (detached) stream. */
		sl_list_each(sn, &hs->streams) {
			struct stream *st = sl_list_entry(sn, struct stream, link);
			if (st->sse && !st->head && !st->done && !st->detached && !st->killed)
				http_stream_push(st, http_line_new(sl_strdup(HEARTBEAT), strlen(HEARTBEAT)), true);
		}
	}
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
	sl_list_init(&h->sessions);
	sl_list_init(&h->reap);
	sl_list_init(&h->pending.list);
	sl_list_init(&h->idle.list);
	sl_list_init(&h->held);
	sl_list_init(&h->webs);
	sl_list_init(&h->adoptions);
	sl_list_init(&h->retired);
	sl_list_init(&h->resync);
	if (http_sharing(h))
		h->ends = sl_session_store_listen(gw->redis, http_on_ended_elsewhere, http_on_redis_up, h);
	h->cfg = &cfg->http;
	h->lim = &cfg->limits;
	sl_map_init(&h->by_id);
	if ((rc = parse_listen(h, listen, &ss, err)) < 0)
		goto out;
	if ((rc = sl_auth_new(loop, &cfg->http, &h->auth, err)) < 0)
		goto out;
	sl_auth_on_ready(h->auth, http_on_auth_ready, h);
	if (!h->loopback && !sl_auth_required(h->auth)) {
		sl_err_set(err, "refusing to serve HTTP on %s without authentication "
			   "(sluice.http.bearerToken or sluice.http.auth): anyone who can reach that "
			   "address could use every tool. Listen on 127.0.0.1, or configure one", listen);
		rc = SL_ERR_INVALID;
		goto out;
	}
	if (cfg->http.tls.cert_file && (rc = http_tls_start(h, &cfg->http.tls, err)) < 0)
		goto out;
	/* The certificate callback only with MHD_USE_TLS: without it MHD
	 * warns about the option. */
	struct MHD_OptionItem tls_opts[] = {
		{ h->tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0, (void *)http_on_cert },
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
				MHD_OPTION_NOTIFY_CONNECTION, http_on_connection, h,
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
	uv_timer_t *timers[] = { &h->timer, &h->kick, &h->sweep, &h->beat, &h->wait, &h->deadline,
				 &h->resync_timer };
	for (size_t i = 0; i < SL_COUNT(timers); i++) {
		uv_timer_init(loop, timers[i]);
		sl_handles_add(&h->handles, timers[i]);
	}
	h->poll.data = h->timer.data = h->kick.data = h->sweep.data = h->beat.data = h->wait.data =
		h->deadline.data = h->resync_timer.data = h;
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
	http_tls_free(h);
	sl_session_store_unlisten(h->ends);
	if (h->auth)
		sl_auth_free(h->auth);
	sl_map_dispose(&h->by_id);
	free(h);
	return rc;
}

void sl_http_stop(struct sl_http *h)
{
	struct sl_list *n, *next;

	if (h->stopping)
		return;
	h->stopping = true;
	/* Requests held for auth are answered 503 (http_check_credential). */
	http_on_auth_ready(h);
	http_adoptions_release(h);
	http_web_stop(h);
	/* MCP 2026-07-28 subscriptions: listens end gracefully, with their
	 * completion response, before their streams close. */
	sl_list_each_safe(n, next, &h->sessions)
		sl_session_end_listens(sl_list_entry(n, struct hsess, link)->s);
	while ((n = sl_list_first(&h->sessions)))
		http_session_end(sl_list_entry(n, struct hsess, link));
	/* Let the ended streams finish before the daemon goes. */
	run_mhd(h);
}

void sl_http_free(struct sl_http *h)
{
	struct sl_list *n;

	http_web_stop(h); /* a page still suspended would outlive the daemon */
	http_reap(h);
	sl_handles_close_one(&h->handles, &h->poll, NULL);
	/* Streams still open are freed by MHD (their sessions are gone). */
	MHD_stop_daemon(h->d);
	h->d = NULL;
	h->freeing = true;
	http_reap(h);
	sl_map_dispose(&h->by_id);
	/* Adoptions still reading are freed when their reply comes. */
	while ((n = sl_list_first(&h->adoptions)))
		http_adoption_unlink(sl_list_entry(n, struct adoption, link));
	sl_session_store_unlisten(h->ends);
	sl_auth_free(h->auth);
	h->auth = NULL;
	sl_admin_free(h->admin);
	h->admin = NULL;
	/* MHD closed every connection, and so released what they held. */
	http_tls_free(h);
	sl_handles_close(&h->handles, free, h);
}

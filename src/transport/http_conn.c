/*
 * Connections and admission (docs/internals/HTTP.md, "Admission" and
 * "Bounds"): every connection from accept to close (pending until its
 * first request's headers are whole, then busy, or idle between requests,
 * each timed and capped), and the checks a request passes before any of
 * its body is read: Host and Origin, its credential (a request whose check
 * waits for a fetch is held, suspended), then the endpoint's own (path,
 * method, Accept, Content-Type, the announced size).
 */
#include "transport/http_int.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "oauth/subject.h"
#include "proto/mcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define PENDING_GRACE_MS 1000 /* pending this long before maxPendingPerAddress may close it */

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

/* Whether name (a Host's, without its port) is a public name of this
 * gateway: sluice.http.allowedHosts, the host of sluice.http.publicUrl
 * (an IP literal there is left to the other rules). */
static bool public_name(struct sl_http *h, const char *name)
{
	const char *pub = h->cfg->public_url, *auth;
	size_t n;

	for (char **a = h->cfg->allowed_hosts; a && *a; a++)
		if (!strcasecmp(name, *a))
			return true;
	if (!pub || !(auth = strstr(pub, "://")) || auth[3] == '[')
		return false;
	auth += 3;
	n = strcspn(auth, ":/");
	return strlen(name) == n && !strncasecmp(name, auth, n);
}

/* localhost and *.localhost: this host, whatever DNS says (RFC 6761 6.3). */
static bool loopback_name(const char *name)
{
	size_t n = strlen(name);
	return !strcasecmp(name, "localhost") || (n > 10 && !strcasecmp(name + n - 10, ".localhost"));
}

/* Whether name is an IP literal: "a.b.c.d" or "[v6]". No DNS answer can
 * make one name another address, so a rebinding page never has one. */
static bool ip_literal(const char *name)
{
	unsigned char a[16];
	char v6[INET6_ADDRSTRLEN];
	size_t n = strlen(name);

	if (inet_pton(AF_INET, name, a) == 1)
		return true;
	if (n < 3 || name[0] != '[' || name[n - 1] != ']' || n - 2 >= sizeof(v6))
		return false;
	memcpy(v6, name + 1, n - 2);
	v6[n - 2] = '\0';
	return inet_pton(AF_INET6, v6, a) == 1;
}

/* DNS rebinding (MCP 2025-11-25 transports, security): the Host header
 * must name this gateway. With any port (a proxy's): allowedHosts and
 * publicUrl's host; on a wildcard listener (0.0.0.0, [::]), which does not
 * know its own addresses, any IP literal. With our port or none:
 * localhost, *.localhost, the address the listener is bound to, and a
 * loopback literal when that is loopback. Anything else is a name an
 * attacker's DNS may point here. */
static bool host_allowed(struct sl_http *h, const char *host)
{
	char name[256];
	const char *port = NULL;
	bool ours = true;
	size_t n;

	if (!host)
		return false;
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
	if (!n || n >= sizeof(name))
		return false;
	memcpy(name, host, n);
	name[n] = '\0';
	if (port) {
		char *end;
		unsigned long p;
		if (*port < '0' || *port > '9')
			return false;
		p = strtoul(port, &end, 10);
		if (*end || p > 65535)
			return false;
		ours = p == h->port;
	}
	if (public_name(h, name) || (h->wildcard && ip_literal(name)))
		return true;
	if (!ours)
		return false;
	if (loopback_name(name) || !strcasecmp(name, h->host))
		return true;
	return h->loopback && (!strcmp(name, "127.0.0.1") || !strcmp(name, "[::1]"));
}

/* ---- connections: admission before work ---------------------------------------------- */

static void conns_add(struct conns *l, struct conn *x)
{
	sl_list_push_back(&l->list, &x->link);
	l->n++;
}

static void conns_del(struct conns *l, struct conn *x)
{
	sl_list_remove(&x->link);
	l->n--;
}

/* The oldest connection of l, or NULL. */
static struct conn *conns_first(const struct conns *l)
{
	struct sl_list *n = sl_list_first(&l->list);
	return n ? sl_list_entry(n, struct conn, link) : NULL;
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

void http_warn_once(struct sl_http *h, unsigned what, const char *msg)
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
	const struct conn *p = conns_first(&h->pending), *i = conns_first(&h->idle);
	if (p)
		next = deadline_of(h, p);
	if (i && deadline_of(h, i) < next)
		next = deadline_of(h, i);
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
	struct conn *x;
	while ((x = conns_first(&h->pending)) && deadline_of(h, x) <= now) {
		http_warn_once(h, WARNED_HEADERS, "a connection did not send its request's headers within "
			       "sluice.limits.headerTimeoutMs: closed");
		conn_close(h, x);
	}
	while ((x = conns_first(&h->idle)) && deadline_of(h, x) <= now)
		conn_close(h, x);
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
void http_enforce_pending(struct sl_http *h)
{
	struct sl_list *ln, *lnext;
	uint64_t now = sl_now_ms();
	sl_list_each_safe(ln, lnext, &h->pending.list) {
		struct conn *x = sl_list_entry(ln, struct conn, link);
		uint32_t n = 0;
		if (now - x->since_ms < PENDING_GRACE_MS)
			break;
		/* x and those younger than it */
		for (struct sl_list *ly = ln; ly != &h->pending.list && n <= h->lim->max_pending_per_ip;
		     ly = ly->next)
			n += same_address(&x->addr, &sl_list_entry(ly, struct conn, link)->addr);
		if (n > h->lim->max_pending_per_ip) {
			http_warn_once(h, WARNED_PER_ADDRESS, "connections not yet admitted from one address "
				       "over sluice.limits.maxPendingPerAddress: closing the oldest");
			conn_close(h, x);
		}
	}
	while (h->pending.n > h->lim->max_pending && conns_first(&h->pending)->seen) {
		http_warn_once(h, WARNED_PENDING, "connections not yet admitted over "
			       "sluice.limits.maxPendingConnections: closing the oldest");
		conn_close(h, conns_first(&h->pending));
	}
	sl_list_each(ln, &h->pending.list)
		sl_list_entry(ln, struct conn, link)->seen = true;
}

/* MHD_OPTION_NOTIFY_CONNECTION: a connection accepted, or closed. A new
 * one is pending until its first request's headers are whole. */
void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct sl_http *h = cls;
	struct conn *x = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (x) {
			conn_busy(h, x);
			h->nconns--;
			http_tls_release(h, x->epoch);
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
void http_conn_headers(struct sl_http *h, struct MHD_Connection *c)
{
	struct conn *x = conn_of(c);
	if (x)
		conn_busy(h, x);
}

/* A request ended: the next one's headers are awaited from now on, at
 * most sluice.limits.idleConnectionTimeoutMs. */
void http_conn_between(struct sl_http *h, struct MHD_Connection *c)
{
	struct conn *x = conn_of(c);
	if (!x || x->state != CONN_BUSY)
		return;
	x->state = CONN_IDLE;
	x->since_ms = sl_now_ms();
	conns_add(&h->idle, x);
	arm_deadline(h);
}

bool http_over_body_cap(struct sl_http *h, struct MHD_Connection *c, enum MHD_Result *ret)
{
	const char *len = http_header(c, "Content-Length");
	char msg[128];
	if (!len || strtoull(len, NULL, 10) <= h->cfg->max_body_bytes)
		return false;
	snprintf(msg, sizeof(msg), "the request body is over sluice.http.maxBodyBytes (%zu bytes)",
		 h->cfg->max_body_bytes);
	*ret = http_error_response(c, MHD_HTTP_CONTENT_TOO_LARGE, SL_RPC_INVALID_REQUEST, NULL, msg, true);
	return true;
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
	if (!strcmp(name, "default") || !sl_config_profile(h->gw->gen->cfg, name)) {
		char *msg = sl_printf("Not Found: no profile is served at /mcp/%.100s%s", name,
				      strcmp(name, "default") ? " (sluice.profiles)" :
				      ": the default profile is /mcp");
		*ret = http_refuse(c, MHD_HTTP_NOT_FOUND, msg);
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

/* The checks every request passes at its first callback, when its headers
 * are whole and before any byte of its body is read (MCP 2025-11-25
 * transports, security: Host and Origin against DNS rebinding), before its
 * credential is looked at. The Protected Resource Metadata is answered
 * here, to anyone who passes them. False: answered (refused, or the
 * metadata), *ret is the answer. */
bool http_admit_origin(struct sl_http *h, struct MHD_Connection *c, const char *url,
		       const char *method, enum MHD_Result *ret)
{
	if (h->stopping) {
		*ret = http_refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down");
		return false;
	}
	if (!host_allowed(h, http_header(c, "Host"))) {
		/* Once: a client that connects by a name of ours not listed
		 * would otherwise fail with nothing in the log. The name
		 * itself is the peer's, and not worth a line each. */
		http_warn_once(h, WARNED_HOST, "refused a request whose Host is not a name of this "
			       "gateway (DNS rebinding): clients that reach it by another name need "
			       "it in sluice.http.allowedHosts");
		*ret = http_refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: Host not allowed (not a name "
				   "of this gateway: localhost, an IP address, the host of "
				   "sluice.http.publicUrl or of sluice.http.allowedHosts)");
		return false;
	}
	if (!origin_allowed(h, http_header(c, "Origin"))) {
		*ret = http_refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: Origin not allowed");
		return false;
	}
	/* The operator's pages: their own peer check, and no MCP credential. */
	if (!strcmp(url, "/status")) {
		*ret = http_status_page(h, c, method);
		return false;
	}
	if (!strcmp(url, "/metrics")) {
		*ret = http_metrics_page(h, c, method);
		return false;
	}
	if (sl_auth_metadata_path(h->auth, url)) {
		*ret = http_resource_metadata(h, c, method);
		return false;
	}
	return true;
}

/* The checks of the request itself, after its credential (the endpoint,
 * the method, Accept, Content-Type, the body's announced size). False:
 * refused, *ret is the answer, the connection closes. */
bool http_admit(struct sl_http *h, struct MHD_Connection *c, const char *url,
		const char *method, enum MHD_Result *ret)
{
	const char *pv;
	bool modern, is_post = !strcmp(method, "POST");

	pv = http_header(c, SL_MCP_HDR_VERSION);
	modern = pv && !strcmp(pv, SL_MCP_MODERN);
	if (!strcmp(url, "/sse") || !strcmp(url, "/messages"))
		return http_admit_sse(h, c, url, method, modern, ret);
	if (!strncmp(url, "/mcp/", 5)) {
		if (!profile_route(h, c, url + 5, ret))
			return false;
	} else if (strcmp(url, "/mcp") != 0) {
		*ret = http_refuse(c, MHD_HTTP_NOT_FOUND, "Not Found: the endpoint is /mcp, or "
				   "/mcp/<profile> (and /sse for HTTP+SSE clients, /status and /metrics for the "
				   "operator)");
		return false;
	}
	/* MCP 2026-07-28: no GET stream, no sessions to delete. */
	if (!is_post && (modern || (strcmp(method, "GET") && strcmp(method, "DELETE")))) {
		*ret = http_refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method Not Allowed");
		return false;
	}
	/* MCP 2025-11-25 transports: a POST's client accepts both answers, a
	 * GET's the stream. */
	if (is_post && (!http_accepts(http_header(c, "Accept"), "application/json") ||
			!http_accepts(http_header(c, "Accept"), "text/event-stream"))) {
		*ret = http_refuse(c, MHD_HTTP_NOT_ACCEPTABLE,
				   "Not Acceptable: Accept must allow application/json and text/event-stream");
		return false;
	}
	if (!strcmp(method, "GET") && !http_accepts(http_header(c, "Accept"), "text/event-stream")) {
		*ret = http_refuse(c, MHD_HTTP_NOT_ACCEPTABLE,
				   "Not Acceptable: Accept must allow text/event-stream");
		return false;
	}
	if (is_post && (!http_header(c, "Content-Type") ||
			strncasecmp(http_header(c, "Content-Type"), "application/json", 16) != 0)) {
		*ret = http_refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
		return false;
	}
	return !(is_post && http_over_body_cap(h, c, ret));
}

/* ---- requests held while their credential is checked ------------------------------ */

void http_held_remove(struct sl_http *h, struct req *r)
{
	if (!sl_list_linked(&r->held_link))
		return;
	sl_list_remove(&r->held_link);
	h->nheld--;
}

/* auth fetched what some held requests wait for: each asks again. */
void http_on_auth_ready(void *arg)
{
	struct sl_http *h = arg;
	struct sl_list *n;
	sl_list_each(n, &h->held) {
		struct req *r = sl_list_entry(n, struct req, held_link);
		if (r->held_suspended) {
			r->held_suspended = false;
			MHD_resume_connection(r->conn);
		}
	}
	http_kick(h);
}

void http_hold(struct req *r)
{
	r->held_suspended = true;
	MHD_suspend_connection(r->conn);
}

/* The credential's verdict for r: CHECKED (r->who set), HELD (listed in
 * h->held; once its body is whole it is suspended until auth's fetch ended,
 * then asked again), or REFUSED (*why filled). At most
 * sluice.http.auth.maxWaiting requests are held at once. */
enum check http_check_credential(struct sl_http *h, struct MHD_Connection *c, struct req *r,
				 struct sl_auth_denial *why)
{
	struct sl_caller *who = NULL;
	enum sl_auth_verdict v;

	if (h->stopping) {
		http_held_remove(h, r);
		memset(why, 0, sizeof(*why));
		why->status = MHD_HTTP_SERVICE_UNAVAILABLE;
		snprintf(why->description, sizeof(why->description), "shutting down");
		return REFUSED;
	}
	v = sl_auth_check(h->auth, http_header(c, "Authorization"), &who, why);
	if (v == SL_AUTH_PENDING) {
		if (!sl_list_linked(&r->held_link)) {
			if (h->nheld >= h->cfg->auth.max_waiting) {
				memset(why, 0, sizeof(*why));
				why->status = MHD_HTTP_SERVICE_UNAVAILABLE;
				snprintf(why->description, sizeof(why->description),
					 "too many requests wait for the authorization server "
					 "(sluice.http.auth.maxWaiting)");
				return REFUSED;
			}
			sl_list_push_front(&h->held, &r->held_link);
			h->nheld++;
		}
		return HELD;
	}
	http_held_remove(h, r);
	if (v != SL_AUTH_OK)
		return REFUSED;
	r->who = through_profile(who, r->profile);
	r->unchecked = false;
	/* Token exchange needs the caller's own token (oauth/subject.h). */
	sl_oauth_subject_note(r->who, http_header(c, "Authorization"));
	return CHECKED;
}

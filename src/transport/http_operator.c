/*
 * The operator's pages, beside the protocol (the model: nginx's
 * stub_status, h2o's status handler): GET /status, GET /metrics and the
 * /admin page with its forms. Each is a small handler behind one gate
 * (sl_http_operator_allowed: a local peer or sluice.http.adminToken),
 * never an MCP credential, answered never cached and with the connection
 * closed. A local peer is on this host and speaks for itself: behind a
 * proxy on the same host every peer is loopback, so a request a proxy
 * relayed (its peer one of sluice.http.proxies, or carrying a header
 * proxies add) is never local, whatever else it says.
 */
#include "transport/http_int.h"
#include "core/digest.h"
#include "core/log.h"
#include "gateway/admin.h"
#include "gateway/gateway.h"

#include <arpa/inet.h>
#include <nettle/memops.h>
#include <netinet/in.h>
#include <string.h>

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

bool sl_http_peer_proxy(const struct sl_http_config *cfg, const struct sockaddr *sa)
{
	uint8_t a[16] = { 0 };

	if (sa && sa->sa_family == AF_INET) {
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	} else {
		return false;
	}
	for (size_t i = 0; i < cfg->nproxies; i++) {
		const struct sl_net *n = &cfg->proxies[i];
		unsigned whole = n->bits / 8, rest = n->bits % 8;
		if (memcmp(a, n->addr, whole))
			continue;
		if (!rest || !((a[whole] ^ n->addr[whole]) & (uint8_t)(0xff << (8 - rest))))
			return true;
	}
	return false;
}

/* What proxies add to a request they relay (RFC 7239 Forwarded, RFC 9110
 * Via, and the de facto ones): a loopback peer sending one is a proxy on
 * this host, speaking for someone elsewhere. A client adding one to its
 * own request only loses the local pass. */
static const char *const relayed_by[] = { "Forwarded", "X-Forwarded-For", "X-Forwarded-Host",
					  "X-Forwarded-Proto", "X-Real-IP", "Via" };

/* A peer on this host speaking for itself (the file's header). */
static bool local_peer(struct sl_http *h, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	if (!ci || !sl_http_peer_loopback(ci->client_addr) ||
	    sl_http_peer_proxy(h->cfg, ci->client_addr))
		return false;
	for (size_t i = 0; i < SL_COUNT(relayed_by); i++)
		if (http_header(c, relayed_by[i]))
			return false;
	return true;
}

/* The operator's pages (/status, and those of transport/operator.h): a
 * local peer, whatever its Host header says, or any peer sending
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
	return local_peer(h, c) ||
	       sl_http_admin_token_ok(h->cfg->admin_token, http_header(c, "Authorization"));
}

#define GATE "peers on this host (not through a proxy) and sluice.http.adminToken only"

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
enum MHD_Result http_status_page(struct sl_http *h, struct MHD_Connection *c,
				 const char *method)
{
	size_t len;
	char *body;

	if (!sl_http_operator_allowed(h, c))
		return http_refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /status answers " GATE);
	if (strcmp(method, "GET") != 0)
		return http_refuse_method(c, "GET");
	body = sl_gateway_status(h->gw, h->nsessions, &len);
	return operator_answer(c, "application/json", body, len);
}

/* GET /metrics (docs/METRICS.md): the Prometheus exposition, behind the
 * same gate as /status. */
enum MHD_Result http_metrics_page(struct sl_http *h, struct MHD_Connection *c,
				  const char *method)
{
	struct sl_front_stats f = { .stateless = h->nephemeral, .listens = h->nlistens,
				    .connections = h->nconns, .buffered = h->bytes,
				    .buffered_limit = h->lim->max_buffered_bytes };
	const struct sl_list *n;
	size_t len;
	char *body;

	if (!sl_http_operator_allowed(h, c))
		return http_refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /metrics answers " GATE);
	if (strcmp(method, "GET") != 0)
		return http_refuse_method(c, "GET");
	sl_list_each(n, &h->sessions) {
		const struct hsess *hs = sl_list_entry(n, struct hsess, link);
		if (!hs->ephemeral && !hs->ended)
			hs->sse ? f.sse_sessions++ : f.sessions++;
	}
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

/* GET /admin shows the page; a POST's form is read (http_admin_post), from the
 * page's own origin only. No MCP credential: the operator's gate. */
enum MHD_Result http_admin_start(struct sl_http *h, struct MHD_Connection *c, const char *method,
				 void **con_cls)
{
	struct req *r;

	if (!sl_http_operator_allowed(h, c))
		return http_refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /admin answers " GATE);
	if (!strcmp(method, "GET"))
		return admin_answer(h, c, MHD_HTTP_OK, NULL);
	if (strcmp(method, "POST") != 0)
		return http_refuse_method(c, "GET, POST");
	/* CSRF, first half: a form another site's page submits carries that
	 * site's Origin (the token is the second half, http_admin_post). */
	if (!sl_admin_same_origin(h->tls, http_header(c, "Host"), http_header(c, "Origin"),
				  http_header(c, "Sec-Fetch-Site"))) {
		sl_log(SL_LOG_WARN, "admin: refused a POST from another origin (%s)",
		       http_header(c, "Origin") ? http_header(c, "Origin") : "no Origin");
		return http_refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: /admin takes forms from its own "
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
		return http_refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type: /admin "
				   "takes application/x-www-form-urlencoded");
	return MHD_YES;
}

/* The form's body, then its action: the token checked, then carried out
 * and audited (gateway/admin.c), and the page again with what happened. */
enum MHD_Result http_admin_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
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
		return http_refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "Content Too Large: a form of /admin "
				   "is at most 8 KiB");
	if (!sl_admin_csrf_ok(h->admin, r->form->csrf)) {
		sl_log(SL_LOG_WARN, "admin: refused a POST without the page's CSRF token");
		return http_refuse(c, MHD_HTTP_FORBIDDEN, "Forbidden: the form's token is missing or "
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

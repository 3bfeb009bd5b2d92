/*
 * The admin page (GET/POST /admin on the HTTP front end, docs/ADMIN.md):
 * the gateway's state for a person, as server-rendered HTML with no script
 * and no asset from elsewhere, and the two actions a person takes there,
 * approving and resetting tool pins, through the code paths of `sluice pins
 * approve|reset`. Everything upstreams, clients and the audit file wrote is
 * escaped (core/escape.h, SL_ESCAPE_HTML): markup, quotes, control and bidi
 * characters come out as visible text.
 *
 * The transport (transport/http_operator.c) gates the page (sl_http_operator_allowed)
 * and checks a POST's origin with sl_admin_same_origin; this module holds
 * the per-process CSRF token every form carries and checks it.
 *
 * API:
 *   a = sl_admin_new(gw);                       the token is made here
 *   html = sl_admin_page(a, sessions, notice, &len);   GET
 *   sl_admin_form_field(&f, key, data, off, size);     each POST field (libmicrohttpd's
 *                                                      post processor)
 *   if (!sl_admin_csrf_ok(a, f.csrf)) 403
 *   status = sl_admin_act(a, &f, peer, msg, sizeof(msg));   audited
 *   sl_admin_free(a);
 */
#ifndef SL_GATEWAY_ADMIN_H
#define SL_GATEWAY_ADMIN_H

#include "core/common.h"

struct sl_gateway;
struct sl_admin;

#define SL_ADMIN_CSRF_HEX 65       /* 32 random bytes in hex, and a NUL */
#define SL_ADMIN_AUDIT_LINES 50    /* the audit tail shown */
#define SL_ADMIN_AUDIT_LINE_MAX 2000 /* bytes of one audit line shown */
#define SL_ADMIN_BODY_MAX 8192     /* a POST's form, in all */

/* A POST's fields, each bounded; server and tool are the raw names in hex
 * (base16), so any byte a name holds survives the round trip and no two
 * names share a value. */
struct sl_admin_form {
	char csrf[SL_ADMIN_CSRF_HEX];
	char action[16];           /* "approve" or "reset" */
	char server[513];          /* hex of up to 256 bytes */
	char tool[1025];           /* hex of up to 512 bytes */
	char sha[65];              /* approve: the definition's pin the person saw */
	bool bad;                  /* a field over its bound, or repeated */
};

/* The page's state for gw (borrowed, outlives it): a fresh CSRF token from
 * getrandom(2), and the hash of the page's style sheet for its CSP. */
struct sl_admin *sl_admin_new(struct sl_gateway *gw);
void sl_admin_free(struct sl_admin *a);

/* The page, with notice (NULL: none; escaped) on top, as a new string of
 * *len bytes the caller frees. sessions: the transport's count (as
 * /status). Bounded: at most SL_ADMIN_ROWS rows a table, cells cut. */
#define SL_ADMIN_ROWS 500
char *sl_admin_page(struct sl_admin *a, uint32_t sessions, const char *notice, size_t *len);
/* The Content-Security-Policy the page must be served with. Borrowed. */
const char *sl_admin_csp(const struct sl_admin *a);

/* Whether a POST comes from the page itself: its Origin is exactly
 * scheme://host (host: the request's Host header, which the transport has
 * checked), or, without an Origin, Sec-Fetch-Site is "same-origin". Pure. */
bool sl_admin_same_origin(bool tls, const char *host, const char *origin, const char *fetch_site);

/* One chunk of a POST field, as libmicrohttpd's post processor hands it
 * (off: where in the value it goes). Unknown keys are ignored. */
void sl_admin_form_field(struct sl_admin_form *f, const char *key, const char *data, uint64_t off,
			 size_t size);

/* Whether token is the page's CSRF token (constant time). */
bool sl_admin_csrf_ok(const struct sl_admin *a, const char *token);

/* Carries out f (its token already checked) for peer, writes an "admin"
 * audit line and says what happened in msg: returns the HTTP status, 200
 * (done), 400 (a bad form), 404 (no such server or tool), 409 (the tool's
 * definition is not the one the page showed, or its server is not ready),
 * 500 (the pins could not be saved) or 503 (pinning is off). */
unsigned sl_admin_act(struct sl_admin *a, const struct sl_admin_form *f, const char *peer,
		      char *msg, size_t n);

#endif

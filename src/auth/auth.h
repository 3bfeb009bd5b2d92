/*
 * Authentication on the HTTP front end: from a request's Authorization
 * header to a caller (auth/caller.h), or a denial the transport answers
 * with 401 (403 for missing scopes, 503 when an authorization server cannot
 * be reached) and a WWW-Authenticate challenge (RFC 6750 §3, RFC 9728
 * §5.1). docs/internals/AUTH.md.
 *
 * Methods, from sluice.http (at least one is needed off loopback), tried in
 * this order:
 *   bearerToken     one shared secret; its caller has no subject
 *   auth.tokens     static tokens, each naming a subject, groups and
 *                   scopes: a team's API keys without an identity provider
 *   auth.resource   OAuth 2.1 resource server: JWT access tokens checked
 *                   against the issuers' keys (auth/jwt.h, auth/jwks.h),
 *                   opaque ones through introspection (auth/introspect.h)
 *
 * A check that needs a document from an authorization server (its keys,
 * an introspection answer) answers PENDING and fetches it; once a fetch
 * ends, ready(arg) runs from the loop and the request asks again. With the
 * keys at hand a check is synchronous; a token checked once is remembered
 * by its SHA-256 until it expires (auth.cacheEntries).
 *
 * The token itself is never logged, never sent anywhere but to the
 * configured introspection endpoint, and never passed to an upstream: the
 * caller holds only claims read from it, this module only its digest. The
 * one exception is explicit and opt-in: with a tokenExchange server the
 * transport hands an admitted JWT or introspected token to oauth/subject.h,
 * held in memory for exchange at that server's authorization server.
 *
 * API:
 *   if (sl_auth_new(loop, &cfg->http, &a, &err) < 0) ... err.msg
 *   sl_auth_on_ready(a, on_ready, arg);
 *   switch (sl_auth_check(a, header(c, "Authorization"), &who, &why)) {
 *   case SL_AUTH_OK:          ... who (a reference, NULL when no method is configured)
 *   case SL_AUTH_PENDING:     ... hold the request; check again after on_ready
 *   case SL_AUTH_DENIED:      ... why.status, WWW-Authenticate: sl_auth_challenge(a, &why)
 *   case SL_AUTH_UNAVAILABLE: ... 503 with why.description
 *   }
 */
#ifndef SL_AUTH_AUTH_H
#define SL_AUTH_AUTH_H
#include "auth/caller.h"
#include "config/config.h"

#include <uv.h>

struct sl_auth;

enum sl_auth_verdict { SL_AUTH_OK, SL_AUTH_DENIED, SL_AUTH_PENDING, SL_AUTH_UNAVAILABLE };

/* Why a request was refused, for the challenge and the log (never the
 * token). */
struct sl_auth_denial {
	unsigned status;        /* 401, 403 (insufficient_scope) or 503 */
	const char *error;      /* RFC 6750 §3.1: "invalid_token", "invalid_request",
				 * "insufficient_scope"; NULL: no credentials sent */
	char description[200];  /* for the error_description and the log */
};

int sl_auth_new(uv_loop_t *loop, const struct sl_http_config *cfg, struct sl_auth **out,
		struct sl_err *err) SL_MUST_USE;
void sl_auth_free(struct sl_auth *a);
/* ready(arg) runs from the loop when a fetch a PENDING check waits for has
 * ended (with or without success). */
void sl_auth_on_ready(struct sl_auth *a, void (*ready)(void *arg), void *arg);
/* Some method is configured: a request without credentials is refused. */
bool sl_auth_required(const struct sl_auth *a);
/* The Authorization header's verdict (see above). */
enum sl_auth_verdict sl_auth_check(struct sl_auth *a, const char *authorization,
				   struct sl_caller **who, struct sl_auth_denial *why);
/* The WWW-Authenticate value for a denial (the caller frees it). */
char *sl_auth_challenge(const struct sl_auth *a, const struct sl_auth_denial *why);
/* With OAuth configured: whether path is where the Protected Resource
 * Metadata is served, and the document (the caller frees it). */
bool sl_auth_metadata_path(const struct sl_auth *a, const char *path);
char *sl_auth_metadata(const struct sl_auth *a, size_t *len);
/* Requests sent to authorization servers for keys and metadata so far. */
uint64_t sl_auth_key_fetches(const struct sl_auth *a);

#endif

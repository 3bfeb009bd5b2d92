/*
 * Authentication on the HTTP front end: from a request's Authorization
 * header to a caller (auth/caller.h), or a denial the transport answers
 * with 401 and a WWW-Authenticate challenge (RFC 6750, RFC 9728 §5.1).
 * docs/internals/AUTH.md.
 *
 * Methods, from sluice.http (at least one is needed off loopback):
 *   bearerToken     one shared secret; its caller has no subject
 *   auth.tokens     static tokens, each naming a subject, groups and
 *                   scopes: a team's API keys without an identity provider
 *
 * API:
 *   if (sl_auth_new(loop, &cfg->http, &a, &err) < 0) ... err.msg
 *   switch (sl_auth_check(a, header(c, "Authorization"), &who, &why)) {
 *   case SL_AUTH_OK:      ... who (a reference, NULL when no method is configured)
 *   case SL_AUTH_DENIED:  ... 401, WWW-Authenticate: sl_auth_challenge(a, &why)
 *   }
 */
#ifndef SL_AUTH_AUTH_H
#define SL_AUTH_AUTH_H
#include "auth/caller.h"
#include "config/config.h"

#include <uv.h>

struct sl_auth;

enum sl_auth_verdict { SL_AUTH_OK, SL_AUTH_DENIED };

/* Why a request was refused, for the challenge and the log (never the
 * token). */
struct sl_auth_denial {
	const char *error;      /* RFC 6750 §3.1: "invalid_token", "invalid_request",
				 * "insufficient_scope"; NULL: no credentials sent */
	char description[200];  /* for the error_description and the log */
};

int sl_auth_new(uv_loop_t *loop, const struct sl_http_config *cfg, struct sl_auth **out,
		struct sl_err *err) SL_MUST_USE;
void sl_auth_free(struct sl_auth *a);
/* Some method is configured: a request without credentials is refused. */
bool sl_auth_required(const struct sl_auth *a);
/* The Authorization header's verdict (see above). */
enum sl_auth_verdict sl_auth_check(struct sl_auth *a, const char *authorization,
				   struct sl_caller **who, struct sl_auth_denial *why);
/* The WWW-Authenticate value for a denial (the caller frees it). */
char *sl_auth_challenge(const struct sl_auth *a, const struct sl_auth_denial *why);

#endif

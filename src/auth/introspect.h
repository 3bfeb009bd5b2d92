/*
 * Opaque access tokens, asked about at the authorization server's RFC 7662
 * introspection endpoint (a form POST with the token, sluice's client
 * credentials in HTTP Basic). An answer counts only when it is active,
 * names a configured issuer (when it names one), has this resource among
 * its audiences and a subject, and has not expired. Answers are kept by the
 * token's SHA-256 (auth/verdicts.h) for introspection.cacheSeconds at
 * most, never past exp; at most maxInFlight requests run at once, and
 * requests for the same token share one.
 *
 *   switch (sl_introspect_check(in, token, hash, &who, &err)) {
 *   case SL_AUTH_OK ... DENIED (401) ... PENDING (ready(arg) later, ask again)
 *   case SL_AUTH_UNAVAILABLE (503) }
 */
#ifndef SL_AUTH_INTROSPECT_H
#define SL_AUTH_INTROSPECT_H

#include "auth/auth.h"
#include "event/fetch.h"

struct sl_introspect;

/* For cfg's introspection endpoint, through f (borrowed: free it first). */
struct sl_introspect *sl_introspect_new(struct sl_fetcher *f, const struct sl_auth_config *cfg,
					void (*ready)(void *arg), void *arg);
void sl_introspect_free(struct sl_introspect *in);
/* hash: the token's SHA-256 (hex). OK: *who is a new reference. */
enum sl_auth_verdict sl_introspect_check(struct sl_introspect *in, const char *token,
					 const char *hash, struct sl_caller **who, struct sl_err *err);

#endif

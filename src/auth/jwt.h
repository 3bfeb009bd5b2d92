/*
 * JWT access tokens (RFC 9068), checked locally: a JWS in compact form
 * (three base64url parts; a five-part JWE is refused), signed with an
 * asymmetric algorithm from the allow-list by a key of the issuer's key set
 * whose type fits the algorithm, with claims that name this gateway.
 * No I/O: the key set is the caller's (auth/jwks.h fetches it).
 *
 * API:
 *   struct sl_jwt t;
 *   if (!sl_jwt_read(token, len, &t, why, sizeof(why)))   malformed: 401
 *   ... choose the issuer's key set by t.iss, the key by t.kid and t.alg ...
 *   if (!sl_jwt_verify(&t, token, len, key, &rules, time(NULL), &who, why, sizeof(why)))
 *           ... 401 with why
 *   sl_jwt_dispose(&t);
 *
 * Why-texts name the check that failed and never quote the token.
 */
#ifndef SL_AUTH_JWT_H
#define SL_AUTH_JWT_H

#include "auth/caller.h"

#include <yyjson.h>

#define SL_JWT_MAX_BYTES 8192   /* a longer token is refused unread */

struct sl_jwk;

/* What a token must satisfy, from sluice.http.auth (all NULL-terminated). */
struct sl_jwt_rules {
	char *const *issuers;
	char *const *audiences;
	char *const *algorithms;
	char *const *token_types;
	char *const *groups_claims;
	uint32_t skew_s;
};

/* A token read but not verified: nothing in it is trusted yet. */
struct sl_jwt {
	yyjson_doc *header, *claims;
	const char *alg;           /* always set */
	const char *kid, *typ;     /* NULL when absent */
	const char *iss;           /* NULL when absent or not a string */
};

/* Whether token has the shape of a JWS (three parts), as opposed to an
 * opaque token that introspection may know. */
bool sl_jwt_looks_like(const char *token, size_t len);
/* Decodes token's header and claims into *t. False (err says what, *t
 * needs no dispose): not a JWS compact token with JSON header and claims,
 * over SL_JWT_MAX_BYTES, a JWE, an unsupported critical header. */
bool sl_jwt_read(const char *token, size_t len, struct sl_jwt *t, struct sl_err *err);
void sl_jwt_dispose(struct sl_jwt *t);
/* Whether the token's algorithm is allowed by r (checked before any key is
 * looked up or fetched). */
bool sl_jwt_alg_allowed(const struct sl_jwt *t, const struct sl_jwt_rules *r);
/* The signature of token under key, then every claim rule at now_s (Unix
 * seconds). True: *who is a new caller (method "jwt", expires_ms from exp).
 * False: err says which check failed. */
bool sl_jwt_verify(const struct sl_jwt *t, const char *token, size_t len, const struct sl_jwk *key,
		   const struct sl_jwt_rules *r, int64_t now_s, struct sl_caller **who, struct sl_err *err);

#endif

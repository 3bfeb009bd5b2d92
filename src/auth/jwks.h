/*
 * The authorization servers' signing keys: a JWK Set (RFC 7517 §5) read
 * into keys sluice can verify with, and, per configured issuer, the set
 * fetched and kept fresh on the loop (the key set's URL configured, or
 * `jwks_uri` from the issuer's RFC 8414 metadata, else its OpenID
 * configuration).
 *
 * Bounds (sluice.http.auth.jwks): at most maxKeys keys per issuer; one
 * fetch per issuer per minRefreshSeconds, whatever the tokens ask for
 * (an unknown kid fetches again only then); a set older than maxAgeSeconds
 * is fetched again on its next use, the old one serving meanwhile; every
 * answer at most maxDocumentBytes, every request at most fetchTimeoutMs.
 *
 * API:
 *   sl_jwks_new(fetcher, &cfg->http.auth, on_ready, arg, &j);
 *   switch (sl_jwks_find(j, iss, kid, alg, &key, &err)) {
 *   case SL_JWKS_FOUND:       key verifies the token (valid until the next call)
 *   case SL_JWKS_PENDING:     a fetch runs: on_ready(arg) once it ended, ask again
 *   case SL_JWKS_NO_KEY:      the fresh set has no key for it: 401
 *   case SL_JWKS_UNAVAILABLE: no set could be fetched: 503, err says why
 *   }
 */
#ifndef SL_AUTH_JWKS_H
#define SL_AUTH_JWKS_H

#include "auth/jose.h"
#include "config/config.h"
#include "event/fetch.h"

struct sl_jwk {
	char *kid;                 /* NULL: the set gave none */
	char *alg;                 /* the key's own "alg", or NULL */
	cjose_jwk_kty_t kty;       /* RSA or EC: symmetric keys are never read */
	int curve;                 /* EC: CJOSE_JWK_EC_P_256 ... */
	size_t bits;
	cjose_jwk_t *key;
};

struct sl_jwk_set {
	struct sl_jwk *keys;
	size_t n;
};

/* Reads a JWK Set: public signing keys only (an "oct" key, a key with
 * private parts, a key whose "use" is not "sig" or of a type libcjose
 * cannot read is skipped), the first max_keys of them. Fails when json is
 * not a set or keeps no key. */
int sl_jwk_set_parse(const char *json, size_t len, size_t max_keys, struct sl_jwk_set *out,
		     struct sl_err *err) SL_MUST_USE;
void sl_jwk_set_dispose(struct sl_jwk_set *s);
/* The key that checks a token with this kid and alg: the one with that kid
 * (and fitting alg); without a kid, the only key of the set that fits alg.
 * NULL: none. */
const struct sl_jwk *sl_jwk_set_find(const struct sl_jwk_set *s, const char *kid, const char *alg);
/* The key's type (and size, and curve) is the one alg is for, and its own
 * "alg", if any, is alg. */
bool sl_jwk_fits(const struct sl_jwk *k, const char *alg);

struct sl_jwks;

enum sl_jwks_result { SL_JWKS_FOUND, SL_JWKS_PENDING, SL_JWKS_NO_KEY, SL_JWKS_UNAVAILABLE };

/* Key sets for cfg's authorization servers, fetched through f (borrowed;
 * free it before j: that drops the answers still due to j). ready(arg)
 * runs from the loop whenever an issuer's fetching ended. */
struct sl_jwks *sl_jwks_new(struct sl_fetcher *f, const struct sl_auth_config *cfg,
			    void (*ready)(void *arg), void *arg);
void sl_jwks_free(struct sl_jwks *j);
/* See above. issuer must be one of the configured ones. */
enum sl_jwks_result sl_jwks_find(struct sl_jwks *j, const char *issuer, const char *kid,
				 const char *alg, const struct sl_jwk **key, struct sl_err *err);
/* Key set (and metadata) requests sent so far, for tests and logs. */
uint64_t sl_jwks_fetches(const struct sl_jwks *j);

/* An RFC 8414 / RFC 9728 well-known URL: suffix ("oauth-authorization-server")
 * inserted between the origin and the path of url. */
char *sl_well_known_url(const char *url, const char *suffix);

#endif

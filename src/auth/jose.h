/*
 * libcjose (JWS, JWK), loaded on first use like libcurl (event/curl.h):
 * linked, it and OpenSSL's libcrypto add about 1.5 MiB of resident pages
 * to every gateway (measured with `ps -o rss` of an idle `serve --http`),
 * for a feature only configurations with an OAuth resource server use.
 * sl_auth_new loads it when sluice.http.auth.resource is set.
 *
 *   if (!sl_jose_load("sluice.http.auth", &err)) fail with err.msg;
 *   cjose_jws_t *jws = sl_jose.jws_import(token, len, &cerr);
 */
#ifndef SL_AUTH_JOSE_H
#define SL_AUTH_JOSE_H

#include "core/common.h"

#include <cjose/cjose.h>

/* Every libcjose function sluice calls, without its cjose_ prefix. */
#define SL_JOSE_FUNCTIONS(X)                                                      \
	X(jws_import) X(jws_get_protected) X(jws_get_plaintext) X(jws_verify)     \
	X(jws_release) X(header_get) X(jwk_import) X(jwk_release) X(jwk_get_kty) \
	X(jwk_EC_get_curve) X(jwk_get_keysize)

struct sl_jose_api {
	void *lib;
#define SL_JOSE_MEMBER(f) __typeof__(cjose_##f) *f;
	SL_JOSE_FUNCTIONS(SL_JOSE_MEMBER)
#undef SL_JOSE_MEMBER
};

extern struct sl_jose_api sl_jose;

/* Loads libcjose once. who names the feature in err. */
bool sl_jose_load(const char *who, struct sl_err *err);

#endif

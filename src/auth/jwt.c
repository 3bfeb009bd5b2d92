/*
 * JWT access tokens: see jwt.h. The header and claims are decoded here
 * (strict base64url, yyjson), so that every decision before the signature
 * (length, shape, algorithm, issuer, key) is made on sluice's own reading;
 * libcjose checks the signature only.
 */
#include "auth/jwt.h"
#include "auth/claims.h"
#include "auth/jose.h"
#include "auth/jwks.h"
#include "core/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int b64url_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/* Unpadded base64url (RFC 7515 §2): its alphabet, and a length base64 can
 * have (never 1 more than a multiple of 4). */
static bool b64url_valid(const char *s, size_t n)
{
	if (n % 4 == 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (b64url_value((unsigned char)s[i]) < 0)
			return false;
	return true;
}

/* Unpadded base64url (RFC 7515 §2) into a new NUL-terminated buffer; NULL
 * on any other character or an impossible length. */
static char *b64url_decode(const char *s, size_t n, size_t *out_len)
{
	char *out;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (!b64url_valid(s, n))
		return NULL;
	out = sl_alloc(n * 3 / 4 + 2);
	for (size_t i = 0; i < n; i++) {
		acc = (acc << 6) | (uint32_t)b64url_value((unsigned char)s[i]);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

static yyjson_doc *decode_object(const char *s, size_t n)
{
	size_t len;
	char *raw = b64url_decode(s, n, &len);
	yyjson_doc *doc;

	if (!raw)
		return NULL;
	doc = sl_json_read(raw, len, 0, NULL);
	free(raw);
	if (doc && !yyjson_is_obj(yyjson_doc_get_root(doc))) {
		yyjson_doc_free(doc);
		return NULL;
	}
	return doc;
}

static const char *str_member(yyjson_doc *d, const char *name)
{
	return yyjson_get_str(yyjson_obj_get(yyjson_doc_get_root(d), name));
}

bool sl_jwt_looks_like(const char *token, size_t len)
{
	size_t dots = 0;
	for (size_t i = 0; i < len; i++)
		dots += token[i] == '.';
	return dots == 2;
}

bool sl_jwt_read(const char *token, size_t len, struct sl_jwt *t, struct sl_err *err)
{
	const char *d1, *d2;
	size_t dots = 0;

	memset(t, 0, sizeof(*t));
	if (len > SL_JWT_MAX_BYTES) {
		sl_err_set(err, "the token is longer than %u bytes", SL_JWT_MAX_BYTES);
		return false;
	}
	for (size_t i = 0; i < len; i++)
		dots += token[i] == '.';
	if (dots == 4) {
		sl_err_set(err, "encrypted tokens (JWE) are not accepted");
		return false;
	}
	if (dots != 2) {
		sl_err_set(err, "the token is not a JWT");
		return false;
	}
	d1 = memchr(token, '.', len);
	d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token));
	if (d1 == token || d2 == d1 + 1 || d2 + 1 == token + len) {
		sl_err_set(err, "the token has an empty part");
		return false;
	}
	if (!(t->header = decode_object(token, (size_t)(d1 - token)))) {
		sl_err_set(err, "the token's header is not base64url JSON");
		return false;
	}
	if (!(t->claims = decode_object(d1 + 1, (size_t)(d2 - d1 - 1)))) {
		sl_err_set(err, "the token's claims are not base64url JSON");
		goto fail;
	}
	/* The signature too, before libcjose sees it: its decoder asserts
	 * (aborting the process) on a length no base64 can have. */
	if (!b64url_valid(d2 + 1, len - (size_t)(d2 + 1 - token))) {
		sl_err_set(err, "the token's signature is not base64url");
		goto fail;
	}
	if (!(t->alg = str_member(t->header, "alg"))) {
		sl_err_set(err, "the token's header has no algorithm");
		goto fail;
	}
	/* RFC 7515 §4.1.11: an extension sluice does not know must be
	 * understood, and it knows none. */
	if (yyjson_obj_get(yyjson_doc_get_root(t->header), "crit")) {
		sl_err_set(err, "the token has critical header parameters");
		goto fail;
	}
	t->kid = str_member(t->header, "kid");
	t->typ = str_member(t->header, "typ");
	t->iss = str_member(t->claims, "iss");
	return true;
fail:
	sl_jwt_dispose(t);
	return false;
}

void sl_jwt_dispose(struct sl_jwt *t)
{
	yyjson_doc_free(t->header);
	yyjson_doc_free(t->claims);
	memset(t, 0, sizeof(*t));
}

static bool in_list(char *const *l, const char *s, bool nocase)
{
	for (size_t i = 0; l && l[i]; i++)
		if (nocase ? !strcasecmp(l[i], s) : !strcmp(l[i], s))
			return true;
	return false;
}

bool sl_jwt_alg_allowed(const struct sl_jwt *t, const struct sl_jwt_rules *r)
{
	return in_list(r->algorithms, t->alg, false);
}

static bool audience_ok(yyjson_val *aud, char *const *audiences)
{
	yyjson_val *v;
	size_t i, max;

	if (yyjson_is_str(aud))
		return in_list(audiences, yyjson_get_str(aud), false);
	if (!yyjson_is_arr(aud))
		return false;
	yyjson_arr_foreach(aud, i, max, v)
		if (yyjson_is_str(v) && in_list(audiences, yyjson_get_str(v), false))
			return true;
	return false;
}

/* A NumericDate (RFC 7519 §2): a JSON number of seconds. */
static bool numeric_date(yyjson_val *v, int64_t *out)
{
	double d;
	if (!yyjson_is_num(v))
		return false;
	d = yyjson_get_num(v);
	if (d != d || d < 0 || d > 1e13)
		return false;
	*out = (int64_t)d;
	return true;
}

static bool signature_ok(const char *token, size_t len, const struct sl_jwk *key)
{
	cjose_err err;
	cjose_jws_t *jws = sl_jose.jws_import(token, len, &err);
	bool ok;

	if (!jws)
		return false;
	ok = sl_jose.jws_verify(jws, key->key, &err);
	sl_jose.jws_release(jws);
	return ok;
}

bool sl_jwt_verify(const struct sl_jwt *t, const char *token, size_t len, const struct sl_jwk *key,
		   const struct sl_jwt_rules *r, int64_t now_s, struct sl_caller **who, struct sl_err *err)
{
	yyjson_val *claims = yyjson_doc_get_root(t->claims);
	int64_t exp, at;
	const char *sub;
	struct sl_err claim;
	struct sl_caller *c;

	/* The algorithm is the allow-list's and the key's, never the token's
	 * alone: an RSA key never checks an HMAC ("HS256" signed with the
	 * public key as secret), and "none" is in no list. */
	if (!sl_jwt_alg_allowed(t, r)) {
		sl_err_set(err, "the token's algorithm is not accepted");
		return false;
	}
	if (!sl_jwk_fits(key, t->alg)) {
		sl_err_set(err, "the token's algorithm does not fit its key");
		return false;
	}
	if (!signature_ok(token, len, key)) {
		sl_err_set(err, "the token's signature does not verify");
		return false;
	}
	if (!t->typ || !in_list(r->token_types, t->typ, true)) {
		sl_err_set(err, "the token is not an access token (typ)");
		return false;
	}
	if (!t->iss || !in_list(r->issuers, t->iss, false)) {
		sl_err_set(err, "the token's issuer is not accepted");
		return false;
	}
	if (!audience_ok(yyjson_obj_get(claims, "aud"), r->audiences)) {
		sl_err_set(err, "the token is not for this resource (aud)");
		return false;
	}
	if (!numeric_date(yyjson_obj_get(claims, "exp"), &exp)) {
		sl_err_set(err, "the token has no expiry (exp)");
		return false;
	}
	if (now_s > exp + (int64_t)r->skew_s) {
		sl_err_set(err, "the token has expired");
		return false;
	}
	if (yyjson_obj_get(claims, "nbf") &&
	    (!numeric_date(yyjson_obj_get(claims, "nbf"), &at) || at > now_s + (int64_t)r->skew_s)) {
		sl_err_set(err, "the token is not valid yet (nbf)");
		return false;
	}
	if (yyjson_obj_get(claims, "iat") &&
	    (!numeric_date(yyjson_obj_get(claims, "iat"), &at) || at > now_s + (int64_t)r->skew_s)) {
		sl_err_set(err, "the token is issued in the future (iat)");
		return false;
	}
	if (!(sub = yyjson_get_str(yyjson_obj_get(claims, "sub"))) || !*sub) {
		sl_err_set(err, "the token names no subject (sub)");
		return false;
	}
	/* The claims as every method reads them (auth/claims.h): a claim of
	 * the wrong type, or over the bounds, refuses the token. */
	if (sl_caller_from_claims("jwt", claims, (const char *const *)r->groups_claims, &c, &claim) < 0) {
		sl_err_set(err, "the token's %s", claim.msg);
		return false;
	}
	*who = c;
	return true;
}

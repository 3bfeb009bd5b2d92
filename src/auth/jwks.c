/*
 * Signing keys: see jwks.h. Per issuer, one small state machine: IDLE, or
 * fetching its RFC 8414 metadata, then its OpenID configuration (when the
 * key set's URL is not known yet), then the key set. Every outcome is
 * remembered with the time of the attempt, which is what bounds the
 * fetches: a token asks for a fetch, it happens only if the last attempt
 * is minRefreshSeconds old.
 */
#include "auth/jwks.h"
#include "core/json.h"
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a key set ------------------------------------------------------------------ */

static void key_dispose(struct sl_jwk *k)
{
	free(k->kid);
	free(k->alg);
	if (k->key)
		sl_jose.jwk_release(k->key);
}

/* One member of "keys" into *k; false: skipped. */
static bool key_read(yyjson_val *o, struct sl_jwk *k)
{
	const char *kty = sl_json_str(o, "kty"), *use = sl_json_str(o, "use");
	yyjson_val *ops = yyjson_obj_get(o, "key_ops");
	cjose_err cerr;
	char *text;
	size_t len;

	memset(k, 0, sizeof(*k));
	if (!kty || (strcmp(kty, "RSA") && strcmp(kty, "EC")))
		return false;
	if (use && strcmp(use, "sig"))
		return false;
	if (ops) {
		yyjson_val *v;
		size_t i, max;
		bool verify = false;
		if (!yyjson_is_arr(ops))
			return false;
		yyjson_arr_foreach(ops, i, max, v)
			verify |= yyjson_equals_str(v, "verify");
		if (!verify)
			return false;
	}
	/* A published private key is a mistake of the server's: a key anyone
	 * holds proves nothing. */
	if (yyjson_obj_get(o, "d"))
		return false;
	if (!(text = yyjson_val_write(o, 0, &len)))
		return false;
	k->key = sl_jose.jwk_import(text, len, &cerr);
	free(text);
	if (!k->key)
		return false;
	k->kty = sl_jose.jwk_get_kty(k->key, &cerr);
	k->bits = sl_jose.jwk_get_keysize(k->key, &cerr);
	if (k->kty == CJOSE_JWK_KTY_EC)
		k->curve = (int)sl_jose.jwk_EC_get_curve(k->key, &cerr);
	if (k->kty != CJOSE_JWK_KTY_RSA && k->kty != CJOSE_JWK_KTY_EC) {
		key_dispose(k);
		return false;
	}
	if (sl_json_str(o, "kid"))
		k->kid = sl_strdup(sl_json_str(o, "kid"));
	if (sl_json_str(o, "alg"))
		k->alg = sl_strdup(sl_json_str(o, "alg"));
	return true;
}

int sl_jwk_set_parse(const char *json, size_t len, size_t max_keys, struct sl_jwk_set *out,
		     struct sl_err *err)
{
	yyjson_doc *doc = sl_json_read(json, len, 0, NULL);
	yyjson_val *keys, *o;
	size_t i, max;
	int rc = SL_OK;

	memset(out, 0, sizeof(*out));
	keys = doc ? yyjson_obj_get(yyjson_doc_get_root(doc), "keys") : NULL;
	if (!yyjson_is_arr(keys)) {
		sl_err_set(err, "not a JWK Set (no \"keys\" array)");
		rc = SL_ERR_INVALID;
		goto out;
	}
	out->keys = sl_alloc((max_keys < yyjson_arr_size(keys) ? max_keys : yyjson_arr_size(keys)) *
			     sizeof(*out->keys) + 1);
	yyjson_arr_foreach(keys, i, max, o) {
		if (out->n == max_keys)
			break;
		if (yyjson_is_obj(o) && key_read(o, &out->keys[out->n]))
			out->n++;
	}
	if (!out->n) {
		sl_jwk_set_dispose(out);
		sl_err_set(err, "the key set has no public RSA or EC signing key");
		rc = SL_ERR_INVALID;
	}
out:
	yyjson_doc_free(doc);
	return rc;
}

void sl_jwk_set_dispose(struct sl_jwk_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		key_dispose(&s->keys[i]);
	free(s->keys);
	memset(s, 0, sizeof(*s));
}

bool sl_jwk_fits(const struct sl_jwk *k, const char *alg)
{
	if (k->alg && strcmp(k->alg, alg))
		return false;
	if ((alg[0] == 'R' || alg[0] == 'P') && alg[1] == 'S')
		return k->kty == CJOSE_JWK_KTY_RSA && k->bits >= 2048;
	if (!strcmp(alg, "ES256"))
		return k->kty == CJOSE_JWK_KTY_EC && k->curve == CJOSE_JWK_EC_P_256;
	if (!strcmp(alg, "ES384"))
		return k->kty == CJOSE_JWK_KTY_EC && k->curve == CJOSE_JWK_EC_P_384;
	if (!strcmp(alg, "ES512"))
		return k->kty == CJOSE_JWK_KTY_EC && k->curve == CJOSE_JWK_EC_P_521;
	return false;
}

const struct sl_jwk *sl_jwk_set_find(const struct sl_jwk_set *s, const char *kid, const char *alg)
{
	const struct sl_jwk *only = NULL;

	for (size_t i = 0; i < s->n; i++) {
		const struct sl_jwk *k = &s->keys[i];
		if (kid) {
			if (k->kid && !strcmp(k->kid, kid) && sl_jwk_fits(k, alg))
				return k;
		} else if (sl_jwk_fits(k, alg)) {
			if (only)
				return NULL; /* ambiguous: a token must say which */
			only = k;
		}
	}
	return only;
}

char *sl_well_known_url(const char *url, const char *suffix)
{
	const char *host = strstr(url, "://");
	const char *path;
	size_t plen;

	host = host ? host + 3 : url;
	path = host + strcspn(host, "/?#");
	plen = strcspn(path, "?#");
	/* RFC 8414 §3.1: a terminating slash is removed before inserting. */
	while (plen && path[plen - 1] == '/')
		plen--;
	return sl_printf("%.*s/.well-known/%s%.*s", (int)(path - url), url, suffix, (int)plen, path);
}

/* ---- fetching, per issuer ---------------------------------------------------------------- */

enum step { IDLE, META_OAUTH, META_OIDC, KEYS };

struct issuer {
	struct sl_jwks *j;
	const char *iss;             /* the configuration's */
	char *jwks_uri;              /* configured or discovered; NULL: discover */
	bool configured_uri;
	enum step step;
	struct sl_jwk_set set;
	bool have;                   /* set holds a fetched set */
	uint64_t fetched_ms;         /* the set's arrival (monotonic) */
	uint64_t tried_ms;           /* the last attempt's start; 0: none */
	char error[200];             /* the last attempt's failure; "": none */
};

struct sl_jwks {
	struct sl_fetcher *f;
	const struct sl_auth_config *cfg;
	struct issuer *issuers;
	size_t n;
	void (*ready)(void *arg);
	void *arg;
	uint64_t fetches;
};

static void fetch_step(struct issuer *is);

static void fail(struct issuer *is, const char *fmt, ...) SL_PRINTF(2, 3);
static void fail(struct issuer *is, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(is->error, sizeof(is->error), fmt, ap);
	va_end(ap);
	sl_log(SL_LOG_WARN, "auth: the keys of %s: %s", is->iss, is->error);
	if (!is->configured_uri) {
		/* Discover again next time: the metadata may have moved. */
		free(is->jwks_uri);
		is->jwks_uri = NULL;
	}
	is->step = IDLE;
}

static void on_keys(struct issuer *is, const struct sl_fetch_result *res)
{
	struct sl_jwk_set set;
	struct sl_err err;

	if (res->error) {
		fail(is, "%s: %s", is->jwks_uri, res->error);
		return;
	}
	if (res->status != 200) {
		fail(is, "%s answered HTTP %ld", is->jwks_uri, res->status);
		return;
	}
	if (sl_jwk_set_parse(res->body, res->len, is->j->cfg->jwks.max_keys, &set, &err) < 0) {
		fail(is, "%s: %s", is->jwks_uri, err.msg);
		return;
	}
	sl_jwk_set_dispose(&is->set);
	is->set = set;
	is->have = true;
	is->fetched_ms = sl_now_ms();
	is->error[0] = '\0';
	is->step = IDLE;
	sl_log(SL_LOG_INFO, "auth: %zu signing key%s of %s from %s", set.n, set.n == 1 ? "" : "s",
	       is->iss, is->jwks_uri);
}

/* RFC 8414 §3.3: the metadata's issuer is the one asked about, exactly,
 * and the key set's URL obeys the rule every configured URL does. */
static void on_metadata(struct issuer *is, const struct sl_fetch_result *res)
{
	yyjson_doc *doc = NULL;
	const char *iss, *uri;
	bool oauth = is->step == META_OAUTH;

	if (res->error || res->status != 200 ||
	    !(doc = sl_json_read(res->body, res->len, 0, NULL)) ||
	    !yyjson_is_obj(yyjson_doc_get_root(doc))) {
		yyjson_doc_free(doc);
		if (oauth) {
			is->step = META_OIDC;
			fetch_step(is);
		} else {
			fail(is, "no authorization server metadata (RFC 8414 or OpenID "
			     "configuration) could be read");
		}
		return;
	}
	iss = sl_json_str(yyjson_doc_get_root(doc), "issuer");
	uri = sl_json_str(yyjson_doc_get_root(doc), "jwks_uri");
	if (!iss || strcmp(iss, is->iss))
		fail(is, "its metadata names another issuer");
	else if (!uri || (strncmp(uri, "https://", 8) &&
			  strncmp(uri, "http://127.0.0.1", 16) && strncmp(uri, "http://localhost", 16) &&
			  strncmp(uri, "http://[::1]", 12)))
		fail(is, "its metadata has no https jwks_uri");
	else {
		free(is->jwks_uri);
		is->jwks_uri = sl_strdup(uri);
		is->step = KEYS;
		fetch_step(is);
	}
	yyjson_doc_free(doc);
}

static void on_fetched(void *arg, const struct sl_fetch_result *res)
{
	struct issuer *is = arg;

	if (is->step == KEYS)
		on_keys(is, res);
	else
		on_metadata(is, res);
	if (is->step == IDLE)
		is->j->ready(is->j->arg);
}

static void fetch_step(struct issuer *is)
{
	const struct sl_auth_config *cfg = is->j->cfg;
	struct sl_fetch_req q = { .max_bytes = cfg->max_document_bytes,
				  .timeout_ms = cfg->fetch_timeout_ms };
	char *url;

	if (is->step == KEYS)
		url = sl_strdup(is->jwks_uri);
	else if (is->step == META_OAUTH)
		url = sl_well_known_url(is->iss, "oauth-authorization-server");
	else
		url = sl_printf("%s%s.well-known/openid-configuration", is->iss,
				is->iss[strlen(is->iss) - 1] == '/' ? "" : "/");
	q.url = url;
	is->j->fetches++;
	sl_fetch_start(is->j->f, &q, on_fetched, is);
	free(url);
}

static void start(struct issuer *is)
{
	is->tried_ms = sl_now_ms();
	is->step = is->jwks_uri ? KEYS : META_OAUTH;
	fetch_step(is);
}

struct sl_jwks *sl_jwks_new(struct sl_fetcher *f, const struct sl_auth_config *cfg,
			    void (*ready)(void *arg), void *arg)
{
	struct sl_jwks *j = sl_alloc(sizeof(*j));

	j->f = f;
	j->cfg = cfg;
	j->ready = ready;
	j->arg = arg;
	while (cfg->authorization_servers[j->n])
		j->n++;
	j->issuers = sl_alloc(j->n * sizeof(*j->issuers));
	for (size_t i = 0; i < j->n; i++) {
		struct issuer *is = &j->issuers[i];
		is->j = j;
		is->iss = cfg->authorization_servers[i];
		if (cfg->jwks_uri) {
			is->jwks_uri = sl_strdup(cfg->jwks_uri);
			is->configured_uri = true;
		}
	}
	return j;
}

void sl_jwks_free(struct sl_jwks *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++) {
		sl_jwk_set_dispose(&j->issuers[i].set);
		free(j->issuers[i].jwks_uri);
	}
	free(j->issuers);
	free(j);
}

uint64_t sl_jwks_fetches(const struct sl_jwks *j)
{
	return j->fetches;
}

enum sl_jwks_result sl_jwks_find(struct sl_jwks *j, const char *issuer, const char *kid,
				 const char *alg, const struct sl_jwk **key, struct sl_err *err)
{
	struct issuer *is = NULL;
	uint64_t now = sl_now_ms(), gap = (uint64_t)j->cfg->jwks.min_refresh_s * 1000u;
	bool may_fetch;

	for (size_t i = 0; i < j->n && !is; i++)
		if (!strcmp(j->issuers[i].iss, issuer))
			is = &j->issuers[i];
	if (!is) {
		sl_err_set(err, "the token's issuer is not accepted");
		return SL_JWKS_NO_KEY;
	}
	may_fetch = is->step == IDLE && (!is->tried_ms || now - is->tried_ms >= gap);
	if (is->have && (*key = sl_jwk_set_find(&is->set, kid, alg))) {
		/* Still good; past its age, fetched again behind the scenes. */
		if (may_fetch && now - is->fetched_ms >= (uint64_t)j->cfg->jwks.max_age_s * 1000u)
			start(is);
		return SL_JWKS_FOUND;
	}
	if (is->step != IDLE)
		return SL_JWKS_PENDING;
	if (may_fetch) {
		start(is);
		return SL_JWKS_PENDING;
	}
	if (!is->have) {
		sl_err_set(err, "the authorization server's keys could not be fetched (%s)",
			 is->error);
		return SL_JWKS_UNAVAILABLE;
	}
	sl_err_set(err, kid ? "the token's key (kid) is not in the issuer's key set"
			     : "the token names no key (kid) and its issuer has several");
	return SL_JWKS_NO_KEY;
}

/*
 * Authentication: see auth.h. This file dispatches: static secrets here
 * (each a constant-time comparison against every configured secret, all of
 * them compared, so that the time taken says nothing of which one, or how
 * much of one, matched), then OAuth access tokens: the remembered verdict
 * of a token seen before, else a JWT (jwt.c with jwks.c's keys), else an
 * opaque token for introspection (introspect.c).
 */
#include "auth/auth.h"
#include "auth/introspect.h"
#include "auth/jwks.h"
#include "auth/jwt.h"
#include "auth/metadata.h"
#include "auth/verdicts.h"
#include "core/digest.h"
#include "core/log.h"
#include "event/fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct sl_auth {
	uv_loop_t *loop;
	const struct sl_http_config *cfg;
	/* SHA-256 (hex) of bearerToken ("" when none) and of each of
	 * auth.tokens, made once: a request's token is hashed once and
	 * compared with these. */
	char shared_hash[SL_SHA256_HEX];
	char (*token_hash)[SL_SHA256_HEX];
	/* OAuth (cfg->auth.resource set); all NULL otherwise. */
	struct sl_fetcher *fetcher;
	struct sl_jwks *jwks;
	struct sl_introspect *intro;   /* NULL: no introspection endpoint */
	struct sl_verdicts jwts;       /* checked JWTs, by SHA-256 */
	struct sl_jwt_rules rules;
	char *prm_url;
	char *scope_hint;              /* the challenge's scope="..."; NULL: none */
	void (*ready)(void *arg);
	void *ready_arg;
};

static char *const default_algorithms[] = { "RS256", "ES256", "PS256", NULL };
static char *const default_types[] = { "at+jwt", "application/at+jwt", NULL };
static char *const default_groups[] = { "groups", "roles", NULL };

static void on_fetch_ended(void *arg)
{
	struct sl_auth *a = arg;
	if (a->ready)
		a->ready(a->ready_arg);
}

static char *join(char *const *l)
{
	size_t n = 0;
	char *s, *p;

	for (size_t i = 0; l[i]; i++)
		n += strlen(l[i]) + 1;
	p = s = sl_alloc(n + 1);
	for (size_t i = 0; l[i]; i++)
		p += sprintf(p, "%s%s", i ? " " : "", l[i]);
	return s;
}

static int oauth_start(struct sl_auth *a, struct sl_err *err)
{
	const struct sl_auth_config *ac = &a->cfg->auth;
	char **aud;
	int rc;

	if (!sl_jose_load("sluice.http.auth", err))
		return SL_ERR_INVALID;
	if ((rc = sl_fetcher_new(a->loop, "sluice.http.auth", &a->fetcher, err)) < 0)
		return rc;
	a->jwks = sl_jwks_new(a->fetcher, ac, on_fetch_ended, a);
	if (ac->introspection.endpoint)
		a->intro = sl_introspect_new(a->fetcher, ac, on_fetch_ended, a);
	sl_verdicts_init(&a->jwts, ac->cache_entries);
	a->rules.issuers = ac->authorization_servers;
	if (ac->audiences && ac->audiences[0]) {
		a->rules.audiences = ac->audiences;
	} else {
		aud = sl_alloc(2 * sizeof(char *));
		aud[0] = ac->resource;
		a->rules.audiences = aud;
	}
	a->rules.algorithms = ac->algorithms ? ac->algorithms : default_algorithms;
	a->rules.token_types = ac->token_types ? ac->token_types : default_types;
	a->rules.groups_claims = ac->groups_claims ? ac->groups_claims : default_groups;
	a->rules.skew_s = ac->clock_skew_s;
	a->prm_url = sl_prm_url(ac->resource);
	/* MCP authorization, scope selection: the scopes a request needs. */
	if (ac->required_scopes && ac->required_scopes[0])
		a->scope_hint = join(ac->required_scopes);
	else if (ac->scopes_supported && ac->scopes_supported[0])
		a->scope_hint = join(ac->scopes_supported);
	return SL_OK;
}

int sl_auth_new(uv_loop_t *loop, const struct sl_http_config *cfg, struct sl_auth **out,
		struct sl_err *err)
{
	struct sl_auth *a = sl_alloc(sizeof(*a));
	int rc;

	a->loop = loop;
	a->cfg = cfg;
	if (cfg->bearer_token)
		sl_sha256_hex(cfg->bearer_token, strlen(cfg->bearer_token), a->shared_hash);
	a->token_hash = sl_alloc((cfg->auth.ntokens + 1) * sizeof(*a->token_hash));
	for (size_t i = 0; i < cfg->auth.ntokens; i++)
		sl_sha256_hex(cfg->auth.tokens[i].token, strlen(cfg->auth.tokens[i].token),
			      a->token_hash[i]);
	if (cfg->auth.resource && (rc = oauth_start(a, err)) < 0) {
		sl_auth_free(a);
		return rc;
	}
	*out = a;
	return SL_OK;
}

void sl_auth_free(struct sl_auth *a)
{
	if (!a)
		return;
	/* The fetcher first: it drops the answers still due to the others. */
	if (a->fetcher)
		sl_fetcher_free(a->fetcher);
	sl_jwks_free(a->jwks);
	sl_introspect_free(a->intro);
	if (a->fetcher) {
		sl_verdicts_dispose(&a->jwts);
		if (a->rules.audiences != a->cfg->auth.audiences)
			free((void *)a->rules.audiences);
	}
	free(a->prm_url);
	free(a->scope_hint);
	free(a->token_hash);
	free(a);
}

void sl_auth_on_ready(struct sl_auth *a, void (*ready)(void *arg), void *arg)
{
	a->ready = ready;
	a->ready_arg = arg;
}

bool sl_auth_required(const struct sl_auth *a)
{
	return a->cfg->bearer_token || a->cfg->auth.ntokens || a->cfg->auth.resource;
}

/* Two SHA-256 digests equal, in constant time: digests are what is
 * compared, so neither the length nor the content of a secret leaks. */
static bool same_hash(const char *a, const char *b)
{
	unsigned char diff = 0;
	for (size_t i = 0; i < SL_SHA256_HEX; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

static struct sl_caller *token_caller(const struct sl_auth_token *t)
{
	struct sl_caller *c = sl_caller_new("token");
	sl_caller_set_subject(c, NULL, t->subject);
	for (size_t i = 0; t->groups && t->groups[i]; i++)
		sl_caller_add_group(c, t->groups[i]);
	for (size_t i = 0; t->scopes && t->scopes[i]; i++)
		sl_caller_add_scope(c, t->scopes[i]);
	return c;
}

/* The static secrets' verdict: true with *who when one matched. */
static bool static_token(struct sl_auth *a, const char *hash, struct sl_caller **who)
{
	const struct sl_http_config *cfg = a->cfg;
	const struct sl_auth_token *hit = NULL;
	bool shared = false;

	if (cfg->bearer_token)
		shared = same_hash(hash, a->shared_hash);
	for (size_t i = 0; i < cfg->auth.ntokens; i++)
		if (same_hash(hash, a->token_hash[i]) && !hit)
			hit = &cfg->auth.tokens[i];
	if (hit)
		*who = token_caller(hit);
	else if (shared)
		*who = sl_caller_new("token");
	return hit || shared;
}

static enum sl_auth_verdict deny(struct sl_auth_denial *why, unsigned status, const char *error,
				 const char *text)
{
	why->status = status;
	why->error = error;
	/* The description is cut at its size: a message longer than that
	 * (an issuer's URL inside it) stays readable in its first part. */
	snprintf(why->description, sizeof(why->description), "%.*s",
		 (int)sizeof(why->description) - 1, text);
	return status == 503 ? SL_AUTH_UNAVAILABLE : SL_AUTH_DENIED;
}

/* A JWT: read, its issuer's key found (or fetched), checked. */
static enum sl_auth_verdict check_jwt(struct sl_auth *a, const char *token, size_t len,
				      const char *hash, struct sl_caller **who,
				      struct sl_auth_denial *why)
{
	struct sl_jwt t;
	const struct sl_jwk *key = NULL;
	enum sl_auth_verdict v;
	struct sl_err err;
	int64_t now = (int64_t)time(NULL);

	if (!sl_jwt_read(token, len, &t, &err))
		return deny(why, 401, "invalid_token", err.msg);
	/* Before any key is looked up or fetched: a token from another issuer
	 * or with a refused algorithm costs the authorization server nothing. */
	if (!sl_jwt_alg_allowed(&t, &a->rules)) {
		v = deny(why, 401, "invalid_token", "the token's algorithm is not accepted");
		goto out;
	}
	if (!t.iss || !a->rules.issuers) {
		v = deny(why, 401, "invalid_token", "the token's issuer is not accepted");
		goto out;
	}
	switch (sl_jwks_find(a->jwks, t.iss, t.kid, t.alg, &key, &err)) {
	case SL_JWKS_FOUND:
		break;
	case SL_JWKS_PENDING:
		v = SL_AUTH_PENDING;
		goto out;
	case SL_JWKS_NO_KEY:
		v = deny(why, 401, "invalid_token", err.msg);
		goto out;
	case SL_JWKS_UNAVAILABLE:
		v = deny(why, 503, NULL, err.msg);
		goto out;
	}
	if (!sl_jwt_verify(&t, token, len, key, &a->rules, now, who, &err)) {
		v = deny(why, 401, "invalid_token", err.msg);
		goto out;
	}
	/* Remembered until it expires (exp, on the wall clock, turned into
	 * the monotonic clock the cache runs on). */
	if ((*who)->expires_ms > (uint64_t)now * 1000u)
		sl_verdicts_put(&a->jwts, hash, *who, SL_VERDICT_OK, NULL,
				sl_now_ms() + ((*who)->expires_ms - (uint64_t)now * 1000u));
	v = SL_AUTH_OK;
out:
	sl_jwt_dispose(&t);
	return v;
}

static bool has_required_scopes(const struct sl_auth *a, const struct sl_caller *c)
{
	char *const *need = a->cfg->auth.required_scopes;
	for (size_t i = 0; need && need[i]; i++)
		if (!sl_caller_has_scope(c, need[i]))
			return false;
	return true;
}

static enum sl_auth_verdict check_oauth(struct sl_auth *a, const char *token, size_t len,
					const char *hash, struct sl_caller **who,
					struct sl_auth_denial *why)
{
	struct sl_err err;
	const struct sl_verdict *seen;
	enum sl_auth_verdict v;

	if ((seen = sl_verdicts_get(&a->jwts, hash))) {
		*who = sl_caller_ref(seen->who);
		v = SL_AUTH_OK;
	} else if (sl_jwt_looks_like(token, len) || !a->intro) {
		v = check_jwt(a, token, len, hash, who, why);
	} else {
		v = sl_introspect_check(a->intro, token, hash, who, &err);
		if (v == SL_AUTH_DENIED || v == SL_AUTH_UNAVAILABLE)
			v = deny(why, v == SL_AUTH_DENIED ? 401 : 503,
				 v == SL_AUTH_DENIED ? "invalid_token" : NULL, err.msg);
	}
	if (v == SL_AUTH_OK && !has_required_scopes(a, *who)) {
		sl_caller_unref(*who);
		*who = NULL;
		return deny(why, 403, "insufficient_scope",
			    "the token lacks a scope this gateway requires");
	}
	return v;
}

enum sl_auth_verdict sl_auth_check(struct sl_auth *a, const char *authorization,
				   struct sl_caller **who, struct sl_auth_denial *why)
{
	char hash[SL_SHA256_HEX];
	const char *token;
	size_t len;
	enum sl_auth_verdict v;

	*who = NULL;
	memset(why, 0, sizeof(*why));
	if (!sl_auth_required(a))
		return SL_AUTH_OK;
	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0) {
		why->status = 401;
		snprintf(why->description, sizeof(why->description),
			 "a valid bearer token is required");
		return SL_AUTH_DENIED;
	}
	token = authorization + 7;
	while (*token == ' ')
		token++;
	len = strlen(token);
	if (len > SL_JWT_MAX_BYTES)
		return deny(why, 401, "invalid_token", "the bearer token is too long");
	sl_sha256_hex(token, len, hash);
	if (static_token(a, hash, who))
		return SL_AUTH_OK;
	if (!a->cfg->auth.resource)
		return deny(why, 401, "invalid_token", "the bearer token is not valid");
	v = check_oauth(a, token, len, hash, who, why);
	if (v == SL_AUTH_DENIED || v == SL_AUTH_UNAVAILABLE)
		sl_log(SL_LOG_DEBUG, "auth: refused a token: %s", why->description);
	return v;
}

/* A quoted-string of RFC 7235 from our own text: no quote, backslash or
 * control character can end it early. */
static void append_quoted(char **s, const char *name, const char *value)
{
	char *v = sl_strdup(value), *n;
	for (char *p = v; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	n = sl_printf("%s%s%s=\"%s\"", *s, **s ? ", " : "", name, v);
	free(*s);
	free(v);
	*s = n;
}

char *sl_auth_challenge(const struct sl_auth *a, const struct sl_auth_denial *why)
{
	char *s = sl_strdup("");
	char *out;

	/* RFC 9728 §5.1, MCP authorization: the metadata's URL, and the scopes
	 * to ask for; a denial of a sent token says why (RFC 6750 §3.1). */
	if (a->prm_url) {
		append_quoted(&s, "resource_metadata", a->prm_url);
		if (a->scope_hint)
			append_quoted(&s, "scope", a->scope_hint);
	} else {
		append_quoted(&s, "realm", "sluice");
	}
	if (why->error) {
		append_quoted(&s, "error", why->error);
		append_quoted(&s, "error_description", why->description);
	}
	out = sl_printf("Bearer %s", s);
	free(s);
	return out;
}

bool sl_auth_metadata_path(const struct sl_auth *a, const char *path)
{
	return a->cfg->auth.resource && sl_prm_path(a->cfg->auth.resource, path);
}

char *sl_auth_metadata(const struct sl_auth *a, size_t *len)
{
	return sl_prm_document(&a->cfg->auth, len);
}

uint64_t sl_auth_key_fetches(const struct sl_auth *a)
{
	return a->jwks ? sl_jwks_fetches(a->jwks) : 0;
}

/* Unit tests of src/auth/jwt.c, jwks.c (the key set, not the fetching),
 * metadata.c and verdicts.c: every rule of a JWT access token against a
 * fixed key set (tests/unit/jwt_fixture.h), the well-known URLs, the
 * Protected Resource Metadata, and a micro benchmark of a warm check. */
#include "unit.h"

#include "auth/jwks.h"
#include "auth/jwt.h"
#include "auth/metadata.h"
#include "auth/verdicts.h"
#include "config/config.h"
#include "jwt_fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *const issuers[] = { JWT_ISS, NULL };
static char *const audiences[] = { JWT_AUD, NULL };
static char *const algorithms[] = { "RS256", "ES256", "PS256", NULL };
static char *const types[] = { "at+jwt", "application/at+jwt", NULL };
static char *const groups[] = { "groups", "roles", NULL };
static const struct sl_jwt_rules rules = { issuers, audiences, algorithms, types, groups, 60 };

static bool keys(struct sl_jwk_set *set)
{
	struct sl_err err;
	if (!sl_jose_load("test", &err)) {
		printf("  %s\n", err.msg);
		return false;
	}
	return sl_jwk_set_parse(JWT_JWKS, strlen(JWT_JWKS), 32, set, &err) == SL_OK;
}

/* The whole local path: read, key, verify. NULL: refused, why says why. */
static struct sl_caller *check(const struct sl_jwk_set *set, const char *token, char *why, size_t n)
{
	struct sl_jwt t;
	const struct sl_jwk *k;
	struct sl_caller *who = NULL;
	struct sl_err err = { "" };

	if (!sl_jwt_read(token, strlen(token), &t, &err)) {
		snprintf(why, n, "%s", err.msg);
		return NULL;
	}
	if (!sl_jwt_alg_allowed(&t, &rules))
		snprintf(why, n, "algorithm");
	else if (!(k = sl_jwk_set_find(set, t.kid, t.alg)))
		snprintf(why, n, "no key");
	else if (!sl_jwt_verify(&t, token, strlen(token), k, &rules, (int64_t)time(NULL), &who, &err))
		snprintf(why, n, "%s", err.msg);
	sl_jwt_dispose(&t);
	return who;
}

TEST(jwt_key_set_keeps_public_signing_keys)
{
	struct sl_jwk_set set;
	struct sl_err err;

	CHECK(keys(&set));
	CHECK_INT(set.n, 2); /* the "oct" key is never read */
	CHECK(sl_jwk_set_find(&set, "rsa-1", "RS256") != NULL);
	CHECK(sl_jwk_set_find(&set, "rsa-1", "ES256") == NULL);
	CHECK(sl_jwk_set_find(&set, "ec-1", "ES256") != NULL);
	CHECK(sl_jwk_set_find(&set, "hmac-1", "RS256") == NULL);
	CHECK(sl_jwk_set_find(&set, NULL, "RS256") != NULL); /* the only RSA key */
	sl_jwk_set_dispose(&set);
	CHECK(sl_jwk_set_parse("{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}", 40, 32, &set, &err) < 0);
	CHECK(sl_jwk_set_parse("[]", 2, 32, &set, &err) < 0);
	CHECK(sl_jwk_set_parse("{\"keys\":7}", 10, 32, &set, &err) < 0);
}

TEST(jwt_valid_tokens_name_their_caller)
{
	struct sl_jwk_set set;
	struct sl_caller *c;
	char why[200] = "";

	CHECK(keys(&set));
	c = check(&set, JWT_VALID_RS256, why, sizeof(why));
	CHECK(c != NULL);
	if (c) {
		CHECK_STR(c->method, "jwt");
		CHECK_STR(c->subject, "alice");
		CHECK_STR(c->issuer, JWT_ISS);
		CHECK_STR(c->client_id, "cli");
		CHECK(sl_caller_has_scope(c, "read") && sl_caller_has_scope(c, "write"));
		CHECK(sl_caller_in_group(c, "sre"));
		CHECK(c->expires_ms == 4102444800000ull);
		sl_caller_unref(c);
	}
	c = check(&set, JWT_VALID_ES256, why, sizeof(why)); /* aud an array, scp */
	CHECK(c != NULL);
	if (c) {
		CHECK_STR(c->subject, "bob");
		CHECK(sl_caller_has_scope(c, "read"));
		sl_caller_unref(c);
	}
	sl_jwk_set_dispose(&set);
}

TEST(jwt_every_rule_refuses)
{
	static const struct { const char *token, *why; } cases[] = {
		{ JWT_WRONG_AUD, "aud" },
		{ JWT_WRONG_ISS, "issuer" },
		{ JWT_EXPIRED, "expired" },
		{ JWT_NO_EXP, "exp" },
		{ JWT_TYP_JWT, "typ" },
		{ JWT_ALG_NONE, "empty" },       /* no signature at all */
		{ JWT_HS256_PUBKEY, "algorithm" },
		{ JWT_RS256_AS_ES256_KEY, "no key" },
		{ JWT_BAD_SIGNATURE, "signature" },
		{ JWT_UNKNOWN_KID, "no key" },
		{ JWT_CRIT, "critical" },
		{ JWT_JWE, "JWE" },
		{ "a.b", "not a JWT" },
		{ "..", "empty" },
		{ "e30.e30.", "empty" },
		{ "!!.e30.x", "header" },
	};
	struct sl_jwk_set set;
	char why[200], *big;

	CHECK(keys(&set));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sl_caller *c;
		why[0] = '\0';
		c = check(&set, cases[i].token, why, sizeof(why));
		CHECK(c == NULL);
		if (!strstr(why, cases[i].why))
			printf("  case %zu: \"%s\" does not say \"%s\"\n", i, why, cases[i].why);
		CHECK(strstr(why, cases[i].why) != NULL);
		sl_caller_unref(c);
	}
	big = malloc(SL_JWT_MAX_BYTES + 2);
	memset(big, 'a', SL_JWT_MAX_BYTES + 1);
	big[SL_JWT_MAX_BYTES + 1] = '\0';
	CHECK(check(&set, big, why, sizeof(why)) == NULL && strstr(why, "longer"));
	free(big);
	CHECK(sl_jwt_looks_like("a.b.c", 5) && !sl_jwt_looks_like("opaque", 6));
	sl_jwk_set_dispose(&set);
}

TEST(jwt_well_known_urls_and_metadata)
{
	struct sl_auth_config a = { 0 };
	char *const as[] = { "https://as.example/tenant", NULL };
	char *const scopes[] = { "mcp:tools", NULL };
	char *u, *doc;
	size_t len;

	u = sl_well_known_url("https://as.example/tenant/", "oauth-authorization-server");
	CHECK_STR(u, "https://as.example/.well-known/oauth-authorization-server/tenant");
	free(u);
	u = sl_well_known_url("https://as.example", "oauth-authorization-server");
	CHECK_STR(u, "https://as.example/.well-known/oauth-authorization-server");
	free(u);
	u = sl_prm_url("https://mcp.example.com:8443/mcp");
	CHECK_STR(u, "https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp");
	free(u);
	CHECK(sl_prm_path("https://mcp.example.com/mcp", "/.well-known/oauth-protected-resource/mcp"));
	CHECK(sl_prm_path("https://mcp.example.com/mcp", "/.well-known/oauth-protected-resource"));
	CHECK(!sl_prm_path("https://mcp.example.com/mcp", "/.well-known/oauth-protected-resource/x"));
	a.resource = "https://mcp.example.com/mcp";
	a.authorization_servers = (char **)as;
	a.scopes_supported = (char **)scopes;
	doc = sl_prm_document(&a, &len);
	CHECK_STR(doc, "{\"resource\":\"https://mcp.example.com/mcp\",\"authorization_servers\":"
		       "[\"https://as.example/tenant\"],\"scopes_supported\":[\"mcp:tools\"],"
		       "\"bearer_methods_supported\":[\"header\"],\"resource_name\":\"sluice\"}");
	free(doc);
}

TEST(jwt_verdicts_are_bounded_and_expire)
{
	struct sl_verdicts v;
	struct sl_caller *c = sl_caller_new("jwt");
	char key[SL_SHA256_HEX];

	sl_verdicts_init(&v, 2);
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		sl_verdicts_put(&v, key, c, SL_VERDICT_OK, NULL, sl_now_ms() + 60000);
	}
	CHECK_INT(v.lru.count, 2);
	CHECK(sl_verdicts_get(&v, "k0") == NULL); /* the oldest went */
	CHECK(sl_verdicts_get(&v, "k2") != NULL);
	sl_verdicts_put(&v, "gone", c, SL_VERDICT_OK, NULL, sl_now_ms());
	CHECK(sl_verdicts_get(&v, "gone") == NULL);
	sl_verdicts_dispose(&v);
	sl_caller_unref(c);
}

/* Issue 32, finding 13: an active introspection answer past its freshness
 * is still there (stale, fresh_ms passed) until its end; a plain verdict
 * is fresh as long as it lives; a deleted one is gone. */
TEST(verdicts_stale_answer_lives_until_its_end)
{
	struct sl_verdicts v;
	struct sl_caller *c = sl_caller_new("introspection");
	const struct sl_verdict *e;
	uint64_t now = sl_now_ms();

	sl_verdicts_init(&v, 4);
	sl_verdicts_put_stale(&v, "stale", c, now, now + 60000);
	e = sl_verdicts_get(&v, "stale");
	CHECK(e != NULL && e->kind == SL_VERDICT_OK && e->who == c);
	CHECK(e && sl_now_ms() >= e->fresh_ms && e->fresh_ms < e->e.until_ms);
	sl_verdicts_put_stale(&v, "fresh", c, now + 30000, now + 60000);
	e = sl_verdicts_get(&v, "fresh");
	CHECK(e && sl_now_ms() < e->fresh_ms);
	sl_verdicts_put(&v, "plain", c, SL_VERDICT_OK, NULL, now + 60000);
	e = sl_verdicts_get(&v, "plain");
	CHECK(e && e->fresh_ms == e->e.until_ms);
	sl_verdicts_del(&v, "stale");
	CHECK(sl_verdicts_get(&v, "stale") == NULL);
	sl_verdicts_del(&v, "never there");
	CHECK_INT(v.lru.count, 2);
	sl_verdicts_dispose(&v);
	sl_caller_unref(c);
}

/* Micro benchmark: a warm check, the keys at hand. First the signature
 * path (a token seen for the first time), then what every later request
 * with the same token costs (its SHA-256 and the remembered verdict),
 * which is what sl_auth_check does for it. */
TEST(jwt_warm_check_speed)
{
	enum { N = 2000 };
	struct sl_jwk_set set;
	struct sl_verdicts v;
	char why[200], hash[SL_SHA256_HEX];
	uint64_t t0, sig_ns, es_ns, hit_ns;
	const char *tok = JWT_VALID_RS256;

	CHECK(keys(&set));
	t0 = sl_now_us();
	for (int i = 0; i < N; i++)
		sl_caller_unref(check(&set, tok, why, sizeof(why)));
	sig_ns = (sl_now_us() - t0) * 1000 / N;
	t0 = sl_now_us();
	for (int i = 0; i < N / 4; i++)
		sl_caller_unref(check(&set, JWT_VALID_ES256, why, sizeof(why)));
	es_ns = (sl_now_us() - t0) * 1000 / (N / 4);
	sl_verdicts_init(&v, 4096);
	{
		struct sl_caller *c = check(&set, tok, why, sizeof(why));
		sl_sha256_hex(tok, strlen(tok), hash);
		sl_verdicts_put(&v, hash, c, SL_VERDICT_OK, NULL, sl_now_ms() + 600000);
		sl_caller_unref(c);
	}
	t0 = sl_now_us();
	for (int i = 0; i < N * 10; i++) {
		const struct sl_verdict *e;
		struct sl_caller *c;
		sl_sha256_hex(tok, strlen(tok), hash);
		e = sl_verdicts_get(&v, hash);
		c = sl_caller_ref(e ? e->who : NULL);
		sl_caller_unref(c);
	}
	hit_ns = (sl_now_us() - t0) * 1000 / (N * 10);
	printf("  jwt warm check: %.1f us with the RS256 signature, %.1f us ES256, %.2f us remembered\n",
	       sig_ns / 1000.0, es_ns / 1000.0, hit_ns / 1000.0);
	CHECK(hit_ns < 20000); /* the goal: under 20 us; a sanitizer build is slower */
	sl_verdicts_dispose(&v);
	sl_jwk_set_dispose(&set);
}

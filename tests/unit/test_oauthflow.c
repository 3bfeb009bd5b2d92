/* The OAuth client's pure parts (src/oauth/challenge.c, flow.c): the
 * WWW-Authenticate reader, PKCE, the authorization URL and the checks on
 * the redirect that comes back. */
#include "oauth/oauth.h"
#include "unit.h"

#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *h, struct sl_oauth_challenge *c)
{
	memset(c, 0, sizeof(*c));
	return sl_oauth_challenge_parse(h, strlen(h), c);
}

TEST(oauth_challenge_reads_bearer_params)
{
	struct sl_oauth_challenge c;

	CHECK(parse("Bearer resource_metadata=\"https://mcp.example/.well-known/oauth-protected-"
		    "resource/mcp\", scope=\"files:read files:write\", error=\"insufficient_scope\"",
		    &c) == SL_OK);
	CHECK_STR(c.resource_metadata, "https://mcp.example/.well-known/oauth-protected-resource/mcp");
	CHECK_STR(c.scope, "files:read files:write");
	CHECK_STR(c.error, "insufficient_scope");
	sl_oauth_challenge_dispose(&c);

	/* Another scheme first (with a token68), params in any case, escapes. */
	CHECK(parse("Negotiate abc==, Basic realm=\"x\", bearer SCOPE=a, error_description="
		    "\"say \\\"hi\\\"\", Digest realm=\"y\", scope=\"not-this\"", &c) == SL_OK);
	CHECK_STR(c.scope, "a");
	CHECK_STR(c.error_description, "say \"hi\"");
	CHECK(c.resource_metadata == NULL);
	sl_oauth_challenge_dispose(&c);

	CHECK(parse("Bearer", &c) == SL_OK);
	CHECK(c.scope == NULL);
	sl_oauth_challenge_dispose(&c);
	/* A parameter given twice: the first counts. */
	CHECK(parse("Bearer scope=\"a\", scope=\"b\"", &c) == SL_OK);
	CHECK_STR(c.scope, "a");
	sl_oauth_challenge_dispose(&c);
}

TEST(oauth_challenge_refuses_what_is_not_one)
{
	struct sl_oauth_challenge c;
	char *big = malloc(SL_OAUTH_VALUE_MAX + 64);

	CHECK(parse("Basic realm=\"x\"", &c) == SL_ERR_NOT_FOUND);
	CHECK(parse("", &c) == SL_ERR_NOT_FOUND);
	CHECK(parse("Bearer scope=\"unterminated", &c) == SL_ERR_INVALID);
	CHECK(parse("Bearer scope=\"a\nb\"", &c) == SL_ERR_INVALID);
	CHECK(parse("Bearer scope=\"a\" junk", &c) == SL_ERR_INVALID);
	CHECK(parse("Bearer =x", &c) != SL_OK); /* an auth-param named Bearer */
	memcpy(big, "Bearer scope=\"", 14);
	memset(big + 14, 'a', SL_OAUTH_VALUE_MAX + 1);
	strcpy(big + 15 + SL_OAUTH_VALUE_MAX, "\"");
	CHECK(parse(big, &c) == SL_ERR_INVALID);
	free(big);
}

TEST(oauth_pkce_is_s256_of_a_fresh_verifier)
{
	struct sl_oauth_pkce a, b;
	uint8_t d[SHA256_DIGEST_SIZE];
	char want[64];
	struct sha256_ctx h;
	struct base64_encode_ctx e;
	size_t n;

	sl_oauth_pkce_new(&a);
	sl_oauth_pkce_new(&b);
	CHECK(strlen(a.verifier) == 43 && strlen(a.state) == 32);
	CHECK(strcmp(a.verifier, b.verifier) != 0 && strcmp(a.state, b.state) != 0);
	CHECK(strspn(a.verifier, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == 43);
	sha256_init(&h);
	sha256_update(&h, strlen(a.verifier), (const uint8_t *)a.verifier);
	sha256_digest(&h, sizeof(d), d);
	base64url_encode_init(&e);
	n = base64_encode_update(&e, want, sizeof(d), d);
	n += base64_encode_final(&e, want + n);
	while (want[n - 1] == '=')
		n--;
	want[n] = '\0';
	CHECK_STR(a.challenge, want);
}

static const struct sl_oauth_server as = {
	.resource = "https://mcp.example/mcp", .issuer = "https://as.example",
	.authorization_endpoint = "https://as.example/authorize?tenant=1",
	.token_endpoint = "https://as.example/token",
};

TEST(oauth_authorize_url_carries_pkce_state_and_resource)
{
	struct sl_oauth_registration r = { .client_id = "https://me.example/client.json" };
	struct sl_oauth_pkce p;
	char *u;

	sl_oauth_pkce_new(&p);
	u = sl_oauth_authorize_url(&as, &r, "http://127.0.0.1:5123/callback", "a b", &p);
	CHECK(strncmp(u, "https://as.example/authorize?tenant=1&response_type=code&", 57) == 0);
	CHECK(strstr(u, "&client_id=https%3A%2F%2Fme.example%2Fclient.json&") != NULL);
	CHECK(strstr(u, "&redirect_uri=http%3A%2F%2F127.0.0.1%3A5123%2Fcallback&") != NULL);
	CHECK(strstr(u, "&code_challenge_method=S256&") != NULL);
	CHECK(strstr(u, p.challenge) != NULL && strstr(u, p.state) != NULL);
	CHECK(strstr(u, "&resource=https%3A%2F%2Fmcp.example%2Fmcp") != NULL);
	CHECK(strstr(u, "&scope=a%20b") != NULL);
	CHECK(strstr(u, p.verifier) == NULL); /* the verifier never leaves sluice */
	free(u);
	u = sl_oauth_authorize_url(&as, &r, "http://127.0.0.1:5123/callback", NULL, &p);
	CHECK(strstr(u, "scope=") == NULL);
	CHECK(strstr(u, "prompt=") == NULL);
	free(u);
}

/* OpenID Connect Core 11: offline_access without prompt=consent is dropped
 * (oidc-provider does), and no refresh token comes. */
TEST(oauth_authorize_url_prompts_consent_for_offline_access)
{
	struct sl_oauth_registration r = { .client_id = "c" };
	struct sl_oauth_pkce p;
	char *u;

	sl_oauth_pkce_new(&p);
	u = sl_oauth_authorize_url(&as, &r, "http://127.0.0.1/callback", "mcp:tools offline_access", &p);
	CHECK(strstr(u, "&prompt=consent") != NULL);
	free(u);
	u = sl_oauth_authorize_url(&as, &r, "http://127.0.0.1/callback", "offline_access_x", &p);
	CHECK(strstr(u, "prompt=") == NULL);
	free(u);
}

/* The registration names no scope: oidc-provider holds a client to the
 * scopes it registered, and the challenge's scope there once made every
 * login asking offline_access fail with invalid_scope. */
TEST(oauth_registration_body)
{
	struct sl_oauth_client_want w = { .client_name = "gw" };
	char *b = sl_oauth_registration_body(&w, "http://127.0.0.1:5123/callback", "none");

	CHECK(strstr(b, "\"client_name\":\"gw\"") != NULL);
	CHECK(strstr(b, "\"application_type\":\"native\"") != NULL);
	CHECK(strstr(b, "\"token_endpoint_auth_method\":\"none\"") != NULL);
	CHECK(strstr(b, "\"grant_types\":[\"authorization_code\",\"refresh_token\"]") != NULL);
	CHECK(strstr(b, "\"redirect_uris\":[\"http://127.0.0.1:5123/callback\"]") != NULL);
	CHECK(strstr(b, "scope") == NULL);
	free(b);
	w.client_name = NULL;
	b = sl_oauth_registration_body(&w, NULL, "client_secret_basic");
	CHECK(strstr(b, "\"client_name\":\"sluice\"") != NULL);
	CHECK(strstr(b, "\"redirect_uris\":[]") != NULL);
	free(b);
}

/* status names the login by the JWT's sub; an opaque token has none. */
TEST(oauth_token_subject)
{
	/* {"alg":"RS256"}.{"sub":"alice","scope":"a"}.sig, and one whose padding was left out. */
	char *s = sl_oauth_token_subject("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSIsInNjb3BlIjoiYSJ9.c2ln");
	CHECK_STR(s, "alice");
	free(s);
	s = sl_oauth_token_subject("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhYmMifQ.c2ln");
	CHECK_STR(s, "abc");
	free(s);
	CHECK(sl_oauth_token_subject("opaque-token") == NULL);
	CHECK(sl_oauth_token_subject("a.b.c.d.e") == NULL);
	CHECK(sl_oauth_token_subject("a..c") == NULL);
	CHECK(sl_oauth_token_subject("x.eyJzdWIiOjV9.y") == NULL);  /* sub 5: not a string */
	CHECK(sl_oauth_token_subject("x.!!!!.y") == NULL);
	CHECK(sl_oauth_token_subject(NULL) == NULL);
}

TEST(oauth_redirect_checks_state_iss_and_errors)
{
	struct sl_oauth_pkce p;
	struct sl_oauth_server s = as;
	struct sl_err err = { { 0 } };
	char url[600], *code = NULL;

	sl_oauth_pkce_new(&p);
	snprintf(url, sizeof(url), "http://127.0.0.1:1/callback?code=abc%%2B1&state=%s&iss=https%%3A%%2F%%2Fas.example", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_OK);
	CHECK_STR(code, "abc+1");
	free(code);
	/* Pasted as a bare query, without iss from an AS that never sends it. */
	snprintf(url, sizeof(url), "state=%s&code=c2", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_OK);
	free(code);
	code = NULL;

	snprintf(url, sizeof(url), "/callback?code=c&state=%s", "forged");
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_ERR_INVALID);
	CHECK(strstr(err.msg, "state") != NULL && code == NULL);
	snprintf(url, sizeof(url), "/callback?code=c&state=%s&iss=https%%3A%%2F%%2Fevil.example", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_ERR_INVALID);
	CHECK(strstr(err.msg, "issuer") != NULL);
	s.iss_param = true; /* it said it sends iss: one without is refused */
	snprintf(url, sizeof(url), "/callback?code=c&state=%s", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_ERR_INVALID);
	/* An error from the AS, with control characters in its words. */
	snprintf(url, sizeof(url), "/callback?error=access_denied&error_description=no%%1b%%5B2J&state=%s", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_ERR_INVALID);
	CHECK(strstr(err.msg, "access_denied") != NULL && strchr(err.msg, 0x1b) == NULL);
	snprintf(url, sizeof(url), "/callback?error=access_denied&error_description=no%%20way&state=%s", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_ERR_INVALID);
	CHECK(strstr(err.msg, "access_denied: no way") != NULL);
	CHECK(code == NULL);
}

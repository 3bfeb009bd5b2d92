/* The OAuth client's pure parts (src/oauth/challenge.c, flow.c): the
 * WWW-Authenticate reader, PKCE, the authorization URL and the checks on
 * the redirect that comes back; discovery's probe against a canned server
 * on 127.0.0.1. */
#include "config/config.h"
#include "event/fetch.h"
#include "oauth/client.h"
#include "oauth/oauth.h"
#include "oauth/subject.h"
#include "upstream/upstream.h"
#include "proto/mcp.h"
#include "unit.h"
#include "canned.h"

#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
	/* A gateway's web login redirects to its public URL: a web client. */
	b = sl_oauth_registration_body(&w, "https://mcp.example.com/oauth/callback", "none");
	CHECK(strstr(b, "\"application_type\":\"web\"") != NULL);
	free(b);
	b = sl_oauth_registration_body(&w, "http://localhost:8080/oauth/callback", "none");
	CHECK(strstr(b, "\"application_type\":\"native\"") != NULL);
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

/* RFC 9207 2.4 and RFC 8414 3.3: issuers are compared as strings, with
 * no normalisation: "https://as.example/" is another issuer than
 * "https://as.example" (conformance auth/iss-normalized). */
TEST(oauth_redirect_iss_is_compared_exactly)
{
	struct sl_oauth_pkce p;
	struct sl_oauth_server s = as, slash = as;
	struct sl_err err = { { 0 } };
	char url[600], *code = NULL;

	slash.issuer = "https://as.example/";
	sl_oauth_pkce_new(&p);
	snprintf(url, sizeof(url), "/callback?code=c&state=%s&iss=https%%3A%%2F%%2Fas.example%%2F", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_ERR_INVALID);
	CHECK(strstr(err.msg, "issuer") != NULL && code == NULL);
	snprintf(url, sizeof(url), "/callback?code=c&state=%s&iss=https%%3A%%2F%%2Fas.example", p.state);
	CHECK(sl_oauth_redirect_check(url, &slash, &p, &code, &err) == SL_ERR_INVALID);
	CHECK(code == NULL);
	snprintf(url, sizeof(url), "/callback?code=c&state=%s&iss=HTTPS%%3A%%2F%%2Fas.example", p.state);
	CHECK(sl_oauth_redirect_check(url, &s, &p, &code, &err) == SL_ERR_INVALID);
	snprintf(url, sizeof(url), "/callback?code=c&state=%s&iss=https%%3A%%2F%%2Fas.example%%2F", p.state);
	CHECK(sl_oauth_redirect_check(url, &slash, &p, &code, &err) == SL_OK);
	CHECK_STR(code, "c");
	free(code);
}

static void on_registered_unit(void *arg, const struct sl_oauth_registration *r, const char *why)
{
	const char **out = arg;
	*out = r ? r->client_id : why;
}

/* A stored registration is reused only at the very issuer it was made at. */
TEST(oauth_registration_reuse_is_keyed_by_the_exact_issuer)
{
	struct sl_oauth_server s = as;
	struct sl_oauth_client_want want = { .client_name = "gw" };
	struct sl_oauth_registration prev = { .issuer = "https://as.example/", .client_id = "stored",
					      .how = "dynamic" };
	const char *got = NULL;

	/* No registration endpoint: a registration not reused says so at once. */
	sl_oauth_register(NULL, &s, &want, &prev, NULL, on_registered_unit, &got);
	CHECK(got && strstr(got, "offers no registration"));
	prev.issuer = "https://as.example";
	got = NULL;
	sl_oauth_register(NULL, &s, &want, &prev, NULL, on_registered_unit, &got);
	CHECK_STR(got, "stored");
}

/* ---- discovery's probe, against a canned server on 127.0.0.1 ---------------------------- */

static void on_canned_discovered(void *arg, const struct sl_oauth_server *srv, const char *why)
{
	struct canned *s = arg;
	s->done = true;
	s->ok = srv != NULL;
	s->why = why ? sl_strdup(why) : NULL;
	s->scope = srv && srv->scope ? sl_strdup(srv->scope) : NULL;
	uv_close((uv_handle_t *)&s->tcp, NULL);
}

/* The canned server on a loop of its own: go(loop, fetcher, s) starts the
 * requests, and the loop runs until s->done. */
static void run_canned(struct canned *s, void (*go)(uv_loop_t *, struct sl_fetcher *, struct canned *))
{
	struct sl_fetcher *f;
	struct sl_err err;
	uv_loop_t loop;

	uv_loop_init(&loop);
	t_canned_listen(&loop, s);
	CHECK_INT(sl_fetcher_new(&loop, "unit", &f, &err), SL_OK);
	go(&loop, f, s);
	while (!s->done && uv_run(&loop, UV_RUN_ONCE))
		;
	sl_fetcher_free(f);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
}

static void go_discover(uv_loop_t *loop, struct sl_fetcher *f, struct canned *s)
{
	char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", s->port);
	sl_oauth_discover(f, url, NULL, on_canned_discovered, s);
}

static void discover_canned(struct canned *s)
{
	run_canned(s, go_discover);
}

/* MCP authorization leaves it to the server which requests need a token:
 * the probe's initialize answered 2xx is followed by tools/list in its
 * session, whose 401 starts discovery (conformance auth/scope-step-up). */
TEST(oauth_discover_follows_an_open_initialize_with_tools_list)
{
	struct canned s = { 0 }, open = { .list_status = 200, .delete_hangs = true },
		      strict = { .list_status = 400 }, older = { .sse_init = true };
	uint64_t t0;

	discover_canned(&s);
	CHECK(s.ok);
	CHECK_STR(s.scope, "mcp:basic");
	CHECK(s.nseen >= 7);
	/* The era probe (a session-era server refuses it), a client's
	 * handshake, then its session ended (the 405 ignored), then discovery. */
	CHECK_STR(s.seen[0], "POST||server/discover");
	CHECK_STR(s.seen[1], "POST||initialize");                     /* no session yet */
	CHECK_STR(s.seen[2], "POST|sess-7|notifications/initialized");
	CHECK_STR(s.seen[3], "POST|sess-7|tools/list");
	CHECK_STR(s.seen[4], "DELETE|sess-7|");
	CHECK_STR(s.seen[5], "GET||");                                /* the challenge's PRM */
	CHECK_STR(s.list_version, SL_MCP_LATEST_LEGACY); /* initialize chose none */
	free(s.scope);
	free(s.why);
	/* A server that chose an older version, in an event stream: the
	 * probe's tools/list carries that one. */
	discover_canned(&older);
	CHECK(older.ok);
	CHECK_STR(older.list_version, "2025-06-18");
	free(older.scope);
	free(older.why);

	/* Both answered without a token: it needs no login. The session is
	 * ended here too, and a DELETE never answered holds the probe at most
	 * PROBE_DELETE_MS (2 s). */
	t0 = sl_now_ms();
	discover_canned(&open);
	CHECK(sl_now_ms() - t0 < 4000);
	CHECK(!open.ok);
	CHECK(open.why && strstr(open.why, "it needs no login"));
	CHECK_INT(open.nseen, 5);
	CHECK_STR(open.seen[4], "DELETE|sess-7|");
	free(open.why);
	/* tools/list refused, but not for a token: not a challenge either. */
	discover_canned(&strict);
	CHECK(!strict.ok);
	CHECK(strict.why && strstr(strict.why, "HTTP 400 to tools/list): it needs no login"));
	CHECK_INT(strict.nseen, 5);
	CHECK_STR(strict.seen[4], "DELETE|sess-7|");
	free(strict.why);
}

/* A 2026-07-28-only server refuses initialize (400) and lets
 * server/discover through: the probe speaks its era, as the gateway does,
 * and its tools/list's 401 names where to log in (issue 33, finding 6). */
TEST(oauth_discover_probes_a_2026_server_in_its_era)
{
	struct canned s = { .modern = true };

	discover_canned(&s);
	CHECK(s.ok);
	CHECK_STR(s.scope, "mcp:basic");
	CHECK_STR(s.seen[0], "POST||server/discover");
	CHECK_STR(s.seen[1], "POST||tools/list");
	CHECK_STR(s.list_version, SL_MCP_MODERN);
	CHECK_STR(s.list_method, "tools/list");
	CHECK_STR(s.seen[2], "GET||"); /* the challenge's PRM: no initialize */
	free(s.scope);
	free(s.why);
}

/* RFC 8414 3.3: metadata whose issuer differs from the PRM's only by a
 * trailing slash is another issuer's: not used. */
TEST(oauth_discover_refuses_metadata_for_an_issuer_with_a_slash_more)
{
	struct canned s = { .meta_issuer_slash = true };

	discover_canned(&s);
	CHECK(!s.ok);
	CHECK(s.why && strstr(s.why, "is for the issuer") && strstr(s.why, "refused"));
	free(s.why);
	free(s.scope);
}

/* ---- the granted scope, when the token answer names none ----------------------------------- */

static void on_canned_token(void *arg, const struct sl_oauth_token_result *res)
{
	struct canned *s = arg;

	s->done = true;
	s->ok = res->tokens != NULL;
	s->scope = res->tokens && res->tokens->scope ? sl_strdup(res->tokens->scope) : NULL;
	uv_close((uv_handle_t *)&s->tcp, NULL);
}

static void go_token(uv_loop_t *loop, struct sl_fetcher *f, struct canned *s)
{
	char ep[64];
	struct sl_oauth_server srv = { .token_endpoint = ep };
	struct sl_oauth_registration reg = { .client_id = "c1" };
	struct sl_oauth_grant g = { .kind = SL_OAUTH_CLIENT_CREDENTIALS, .scope = "read write" };

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/token", s->port);
	sl_oauth_token(f, &srv, &reg, &g, on_canned_token, s);
}

static void on_refreshed(void *arg, bool ok)
{
	struct canned *s = arg;

	s->done = true;
	s->ok = ok;
}

/* A new client for the user, and its one token request run to its end:
 * whether that gave a token. */
static bool fetch_once(uv_loop_t *loop, const struct sl_config *cfg, const char *user,
		       struct sl_oauth_client **out)
{
	struct canned wait = { 0 };

	*out = sl_oauth_client_new(loop, cfg, &cfg->servers[0], user);
	CHECK_INT(sl_oauth_client_refresh(*out, on_refreshed, &wait), SL_OAUTH_RETRY);
	while (!wait.done && uv_run(loop, UV_RUN_ONCE))
		;
	return wait.ok;
}

/* A refresh with the client of an upstream: a record whose token was
 * granted "read write", refreshed by a token endpoint that names no scope. */
static void go_refresh(uv_loop_t *loop, struct sl_fetcher *f, struct canned *s)
{
	char json[200], url[64], ep[64];
	struct sl_oauth_record rec = { .url = url, .user = "" };
	struct sl_oauth_store *st;
	struct sl_oauth_client *c;
	struct sl_config *cfg;
	struct sl_err err;
	struct canned wait = { 0 };

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", s->port);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/token", s->port);
	snprintf(json, sizeof(json), "{\"mcpServers\":{\"gh\":{\"url\":\"%s\"}}}", url);
	CHECK_INT(sl_config_parse("t.json", json, strlen(json), &cfg, &err), SL_OK);
	CHECK_INT(sl_oauth_store_open(cfg, &st, &err), SL_OK);
	rec.as.token_endpoint = ep;
	rec.reg.client_id = "c1";
	rec.tokens.access_token = "t1";
	rec.tokens.refresh_token = "r1";
	rec.tokens.scope = "read write";
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);
	sl_oauth_store_free(st);

	c = sl_oauth_client_new(loop, cfg, &cfg->servers[0], "");
	CHECK_INT(sl_oauth_client_refresh(c, on_refreshed, &wait), SL_OAUTH_RETRY);
	while (!wait.done && uv_run(loop, UV_RUN_ONCE))
		;
	CHECK(wait.ok);
	CHECK_STR(sl_oauth_client_token(c), "t2");
	/* RFC 6749 6: the scope granted before. So step-up knows the token
	 * has it, and asks no login that would get the same refusal. */
	CHECK_INT(sl_oauth_client_refused(c, 403, "Bearer error=\"insufficient_scope\", scope=\"read\"",
					  "t2", on_refreshed, &wait), SL_OAUTH_FAIL);
	CHECK_STR(sl_oauth_client_why(c), "refused the request for the scope \"read\", which its "
					  "token has: a new login would not help");
	sl_oauth_client_free(c);
	sl_config_unref(cfg);
	s->done = true;
	uv_close((uv_handle_t *)&s->tcp, NULL);
}

/* The step-up rule "no login for scopes the token has" reads the token's
 * scope: an answer without one (RFC 6749 5.1: then it is the scope asked
 * for) must still leave one recorded. */
TEST(oauth_token_answer_without_scope_grants_the_scope_asked)
{
	struct canned tok = { 0 }, ref = { 0 };
	char dir[] = "/tmp/sluice-unit-oauth-XXXXXX";
	char cmd[300];

	run_canned(&tok, go_token);
	CHECK(tok.ok);
	CHECK_STR(tok.scope, "read write");
	free(tok.scope);

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	run_canned(&ref, go_refresh);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), 0);
	unsetenv("XDG_STATE_HOME");
}

/* ---- token exchange (RFC 8693) ------------------------------------------------------------- */

static void go_exchange(uv_loop_t *loop, struct sl_fetcher *f, struct canned *s)
{
	char ep[64];
	struct sl_oauth_server srv = { .token_endpoint = ep, .resource = "http://up.example/mcp" };
	struct sl_oauth_registration reg = { .client_id = "c1", .client_secret = "s1",
					     .auth_method = "client_secret_post" };
	struct sl_oauth_grant g = { .kind = SL_OAUTH_TOKEN_EXCHANGE, .subject_token = "subj.jwt",
				    .scope = "mcp:tools" };

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/token", s->port);
	sl_oauth_token(f, &srv, &reg, &g, on_canned_token, s);
}

/* RFC 8693 2.1: the grant type, the subject token and its type (an access
 * token when none is named), the resource and scope, and the client's own
 * authentication as configured. */
TEST(oauth_token_exchange_request_body)
{
	struct canned s = { 0 };

	run_canned(&s, go_exchange);
	CHECK(s.ok);
	CHECK_STR(s.token_body, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
				"&subject_token=subj.jwt"
				"&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"
				"&requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"
				"&scope=mcp%3Atools&resource=http%3A%2F%2Fup.example%2Fmcp"
				"&client_id=c1&client_secret=s1");
	free(s.scope);
}

static struct sl_caller *caller_of(const char *method, const char *sub, uint64_t expires_ms)
{
	struct sl_caller *who = sl_caller_new(method);

	sl_caller_set_subject(who, !strcmp(method, "token") ? NULL : "https://as.example", sub);
	who->expires_ms = expires_ms;
	return who;
}

static uint64_t wall_ms(void)
{
	return (uint64_t)time(NULL) * 1000u;
}

/* The holder: only with a tokenExchange server, only JWT and introspection
 * callers, the newest token per user, expired ones never given, a bound
 * with the oldest dropped, and all dropped when switched off. */
TEST(oauth_subject_tokens_held_and_bounded)
{
	static const char on[] = "{\"mcpServers\":{\"x\":{\"url\":\"http://x/mcp\",\"oauth\":{"
				 "\"perUser\":true,\"tokenExchange\":true,\"clientId\":\"c\","
				 "\"clientSecret\":\"s\"}}}}";
	static const char off[] = "{\"mcpServers\":{\"x\":{\"url\":\"http://x/mcp\"}}}";
	struct sl_config *c_on, *c_off;
	struct sl_caller *a = caller_of("jwt", "alice", wall_ms() + 3600000),
			 *i = caller_of("introspection", "ivy", 0),
			 *t = caller_of("token", "tom", 0),
			 *old = caller_of("jwt", "olga", wall_ms() - 1000);
	char ka[65], ki[65], kt[65], ko[65], *got;
	struct sl_err err;

	CHECK_INT(sl_config_parse("t.json", on, sizeof(on) - 1, &c_on, &err), SL_OK);
	CHECK_INT(sl_config_parse("t.json", off, sizeof(off) - 1, &c_off, &err), SL_OK);
	CHECK(sl_caller_user_key(a, ka) && sl_caller_user_key(i, ki) &&
	      sl_caller_user_key(t, kt) && sl_caller_user_key(old, ko));

	sl_oauth_subjects_configure(c_off);
	sl_oauth_subject_note(a, "Bearer a1");
	CHECK_INT(sl_oauth_subjects_count(), 0);          /* no tokenExchange server */

	sl_oauth_subjects_configure(c_on);
	sl_oauth_subject_note(a, "Bearer a1");
	sl_oauth_subject_note(a, "bearer   a2");          /* the newest replaces */
	sl_oauth_subject_note(i, "Bearer i1");
	sl_oauth_subject_note(t, "Bearer static");        /* a static token: never */
	sl_oauth_subject_note(old, "Bearer o1");
	sl_oauth_subject_note(a, NULL);
	CHECK_INT(sl_oauth_subjects_count(), 3);
	got = sl_oauth_subject_get(ka, "https://as.example");
	CHECK_STR(got, "a2");
	sl_oauth_subject_free(got);
	CHECK(!sl_oauth_subject_get(ka, "https://evil.example")); /* only to its issuer */
	CHECK(!sl_oauth_subject_get(ka, NULL));
	got = sl_oauth_subject_get(ki, "https://as.example");
	CHECK_STR(got, "i1");
	sl_oauth_subject_free(got);
	CHECK(!sl_oauth_subject_get(kt, "https://as.example"));
	CHECK(!sl_oauth_subject_held(ko));                /* expired */
	CHECK(!sl_oauth_subject_get(ko, "https://as.example"));
	CHECK_INT(sl_oauth_subjects_count(), 2);          /* and dropped */

	/* The bound: alice is the oldest once ivy is noted again, and the
	 * 4096th newer user drops her. */
	sl_oauth_subject_note(i, "Bearer i2");
	for (int n = 0; n < SL_OAUTH_SUBJECTS_MAX - 1; n++) {
		char sub[16];
		struct sl_caller *u;
		snprintf(sub, sizeof(sub), "u%d", n);
		u = caller_of("jwt", sub, 0);
		sl_oauth_subject_note(u, "Bearer u");
		sl_caller_unref(u);
	}
	CHECK_INT(sl_oauth_subjects_count(), SL_OAUTH_SUBJECTS_MAX);
	CHECK(!sl_oauth_subject_held(ka));
	CHECK(sl_oauth_subject_held(ki));

	sl_oauth_subjects_configure(NULL);
	CHECK_INT(sl_oauth_subjects_count(), 0);
	CHECK(!sl_oauth_subject_held(ki));
	sl_caller_unref(a);
	sl_caller_unref(i);
	sl_caller_unref(t);
	sl_caller_unref(old);
	sl_config_unref(c_on);
	sl_config_unref(c_off);
}

/* A user's own link to a tokenExchange server: its first token is the
 * exchange of the user's own, saved under the user with the configured
 * client's id (never its secret); an exchange refused leaves "needs login". */
static void go_user_exchange(uv_loop_t *loop, struct sl_fetcher *f, struct canned *s)
{
	char json[400], url[64], ep[64], user[65];
	struct sl_oauth_record rec = { .url = url }, got = { 0 };
	struct sl_oauth_store *st;
	struct sl_oauth_client *c;
	struct sl_config *cfg;
	struct sl_caller *who = caller_of("jwt", "alice", wall_ms() + 3600000);
	struct sl_err err;
	struct canned wait = { 0 };

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", s->port);
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d/token", s->port);
	snprintf(json, sizeof(json), "{\"mcpServers\":{\"up\":{\"url\":\"%s\",\"oauth\":{\"perUser\":"
		 "true,\"tokenExchange\":true,\"clientId\":\"c1\",\"clientSecret\":\"s1\"}}}}", url);
	CHECK_INT(sl_config_parse("t.json", json, strlen(json), &cfg, &err), SL_OK);
	CHECK(sl_caller_user_key(who, user));
	/* The authorization server, as discovery left it. */
	CHECK_INT(sl_oauth_store_open(cfg, &st, &err), SL_OK);
	rec.user = user;
	rec.as.token_endpoint = ep;
	rec.as.resource = url;
	rec.as.issuer = "https://as.example";
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);

	sl_oauth_subjects_configure(cfg);
	c = sl_oauth_client_new(loop, cfg, &cfg->servers[0], user);
	CHECK(!sl_oauth_client_stale(c));                 /* nothing to exchange yet */
	CHECK_INT(sl_oauth_client_refresh(c, on_refreshed, &wait), SL_OAUTH_FAIL);
	CHECK(sl_oauth_client_needs_login(c));
	sl_oauth_client_free(c);

	sl_oauth_subject_note(who, "Bearer alice.jwt");
	c = sl_oauth_client_new(loop, cfg, &cfg->servers[0], user);
	CHECK(sl_oauth_client_stale(c));                  /* fetched before the first request */
	CHECK_INT(sl_oauth_client_refresh(c, on_refreshed, &wait), SL_OAUTH_RETRY);
	while (!wait.done && uv_run(loop, UV_RUN_ONCE))
		;
	CHECK(wait.ok);
	CHECK_STR(sl_oauth_client_token(c), "t2");
	CHECK(strstr(s->token_body, "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&"
				    "subject_token=alice.jwt&") != NULL);
	CHECK(strstr(s->token_body, "&resource=http%3A%2F%2F127.0.0.1%3A") != NULL);
	CHECK_INT(sl_oauth_store_load(st, url, user, &got, &err), SL_OK);
	CHECK_STR(got.tokens.access_token, "t2");
	CHECK_STR(got.reg.client_id, "c1");
	CHECK(!got.reg.client_secret);
	sl_oauth_record_dispose(&got);
	CHECK_INT(sl_oauth_store_load(st, url, "", &got, &err), SL_ERR_NOT_FOUND);
	sl_oauth_client_free(c);

	/* An authorization server other than the token's issuer (named by the
	 * server's metadata) never sees it: a login is needed. */
	rec.as.issuer = "https://other.example";
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);
	rec.as.issuer = "https://as.example";
	s->token_body[0] = '\0';
	CHECK(!fetch_once(loop, cfg, user, &c));
	CHECK(sl_oauth_client_needs_login(c));
	CHECK_STR(s->token_body, "");
	sl_oauth_client_free(c);

	/* Refused (the AS does not offer the grant): a login is needed. */
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);
	s->token_error = "unsupported_grant_type";
	CHECK(!fetch_once(loop, cfg, user, &c));
	CHECK(sl_oauth_client_needs_login(c));
	CHECK(!sl_oauth_client_token(c));
	/* The same token is not tried again; another of the caller's is. */
	CHECK(!sl_oauth_client_stale(c));
	CHECK(!sl_oauth_client_exchange_again(c));
	CHECK_INT(sl_oauth_client_refresh(c, on_refreshed, &wait), SL_OAUTH_FAIL);
	sl_oauth_subject_note(who, "Bearer alice.jwt.2");
	CHECK(sl_oauth_client_stale(c));
	CHECK(sl_oauth_client_exchange_again(c));
	CHECK(!sl_oauth_client_needs_login(c));
	s->token_error = NULL;
	wait.done = false;
	CHECK_INT(sl_oauth_client_refresh(c, on_refreshed, &wait), SL_OAUTH_RETRY);
	while (!wait.done && uv_run(loop, UV_RUN_ONCE))
		;
	CHECK(wait.ok);
	CHECK(strstr(s->token_body, "subject_token=alice.jwt.2&") != NULL);
	sl_oauth_client_free(c);

	sl_oauth_subjects_configure(NULL);
	sl_oauth_store_free(st);
	sl_caller_unref(who);
	sl_config_unref(cfg);
	s->done = true;
	uv_close((uv_handle_t *)&s->tcp, NULL);
}

TEST(oauth_client_exchanges_the_users_own_token)
{
	struct canned s = { 0 };
	char dir[] = "/tmp/sluice-unit-oauth-XXXXXX";
	char cmd[300];

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	run_canned(&s, go_user_exchange);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_INT(system(cmd), 0);
	unsetenv("XDG_STATE_HOME");
}

/* The OAuth client's pure parts (src/oauth/challenge.c, flow.c): the
 * WWW-Authenticate reader, PKCE, the authorization URL and the checks on
 * the redirect that comes back; discovery's probe against a canned server
 * on 127.0.0.1. */
#include "config/config.h"
#include "core/fetch.h"
#include "oauth/client.h"
#include "oauth/oauth.h"
#include "oauth/subject.h"
#include "upstream/upstream.h"
#include "proto/mcp.h"
#include "unit.h"

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

/* ---- discovery's probe, against a canned server on 127.0.0.1 ---------------------------- */

/* A server that lets initialize through without a token (its answer names
 * a session) and guards what follows: tools/list gets the 401 challenge
 * (list_status: another answer to it); notifications/initialized gets 202,
 * DELETE 405 (delete_hangs: no answer at all); sse_init: initialize is
 * answered as an event stream choosing 2025-06-18. Each connection carries
 * one request. */
struct canned {
	uv_tcp_t tcp;
	int port;
	int list_status;         /* 0: 401 with the challenge */
	bool delete_hangs;
	bool sse_init;
	char list_version[16];   /* the MCP-Protocol-Version tools/list came with */
	char seen[8][128];       /* each request's method, Mcp-Session-Id and JSON-RPC method */
	int nseen;
	bool done;
	bool ok;
	char *why;
	char *scope;
	char token_body[2048];   /* the last POST /token's form */
	const char *token_error; /* set: /token answers 400 with this OAuth error */
};

struct canned_conn {
	uv_tcp_t tcp;
	struct canned *s;
	char buf[8192];
	size_t len;
	uv_write_t w;
	char *out;
	bool hung;               /* read on, answered nothing: closed when the client gives up */
};

static void canned_closed(uv_handle_t *h)
{
	struct canned_conn *k = h->data;
	free(k->out);
	free(k);
}

static void canned_written(uv_write_t *w, int status)
{
	struct canned_conn *k = w->data;
	uv_close((uv_handle_t *)&k->tcp, canned_closed);
}

static void canned_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct canned_conn *k = h->data;
	*b = uv_buf_init(k->buf + k->len, (unsigned)(sizeof(k->buf) - 1 - k->len));
}

static void canned_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct canned_conn *k = st->data;
	struct canned *s = k->s;
	char *end, *cl, *sid, *rpc, *ver, body[600];
	const char *status = "200 OK", *type = "application/json";
	char extra[300] = "";
	size_t want;
	uv_buf_t out;

	if (n < 0) {
		uv_close((uv_handle_t *)&k->tcp, canned_closed);
		return;
	}
	if (k->hung)
		return;
	k->len += (size_t)n;
	k->buf[k->len] = '\0';
	if (!(end = strstr(k->buf, "\r\n\r\n")))
		return;
	cl = strcasestr(k->buf, "\r\ncontent-length:");
	want = (size_t)(end + 4 - k->buf) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
	if (k->len < want)
		return;
	if ((sid = strcasestr(k->buf, "\r\nmcp-session-id:")))
		sid += 17 + strspn(sid + 17, " ");
	if ((rpc = strstr(end, "\"method\":\"")))
		rpc += 10;
	if (rpc && !strncmp(rpc, "tools/list\"", 11) &&
	    (ver = strcasestr(k->buf, "\r\nmcp-protocol-version:"))) {
		ver += 23 + strspn(ver + 23, " ");
		snprintf(s->list_version, sizeof(s->list_version), "%.*s", (int)strcspn(ver, "\r"), ver);
	}
	if (s->nseen < 8)
		snprintf(s->seen[s->nseen++], sizeof(s->seen[0]), "%.*s|%.*s|%.*s",
			 (int)strcspn(k->buf, " "), k->buf,
			 sid ? (int)strcspn(sid, "\r") : 0, sid ? sid : "",
			 rpc ? (int)strcspn(rpc, "\"") : 0, rpc ? rpc : "");
	if (!strncmp(k->buf, "DELETE ", 7) && s->delete_hangs) {
		k->hung = true;
		return;
	}
	uv_read_stop(st);
	if (!strncmp(k->buf, "DELETE ", 7)) {
		status = "405 Method Not Allowed";
		snprintf(body, sizeof(body), "{}");
	} else if (strstr(k->buf, "\"notifications/initialized\"")) {
		status = "202 Accepted";
		body[0] = '\0';
	} else if (strstr(k->buf, "\"initialize\"")) {
		snprintf(extra, sizeof(extra), "Mcp-Session-Id: sess-7\r\n");
		if (s->sse_init) {
			type = "text/event-stream";
			snprintf(body, sizeof(body), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,"
				 "\"result\":{\"protocolVersion\":\"2025-06-18\"}}\n\n");
		} else {
			snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
		}
	} else if (strstr(k->buf, "\"tools/list\"") && s->list_status == 200) {
		snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[]}}");
	} else if (strstr(k->buf, "\"tools/list\"") && s->list_status) {
		status = "400 Bad Request"; /* not initialized, say */
		snprintf(body, sizeof(body), "{}");
	} else if (strstr(k->buf, "\"tools/list\"")) {
		status = "401 Unauthorized";
		snprintf(body, sizeof(body), "{}");
		snprintf(extra, sizeof(extra), "WWW-Authenticate: Bearer scope=\"mcp:basic\", "
			 "resource_metadata=\"http://127.0.0.1:%d/prm\"\r\n", s->port);
	} else if (!strncmp(k->buf, "POST /token ", 12) && s->token_error) {
		snprintf(s->token_body, sizeof(s->token_body), "%s", end + 4);
		status = "400 Bad Request";
		snprintf(body, sizeof(body), "{\"error\":\"%s\"}", s->token_error);
	} else if (!strncmp(k->buf, "POST /token ", 12)) {
		snprintf(s->token_body, sizeof(s->token_body), "%s", end + 4);
		/* RFC 6749 5.1: a token answer that names no scope. */
		snprintf(body, sizeof(body), "{\"access_token\":\"t2\",\"token_type\":\"Bearer\","
			 "\"expires_in\":3600}");
	} else if (!strncmp(k->buf, "GET /prm ", 9)) {
		snprintf(body, sizeof(body), "{\"resource\":\"http://127.0.0.1:%d/mcp\","
			 "\"authorization_servers\":[\"http://127.0.0.1:%d\"]}", s->port, s->port);
	} else if (!strncmp(k->buf, "GET /.well-known/oauth-authorization-server ", 44)) {
		snprintf(body, sizeof(body), "{\"issuer\":\"http://127.0.0.1:%d\",\"authorization_endpoint\":"
			 "\"http://127.0.0.1:%d/authorize\",\"token_endpoint\":\"http://127.0.0.1:%d/token\"}",
			 s->port, s->port, s->port);
	} else {
		status = "404 Not Found";
		snprintf(body, sizeof(body), "{}");
	}
	k->out = sl_printf("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			   "Connection: close\r\n\r\n%s", status, type, strlen(body), extra, body);
	out = uv_buf_init(k->out, (unsigned)strlen(k->out));
	k->w.data = k;
	if (uv_write(&k->w, st, &out, 1, canned_written) < 0)
		uv_close((uv_handle_t *)&k->tcp, canned_closed);
}

static void canned_conn(uv_stream_t *server, int status)
{
	struct canned *s = server->data;
	struct canned_conn *k = sl_alloc(sizeof(*k));

	k->s = s;
	uv_tcp_init(server->loop, &k->tcp);
	k->tcp.data = k;
	if (status < 0 || uv_accept(server, (uv_stream_t *)&k->tcp) < 0 ||
	    uv_read_start((uv_stream_t *)&k->tcp, canned_alloc, canned_read) < 0)
		uv_close((uv_handle_t *)&k->tcp, canned_closed);
}

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
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int len = sizeof(got);
	struct sl_fetcher *f;
	struct sl_err err;
	uv_loop_t loop;

	uv_loop_init(&loop);
	uv_tcp_init(&loop, &s->tcp);
	s->tcp.data = s;
	uv_ip4_addr("127.0.0.1", 0, &a);
	CHECK_INT(uv_tcp_bind(&s->tcp, (const struct sockaddr *)&a, 0), 0);
	CHECK_INT(uv_listen((uv_stream_t *)&s->tcp, 8, canned_conn), 0);
	uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &len);
	s->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
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
	CHECK(s.nseen >= 6);
	/* A client's handshake, then its session ended (the 405 ignored),
	 * then discovery. */
	CHECK_STR(s.seen[0], "POST||initialize");                     /* no session yet */
	CHECK_STR(s.seen[1], "POST|sess-7|notifications/initialized");
	CHECK_STR(s.seen[2], "POST|sess-7|tools/list");
	CHECK_STR(s.seen[3], "DELETE|sess-7|");
	CHECK_STR(s.seen[4], "GET||");                                /* the challenge's PRM */
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
	CHECK_INT(open.nseen, 4);
	CHECK_STR(open.seen[3], "DELETE|sess-7|");
	free(open.why);
	/* tools/list refused, but not for a token: not a challenge either. */
	discover_canned(&strict);
	CHECK(!strict.ok);
	CHECK(strict.why && strstr(strict.why, "HTTP 400 to tools/list): it needs no login"));
	CHECK_INT(strict.nseen, 4);
	CHECK_STR(strict.seen[3], "DELETE|sess-7|");
	free(strict.why);
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
	CHECK(sl_upstream_user_key(a, ka) && sl_upstream_user_key(i, ki) &&
	      sl_upstream_user_key(t, kt) && sl_upstream_user_key(old, ko));

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
	CHECK(sl_upstream_user_key(who, user));
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
	wait.done = false;
	c = sl_oauth_client_new(loop, cfg, &cfg->servers[0], user);
	CHECK_INT(sl_oauth_client_refresh(c, on_refreshed, &wait), SL_OAUTH_RETRY);
	while (!wait.done && uv_run(loop, UV_RUN_ONCE))
		;
	CHECK(!wait.ok);
	CHECK(sl_oauth_client_needs_login(c));
	CHECK_STR(s->token_body, "");
	sl_oauth_client_free(c);

	/* Refused (the AS does not offer the grant): a login is needed. */
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);
	s->token_error = "unsupported_grant_type";
	wait.done = false;
	c = sl_oauth_client_new(loop, cfg, &cfg->servers[0], user);
	CHECK_INT(sl_oauth_client_refresh(c, on_refreshed, &wait), SL_OAUTH_RETRY);
	while (!wait.done && uv_run(loop, UV_RUN_ONCE))
		;
	CHECK(!wait.ok);
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

/* src/oauth/weblogin.c: the pending logins (bound, expiry, reuse) and the
 * pages: without an authorization server (unknown id, unknown state, a
 * discovery that fails, a page cancelled while it waits), and a whole
 * login against the canned one of canned.h. */
#include "unit.h"
#include "canned.h"

#include "config/config.h"
#include "oauth/store.h"
#include "oauth/weblogin.h"

#include <stdio.h>
#include <stdlib.h>

static const char json[] =
	"{\"mcpServers\":{\"up\":{\"url\":\"http://127.0.0.1:1/mcp\"},"
	"\"other\":{\"url\":\"http://127.0.0.1:1/other\"}},"
	"\"sluice\":{\"http\":{\"publicUrl\":\"http://127.0.0.1:8080/\"}}}";

struct seen {
	int calls;
	unsigned status;
	char *html;
	char cookie[512];            /* the last Set-Cookie, "" when none */
};

static void on_page(void *arg, unsigned status, const char *html, const char *set_cookie)
{
	struct seen *s = arg;
	s->calls++;
	s->status = status;
	free(s->html);
	s->html = strdup(html);
	snprintf(s->cookie, sizeof(s->cookie), "%s", set_cookie ? set_cookie : "");
}

/* What a browser sends back of a Set-Cookie: its name=value. */
static char *cookie_pair(const char *set_cookie)
{
	return strndup(set_cookie, strcspn(set_cookie, ";"));
}

static struct sl_config *load(const char *text)
{
	struct sl_config *c = NULL;
	struct sl_err err;
	CHECK_INT(sl_config_parse("t.json", text, strlen(text), &c, &err), SL_OK);
	return c;
}

static void finish(uv_loop_t *loop, struct sl_weblogin *w, struct sl_config *cfg)
{
	sl_weblogin_free(w);
	uv_run(loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(loop), 0);
	sl_config_unref(cfg);
}

TEST(weblogin_url_reuse_bound_expiry)
{
	struct sl_config *cfg = load(json);
	const struct sl_server_config *up = &cfg->servers[0], *other = &cfg->servers[1];
	struct sl_weblogin *w;
	char *url, *id, *id2, *first = NULL, user[16];
	uv_loop_t loop;
	uint64_t t = 1000000;

	uv_loop_init(&loop);
	w = sl_weblogin_new(&loop, cfg);
	url = sl_weblogin_url_at(w, up, "u1", "alice (jwt)", &id, t);
	CHECK(url != NULL && id != NULL);
	CHECK_INT(strlen(id), 22); /* 128 bits, base64url */
	if (url && id)
		CHECK(!strcmp(url + strlen("http://127.0.0.1:8080/oauth/login/"), id) &&
		      !strncmp(url, "http://127.0.0.1:8080/oauth/login/", 34));
	free(url);
	/* The same (server, user) while pending: the same login. */
	url = sl_weblogin_url_at(w, up, "u1", "alice (jwt)", &id2, t + 1);
	CHECK_STR(id2, id);
	free(url);
	free(id2);
	/* Another user, another server: another login, another id. */
	free(sl_weblogin_url_at(w, up, "u2", "bob", &id2, t + 2));
	CHECK(strcmp(id2, id) != 0);
	free(id2);
	free(sl_weblogin_url_at(w, other, "u1", "alice", &id2, t + 3));
	CHECK(strcmp(id2, id) != 0);
	free(id2);
	CHECK_INT(sl_weblogin_pending(w, t + 4), 3);
	/* Expiry: gone after SL_WEBLOGIN_TTL_MS, and a new id then. */
	CHECK_INT(sl_weblogin_pending(w, t + SL_WEBLOGIN_TTL_MS - 1), 3);
	CHECK_INT(sl_weblogin_pending(w, t + SL_WEBLOGIN_TTL_MS + 3), 0);
	free(sl_weblogin_url_at(w, up, "u1", "alice", &id2, t + SL_WEBLOGIN_TTL_MS + 4));
	CHECK(strcmp(id2, id) != 0);
	free(id2);
	free(id);
	/* The bound: one more than SL_WEBLOGIN_MAX drops the oldest. */
	t += 2 * SL_WEBLOGIN_TTL_MS;
	for (int i = 0; i <= SL_WEBLOGIN_MAX; i++) {
		snprintf(user, sizeof(user), "user%d", i);
		free(sl_weblogin_url_at(w, up, user, "x", &id, t));
		if (i == 0)
			first = id;
		else
			free(id);
	}
	CHECK_INT(sl_weblogin_pending(w, t), SL_WEBLOGIN_MAX);
	free(sl_weblogin_url_at(w, up, "user0", "x", &id, t)); /* dropped: a new one */
	CHECK(strcmp(id, first) != 0);
	free(id);
	free(first);
	CHECK_INT(sl_weblogin_pending(w, t), SL_WEBLOGIN_MAX);
	finish(&loop, w, cfg);
}

TEST(weblogin_no_public_url_no_url)
{
	struct sl_config *cfg = load("{\"mcpServers\":{\"up\":{\"url\":\"http://127.0.0.1:1/mcp\"}}}");
	struct sl_weblogin *w;
	char *id = (char *)"x";
	uv_loop_t loop;

	uv_loop_init(&loop);
	w = sl_weblogin_new(&loop, cfg);
	CHECK(sl_weblogin_url(w, &cfg->servers[0], "u", "alice", &id) == NULL);
	CHECK(id == NULL);
	finish(&loop, w, cfg);
}

TEST(weblogin_pages_without_a_login)
{
	struct sl_config *cfg = load(json);
	struct sl_weblogin_args a = { .state = "nope", .error = "access_denied",
				      .error_description = "<script>alert(1)</script>" };
	struct sl_weblogin *w;
	struct seen s = { 0 };
	uv_loop_t loop;

	uv_loop_init(&loop);
	w = sl_weblogin_new(&loop, cfg);
	CHECK(sl_weblogin_path("/oauth/login/abc") && sl_weblogin_path("/oauth/callback"));
	CHECK(!sl_weblogin_path("/oauth/callbackx") && !sl_weblogin_path("/mcp"));
	CHECK(sl_weblogin_serve(w, "/oauth/login/unknown", NULL, on_page, &s) == NULL);
	CHECK_INT(s.calls, 1);
	CHECK_INT(s.status, 404);
	CHECK(s.html && strstr(s.html, "unknown or has expired"));
	/* A callback whose state names no pending login: 400, and nothing of
	 * the query is shown. */
	CHECK(sl_weblogin_serve(w, "/oauth/callback", &a, on_page, &s) == NULL);
	CHECK_INT(s.status, 400);
	CHECK(s.html && !strstr(s.html, "script") && !strstr(s.html, "access_denied"));
	a.state = NULL;
	CHECK(sl_weblogin_serve(w, "/oauth/callback", &a, on_page, &s) == NULL);
	CHECK_INT(s.status, 400);
	CHECK(s.html && strstr(s.html, "no state"));
	free(s.html);
	finish(&loop, w, cfg);
}

/* The page starts the login: discovery fails (nothing listens on port 1),
 * and the waiting page says so, escaped; a page cancelled meanwhile hears
 * nothing; a reload without the server fails its pending login. */
TEST(weblogin_page_waits_for_discovery)
{
	char dir[] = "/tmp/sluice-unit-weblogin-XXXXXX";
	struct sl_config *cfg, *next;
	struct sl_weblogin *w;
	struct sl_weblogin_req *q, *q2;
	struct seen s = { 0 }, s2 = { 0 };
	char *url, *id, path[128];
	uv_loop_t loop;

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	cfg = load(json);
	uv_loop_init(&loop);
	w = sl_weblogin_new(&loop, cfg);
	url = sl_weblogin_url(w, &cfg->servers[0], "u1", "<b>alice</b>", &id);
	snprintf(path, sizeof(path), "/oauth/login/%s", id);
	q = sl_weblogin_serve(w, path, NULL, on_page, &s);
	q2 = sl_weblogin_serve(w, path, NULL, on_page, &s2); /* a second tab */
	CHECK(q != NULL && q2 != NULL);
	CHECK_INT(s.calls + s2.calls, 0);
	/* At most SL_WEBLOGIN_WAITING_MAX pages wait on one login. */
	{
		struct sl_weblogin_req *more[SL_WEBLOGIN_WAITING_MAX];
		struct seen s3 = { 0 };
		for (int i = 0; i < SL_WEBLOGIN_WAITING_MAX - 2; i++)
			CHECK((more[i] = sl_weblogin_serve(w, path, NULL, on_page, &s3)) != NULL);
		CHECK(sl_weblogin_serve(w, path, NULL, on_page, &s3) == NULL);
		CHECK_INT(s3.calls, 1);
		CHECK_INT(s3.status, 503);
		for (int i = 0; i < SL_WEBLOGIN_WAITING_MAX - 2; i++)
			sl_weblogin_cancel(more[i]);
		free(s3.html);
	}
	sl_weblogin_cancel(q2);
	while (s.calls == 0 && uv_run(&loop, UV_RUN_ONCE))
		;
	uv_run(&loop, UV_RUN_NOWAIT);
	CHECK_INT(s.calls, 1);
	CHECK_INT(s2.calls, 0);
	CHECK_INT(s.status, 502);
	CHECK(s.html && strstr(s.html, "login to up failed"));
	/* Failed: the login is gone. */
	CHECK_INT(sl_weblogin_pending(w, sl_now_ms()), 0);
	CHECK(sl_weblogin_serve(w, path, NULL, on_page, &s) == NULL);
	CHECK_INT(s.status, 404);
	free(url);
	free(id);

	/* A reload that removes the server: its pending login ends. */
	free(sl_weblogin_url(w, &cfg->servers[0], "u1", "alice", NULL));
	free(sl_weblogin_url(w, &cfg->servers[1], "u1", "alice", NULL));
	next = load("{\"mcpServers\":{\"other\":{\"url\":\"http://127.0.0.1:1/other\"}},"
		    "\"sluice\":{\"http\":{\"publicUrl\":\"http://127.0.0.1:8080\"}}}");
	sl_weblogin_reconfigure(w, next);
	CHECK_INT(sl_weblogin_pending(w, sl_now_ms()), 1);
	sl_config_unref(cfg);
	free(s.html);
	finish(&loop, w, next);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_INT(system(cmd), 0);
	}
	unsetenv("XDG_STATE_HOME");
}

struct logged {
	int calls;
	char server[32], user[32];
};

static void on_logged_in(void *ctx, const char *server_name, const char *user)
{
	struct logged *g = ctx;
	g->calls++;
	snprintf(g->server, sizeof(g->server), "%s", server_name);
	snprintf(g->user, sizeof(g->user), "%s", user);
}

/* The login page, once its authorization URL is known: the state in it. */
static char *open_page(uv_loop_t *loop, struct sl_weblogin *w, const char *id, struct seen *s)
{
	struct sl_weblogin_req *q;
	char path[128];
	const char *st;

	snprintf(path, sizeof(path), "/oauth/login/%s", id);
	s->calls = 0;
	q = sl_weblogin_serve(w, path, NULL, on_page, s);
	CHECK(q != NULL);
	while (q && s->calls == 0 && uv_run(loop, UV_RUN_ONCE))
		;
	CHECK_INT(s->status, 200);
	st = s->html ? strstr(s->html, "&amp;state=") : NULL;
	CHECK(st != NULL);
	return st ? strndup(st + 11, strcspn(st + 11, "&\"")) : strdup("");
}

/* Page, authorization server, callback, exchange, record saved under the
 * user, the gateway told; then the callback again (single use), and an
 * authorization server's refusal shown escaped. Before that, callbacks
 * from a browser that did not open the page (no binder, another value, a
 * binder of another login) are 403 and save nothing (finding 1 of issue 32). */
TEST(weblogin_whole_login_against_a_canned_server)
{
	char dir[] = "/tmp/sluice-unit-weblogin-XXXXXX";
	struct canned as = { .list_status = 0 };
	struct sl_weblogin_args a = { .code = "c0de" };
	struct sl_weblogin_req *q;
	struct sl_oauth_record rec = { 0 };
	struct sl_oauth_store *st;
	struct logged g = { 0 };
	struct seen s = { 0 }, s2 = { 0 };
	struct sl_config *cfg;
	struct sl_weblogin *w;
	struct sl_err err;
	char *text, *id, *state, *pair, mcp[64], want[256], jar[1024];
	uv_loop_t loop;

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	uv_loop_init(&loop);
	t_canned_listen(&loop, &as);
	snprintf(mcp, sizeof(mcp), "http://127.0.0.1:%d/mcp", as.port);
	text = sl_printf("{\"mcpServers\":{\"up\":{\"url\":\"%s\",\"oauth\":{\"clientId\":\"c1\"}}},"
			 "\"sluice\":{\"http\":{\"publicUrl\":\"http://127.0.0.1:8080\"}}}", mcp);
	cfg = load(text);
	free(text);
	w = sl_weblogin_new(&loop, cfg);
	sl_weblogin_set_done(w, on_logged_in, &g);
	/* Refused: the authorization URL opened elsewhere. Each refusal ends
	 * its login (the code that browser carries is never exchanged). */
	{
		char *other_id, *other_pair;
		free(sl_weblogin_url(w, &cfg->servers[0], "u2", "bob (jwt)", &other_id));
		free(open_page(&loop, w, other_id, &s));
		other_pair = cookie_pair(s.cookie);
		for (int i = 0; i < 6; i++) {
			free(sl_weblogin_url(w, &cfg->servers[0], "u1", "alice (jwt)", &id));
			state = open_page(&loop, w, id, &s);
			pair = cookie_pair(s.cookie);
			/* No Cookie header, an empty one, another value,
			 * another login's binder under this login's name,
			 * this one's cut short, this one under another name. */
			const char *mine = strchr(pair, '=') + 1;
			if (i == 1)
				jar[0] = '\0';
			else if (i == 2)
				snprintf(jar, sizeof(jar), "sluice_login_%s=AAAAAAAAAAAAAAAAAAAAAA", id);
			else if (i == 3)
				snprintf(jar, sizeof(jar), "sluice_login_%s=%s; x=1", id,
					 strchr(other_pair, '=') + 1);
			else if (i == 4)
				snprintf(jar, sizeof(jar), "sluice_login_%s=%.21s", id, mine);
			else
				snprintf(jar, sizeof(jar), "sluice_login_%sx=%s", id, mine);
			a.state = state;
			a.cookie = i ? jar : NULL;
			s2.calls = 0;
			CHECK(sl_weblogin_serve(w, "/oauth/callback", &a, on_page, &s2) == NULL);
			CHECK_INT(s2.status, 403);
			CHECK(s2.html && strstr(s2.html, "this browser did not open its page"));
			CHECK(s2.html && strstr(s2.html, "Nothing was saved"));
			CHECK(s2.html && strstr(s2.html, "for <strong>alice (jwt)</strong>"));
			snprintf(want, sizeof(want), "sluice_login_%s=; Path=/oauth/callback; Max-Age=0",
				 id);
			CHECK(!strncmp(s2.cookie, want, strlen(want)));
			CHECK(strstr(as.token_body, "c0de") == NULL); /* no token request */
			CHECK_INT(g.calls, 0);
			free(pair);
			free(state);
			free(id);
		}
		free(other_pair);
		free(other_id);
		CHECK_INT(sl_weblogin_pending(w, sl_now_ms()), 1); /* bob's */
		CHECK_INT(sl_oauth_store_open(cfg, &st, &err), SL_OK);
		CHECK_INT(sl_oauth_store_load(st, mcp, "u1", &rec, &err), SL_ERR_NOT_FOUND);
		sl_oauth_store_free(st);
	}

	free(sl_weblogin_url(w, &cfg->servers[0], "u1", "alice (jwt)", &id));
	state = open_page(&loop, w, id, &s);
	/* The binder: HttpOnly, SameSite=Lax, only to the callback, no Secure
	 * over http (the https case: weblogin_binder_cookie_https). */
	snprintf(want, sizeof(want), "sluice_login_%s=", id);
	CHECK(!strncmp(s.cookie, want, strlen(want)));
	CHECK_INT(strcspn(s.cookie + strlen(want), ";"), 22);
	CHECK_STR(strchr(s.cookie, ';'), "; Path=/oauth/callback; Max-Age=600; HttpOnly; SameSite=Lax");
	pair = cookie_pair(s.cookie);
	snprintf(jar, sizeof(jar), "theme=dark;%s ; other=1", pair);
	a.cookie = jar;
	CHECK(strstr(s.html, "This login is for <strong>alice (jwt)</strong>") != NULL);
	CHECK(strstr(s.html, "If you are not <strong>alice (jwt)</strong>, close this page") != NULL);
	CHECK(strstr(s.html, "redirect_uri=http%3A%2F%2F127.0.0.1%3A8080%2Foauth%2Fcallback") != NULL);
	CHECK_INT(strlen(state), 32);
	/* A second tab: the same page, at once. */
	{
		char path[128];
		snprintf(path, sizeof(path), "/oauth/login/%s", id);
		CHECK(sl_weblogin_serve(w, path, NULL, on_page, &s2) == NULL);
		CHECK_INT(s2.status, 200);
		CHECK(s2.html && strstr(s2.html, state));
		CHECK(!strncmp(s2.cookie, pair, strlen(pair))); /* the same binder */
	}
	a.state = state;
	s2.calls = 0;
	q = sl_weblogin_serve(w, "/oauth/callback", &a, on_page, &s2);
	CHECK(q != NULL);
	while (q && s2.calls == 0 && uv_run(&loop, UV_RUN_ONCE)) /* the token request */
		;
	CHECK_INT(s2.status, 200);
	CHECK(s2.html && strstr(s2.html, "Logged in to <strong>up</strong> as <strong>alice (jwt)"));
	snprintf(want, sizeof(want), "sluice_login_%s=; Path=/oauth/callback; Max-Age=0", id);
	CHECK(!strncmp(s2.cookie, want, strlen(want))); /* forgotten */
	free(pair);
	CHECK_INT(g.calls, 1);
	CHECK_STR(g.server, "up");
	CHECK_STR(g.user, "u1");
	CHECK_INT(sl_oauth_store_open(cfg, &st, &err), SL_OK);
	CHECK_INT(sl_oauth_store_load(st, mcp, "u1", &rec, &err), SL_OK);
	CHECK_STR(rec.tokens.access_token, "t2");
	CHECK_STR(rec.reg.redirect_uri, "http://127.0.0.1:8080/oauth/callback");
	CHECK_INT(sl_oauth_store_load(st, mcp, "", &rec, &err), SL_ERR_NOT_FOUND);
	sl_oauth_record_dispose(&rec);
	sl_oauth_store_free(st);
	/* Used: the same callback again is refused, the link is gone. */
	CHECK(sl_weblogin_serve(w, "/oauth/callback", &a, on_page, &s2) == NULL);
	CHECK_INT(s2.status, 400);
	CHECK_INT(sl_weblogin_pending(w, sl_now_ms()), 1); /* only bob's */
	free(state);
	free(id);

	/* The authorization server refuses: 400, its words escaped. */
	free(sl_weblogin_url(w, &cfg->servers[0], "u1", "alice (jwt)", &id));
	state = open_page(&loop, w, id, &s);
	pair = cookie_pair(s.cookie);
	a.cookie = pair;
	a.state = state;
	a.code = NULL;
	a.error = "access_denied";
	a.error_description = "<img src=x onerror=alert(1)>";
	CHECK(sl_weblogin_serve(w, "/oauth/callback", &a, on_page, &s2) == NULL);
	CHECK_INT(s2.status, 400);
	CHECK(s2.html && strstr(s2.html, "access_denied: &lt;img src=x onerror=alert(1)&gt;"));
	CHECK(s2.html && !strstr(s2.html, "<img"));
	CHECK_INT(g.calls, 1);
	free(pair);
	free(state);
	free(id);
	free(s.html);
	free(s2.html);
	uv_close((uv_handle_t *)&as.tcp, NULL);
	finish(&loop, w, cfg);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_INT(system(cmd), 0);
	}
	unsetenv("XDG_STATE_HOME");
}

/* Under an https public URL (here with a path), the binder is a __Host-
 * cookie: Secure, Path=/, no Domain, so no sibling subdomain can set one;
 * the callback wants it under that name, not the plain one. */
TEST(weblogin_binder_cookie_https)
{
	char dir[] = "/tmp/sluice-unit-weblogin-XXXXXX";
	struct canned as = { .list_status = 0 };
	struct sl_weblogin_args a = { 0 };
	struct sl_config *cfg;
	struct sl_weblogin *w;
	struct seen s = { 0 };
	char *id, *text, *state, want[128], jar[512];
	uv_loop_t loop;

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	uv_loop_init(&loop);
	t_canned_listen(&loop, &as);
	text = sl_printf("{\"mcpServers\":{\"up\":{\"url\":\"http://127.0.0.1:%d/mcp\","
			 "\"oauth\":{\"clientId\":\"c1\"}}},\"sluice\":{\"http\":{\"publicUrl\":"
			 "\"https://mcp.example.com/gw/\"}}}", as.port);
	cfg = load(text);
	free(text);
	w = sl_weblogin_new(&loop, cfg);
	free(sl_weblogin_url(w, &cfg->servers[0], "u1", "alice", &id));
	state = open_page(&loop, w, id, &s);
	snprintf(want, sizeof(want), "__Host-sluice_login_%s=", id);
	CHECK(!strncmp(s.cookie, want, strlen(want)));
	CHECK_STR(strchr(s.cookie, ';'), "; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure");
	/* The same value without the prefix (set by a subdomain) is not it. */
	a.state = state;
	a.code = "c0de";
	snprintf(jar, sizeof(jar), "%s", s.cookie + strlen("__Host-"));
	jar[strcspn(jar, ";")] = '\0';
	a.cookie = jar;
	CHECK(sl_weblogin_serve(w, "/oauth/callback", &a, on_page, &s) == NULL);
	CHECK_INT(s.status, 403);
	snprintf(want, sizeof(want), "__Host-sluice_login_%s=; Path=/; Max-Age=0", id);
	CHECK(!strncmp(s.cookie, want, strlen(want)));
	free(state);
	free(s.html);
	free(id);
	uv_close((uv_handle_t *)&as.tcp, NULL);
	finish(&loop, w, cfg);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_INT(system(cmd), 0);
	}
	unsetenv("XDG_STATE_HOME");
}

/* oauth/client.c: the stale rule, and the single-flight refresh with its
 * bound on waiters, against a token endpoint that refuses connections. */
#include "unit.h"
#include "config/config.h"
#include "core/common.h"
#include "oauth/client.h"

#include <stdlib.h>
#include <uv.h>

TEST(oauth_tokens_stale_by_expiry_and_margin)
{
	struct sl_oauth_tokens t = { .access_token = "a" };

	CHECK(!sl_oauth_tokens_stale(&t, 1000, 60));          /* no expiry given */
	t.expires_at = 2000;
	CHECK(!sl_oauth_tokens_stale(&t, 1000, 60));          /* far off */
	CHECK(sl_oauth_tokens_stale(&t, 1940, 60));           /* within the margin */
	CHECK(!sl_oauth_tokens_stale(&t, 1939, 60));
	CHECK(sl_oauth_tokens_stale(&t, 2500, 0));            /* past */
	t.access_token = NULL;
	CHECK(!sl_oauth_tokens_stale(&t, 2500, 60));          /* nothing to refresh */
}

/* A token that lives less than refreshBeforeSeconds is not stale from
 * birth (refreshed before every request): it is refreshed once half its
 * lifetime has passed, or when expired. */
TEST(oauth_tokens_stale_short_lived_at_half_life)
{
	struct sl_oauth_tokens t = { .access_token = "a", .issued_at = 1000, .expires_at = 1030 };

	CHECK(!sl_oauth_tokens_stale(&t, 1000, 60));          /* just issued */
	CHECK(!sl_oauth_tokens_stale(&t, 1014, 60));
	CHECK(sl_oauth_tokens_stale(&t, 1015, 60));           /* half its life */
	CHECK(sl_oauth_tokens_stale(&t, 1031, 60));           /* expired */
	t.expires_at = 1100;                                  /* under twice the margin */
	CHECK(!sl_oauth_tokens_stale(&t, 1049, 60));
	CHECK(sl_oauth_tokens_stale(&t, 1050, 60));
	t.expires_at = 2000;                                  /* long-lived: the margin rules */
	CHECK(!sl_oauth_tokens_stale(&t, 1939, 60));
	CHECK(sl_oauth_tokens_stale(&t, 1940, 60));
	t.issued_at = 0;                                      /* unknown (from the store) */
	t.expires_at = 1030;
	CHECK(sl_oauth_tokens_stale(&t, 1000, 60));
}

struct seen {
	int calls;
	bool ok;
};

static void on_ready(void *arg, bool ok)
{
	struct seen *s = arg;
	s->calls++;
	s->ok = ok;
}

TEST(oauth_client_one_refresh_bounded_waiters_forget_and_rate_limit)
{
	static const char json[] =
		"{\"mcpServers\":{\"s\":{\"url\":\"http://127.0.0.1:1/mcp\"}},"
		"\"sluice\":{\"oauth\":{\"maxHeldRequests\":3}}}";
	char dir[] = "/tmp/sluice-unit-oauth-XXXXXX";
	struct sl_config *cfg;
	struct sl_oauth_store *st;
	struct sl_oauth_record rec = { 0 };
	struct sl_oauth_client *c;
	struct seen a = { 0 }, b = { 0 }, d = { 0 }, e = { 0 };
	struct sl_err err;
	uv_loop_t loop;

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	CHECK_INT(sl_config_parse("t.json", json, sizeof(json) - 1, &cfg, &err), SL_OK);
	CHECK_INT(sl_oauth_store_open(cfg, &st, &err), SL_OK);
	rec.url = "http://127.0.0.1:1/mcp";
	rec.user = "";
	rec.as.token_endpoint = "http://127.0.0.1:1/token"; /* nothing listens: a transport failure */
	rec.reg.client_id = "c1";
	rec.tokens.access_token = "old";
	rec.tokens.refresh_token = "r1";
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);
	sl_oauth_store_free(st);

	uv_loop_init(&loop);
	c = sl_oauth_client_new(&loop, cfg, &cfg->servers[0], "");
	CHECK_STR(sl_oauth_client_token(c), "old");
	CHECK(!sl_oauth_client_stale(c));
	/* Three requests refused with the token in use wait on one refresh;
	 * the fourth is over the bound. No callback runs inside a call. */
	CHECK_INT(sl_oauth_client_refused(c, 401, NULL, "old", on_ready, &a), SL_OAUTH_RETRY);
	CHECK_INT(sl_oauth_client_refused(c, 401, NULL, "old", on_ready, &b), SL_OAUTH_RETRY);
	CHECK_INT(sl_oauth_client_refresh(c, on_ready, &d), SL_OAUTH_RETRY);
	CHECK_INT(sl_oauth_client_refused(c, 401, NULL, "old", on_ready, &e), SL_OAUTH_FAIL);
	CHECK(strstr(sl_oauth_client_why(c), "too many requests waiting for a token") != NULL);
	CHECK_INT(a.calls + b.calls + d.calls + e.calls, 0);
	sl_oauth_client_forget(c, &b);
	while (a.calls == 0)
		uv_run(&loop, UV_RUN_ONCE);
	uv_run(&loop, UV_RUN_NOWAIT);
	/* One answer for all: not ok; the forgotten one never hears. */
	CHECK_INT(a.calls, 1);
	CHECK_INT(d.calls, 1);
	CHECK_INT(b.calls, 0);
	CHECK(!a.ok && !d.ok);
	CHECK(strstr(sl_oauth_client_why(c), "cannot refresh its token") != NULL);
	/* The refresh token may still be good: not "needs login", and the
	 * next try waits a second rather than hammer the server. */
	CHECK(!sl_oauth_client_needs_login(c));
	CHECK_INT(sl_oauth_client_refused(c, 401, NULL, "old", on_ready, &e), SL_OAUTH_FAIL);
	CHECK(strstr(sl_oauth_client_why(c), "cannot refresh its token") != NULL);
	CHECK_INT(e.calls, 0);

	/* A refusal of a token older than the current one: at once, with it
	 * (from the loop, not inside the call). */
	memset(&e, 0, sizeof(e));
	CHECK_INT(sl_oauth_client_refused(c, 401, NULL, "older", on_ready, &e), SL_OAUTH_RETRY);
	CHECK_INT(e.calls, 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	CHECK_INT(e.calls, 1);
	CHECK(e.ok);
	sl_oauth_client_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
	sl_config_unref(cfg);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_INT(system(cmd), 0);
	}
	unsetenv("XDG_STATE_HOME");
}

TEST(oauth_client_needs_login_without_refresh_token)
{
	static const char json[] = "{\"mcpServers\":{\"gh\":{\"url\":\"http://127.0.0.1:1/mcp\"}}}";
	char dir[] = "/tmp/sluice-unit-oauth-XXXXXX";
	struct sl_config *cfg;
	struct sl_oauth_client *c;
	struct seen a = { 0 };
	struct sl_err err;
	uv_loop_t loop;

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	CHECK_INT(sl_config_parse("t.json", json, sizeof(json) - 1, &cfg, &err), SL_OK);
	uv_loop_init(&loop);
	c = sl_oauth_client_new(&loop, cfg, &cfg->servers[0], "");
	CHECK(sl_oauth_client_token(c) == NULL);
	CHECK(!sl_oauth_client_stale(c));
	/* A Bearer challenge and no login: nothing to try, a person must act. */
	CHECK_INT(sl_oauth_client_refused(c, 401, "Bearer error=\"invalid_token\"", NULL, on_ready, &a),
		  SL_OAUTH_FAIL);
	CHECK(sl_oauth_client_needs_login(c));
	CHECK_STR(sl_oauth_client_why(c), "needs login: run `sluice auth login gh`");
	/* 403 insufficient_scope names the scope and the command. */
	CHECK_INT(sl_oauth_client_refused(c, 403, "Bearer error=\"insufficient_scope\", scope=\"repo\"",
					  NULL, on_ready, &a), SL_OAUTH_FAIL);
	CHECK_STR(sl_oauth_client_why(c), "needs the scope \"repo\": run `sluice auth login gh`");
	CHECK(!sl_oauth_client_reload(c));
	sl_oauth_client_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
	CHECK_INT(a.calls, 0);
	sl_config_unref(cfg);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_INT(system(cmd), 0);
	}
	unsetenv("XDG_STATE_HOME");
}

/* Step-up (MCP authorization, scope challenge handling): a 403
 * insufficient_scope is tried again once a login has saved a newer token
 * (the running gateway used to send the refused one forever); a refusal
 * for scopes the token already has asks for no login (it would get the
 * same answer: the loop the conformance suite's auth/scope-retry-limit
 * checks for). */
TEST(oauth_client_step_up_takes_a_newer_token_and_stops_when_granted)
{
	static const char json[] = "{\"mcpServers\":{\"gh\":{\"url\":\"http://127.0.0.1:1/mcp\"}}}";
	static const char want_write[] = "Bearer error=\"insufficient_scope\", scope=\"read write\"";
	char dir[] = "/tmp/sluice-unit-oauth-XXXXXX";
	struct sl_config *cfg;
	struct sl_oauth_store *st;
	struct sl_oauth_record rec = { 0 };
	struct sl_oauth_client *c;
	struct seen a = { 0 };
	struct sl_err err;
	uv_loop_t loop;

	CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_STATE_HOME", dir, 1);
	CHECK_INT(sl_config_parse("t.json", json, sizeof(json) - 1, &cfg, &err), SL_OK);
	CHECK_INT(sl_oauth_store_open(cfg, &st, &err), SL_OK);
	rec.url = "http://127.0.0.1:1/mcp";
	rec.user = "";
	rec.reg.client_id = "c1";
	rec.tokens.access_token = "t-read";
	rec.tokens.scope = "read";
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);

	uv_loop_init(&loop);
	c = sl_oauth_client_new(&loop, cfg, &cfg->servers[0], "");
	CHECK_STR(sl_oauth_client_token(c), "t-read");
	/* Wider than granted: a login is asked for, and the scope kept. */
	CHECK_INT(sl_oauth_client_refused(c, 403, want_write, "t-read", on_ready, &a), SL_OAUTH_FAIL);
	CHECK_STR(sl_oauth_client_why(c), "needs the scope \"read write\": run `sluice auth login gh`");
	/* Kept for the upstream (a list refused so waits for a login), apart
	 * from why, which the next failure overwrites. */
	CHECK_STR(sl_oauth_client_wants_scope(c), "needs the scope \"read write\": run `sluice auth login gh`");
	/* The login saves a token with both: the same refusal (of the old
	 * token, sent meanwhile) is tried again with it, from the loop. */
	rec.tokens.access_token = "t-write";
	rec.tokens.scope = "read write";
	CHECK_INT(sl_oauth_store_save(st, &rec, &err), SL_OK);
	CHECK_INT(sl_oauth_client_refused(c, 403, want_write, "t-read", on_ready, &a), SL_OAUTH_RETRY);
	CHECK_INT(a.calls, 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	CHECK_INT(a.calls, 1);
	CHECK(a.ok);
	CHECK_STR(sl_oauth_client_token(c), "t-write");
	CHECK(sl_oauth_client_wants_scope(c) == NULL);
	/* Refused again with it: the token has the scope, a login would not
	 * help; no retry, no login asked for. */
	CHECK_INT(sl_oauth_client_refused(c, 403, want_write, "t-write", on_ready, &a), SL_OAUTH_FAIL);
	CHECK_STR(sl_oauth_client_why(c), "refused the request for the scope \"read write\", which "
					  "its token has: a new login would not help");
	CHECK(!sl_oauth_client_needs_login(c));
	CHECK(sl_oauth_client_wants_scope(c) == NULL); /* no login mends it */
	uv_run(&loop, UV_RUN_NOWAIT);
	CHECK_INT(a.calls, 1);
	sl_oauth_client_free(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
	sl_oauth_store_free(st);
	sl_config_unref(cfg);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK_INT(system(cmd), 0);
	}
	unsetenv("XDG_STATE_HOME");
}

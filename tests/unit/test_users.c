/* Per-user links (upstream/users.c): who a user is, which link serves a
 * caller, and the bound on links per server. */
#include "unit.h"
#include "auth/caller.h"
#include "config/config.h"
#include "upstream/upstream.h"

#include <stdlib.h>

static void nothing(void *ctx, struct sl_upstream *u)
{
}

static const struct sl_upstream_ops ops = { .ready = nothing, .down = nothing };

static struct sl_caller *caller(const char *issuer, const char *subject, const char *profile)
{
	struct sl_caller *c = sl_caller_new(issuer ? "jwt" : "token");
	sl_caller_set_subject(c, issuer, subject);
	sl_caller_set_profile(c, profile);
	return c;
}

TEST(users_key_is_the_identity_whatever_the_profile)
{
	struct sl_caller *a = caller("https://idp", "alice", NULL);
	struct sl_caller *a2 = caller("https://idp", "alice", "ops");
	struct sl_caller *other = caller("https://other", "alice", NULL);
	struct sl_caller *tok = caller(NULL, "alice", NULL);
	struct sl_caller *none = sl_caller_new("none");
	char k1[65], k2[65], k3[65], k4[65];

	CHECK(sl_caller_user_key(a, k1));
	CHECK(sl_caller_user_key(a2, k2));
	CHECK_STR(k1, k2);
	CHECK(sl_caller_user_key(other, k3));
	CHECK(strcmp(k1, k3) != 0);
	/* A static token's name is not an issuer's subject of the same name. */
	CHECK(sl_caller_user_key(tok, k4));
	CHECK(strcmp(k1, k4) != 0);
	CHECK(!sl_caller_user_key(none, k4));
	CHECK(!sl_caller_user_key(NULL, k4));
	sl_caller_unref(a);
	sl_caller_unref(a2);
	sl_caller_unref(other);
	sl_caller_unref(tok);
	sl_caller_unref(none);
}

TEST(users_one_link_per_user_and_at_most_max_users)
{
	static const char json[] =
		"{\"mcpServers\":{\"up\":{\"url\":\"http://127.0.0.1:1/mcp\",\"oauth\":{\"perUser\":true}},"
		"\"plain\":{\"url\":\"http://127.0.0.1:1/mcp2\"}},"
		"\"sluice\":{\"oauth\":{\"maxUsers\":1}}}";
	struct sl_caller *alice = caller("https://idp", "alice", NULL);
	struct sl_caller *alice_ops = caller("https://idp", "alice", "ops");
	struct sl_caller *bob = caller("https://idp", "bob", NULL);
	struct sl_upstream *up, *plain, *l;
	struct sl_config *cfg;
	struct sl_err err;
	uv_loop_t loop;
	char key[65];

	CHECK_INT(sl_config_parse("t.json", json, sizeof(json) - 1, &cfg, &err), SL_OK);
	uv_loop_init(&loop);
	up = sl_upstream_new(&loop, &cfg->servers[0], cfg, &ops, NULL);
	plain = sl_upstream_new(&loop, &cfg->servers[1], cfg, &ops, NULL);

	/* No identity, or no perUser: the server's own link. */
	CHECK(sl_upstream_for(up, NULL, &err) == up);
	CHECK(sl_upstream_for(plain, alice, &err) == plain);

	l = sl_upstream_for(up, alice, &err);
	CHECK(l && l != up);
	CHECK(l->parent == up && sl_upstream_server(l) == up);
	CHECK(sl_caller_user_key(alice, key));
	CHECK_STR(l->user, key);
	CHECK_INT(l->state, SL_UP_IDLE); /* opened by a request, not by being found */
	CHECK(sl_upstream_login_url(l) == NULL);
	/* The same person through another profile: the same link. */
	CHECK(sl_upstream_for(up, alice_ops, &err) == l);
	CHECK_INT(up->users.count, 1);

	/* One user more than sluice.oauth.maxUsers: refused, saying why. */
	CHECK(sl_upstream_for(up, bob, &err) == NULL);
	CHECK(strstr(err.msg, "links for 1 users already (sluice.oauth.maxUsers)") != NULL);
	CHECK_INT(up->users.count, 1);

	sl_upstream_stop(up);
	sl_upstream_stop(plain);
	CHECK(sl_upstream_stopped(up));
	sl_upstream_free(up);
	sl_upstream_free(plain);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_INT(uv_loop_close(&loop), 0);
	sl_config_unref(cfg);
	sl_caller_unref(alice);
	sl_caller_unref(alice_ops);
	sl_caller_unref(bob);
}

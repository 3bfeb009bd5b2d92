/* Unit tests of src/auth/: callers, and the static token methods of
 * sl_auth_check (constant-time match, the identity each token stands for,
 * the denials and their challenges). */
#include "unit.h"

#include "auth/auth.h"
#include "config/config.h"

#include <stdlib.h>
#include <string.h>

static struct sl_config *config(const char *text)
{
	struct sl_config *c = NULL;
	struct sl_err err;
	if (sl_config_parse("auth.json", text, strlen(text), &c, &err) != SL_OK) {
		printf("  %s\n", err.msg);
		return NULL;
	}
	return c;
}

TEST(caller_identity_key_and_lists)
{
	struct sl_caller *a = sl_caller_new("jwt"), *b = sl_caller_new("jwt"), *p;

	CHECK(sl_caller_same(NULL, NULL));
	CHECK(!sl_caller_same(a, NULL));
	sl_caller_set_subject(a, "https://idp", "alice");
	sl_caller_set_subject(b, "https://other-idp", "alice");
	CHECK(!sl_caller_same(a, b)); /* same subject, another issuer: another person */
	sl_caller_set_subject(b, "https://idp", "alice");
	CHECK(sl_caller_same(a, b));
	sl_caller_add_group(a, "sre");
	sl_caller_add_group(a, "sre");
	sl_caller_add_scope(a, "read");
	CHECK(sl_caller_in_group(a, "sre") && !sl_caller_in_group(a, "dev"));
	CHECK(a->groups[1] == NULL); /* no duplicates */
	CHECK(sl_caller_has_scope(a, "read") && !sl_caller_has_scope(b, "read"));
	CHECK(!sl_caller_in_group(NULL, "sre"));
	p = sl_caller_with_profile(a, "ops");
	/* The profile is part of the binding: the same person through
	 * /mcp/ops is not the caller of /mcp, nor of /mcp/dev. */
	CHECK(!sl_caller_same(p, a));
	{
		struct sl_caller *q = sl_caller_with_profile(a, "ops"), *r = sl_caller_with_profile(a, "dev");
		struct sl_caller *n = sl_caller_new("none");
		CHECK(sl_caller_same(p, q));
		CHECK(!sl_caller_same(p, r));
		/* No authentication: an anonymous caller through a profile is
		 * not the anonymous caller of /mcp (NULL). */
		sl_caller_set_profile(n, "ops");
		CHECK(!sl_caller_same(n, NULL) && !sl_caller_same(n, p));
		CHECK(strstr(sl_caller_name(n), "anonymous") && strstr(sl_caller_name(n), "ops"));
		sl_caller_unref(q);
		sl_caller_unref(r);
		sl_caller_unref(n);
	}
	CHECK_STR(p->profile, "ops");
	CHECK(sl_caller_in_group(p, "sre"));
	CHECK(strstr(sl_caller_name(p), "alice") && strstr(sl_caller_name(p), "ops"));
	sl_caller_ref(p);
	sl_caller_unref(p);
	sl_caller_unref(p);
	sl_caller_unref(a);
	sl_caller_unref(b);
}

/* Issue 32, findings 12 and 16: the key fair shares are counted under. A
 * person is one caller through every profile; the holders of the shared
 * bearerToken are one caller, apart from any person; without
 * authentication there is no share at all. */
TEST(caller_share_key)
{
	struct sl_caller *alice = sl_caller_new("token"), *shared = sl_caller_new("token");
	struct sl_caller *none = sl_caller_new("none"), *ops;
	char a[SL_SHA256_HEX], b[SL_SHA256_HEX], s[SL_SHA256_HEX], n[SL_SHA256_HEX] = "untouched";

	sl_caller_set_subject(alice, NULL, "alice");
	ops = sl_caller_with_profile(alice, "ops");
	CHECK(sl_caller_share_key(alice, a));
	CHECK(sl_caller_share_key(ops, b));
	CHECK_STR(a, b);
	CHECK(sl_caller_share_key(shared, s));
	CHECK(strcmp(s, a) != 0);
	CHECK(!sl_caller_share_key(NULL, n));
	CHECK(!sl_caller_share_key(none, n));
	CHECK_STR(n, "untouched");
	sl_caller_unref(alice);
	sl_caller_unref(ops);
	sl_caller_unref(shared);
	sl_caller_unref(none);
}

TEST(caller_identity_digest_encoding)
{
	char a[SL_SHA256_HEX], b[SL_SHA256_HEX];
	struct sl_caller *c = sl_caller_new("jwt");

	/* The encoding is pinned (version 1): a per-user key is stored on disk. */
	sl_caller_identity_digest("jwt", "https://idp", "alice", NULL, a);
	CHECK_STR(a, "d9604cb7d989a507a8d8bb38a511c34cefd2c52c884c83f1dfbb105127e035b9");
	sl_caller_identity_digest(NULL, NULL, NULL, NULL, a);
	CHECK_STR(a, "d8f001217edcca5193b9568d1d3a1370c57a15f2d63bf23703d1e67d932982fa");
	/* No separator a field could hold: a newline moved between fields, or
	 * an absent field against an empty one, is another identity. */
	sl_caller_identity_digest("jwt", "a\nb", "c", NULL, a);
	sl_caller_identity_digest("jwt", "a", "b\nc", NULL, b);
	CHECK(strcmp(a, b) != 0);
	sl_caller_identity_digest("jwt", NULL, "alice", NULL, a);
	sl_caller_identity_digest("jwt", "", "alice", NULL, b);
	CHECK(strcmp(a, b) != 0);
	sl_caller_identity_digest("jwt", "https://idp", "alice", "", a);
	sl_caller_identity_digest("jwt", "https://idp", "alice", NULL, b);
	CHECK(strcmp(a, b) != 0);
	/* A caller's key is the digest of its four fields. */
	sl_caller_set_subject(c, "https://idp", "alice");
	sl_caller_set_profile(c, "ops");
	sl_caller_identity_digest("jwt", "https://idp", "alice", "ops", a);
	CHECK_STR(c->key, a);
	/* Its user key: the same person whichever profile or verification. */
	CHECK(sl_caller_user_key(c, a));
	sl_caller_identity_digest(NULL, "https://idp", "alice", NULL, b);
	CHECK_STR(a, b);
	sl_caller_unref(c);
}

/* Issue 32, finding 7: a subject string is not a person. A static token's
 * alice, an introspected alice whose answer names no issuer, and that
 * endpoint's alice against another endpoint's are three people; only an
 * issuer vouching for both makes a JWT's and an introspection's alice one. */
TEST(caller_user_keys_never_cross_methods_or_namespaces)
{
	struct sl_caller *st = sl_caller_new("token"), *in = sl_caller_new("introspection");
	struct sl_caller *other = sl_caller_new("introspection"), *jwt = sl_caller_new("jwt");
	struct sl_caller *ini = sl_caller_new("introspection");
	char a[SL_SHA256_HEX], b[SL_SHA256_HEX], old[SL_SHA256_HEX];

	sl_caller_set_subject(st, NULL, "alice");
	sl_caller_set_subject(in, NULL, "alice");
	sl_caller_set_realm(in, "https://idp-a/introspect");
	sl_caller_set_subject(other, NULL, "alice");
	sl_caller_set_realm(other, "https://idp-b/introspect");
	sl_caller_set_subject(jwt, "https://idp-a", "alice");
	sl_caller_set_subject(ini, "https://idp-a", "alice");
	CHECK(sl_caller_user_key(st, a) && sl_caller_user_key(in, b));
	CHECK(strcmp(a, b) != 0);
	/* Pinned: the static token's key is the one stored logins are under. */
	sl_caller_identity_digest("token", NULL, "alice", NULL, old);
	CHECK_STR(a, old);
	/* The introspected one: its method and its endpoint, not the subject
	 * alone (the key identity digest 1 gave it, which migrates). */
	sl_caller_identity_digest("introspection", "https://idp-a/introspect", "alice", NULL, old);
	CHECK_STR(b, old);
	sl_caller_identity_digest(NULL, NULL, "alice", NULL, old);
	CHECK(strcmp(b, old) != 0);
	CHECK(sl_caller_user_key(other, a));
	CHECK(strcmp(a, b) != 0);
	/* Nor the caller keys (sessions, parked calls, task ids). */
	CHECK(!sl_caller_same(in, other) && !sl_caller_same(in, st));
	/* A realm travels through a profile. */
	{
		struct sl_caller *p = sl_caller_with_profile(in, "ops");
		CHECK(sl_caller_user_key(p, a));
		CHECK_STR(a, b);
		sl_caller_unref(p);
	}
	/* The same issuer's alice, however verified, is one person. */
	CHECK(sl_caller_user_key(jwt, a) && sl_caller_user_key(ini, b));
	CHECK_STR(a, b);
	sl_caller_unref(st);
	sl_caller_unref(in);
	sl_caller_unref(other);
	sl_caller_unref(jwt);
	sl_caller_unref(ini);
}

TEST(auth_static_tokens_name_their_holder)
{
	struct sl_config *c;
	struct sl_auth *a;
	struct sl_caller *who;
	struct sl_auth_denial why;
	struct sl_err err;
	char *ch;

	setenv("SLUICE_TEST_BOB", "bob-secret-2", 1);
	c = config("{\"mcpServers\":{},\"sluice\":{\"http\":{\"auth\":{\"tokens\":["
		   "{\"token\":\"alice-secret-1\",\"subject\":\"alice\",\"groups\":[\"sre\"],"
		   "\"scopes\":[\"read\",\"write\"]},"
		   "{\"token\":\"${SLUICE_TEST_BOB}\",\"subject\":\"bob\"}]}}}}");
	CHECK(c != NULL);
	CHECK(sl_auth_new(NULL, &c->http, &a, &err) == SL_OK);
	CHECK(sl_auth_required(a));

	CHECK(sl_auth_check(a, "Bearer alice-secret-1", &who, &why) == SL_AUTH_OK);
	CHECK(who && !strcmp(who->subject, "alice") && !strcmp(who->method, "token"));
	CHECK(sl_caller_in_group(who, "sre") && sl_caller_has_scope(who, "write"));
	sl_caller_unref(who);

	CHECK(sl_auth_check(a, "bearer bob-secret-2", &who, &why) == SL_AUTH_OK);
	CHECK(who && !strcmp(who->subject, "bob") && !who->groups[0]);
	sl_caller_unref(who);

	/* No credentials: a challenge without an error (RFC 6750 §3.1). */
	CHECK(sl_auth_check(a, NULL, &who, &why) == SL_AUTH_DENIED);
	CHECK(who == NULL && why.error == NULL);
	ch = sl_auth_challenge(a, &why);
	CHECK(!strncmp(ch, "Bearer ", 7) && !strstr(ch, "error="));
	free(ch);
	/* A wrong token, a prefix of a right one, another scheme. */
	const char *bad[] = { "Bearer alice-secret-", "Bearer alice-secret-12", "Basic YWxpY2U6eA==",
			      "Bearer ", "Bearer" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK(sl_auth_check(a, bad[i], &who, &why) == SL_AUTH_DENIED);
		CHECK(who == NULL);
	}
	CHECK(sl_auth_check(a, "Bearer nope", &who, &why) == SL_AUTH_DENIED);
	CHECK_STR(why.error, "invalid_token");
	ch = sl_auth_challenge(a, &why);
	CHECK(strstr(ch, "error=\"invalid_token\"") && !strstr(ch, "nope"));
	free(ch);
	sl_auth_free(a);
	sl_config_unref(c);
}

TEST(auth_config_refuses_bad_tokens)
{
	struct sl_config *c;
	struct sl_err err;
	const char *bad[] = {
		"{\"mcpServers\":{},\"sluice\":{\"http\":{\"auth\":{\"tokens\":[{\"token\":\"x\"}]}}}}",
		"{\"mcpServers\":{},\"sluice\":{\"http\":{\"auth\":{\"tokens\":[{\"subject\":\"a\"}]}}}}",
		"{\"mcpServers\":{},\"sluice\":{\"http\":{\"auth\":{\"tokens\":["
		"{\"token\":\"x\",\"subject\":\"a\"},{\"token\":\"x\",\"subject\":\"b\"}]}}}}",
		"{\"mcpServers\":{},\"sluice\":{\"http\":{\"auth\":{\"tokens\":["
		"{\"token\":\"x\",\"subject\":\"a\",\"groups\":[\"\"]}]}}}}",
		"{\"mcpServers\":{},\"sluice\":{\"http\":{\"auth\":{\"tokens\":["
		"{\"token\":\"${SLUICE_TEST_UNSET_VAR}\",\"subject\":\"a\"}]}}}}",
	};
	unsetenv("SLUICE_TEST_UNSET_VAR");
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		c = NULL;
		CHECK(sl_config_parse("auth.json", bad[i], strlen(bad[i]), &c, &err) != SL_OK);
		CHECK(strstr(err.msg, "sluice.http.auth.tokens[") != NULL);
		sl_config_unref(c);
	}
}

/* Claims to a caller (src/auth/claims.c): what is read from where, and what
 * a hostile token's claims are refused for. */
#include "auth/claims.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>

/* The caller for claims (JSON text), or NULL with err set. */
static struct sl_caller *from(const char *json, const char *const *group_claims,
			      struct sl_err *err)
{
	yyjson_doc *d = yyjson_read(json, strlen(json), 0);
	struct sl_caller *c = NULL;
	if (sl_caller_from_claims("jwt", yyjson_doc_get_root(d), group_claims, &c, err) < 0)
		c = NULL;
	yyjson_doc_free(d);
	return c;
}

TEST(claims_read_like_a_jwt)
{
	struct sl_err err = { { 0 } };
	struct sl_caller *c = from("{\"iss\":\"https://idp\",\"sub\":\"alice\",\"azp\":\"cli\","
				   "\"scope\":\"read  write\",\"scp\":[\"admin\",\"read\"],"
				   "\"groups\":[\"sre\",\"dev\"],\"roles\":\"oncall\",\"exp\":1700000000,"
				   "\"aud\":\"sluice\"}", NULL, &err);

	CHECK(c != NULL);
	if (!c)
		return;
	CHECK_STR(c->method, "jwt");
	CHECK_STR(c->subject, "alice");
	CHECK_STR(c->issuer, "https://idp");
	CHECK_STR(c->client_id, "cli");
	CHECK(sl_caller_has_scope(c, "read") && sl_caller_has_scope(c, "write") &&
	      sl_caller_has_scope(c, "admin"));
	CHECK(c->scopes[3] == NULL); /* "read" twice is one scope; "" between spaces is none */
	CHECK(sl_caller_in_group(c, "sre") && sl_caller_in_group(c, "dev") &&
	      sl_caller_in_group(c, "oncall"));
	CHECK_INT(c->expires_ms, 1700000000000ull);
	CHECK(c->profile == NULL);
	sl_caller_unref(c);

	/* client_id wins over azp; no claims at all is a caller with nothing. */
	c = from("{\"client_id\":\"svc\",\"azp\":\"other\"}", NULL, &err);
	CHECK(c && c->client_id && strcmp(c->client_id, "svc") == 0 && !c->subject &&
	      !c->groups[0] && !c->scopes[0] && c->expires_ms == 0);
	sl_caller_unref(c);
}

TEST(claims_named_group_claims)
{
	static const char *const keycloak[] = { "realm_access.roles", "team", NULL };
	struct sl_err err = { { 0 } };
	struct sl_caller *c = from("{\"sub\":\"bob\",\"groups\":[\"ignored\"],"
				   "\"realm_access\":{\"roles\":[\"admin\"]},\"team\":\"web\"}",
				   keycloak, &err);
	CHECK(c != NULL);
	if (!c)
		return;
	CHECK(sl_caller_in_group(c, "admin") && sl_caller_in_group(c, "web"));
	CHECK(!sl_caller_in_group(c, "ignored"));
	/* A path through something that is not an object finds nothing. */
	sl_caller_unref(c);
	c = from("{\"realm_access\":\"x\",\"team\":[]}", keycloak, &err);
	CHECK(c && !c->groups[0]);
	sl_caller_unref(c);
}

TEST(claims_refused_with_the_claim_named)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "[]", "the claims must be a JSON object" },
		{ "{\"sub\":7}", "claim \"sub\": must be a string" },
		{ "{\"iss\":null}", "claim \"iss\": must be a string" },
		{ "{\"azp\":[\"a\"]}", "claim \"azp\": must be a string" },
		{ "{\"groups\":{\"a\":1}}", "claim \"groups\": must be a string or an array of strings" },
		{ "{\"roles\":[\"a\",1]}", "claim \"roles\": must be a string or an array of strings" },
		{ "{\"scope\":5}", "claim \"scope\": must be a string or an array of strings" },
		{ "{\"groups\":[\"sre\\u0000x\"]}", "claim \"groups\": a value has a NUL byte" },
		{ "{\"sub\":\"a\\u0000\"}", "claim \"sub\": a value has a NUL byte" },
		{ "{\"exp\":\"soon\"}", "claim \"exp\": must be a non-negative number" },
		{ "{\"exp\":-1}", "claim \"exp\": must be a non-negative number" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		struct sl_err err = { { 0 } };
		struct sl_caller *c = from(cases[i].json, NULL, &err);
		CHECK(c == NULL);
		if (!strstr(err.msg, cases[i].want))
			printf("  %s: got \"%s\"\n", cases[i].json, err.msg);
		CHECK(strstr(err.msg, cases[i].want) != NULL);
		sl_caller_unref(c);
	}
}

TEST(claims_bounds)
{
	size_t cap = 64 * 1024, n;
	char *json = malloc(cap);
	struct sl_err err = { { 0 } };
	struct sl_caller *c;

	/* SL_CLAIMS_NAMES_MAX groups pass; one more refuses the claims. */
	for (int extra = 0; extra < 2; extra++) {
		n = (size_t)snprintf(json, cap, "{\"groups\":[");
		for (int i = 0; i < SL_CLAIMS_NAMES_MAX + extra; i++)
			n += (size_t)snprintf(json + n, cap - n, "%s\"g%d\"", i ? "," : "", i);
		snprintf(json + n, cap - n, "]}");
		c = from(json, NULL, &err);
		CHECK(extra ? c == NULL : c != NULL);
		if (extra)
			CHECK(strstr(err.msg, "claim \"groups\": more than 256 values") != NULL);
		sl_caller_unref(c);
	}
	/* The same for the words of a scope string. */
	n = (size_t)snprintf(json, cap, "{\"scope\":\"");
	for (int i = 0; i <= SL_CLAIMS_NAMES_MAX; i++)
		n += (size_t)snprintf(json + n, cap - n, "s%d ", i);
	snprintf(json + n, cap - n, "\"}");
	CHECK(from(json, NULL, &err) == NULL);
	CHECK(strstr(err.msg, "claim \"scope\": more than 256 values") != NULL);
	/* A long scope string of short words is fine; a long word is not. */
	n = (size_t)snprintf(json, cap, "{\"scope\":\"");
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(json + n, cap - n, "scope-number-%03d ", i);
	snprintf(json + n, cap - n, "\"}");
	c = from(json, NULL, &err);
	CHECK(c != NULL && sl_caller_has_scope(c, "scope-number-199"));
	sl_caller_unref(c);
	snprintf(json, cap, "{\"sub\":\"%01025d\"}", 0);
	CHECK(from(json, NULL, &err) == NULL);
	CHECK(strstr(err.msg, "claim \"sub\": a value is longer than 1024 bytes") != NULL);
	snprintf(json, cap, "{\"sub\":\"%01024d\"}", 0);
	c = from(json, NULL, &err);
	CHECK(c != NULL);
	sl_caller_unref(c);
	/* An exp past the year 9999 is "never", not an overflow. */
	c = from("{\"exp\":1e300}", NULL, &err);
	CHECK(c && c->expires_ms == 0);
	sl_caller_unref(c);
	free(json);
}

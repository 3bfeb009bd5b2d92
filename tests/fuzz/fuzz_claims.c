/*
 * Fuzz target: token claims to a caller (src/auth/claims.c,
 * sl_caller_from_claims), what every JWT and introspection answer goes
 * through before a policy rule matches on it. The input's first byte picks
 * the group claims (the default, or named ones with a dotted path); the
 * rest is the claims' JSON text.
 *
 * Invariants checked:
 *   - a refusal says why ("claim ..." or "the claims ...") and makes no
 *     caller; a caller is made exactly when the claims are accepted;
 *   - an accepted caller keeps the bounds: at most SL_CLAIMS_NAMES_MAX
 *     groups and as many scopes, every name non-empty and at most
 *     SL_CLAIMS_NAME_MAX bytes, subject, issuer and client too, and the
 *     lists hold no name twice;
 *   - the same claims give the same caller (its identity key) again.
 *
 * fuzz-flags: -max_len=16384 -dict=tests/fuzz/claims.dict
 */
#include "fuzz.h"

#include "auth/claims.h"

#include <string.h>

static void check_list(char *const *l)
{
	size_t n = 0;
	for (; l[n]; n++) {
		ASSERT(l[n][0] != '\0');
		ASSERT(strlen(l[n]) <= SL_CLAIMS_NAME_MAX);
		for (size_t k = 0; k < n; k++)
			ASSERT(strcmp(l[k], l[n]) != 0);
	}
	ASSERT(n <= SL_CLAIMS_NAMES_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const named[] = { "realm_access.roles", "groups", "a.b.c", NULL };
	const char *const *groups = size && (data[0] & 1) ? named : NULL;
	yyjson_doc *d;
	struct sl_caller *c = NULL, *again = NULL;
	struct sl_err err = { { 0 } };
	int rc;

	if (size == 0)
		return 0;
	d = yyjson_read((const char *)data + 1, size - 1, 0);
	if (!d)
		return 0;
	rc = sl_caller_from_claims("jwt", yyjson_doc_get_root(d), groups, &c, &err);
	if (rc < 0) {
		ASSERT(c == NULL);
		ASSERT(strncmp(err.msg, "claim \"", 7) == 0 || strncmp(err.msg, "the claims ", 11) == 0);
	} else {
		ASSERT(c != NULL);
		check_list(c->groups);
		check_list(c->scopes);
		ASSERT(!c->subject || strlen(c->subject) <= SL_CLAIMS_NAME_MAX);
		ASSERT(!c->issuer || strlen(c->issuer) <= SL_CLAIMS_NAME_MAX);
		ASSERT(!c->client_id || strlen(c->client_id) <= SL_CLAIMS_NAME_MAX);
		ASSERT(sl_caller_from_claims("jwt", yyjson_doc_get_root(d), groups, &again, &err) == 0);
		ASSERT(sl_caller_same(c, again));
		sl_caller_unref(again);
		sl_caller_unref(c);
	}
	yyjson_doc_free(d);
	return 0;
}

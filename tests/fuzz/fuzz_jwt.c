/*
 * Fuzz target: a bearer token through the JWT path of src/auth/ (jwt.c:
 * read, algorithm, key choice, signature, claims) against a fixed key set
 * in memory (jwt_jwks.h, no network). The seeds (corpus/jwt/) are tokens
 * signed with that set's keys, valid and broken in every way a check
 * refuses (tests/unit/jwt_fixture.mjs writes both).
 *
 * Invariants checked:
 *   - a token is accepted only if its signed part (header and claims) is
 *     one the key holder signed: the seeds' valid tokens; no change the
 *     fuzzer makes to what is signed passes;
 *   - an accepted token names its subject and issuer, and every refusal
 *     says why.
 *
 * fuzz-flags: -max_len=9000
 */
#include "fuzz.h"
#include "jwt_jwks.h"

#include "auth/jwks.h"
#include "auth/jwt.h"

#include <string.h>

static char *const issuers[] = { FUZZ_JWT_ISS, NULL };
static char *const audiences[] = { FUZZ_JWT_AUD, NULL };
static char *const algorithms[] = { "RS256", "ES256", "PS256", "RS384", "ES384", NULL };
static char *const types[] = { "at+jwt", "application/at+jwt", NULL };
static char *const groups[] = { "groups", "roles", NULL };
static const struct sl_jwt_rules rules = { issuers, audiences, algorithms, types, groups, 60 };
static struct sl_jwk_set set;

/* The clock the checks run at: after the expired seed's exp (1700000100)
 * and its skew, before the valid seeds' (4102444800), so that only those
 * two are good at this time. */
#define NOW 1700001000

/* The signed parts (header and claims) of the valid seeds. */
static const char *const signed_parts[] = { FUZZ_JWT_SIGNED_RS256, FUZZ_JWT_SIGNED_ES256 };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_err err;
	ASSERT(sl_jose_load("fuzz", &err));
	ASSERT(sl_jwk_set_parse(FUZZ_JWT_JWKS, strlen(FUZZ_JWT_JWKS), 32, &set, &err) == SL_OK);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *tok = malloc(size + 1);
	struct sl_err why = { "" };
	struct sl_caller *who = NULL;
	const struct sl_jwk *key;
	struct sl_jwt t;
	size_t len;

	memcpy(tok, data, size);
	tok[size] = '\0';
	len = strlen(tok); /* a header value holds no NUL */
	(void)sl_jwt_looks_like(tok, len);
	if (!sl_jwt_read(tok, len, &t, &why)) {
		ASSERT(why.msg[0]);
		free(tok);
		return 0;
	}
	ASSERT(t.alg);
	if (sl_jwt_alg_allowed(&t, &rules) && (key = sl_jwk_set_find(&set, t.kid, t.alg))) {
		if (sl_jwt_verify(&t, tok, len, key, &rules, NOW, &who, &why)) {
			const char *dot = strrchr(tok, '.');
			size_t n = (size_t)(dot - tok);
			ASSERT((strlen(signed_parts[0]) == n && !memcmp(tok, signed_parts[0], n)) ||
			       (strlen(signed_parts[1]) == n && !memcmp(tok, signed_parts[1], n)));
			ASSERT(who && who->subject && who->issuer);
			sl_caller_unref(who);
		} else {
			ASSERT(why.msg[0] && !who);
		}
	}
	sl_jwt_dispose(&t);
	free(tok);
	return 0;
}

/*
 * Fuzz target: what an upstream's server and its authorization server send
 * sluice's OAuth client as text (src/oauth/): a WWW-Authenticate header
 * (sl_oauth_challenge_parse) and the redirect that comes back from a login
 * (sl_oauth_redirect_check). The input's first byte picks which.
 *
 * Invariants checked:
 *   - a challenge is read or refused, never half: on SL_OK every value
 *     present is non-empty, at most SL_OAUTH_VALUE_MAX bytes and free of
 *     control characters; on a refusal nothing is kept;
 *   - a redirect passes only with this login's state, and then yields a
 *     non-empty code without control characters; a refusal says why in
 *     text without an escape character (what a person reads is not the
 *     peer's terminal controls).
 *
 * fuzz-flags: -max_len=16384 -dict=tests/fuzz/oauth.dict
 */
#include "fuzz.h"

#include "oauth/oauth.h"

#include <string.h>

static void check_value(const char *v)
{
	if (!v)
		return;
	ASSERT(*v && strlen(v) <= SL_OAUTH_VALUE_MAX);
	for (; *v; v++)
		ASSERT((unsigned char)*v >= 0x20 && *v != 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_oauth_challenge c = { 0 };
	static const struct sl_oauth_server as = {
		.resource = "https://mcp.example/mcp", .issuer = "https://as.example",
		.authorization_endpoint = "https://as.example/authorize",
		.token_endpoint = "https://as.example/token",
	};
	struct sl_oauth_pkce p = { .state = "fuzzstatefuzzstatefuzzstatefuzzs" };
	struct sl_err err = { { 0 } };
	char *text, *code = NULL;

	if (size < 1)
		return 0;
	text = strndup((const char *)data + 1, size - 1);
	if (!text)
		abort();
	if (data[0] & 1) {
		if (sl_oauth_challenge_parse(text, strlen(text), &c) == SL_OK) {
			check_value(c.resource_metadata);
			check_value(c.scope);
			check_value(c.error);
			check_value(c.error_description);
			sl_oauth_challenge_dispose(&c);
		}
	} else if (sl_oauth_redirect_check(text, &as, &p, &code, &err) == SL_OK) {
		ASSERT(strstr(text, p.state) != NULL);
		check_value(code);
		free(code);
	} else {
		ASSERT(code == NULL && err.msg[0] && strchr(err.msg, 0x1b) == NULL);
	}
	free(text);
	return 0;
}

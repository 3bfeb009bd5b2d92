/*
 * Authentication: see auth.h. The static methods live here; each is a
 * constant-time comparison of the token against the configured secrets,
 * all of them compared, so that the time taken says nothing of which one
 * (or how much of one) matched.
 */
#include "auth/auth.h"
#include "core/digest.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sl_auth {
	uv_loop_t *loop;
	const struct sl_http_config *cfg;
};

int sl_auth_new(uv_loop_t *loop, const struct sl_http_config *cfg, struct sl_auth **out,
		struct sl_err *err)
{
	struct sl_auth *a = sl_alloc(sizeof(*a));
	a->loop = loop;
	a->cfg = cfg;
	*out = a;
	return SL_OK;
}

void sl_auth_free(struct sl_auth *a)
{
	free(a);
}

bool sl_auth_required(const struct sl_auth *a)
{
	return a->cfg->bearer_token || a->cfg->auth.ntokens;
}

/* Equal, in constant time: digests are compared, so neither the length
 * nor the content of a secret leaks. */
static bool same_secret(const char *a, const char *b)
{
	char da[SL_SHA256_HEX], db[SL_SHA256_HEX];
	unsigned char diff = 0;
	sl_sha256_hex(a, strlen(a), da);
	sl_sha256_hex(b, strlen(b), db);
	for (size_t i = 0; i < sizeof(da); i++)
		diff |= (unsigned char)(da[i] ^ db[i]);
	return diff == 0;
}

static struct sl_caller *token_caller(const struct sl_auth_token *t)
{
	struct sl_caller *c = sl_caller_new("token");
	sl_caller_set_subject(c, NULL, t->subject);
	for (size_t i = 0; t->groups && t->groups[i]; i++)
		sl_caller_add_group(c, t->groups[i]);
	for (size_t i = 0; t->scopes && t->scopes[i]; i++)
		sl_caller_add_scope(c, t->scopes[i]);
	return c;
}

enum sl_auth_verdict sl_auth_check(struct sl_auth *a, const char *authorization,
				   struct sl_caller **who, struct sl_auth_denial *why)
{
	const struct sl_http_config *cfg = a->cfg;
	const struct sl_auth_token *hit = NULL;
	const char *token;
	bool shared = false;

	*who = NULL;
	memset(why, 0, sizeof(*why));
	if (!sl_auth_required(a))
		return SL_AUTH_OK;
	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0) {
		snprintf(why->description, sizeof(why->description),
			 "a valid bearer token is required");
		return SL_AUTH_DENIED;
	}
	token = authorization + 7;
	while (*token == ' ')
		token++;
	if (cfg->bearer_token)
		shared = same_secret(token, cfg->bearer_token);
	for (size_t i = 0; i < cfg->auth.ntokens; i++)
		if (same_secret(token, cfg->auth.tokens[i].token) && !hit)
			hit = &cfg->auth.tokens[i];
	if (hit) {
		*who = token_caller(hit);
		return SL_AUTH_OK;
	}
	if (shared) {
		*who = sl_caller_new("token");
		return SL_AUTH_OK;
	}
	why->error = "invalid_token";
	snprintf(why->description, sizeof(why->description), "the bearer token is not valid");
	return SL_AUTH_DENIED;
}

char *sl_auth_challenge(const struct sl_auth *a, const struct sl_auth_denial *why)
{
	if (!why->error)
		return sl_strdup("Bearer realm=\"sluice\"");
	return sl_printf("Bearer realm=\"sluice\", error=\"%s\", error_description=\"%s\"",
			 why->error, why->description);
}

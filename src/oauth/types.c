/*
 * Disposal and deep copies of the OAuth client's plain records (oauth.h,
 * store.h).
 */
#include "oauth/store.h"

#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s)
{
	return s ? sl_strdup(s) : NULL;
}

void sl_oauth_server_dispose(struct sl_oauth_server *s)
{
	free(s->resource);
	free(s->issuer);
	free(s->authorization_endpoint);
	free(s->token_endpoint);
	free(s->registration_endpoint);
	free(s->revocation_endpoint);
	free(s->scope);
	memset(s, 0, sizeof(*s));
}

void sl_oauth_server_copy(struct sl_oauth_server *dst, const struct sl_oauth_server *src)
{
	*dst = *src;
	dst->resource = dup_or_null(src->resource);
	dst->issuer = dup_or_null(src->issuer);
	dst->authorization_endpoint = dup_or_null(src->authorization_endpoint);
	dst->token_endpoint = dup_or_null(src->token_endpoint);
	dst->registration_endpoint = dup_or_null(src->registration_endpoint);
	dst->revocation_endpoint = dup_or_null(src->revocation_endpoint);
	dst->scope = dup_or_null(src->scope);
}

void sl_oauth_registration_dispose(struct sl_oauth_registration *r)
{
	free(r->issuer);
	free(r->client_id);
	free(r->client_secret);
	free(r->auth_method);
	free(r->redirect_uri);
	free(r->how);
	memset(r, 0, sizeof(*r));
}

void sl_oauth_registration_copy(struct sl_oauth_registration *dst,
				const struct sl_oauth_registration *src)
{
	dst->issuer = dup_or_null(src->issuer);
	dst->client_id = dup_or_null(src->client_id);
	dst->client_secret = dup_or_null(src->client_secret);
	dst->auth_method = dup_or_null(src->auth_method);
	dst->redirect_uri = dup_or_null(src->redirect_uri);
	dst->how = dup_or_null(src->how);
}

void sl_oauth_tokens_dispose(struct sl_oauth_tokens *t)
{
	free(t->access_token);
	free(t->refresh_token);
	free(t->scope);
	memset(t, 0, sizeof(*t));
}

void sl_oauth_tokens_copy(struct sl_oauth_tokens *dst, const struct sl_oauth_tokens *src)
{
	dst->access_token = dup_or_null(src->access_token);
	dst->refresh_token = dup_or_null(src->refresh_token);
	dst->scope = dup_or_null(src->scope);
	dst->expires_at = src->expires_at;
}

void sl_oauth_record_dispose(struct sl_oauth_record *r)
{
	free(r->url);
	free(r->user);
	free(r->server);
	free(r->subject);
	sl_oauth_server_dispose(&r->as);
	sl_oauth_registration_dispose(&r->reg);
	sl_oauth_tokens_dispose(&r->tokens);
	free(r->needs_scope);
	memset(r, 0, sizeof(*r));
}

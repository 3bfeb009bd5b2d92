/*
 * Callers: see caller.h.
 */
#include "auth/caller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **list_new(void)
{
	return sl_alloc(sizeof(char *));
}

static size_t list_len(char *const *l)
{
	size_t n = 0;
	while (l[n])
		n++;
	return n;
}

static bool list_has(char *const *l, const char *s)
{
	for (size_t i = 0; l && l[i]; i++)
		if (!strcmp(l[i], s))
			return true;
	return false;
}

static void list_add(char ***l, const char *s)
{
	size_t n;
	if (list_has(*l, s))
		return;
	n = list_len(*l);
	*l = sl_realloc(*l, (n + 2) * sizeof(char *));
	(*l)[n] = sl_strdup(s);
	(*l)[n + 1] = NULL;
}

static void list_free(char **l)
{
	for (size_t i = 0; l && l[i]; i++)
		free(l[i]);
	free(l);
}

#define IDENTITY_TAG "sluice-identity-1"

static size_t put_field(uint8_t *p, const char *f)
{
	uint64_t n;

	if (!f) {
		*p = 0;
		return 1;
	}
	n = strlen(f);
	*p++ = 1;
	for (int i = 7; i >= 0; i--)
		*p++ = (uint8_t)(n >> (8 * i));
	memcpy(p, f, n);
	return 9 + n;
}

void sl_caller_identity_digest(const char *method, const char *issuer, const char *subject,
			       const char *profile, char out[SL_SHA256_HEX])
{
	const char *f[4] = { method, issuer, subject, profile };
	size_t len = sizeof(IDENTITY_TAG) - 1;
	uint8_t *buf, *p;

	for (size_t i = 0; i < 4; i++)
		len += 9 + (f[i] ? strlen(f[i]) : 0);
	p = buf = sl_alloc(len);
	memcpy(p, IDENTITY_TAG, sizeof(IDENTITY_TAG) - 1);
	p += sizeof(IDENTITY_TAG) - 1;
	for (size_t i = 0; i < 4; i++)
		p += put_field(p, f[i]);
	sl_sha256_hex(buf, (size_t)(p - buf), out);
	free(buf);
}

bool sl_caller_user_key(const struct sl_caller *c, char out[SL_SHA256_HEX])
{
	const char *method = NULL;

	if (!c || !c->subject)
		return false;
	if (!strcmp(c->method, "token") || !c->issuer)
		method = c->method;
	sl_caller_identity_digest(method, c->issuer ? c->issuer : c->realm, c->subject, NULL, out);
	return true;
}

bool sl_caller_share_key(const struct sl_caller *c, char out[SL_SHA256_HEX])
{
	if (!c || !strcmp(c->method, "none"))
		return false;
	if (!sl_caller_user_key(c, out))
		sl_caller_identity_digest(c->method, c->issuer, NULL, NULL, out);
	return true;
}

/* The profile is part of the key: a session, a parked call or a count
 * bound to a caller is bound to the endpoint it came through as well, so
 * that /mcp/ops's session is nobody's through /mcp or /mcp/dev. */
static void rekey(struct sl_caller *c)
{
	sl_caller_identity_digest(c->method, c->issuer ? c->issuer : c->realm, c->subject,
				  c->profile, c->key);
}

struct sl_caller *sl_caller_new(const char *method)
{
	struct sl_caller *c = sl_alloc(sizeof(*c));
	c->method = method;
	c->groups = list_new();
	c->scopes = list_new();
	rekey(c);
	return c;
}

void sl_caller_set_subject(struct sl_caller *c, const char *issuer, const char *subject)
{
	free(c->issuer);
	free(c->subject);
	c->issuer = issuer ? sl_strdup(issuer) : NULL;
	c->subject = subject ? sl_strdup(subject) : NULL;
	rekey(c);
}

void sl_caller_set_client(struct sl_caller *c, const char *client_id)
{
	free(c->client_id);
	c->client_id = sl_strdup(client_id);
}

void sl_caller_set_realm(struct sl_caller *c, const char *realm)
{
	free(c->realm);
	c->realm = realm ? sl_strdup(realm) : NULL;
	rekey(c);
}

void sl_caller_add_group(struct sl_caller *c, const char *group)
{
	list_add(&c->groups, group);
}

void sl_caller_add_scope(struct sl_caller *c, const char *scope)
{
	list_add(&c->scopes, scope);
}

void sl_caller_set_profile(struct sl_caller *c, const char *profile)
{
	free(c->profile);
	c->profile = profile ? sl_strdup(profile) : NULL;
	rekey(c);
}

struct sl_caller *sl_caller_with_profile(const struct sl_caller *c, const char *profile)
{
	struct sl_caller *n = sl_caller_new(c->method);
	sl_caller_set_subject(n, c->issuer, c->subject);
	n->client_id = c->client_id ? sl_strdup(c->client_id) : NULL;
	n->realm = c->realm ? sl_strdup(c->realm) : NULL;
	for (size_t i = 0; c->groups[i]; i++)
		sl_caller_add_group(n, c->groups[i]);
	for (size_t i = 0; c->scopes[i]; i++)
		sl_caller_add_scope(n, c->scopes[i]);
	sl_caller_set_profile(n, profile);
	n->expires_ms = c->expires_ms;
	return n;
}

struct sl_caller *sl_caller_ref(struct sl_caller *c)
{
	if (c)
		c->refs++;
	return c;
}

void sl_caller_unref(struct sl_caller *c)
{
	if (!c)
		return;
	if (c->refs) {
		c->refs--;
		return;
	}
	free(c->subject);
	free(c->issuer);
	free(c->realm);
	free(c->client_id);
	free(c->profile);
	list_free(c->groups);
	list_free(c->scopes);
	free(c);
}

bool sl_caller_same(const struct sl_caller *a, const struct sl_caller *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a->key, b->key);
}

bool sl_caller_in_group(const struct sl_caller *c, const char *group)
{
	return c && list_has(c->groups, group);
}

bool sl_caller_has_scope(const struct sl_caller *c, const char *scope)
{
	return c && list_has(c->scopes, scope);
}

const char *sl_caller_name(const struct sl_caller *c)
{
	static char buf[512];
	if (!c)
		return "anonymous";
	snprintf(buf, sizeof(buf), "%s (%s%s%s%s%s)",
		 c->subject ? c->subject : strcmp(c->method, "none") ? "bearer token" : "anonymous",
		 c->method, c->client_id ? ", client " : "", c->client_id ? c->client_id : "",
		 c->profile ? ", profile " : "", c->profile ? c->profile : "");
	return buf;
}

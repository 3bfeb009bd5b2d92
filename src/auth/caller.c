/*
 * Callers: see caller.h.
 */
#include "auth/caller.h"
#include "core/digest.h"

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

/* The profile is part of the key: a session, a parked call or a count
 * bound to a caller is bound to the endpoint it came through as well, so
 * that /mcp/ops's session is nobody's through /mcp or /mcp/dev. */
static void rekey(struct sl_caller *c)
{
	char *k = sl_printf("%s\n%s\n%s\n%s", c->method, c->issuer ? c->issuer : "",
			    c->subject ? c->subject : "", c->profile ? c->profile : "");
	sl_sha256_hex(k, strlen(k), c->key);
	free(k);
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

/* The merged, namespaced catalog of tools, prompts and resources. */
#include "upstream/catalog.h"

#include "core/log.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_catalog_init(struct sl_catalog *c)
{
	memset(c, 0, sizeof(*c));
	sl_map_init(&c->tools.by_name);
	sl_map_init(&c->tools.by_server);
	sl_map_init(&c->prompts.by_name);
	sl_map_init(&c->prompts.by_server);
	sl_map_init(&c->uris);
}

const char sl_catalog_taken;

static void free_own(const char *key, void *own, void *ctx)
{
	(void)key;
	(void)ctx;
	sl_map_dispose(own);
	free(own);
}

static void entries_dispose(struct sl_entries *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].exposed);
	free(e->v);
	e->v = NULL;
	e->n = 0;
	sl_map_dispose(&e->by_name);
	sl_map_init(&e->by_name);
	sl_map_each(&e->by_server, free_own, NULL);
	sl_map_dispose(&e->by_server);
	sl_map_init(&e->by_server);
}

void sl_catalog_dispose(struct sl_catalog *c)
{
	entries_dispose(&c->tools);
	entries_dispose(&c->prompts);
	sl_map_dispose(&c->uris);
}

static void sanitise(const char *s, char *out, size_t *len, size_t max)
{
	for (; *s && *len < max; s++) {
		char ch = *s;
		bool ok = ('a' <= ch && ch <= 'z') || ('A' <= ch && ch <= 'Z') ||
			  ('0' <= ch && ch <= '9') || ch == '_' || ch == '-';
		out[(*len)++] = ok ? ch : '_';
	}
}

void sl_catalog_name(const char *server, const char *name, bool suffix, char *out)
{
	char full[4 * SL_EXPOSED_MAX];
	size_t len = 0;

	sanitise(server, full, &len, sizeof(full) - 1);
	if (len + 2 < sizeof(full)) {
		full[len++] = '_';
		full[len++] = '_';
	}
	sanitise(name, full, &len, sizeof(full) - 1);
	full[len] = '\0';
	if (!suffix && len <= SL_EXPOSED_MAX &&
	    strlen(server) + strlen(name) + 2 == len) {
		memcpy(out, full, len + 1);
		return;
	}
	/* Too long, lossy or colliding: keep a prefix and add 8 hex digits of
	 * a hash of the exact pair, which keeps it unique and stable. */
	uint64_t h = sl_hash64(server, strlen(server) + 1, 0);
	h = sl_hash64(name, strlen(name), h);
	if (len > SL_EXPOSED_MAX - 9)
		len = SL_EXPOSED_MAX - 9;
	snprintf(out, SL_EXPOSED_MAX + 1, "%.*s_%08x", (int)len, full, (unsigned)(h & 0xffffffffu));
}

static bool unprefixed(const struct sl_upstream *u)
{
	return u->cfg && u->cfg->unprefixed;
}

/* MCP 2025-11-25 tools: a name is 1-128 of [A-Za-z0-9_.-]. */
static bool valid_plain(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > 128)
		return false;
	for (; *name; name++) {
		char ch = *name;
		if (!(('a' <= ch && ch <= 'z') || ('A' <= ch && ch <= 'Z') ||
		      ('0' <= ch && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

static void set_exposed(struct sl_entry *en, bool suffix)
{
	char name[SL_EXPOSED_MAX + 1];
	sl_catalog_name(en->up->name, en->name, suffix, name);
	free(en->exposed);
	en->exposed = sl_strdup(name);
}

static void count(struct sl_map *seen, const char *name)
{
	sl_map_put(seen, name, (void *)((uintptr_t)sl_map_get(seen, name) + 1));
}

static void build(struct sl_catalog *c, struct sl_entries *e, struct sl_upstream **ups, size_t n,
		  bool prompts)
{
	size_t total = 0, k = 0;
	struct sl_map seen;

	entries_dispose(e);
	for (size_t i = 0; i < n; i++)
		total += prompts ? ups[i]->prompts.n : ups[i]->tools.n;
	e->v = sl_alloc((total + 1) * sizeof(*e->v));
	sl_map_init(&seen);
	/* First pass: plain names (the server's own for an unprefixed server),
	 * counting how often each occurs. */
	for (size_t i = 0; i < n; i++) {
		struct sl_item_list *l = prompts ? &ups[i]->prompts : &ups[i]->tools;
		struct sl_map *own = sl_alloc(sizeof(*own)), *had;
		sl_map_init(own);
		for (size_t j = 0; j < l->n; j++) {
			struct sl_entry *en = &e->v[k];
			const char *name = sl_json_str(l->items[j], "name");
			/* A name is a C string from here on: one with a NUL would
			 * be another name (and a call would reach the wrong one). */
			if (strlen(name) != yyjson_get_len(yyjson_obj_get(l->items[j], "name"))) {
				sl_log(SL_LOG_WARN, "server '%s': %s '%s...' left out: its name contains a NUL",
				       ups[i]->name, prompts ? "prompt" : "tool", name);
				continue;
			}
			/* Two entries of one server under one name cannot both be
			 * called: the first is kept, as a client of the server
			 * itself would most likely see it. */
			if (sl_map_get(own, name)) {
				sl_log(SL_LOG_WARN, "server '%s': %s '%s' listed twice; the first is kept",
				       ups[i]->name, prompts ? "prompt" : "tool", name);
				continue;
			}
			sl_map_put(own, name, en);
			k++;
			en->up = ups[i];
			en->def = l->items[j];
			en->name = name;
			if (unprefixed(en->up) && valid_plain(en->name) &&
			    !(!prompts && c->reserved && c->reserved(en->name)))
				en->exposed = sl_strdup(en->name);
			else
				set_exposed(en, false);
			count(&seen, en->exposed);
		}
		/* Kept: sl_catalog_find looks a (server, name) up here. */
		if ((had = sl_map_get(&e->by_server, ups[i]->name)))
			free_own(NULL, had, NULL);
		sl_map_put(&e->by_server, ups[i]->name, own);
	}
	/* Second pass: an unprefixed name that is not unique, or that the
	 * gateway keeps for itself, takes the prefixed form. */
	for (size_t i = 0; i < k; i++) {
		struct sl_entry *en = &e->v[i];
		if (!unprefixed(en->up))
			continue;
		if ((uintptr_t)sl_map_get(&seen, en->exposed) > 1 ||
		    strcmp(en->exposed, en->name) != 0) {
			sl_log(SL_LOG_WARN, "server '%s': %s '%s' %s; exposed as '%s__...'",
			       en->up->name, prompts ? "prompt" : "tool", en->name,
			       strcmp(en->exposed, en->name) != 0 ? "cannot keep its name" :
			       "collides with another name", en->up->name);
			set_exposed(en, false);
		}
	}
	sl_map_dispose(&seen);
	sl_map_init(&seen);
	for (size_t i = 0; i < k; i++)
		count(&seen, e->v[i].exposed);
	/* Third pass: every name that occurs twice gets the hash form. */
	for (size_t i = 0; i < k; i++) {
		struct sl_entry *en = &e->v[i];
		if ((uintptr_t)sl_map_get(&seen, en->exposed) > 1)
			set_exposed(en, true);
	}
	sl_map_dispose(&seen);
	e->n = k;
	for (size_t i = 0; i < k; i++)
		sl_map_put(&e->by_name, e->v[i].exposed, &e->v[i]);
}

static bool is_ui(const char *uri)
{
	return strncmp(uri, SL_MCP_UI_SCHEME, strlen(SL_MCP_UI_SCHEME)) == 0;
}

/* The server whose name is the authority of a ui:// URI (its namespaced
 * form, "ui://<server>/<the rest of the server's own ui:// URI>"), and in
 * *rest that rest; NULL if uri is not one. */
static struct sl_upstream *ui_server(const struct sl_catalog *c, const char *uri, const char **rest)
{
	const char *a, *slash;

	if (!is_ui(uri))
		return NULL;
	a = uri + strlen(SL_MCP_UI_SCHEME);
	if (!(slash = strchr(a, '/')) || slash == a)
		return NULL;
	for (size_t i = 0; i < c->nups; i++)
		if (strlen(c->ups[i]->name) == (size_t)(slash - a) &&
		    strncmp(c->ups[i]->name, a, (size_t)(slash - a)) == 0) {
			*rest = slash + 1;
			return c->ups[i];
		}
	return NULL;
}

/* Resources of unprefixed servers by URI; a URI two of them list is taken. */
static void build_uris(struct sl_catalog *c, struct sl_upstream **ups, size_t n)
{
	sl_map_dispose(&c->uris);
	sl_map_init(&c->uris);
	for (size_t i = 0; i < n; i++) {
		if (!unprefixed(ups[i]))
			continue;
		for (size_t j = 0; j < ups[i]->resources.n; j++) {
			const char *uri = sl_json_str(ups[i]->resources.items[j], "uri");
			void *had;
			if (!uri)
				continue;
			had = sl_map_get(&c->uris, uri);
			if (had && had != ups[i] && had != SL_CATALOG_TAKEN)
				sl_log(SL_LOG_WARN, "servers '%s' and '%s' both list %s; "
				       "exposed as %s<server>/...",
				       ((struct sl_upstream *)had)->name, ups[i]->name, uri,
				       is_ui(uri) ? SL_MCP_UI_SCHEME : SL_URI_PREFIX);
			sl_map_put(&c->uris, uri, had && had != ups[i] ? SL_CATALOG_TAKEN : ups[i]);
		}
	}
}

static uint64_t names_hash(const struct sl_entries *e)
{
	uint64_t h = 0;
	for (size_t i = 0; i < e->n; i++) {
		h = sl_hash64(e->v[i].exposed, strlen(e->v[i].exposed) + 1, h);
		h = sl_hash64(&e->v[i].up->tools.version, sizeof(uint64_t), h);
		h = sl_hash64(&e->v[i].up->prompts.version, sizeof(uint64_t), h);
	}
	return h;
}

bool sl_catalog_rebuild(struct sl_catalog *c, struct sl_upstream **ups, size_t n)
{
	uint64_t before = names_hash(&c->tools), after;
	c->ups = ups;
	c->nups = n;
	build(c, &c->tools, ups, n, false);
	build(c, &c->prompts, ups, n, true);
	build_uris(c, ups, n);
	after = names_hash(&c->tools);
	if (before != after)
		c->version++;
	return before != after;
}

const struct sl_entry *sl_catalog_tool(const struct sl_catalog *c, const char *exposed)
{
	return sl_map_get(&c->tools.by_name, exposed);
}

const struct sl_entry *sl_catalog_prompt(const struct sl_catalog *c, const char *exposed)
{
	return sl_map_get(&c->prompts.by_name, exposed);
}

const struct sl_entry *sl_catalog_find(const struct sl_catalog *c, const char *server,
				       const char *tool)
{
	const struct sl_map *own = sl_map_get(&c->tools.by_server, server);
	return own ? sl_map_get(own, tool) : NULL;
}

char *sl_catalog_uri(const char *server, const char *uri)
{
	return sl_printf(SL_URI_PREFIX "%s/%s", server, uri);
}

bool sl_catalog_split_uri(const char *uri, char **server, const char **orig)
{
	size_t pl = strlen(SL_URI_PREFIX);
	const char *slash;
	if (strncmp(uri, SL_URI_PREFIX, pl) != 0)
		return false;
	slash = strchr(uri + pl, '/');
	if (!slash || slash == uri + pl)
		return false;
	*server = sl_strndup(uri + pl, (size_t)(slash - uri - pl));
	*orig = slash + 1;
	return true;
}

char *sl_catalog_expose_uri(const struct sl_catalog *c, const struct sl_upstream *u,
			    const char *uri)
{
	const char *rest;
	void *owner = sl_map_get(&c->uris, uri);

	/* Kept only where it reads back to u: not a URI another server
	 * lists (a server's tool or result would name that server's resource,
	 * an MCP App's View another's), nor a ui:// URI whose authority names
	 * a server (it would read as that server's namespaced one). */
	if (unprefixed(u) && strncmp(uri, SL_URI_PREFIX, strlen(SL_URI_PREFIX)) != 0 &&
	    (!owner || owner == u) && !ui_server(c, uri, &rest))
		return sl_strdup(uri);
	/* MCP Apps: a View's URI MUST start with ui:// (SEP-1865 UI resource
	 * format; the host SDK refuses any other), so it keeps its scheme. */
	if (is_ui(uri))
		return sl_printf(SL_MCP_UI_SCHEME "%s/%s", u->name, uri + strlen(SL_MCP_UI_SCHEME));
	return sl_catalog_uri(u->name, uri);
}

/* RFC 6570 level 1, enough to route: literals match exactly, an expression
 * matches one or more characters other than '/'. */
static bool template_match(const char *t, const char *s)
{
	while (*t) {
		if (*t == '{') {
			const char *end = strchr(t, '}');
			size_t n = 0;
			if (!end)
				return false;
			t = end + 1;
			while (s[n] && s[n] != '/' && s[n] != *t)
				n++;
			if (n == 0)
				return false;
			s += n;
		} else if (*t++ != *s++) {
			return false;
		}
	}
	return *s == '\0';
}

/* MCP Apps: the one server with Views (a tool of its names one) that lists
 * uri or names it as a View; NULL if none, or if two do. A View knows no
 * gateway and reads its server's resources by their own URIs. */
static struct sl_upstream *app_owner(const struct sl_catalog *c, const char *uri)
{
	struct sl_upstream *hit = NULL;

	for (size_t i = 0; i < c->nups; i++) {
		struct sl_upstream *u = c->ups[i];
		bool views = false, has = false;
		for (size_t j = 0; j < c->tools.n; j++) {
			const char *view = c->tools.v[j].up == u ? sl_mcp_tool_ui_uri(c->tools.v[j].def) : NULL;
			views |= view != NULL;
			has |= view && strcmp(view, uri) == 0;
		}
		for (size_t j = 0; views && !has && j < u->resources.n; j++) {
			const char *r = sl_json_str(u->resources.items[j], "uri");
			has = r && strcmp(r, uri) == 0;
		}
		if (!has)
			continue;
		if (hit)
			return NULL;
		hit = u;
	}
	return hit;
}

struct sl_upstream *sl_catalog_uri_owner(const struct sl_catalog *c, const char *uri,
					 char **orig)
{
	struct sl_upstream *only = NULL, *matched = NULL, *u;
	const char *rest;
	char *server;
	size_t nplain = 0, nmatched = 0;
	bool taken;

	if (sl_catalog_split_uri(uri, &server, &rest)) {
		u = NULL;
		for (size_t i = 0; i < c->nups && !u; i++)
			if (strcmp(c->ups[i]->name, server) == 0)
				u = c->ups[i];
		free(server);
		*orig = u ? sl_strdup(rest) : NULL;
		return u;
	}
	if ((u = ui_server(c, uri, &rest))) {
		*orig = sl_printf(SL_MCP_UI_SCHEME "%s", rest);
		return u;
	}
	u = sl_map_get(&c->uris, uri);
	if (u && u != SL_CATALOG_TAKEN) {
		*orig = sl_strdup(uri);
		return u;
	}
	taken = u == SL_CATALOG_TAKEN;
	for (size_t i = 0; i < c->nups; i++) {
		if (!unprefixed(c->ups[i]))
			continue;
		nplain++;
		only = c->ups[i];
		for (size_t j = 0; j < c->ups[i]->templates.n; j++) {
			const char *t = sl_json_str(c->ups[i]->templates.items[j], "uriTemplate");
			if (t && template_match(t, uri)) {
				matched = c->ups[i];
				nmatched++;
				break;
			}
		}
	}
	/* Templates of two servers match: neither is a guess worth making.
	 * What a server with Views lists comes after what an unprefixed
	 * server claims (so it shadows none) and before the guess. */
	if (nmatched)
		u = nmatched == 1 ? matched : NULL;
	else if (!(u = taken ? NULL : app_owner(c, uri)))
		u = nplain == 1 ? only : NULL;
	*orig = u ? sl_strdup(uri) : NULL;
	return u;
}

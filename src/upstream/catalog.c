/* The merged, namespaced catalog of tools, prompts and resources. */
#include "upstream/catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_catalog_init(struct sl_catalog *c)
{
	memset(c, 0, sizeof(*c));
	sl_map_init(&c->tools.by_name);
	sl_map_init(&c->prompts.by_name);
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
}

void sl_catalog_dispose(struct sl_catalog *c)
{
	entries_dispose(&c->tools);
	entries_dispose(&c->prompts);
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

static void build(struct sl_entries *e, struct sl_upstream **ups, size_t n, bool prompts)
{
	size_t total = 0, k = 0;
	struct sl_map seen;

	entries_dispose(e);
	for (size_t i = 0; i < n; i++)
		total += prompts ? ups[i]->prompts.n : ups[i]->tools.n;
	e->v = sl_alloc((total + 1) * sizeof(*e->v));
	sl_map_init(&seen);
	/* First pass: plain names, counting how often each occurs. */
	for (size_t i = 0; i < n; i++) {
		struct sl_item_list *l = prompts ? &ups[i]->prompts : &ups[i]->tools;
		for (size_t j = 0; j < l->n; j++) {
			char name[SL_EXPOSED_MAX + 1];
			struct sl_entry *en = &e->v[k++];
			en->up = ups[i];
			en->def = l->items[j];
			en->name = sl_json_str(en->def, "name");
			sl_catalog_name(ups[i]->name, en->name, false, name);
			en->exposed = sl_strdup(name);
			sl_map_put(&seen, name, (void *)((uintptr_t)sl_map_get(&seen, name) + 1));
		}
	}
	/* Second pass: every name that occurs twice gets the hash form. */
	for (size_t i = 0; i < k; i++) {
		struct sl_entry *en = &e->v[i];
		if ((uintptr_t)sl_map_get(&seen, en->exposed) > 1) {
			char name[SL_EXPOSED_MAX + 1];
			sl_catalog_name(en->up->name, en->name, true, name);
			free(en->exposed);
			en->exposed = sl_strdup(name);
		}
	}
	sl_map_dispose(&seen);
	e->n = k;
	for (size_t i = 0; i < k; i++)
		sl_map_put(&e->by_name, e->v[i].exposed, &e->v[i]);
}

static uint64_t names_hash(const struct sl_entries *e)
{
	uint64_t h = 0;
	for (size_t i = 0; i < e->n; i++) {
		h = sl_hash64(e->v[i].exposed, strlen(e->v[i].exposed) + 1, h);
		h = sl_hash64(&e->v[i].def, sizeof(void *), h);
	}
	return h;
}

bool sl_catalog_rebuild(struct sl_catalog *c, struct sl_upstream **ups, size_t n)
{
	uint64_t before = names_hash(&c->tools), after;
	build(&c->tools, ups, n, false);
	build(&c->prompts, ups, n, true);
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
	for (size_t i = 0; i < c->tools.n; i++)
		if (strcmp(c->tools.v[i].up->name, server) == 0 &&
		    strcmp(c->tools.v[i].name, tool) == 0)
			return &c->tools.v[i];
	return NULL;
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

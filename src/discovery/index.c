/*
 * The discovery cache (discovery.h, index.h): work done once per server
 * list, not per search. See docs/internals/DISCOVERY.md, "The index".
 */
#include "discovery/index.h"
#include "core/log.h"
#include "pipeline/gen.h"
#include "pipeline/metrics.h"
#include "sandbox/sandbox.h"
#include "upstream/catalog.h"
#include "upstream/upstream.h"

#include <stdlib.h>
#include <string.h>

static void module_free(struct sl_lru_entry *e, void *arg)
{
	struct sl_discovery_module *m = sl_lru_item(e, struct sl_discovery_module, e);
	(void)arg;
	free(m->text);
	free(m);
}

struct sl_discovery_cache *sl_discovery_cache_new(void)
{
	struct sl_discovery_cache *c = sl_alloc(sizeof(*c));
	sl_map_init(&c->parts);
	sl_lru_init(&c->modules, SL_DISCOVERY_MODULES_MAX, SL_DISCOVERY_MODULES_BYTES, module_free,
		    NULL);
	return c;
}

static void part_free(struct sl_discovery_part *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->line[i].suffix);
	free(p->line);
	free(p->entry);
	free(p->shared_ident);
	sl_bm25_free(p->ix);
	free(p);
}

static void free_part(const char *key, void *value, void *ctx)
{
	(void)key;
	(void)ctx;
	part_free(value);
}

void sl_discovery_cache_free(struct sl_discovery_cache *c)
{
	if (!c)
		return;
	sl_map_each(&c->parts, free_part, NULL);
	sl_map_dispose(&c->parts);
	sl_lru_dispose(&c->modules);
	free(c->order);
	free(c);
}

struct bytes {
	size_t n;
};

static void add_bytes(const char *key, void *value, void *ctx)
{
	const struct sl_discovery_part *p = value;
	struct bytes *b = ctx;
	(void)key;
	b->n += sizeof(*p) + sl_bm25_bytes(p->ix) + p->n * (sizeof(*p->entry) +
		sizeof(*p->shared_ident) + sizeof(*p->line)) + p->line_bytes;
}

size_t sl_discovery_cache_bytes(const struct sl_discovery_cache *c)
{
	struct bytes b = { c->modules.bytes };
	sl_map_each((struct sl_map *)&c->parts, add_bytes, &b);
	return b.n;
}

/* One tool in the index: its own name (a profile's rename changes how a
 * program calls it, not the words it is found by), its server's name,
 * description and title, parameter names and their descriptions. */
static void index_tool(struct sl_bm25 *ix, const char *server, yyjson_val *def)
{
	yyjson_val *props = sl_json_obj(sl_json_obj(def, "inputSchema"), "properties"), *k, *v;
	size_t doc = sl_bm25_doc(ix), i, n;
	sl_bm25_add(ix, doc, SL_BM25_SERVER, server);
	sl_bm25_add(ix, doc, SL_BM25_NAME, sl_json_str(def, "name"));
	sl_bm25_add(ix, doc, SL_BM25_DESCRIPTION, sl_json_str(def, "description"));
	sl_bm25_add(ix, doc, SL_BM25_DESCRIPTION, sl_json_str(def, "title"));
	sl_json_obj_foreach(props, i, n, k, v) {
		sl_bm25_add(ix, doc, SL_BM25_PARAM, yyjson_get_str(k));
		sl_bm25_add(ix, doc, SL_BM25_PARAM_DESC, sl_json_str(v, "description"));
	}
}

static struct sl_discovery_part *part_build(struct sl_upstream *u, struct sl_metrics *m)
{
	struct sl_discovery_part *p = sl_alloc(sizeof(*p));
	struct sl_map idents;

	p->up = u;
	p->version = u->tools.version;
	p->n = u->tools.n;
	p->ix = sl_bm25_new();
	p->entry = sl_alloc((p->n + 1) * sizeof(*p->entry));
	p->shared_ident = sl_alloc(p->n + 1);
	p->line = sl_alloc((p->n + 1) * sizeof(*p->line));
	sl_map_init(&idents);
	for (size_t j = 0; j < p->n; j++) {
		yyjson_val *def = u->tools.items[j];
		const char *name = sl_json_str(def, "name");
		char *id = sl_alloc(strlen(name ? name : "") + 2);
		uintptr_t first;

		index_tool(p->ix, u->name, def);
		p->entry[j] = SL_DISCOVERY_NONE;
		/* Two names with one identifier are both written by raw name
		 * (call_name in signature.c): known here, from the list. */
		sl_code_ident(name ? name : "", id);
		if ((first = (uintptr_t)sl_map_get(&idents, id))) {
			p->shared_ident[first - 1] = true;
			p->shared_ident[j] = true;
		} else {
			sl_map_put(&idents, id, (void *)(uintptr_t)(j + 1));
		}
		free(id);
		if (m)
			sl_metrics_work(m, SL_METRICS_INDEXED, 1);
	}
	sl_map_dispose(&idents);
	sl_bm25_seal(p->ix);
	sl_log(SL_LOG_DEBUG, "discovery: indexed the %zu tools of server '%s' (%zu bytes)", p->n,
	       u->name, sl_bm25_bytes(p->ix));
	return p;
}

static void drop_unseen(const char *key, void *value, void *ctx)
{
	struct sl_discovery_part *p = value;
	if (!p->seen) {
		sl_map_del(ctx, key);
		part_free(p);
	}
}

void sl_discovery_sync(const struct sl_discovery_view *v)
{
	struct sl_discovery_cache *c = v->cache;
	const struct sl_catalog *cat = v->cat;
	struct sl_metrics *m = v->gen ? v->gen->metrics : NULL;
	struct sl_discovery_part *p = NULL;
	const struct sl_upstream *at = NULL;
	size_t cursor = 0;

	if (c->synced && c->cat_version == cat->version)
		return;
	for (size_t i = 0; i < c->norder; i++)
		c->order[i]->seen = false;
	c->norder = 0;
	/* One server's entries are together and in its list's order (the
	 * catalog is built server by server): one walk maps them all. */
	for (size_t i = 0; i < cat->tools.n; i++) {
		const struct sl_entry *e = &cat->tools.v[i];
		if (e->up != at) {
			at = e->up;
			p = sl_map_get(&c->parts, e->up->name);
			if (p && p->seen)
				continue; /* not together after all: keep the first run */
			if (p && (p->up != e->up || p->version != e->up->tools.version)) {
				sl_map_del(&c->parts, e->up->name);
				part_free(p);
				p = NULL;
			}
			if (!p) {
				p = part_build(e->up, m);
				sl_map_put(&c->parts, e->up->name, p);
			}
			for (size_t j = 0; j < p->n; j++)
				p->entry[j] = SL_DISCOVERY_NONE;
			p->seen = true;
			if (c->norder == c->cap) {
				c->cap = c->cap ? c->cap * 2 : 16;
				c->order = sl_realloc(c->order, c->cap * sizeof(*c->order));
			}
			c->order[c->norder++] = p;
			cursor = 0;
		} else if (!p || !p->seen || c->order[c->norder - 1] != p) {
			continue;
		}
		while (cursor < p->n && p->up->tools.items[cursor] != e->def)
			cursor++;
		if (cursor < p->n)
			p->entry[cursor++] = i;
	}
	/* Servers gone from the catalog (removed, stopped, no tools). */
	sl_map_each(&c->parts, drop_unseen, &c->parts);
	c->synced = true;
	c->cat_version = cat->version;
}

const struct sl_entry *sl_discovery_entry(const struct sl_discovery_view *v,
					  const struct sl_discovery_part *p, size_t doc)
{
	const struct sl_entry *e;
	if (doc >= p->n || p->entry[doc] == SL_DISCOVERY_NONE || p->entry[doc] >= v->cat->tools.n)
		return NULL;
	e = &v->cat->tools.v[p->entry[doc]];
	return e->up == p->up && e->def == p->up->tools.items[doc] ? e : NULL;
}

struct sl_discovery_part *sl_discovery_part(const struct sl_discovery_view *v,
					    const struct sl_upstream *u)
{
	struct sl_discovery_part *p = sl_map_get(&v->cache->parts, u->name);
	return p && p->seen && p->up == u ? p : NULL;
}

const struct sl_entry *sl_discovery_next(const struct sl_discovery_view *v,
					 const struct sl_upstream *u, size_t *at)
{
	struct sl_discovery_part *p;
	sl_discovery_sync(v);
	p = sl_discovery_part(v, u);
	while (p && *at < p->n) {
		const struct sl_entry *e = sl_discovery_entry(v, p, (*at)++);
		if (e)
			return e;
	}
	return NULL;
}

/* tools/list from presented definitions and rendered listings: see listing.h. */
#include "gateway/listing.h"
#include "gateway/session_int.h"
#include "auth/caller.h"
#include "gateway/codemode.h"
#include "gateway/router.h"
#include "gateway/view.h"
#include "core/buf.h"
#include "core/digest.h"
#include "core/log.h"
#include "core/lru.h"
#include "pipeline/metrics.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One catalog tool as clients see it, without its name. */
struct shown {
	char *json;           /* "{...}"; NULL: not presented yet */
	size_t len;
	uint64_t hash;        /* of json */
	uint64_t stamp;       /* the catalog it was namespaced in; 0: its server's alone */
	signed char app_only; /* MCP Apps: only its View may call it; -1: not yet known */
};

/* The presented definitions of one list of one server. */
struct part {
	const struct sl_upstream *up; /* identity only: never read through */
	uint64_t version;             /* up->tools.version */
	bool unprefixed;              /* its server's "prefix": false when made */
	size_t n;
	struct shown *v;              /* parallel to up->tools.items */
};

/* A tool of a view: what a rendered listing is compared on. */
struct pick {
	const struct sl_entry *e;
	const char *name;
	struct shown *sh;
};

struct rendered {
	struct sl_lru_entry link;
	uint64_t id;                    /* content digest: the cursors' */
	const struct sl_profile *profile;
	char era[16];                   /* the older version it was mapped for; "": none */
	size_t n;
	struct pick *picks;
	size_t *at;                     /* n + 1: tool i is bytes[at[i], at[i + 1] - 1) */
	struct sl_blob *bytes;          /* the tools, comma-separated; answers being
					 * written hold references too */
};

struct sl_listing {
	struct part *parts;
	size_t nparts;
	uint64_t stamp;       /* catalog rebuilds heard, from 1 */
	uint64_t swept;       /* the stamp parts were last checked against */
	uint64_t gen;         /* the generation number the rendered listings are of */
	struct sl_lru cache;  /* hex id -> struct rendered */
};

static void rendered_free(struct rendered *r)
{
	if (!r)
		return;
	free(r->picks);
	free(r->at);
	sl_blob_unref(r->bytes);
	free(r);
}

static void on_evict(struct sl_lru_entry *e, void *arg)
{
	(void)arg;
	rendered_free(sl_lru_item(e, struct rendered, link));
}

struct sl_listing *sl_listing_new(void)
{
	struct sl_listing *l = sl_alloc(sizeof(*l));
	l->stamp = 1;
	sl_lru_init(&l->cache, 64, 64u << 20, on_evict, NULL);
	return l;
}

static void part_dispose(struct part *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].json);
	free(p->v);
}

static void drop_parts(struct sl_listing *l)
{
	for (size_t i = 0; i < l->nparts; i++)
		part_dispose(&l->parts[i]);
	free(l->parts);
	l->parts = NULL;
	l->nparts = 0;
}

static void drop_rendered(struct sl_listing *l)
{
	size_t max_count = l->cache.max_count, max_bytes = l->cache.max_bytes;
	sl_lru_dispose(&l->cache);
	sl_lru_init(&l->cache, max_count, max_bytes, on_evict, NULL);
}

void sl_listing_free(struct sl_listing *l)
{
	if (!l)
		return;
	drop_parts(l);
	sl_lru_dispose(&l->cache);
	free(l);
}

void sl_listing_catalog_changed(struct sl_listing *l)
{
	l->stamp++;
	drop_rendered(l);
}

void sl_listing_reload(struct sl_listing *l, const struct sl_gen *old, const struct sl_gen *next)
{
	bool same = old->nstages == next->nstages;

	for (size_t i = 0; same && i < old->nstages; i++)
		same = old->stages[i] == next->stages[i] &&
		       (!old->stages[i]->present ||
			sl_gen_state_at(old, i) == sl_gen_state_at(next, i));
	if (!same)
		drop_parts(l);
	drop_rendered(l);
}

/* ---- presented definitions ------------------------------------------------ */

/* Before a listing: the generation's bounds, and the parts of lists the
 * catalog no longer has dropped (list versions are never reused, so a
 * part is current exactly when a server of the catalog has its version). */
static void catch_up(struct sl_listing *l, const struct sl_gateway *gw)
{
	const struct sl_limits *lim = &gw->gen->cfg->limits;
	size_t kept = 0;

	if (l->gen != gw->gen->number) {
		l->gen = gw->gen->number;
		drop_rendered(l);
	}
	if (l->cache.max_count != lim->max_listings || l->cache.max_bytes != lim->max_listing_bytes)
		sl_lru_set_bounds(&l->cache, lim->max_listings, lim->max_listing_bytes);
	if (l->swept == l->stamp)
		return;
	l->swept = l->stamp;
	for (size_t i = 0; i < l->nparts; i++) {
		bool live = false;
		for (size_t j = 0; j < gw->nups && !live; j++)
			live = gw->ups[j] == l->parts[i].up &&
			       gw->ups[j]->tools.version == l->parts[i].version;
		if (live)
			l->parts[kept++] = l->parts[i];
		else
			part_dispose(&l->parts[i]);
	}
	l->nparts = kept;
}

static bool unprefixed(const struct sl_upstream *u)
{
	return u->cfg && u->cfg->unprefixed;
}

/* The part of u's current list: made (empty) if new, remade if u's
 * prefix setting changed under it. */
static struct part *part_of(struct sl_listing *l, const struct sl_upstream *u)
{
	struct part *p = NULL;

	for (size_t i = 0; i < l->nparts && !p; i++)
		if (l->parts[i].up == u)
			p = &l->parts[i];
	if (p && p->version == u->tools.version && p->unprefixed == unprefixed(u) &&
	    p->n == u->tools.n)
		return p;
	/* A rendered listing compares its tools' slots by address: none may
	 * outlive the slots it was made from. */
	drop_rendered(l);
	if (p) {
		part_dispose(p);
	} else {
		l->parts = sl_realloc(l->parts, (l->nparts + 1) * sizeof(*l->parts));
		p = &l->parts[l->nparts++];
	}
	p->up = u;
	p->version = u->tools.version;
	p->unprefixed = unprefixed(u);
	p->n = u->tools.n;
	p->v = sl_alloc((p->n ? p->n : 1) * sizeof(*p->v));
	for (size_t i = 0; i < p->n; i++)
		p->v[i].app_only = -1;
	return p;
}

/* Cleaned by the present hooks, _meta URIs namespaced, the name left out:
 * what every view shows of e, whatever it names it. */
static void present(struct sl_listing *l, struct sl_session *s, const struct part *p,
		    const struct sl_entry *e, struct shown *sh)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *t;

	if (!d)
		sl_oom();
	t = yyjson_val_mut_copy(d, e->def);
	sl_stages_present(s->gw->gen, d, t);
	sl_forward_namespace_tool(s, d, t, e->up);
	yyjson_mut_obj_remove_key(t, "name");
	free(sh->json);
	if (yyjson_mut_is_obj(t)) {
		sh->json = sl_json_write_mut_val(t, &sh->len);
	} else {
		sh->json = sl_strdup("{}");
		sh->len = 2;
	}
	yyjson_mut_doc_free(d);
	sh->hash = sl_hash64(sh->json, sh->len, 0);
	/* A URI of a server with "prefix": false is kept or namespaced by
	 * what the other servers list (sl_catalog_expose_uri). */
	sh->stamp = p->unprefixed && sl_mcp_tool_ui_uri(e->def) ? l->stamp : 0;
	sl_metrics_work(s->gw->gen->metrics, SL_METRICS_PRESENTED, 1);
}

/* ---- the view's tools --------------------------------------------------------- */

struct walk {
	const struct sl_upstream *up;
	struct part *part;
	size_t next;          /* where e's item is looked for first */
};

/* The shown slot of catalog entry e (its server's entries come in the
 * order of its list, so the search is a step forward). */
static struct shown *slot(struct sl_listing *l, struct walk *w, const struct sl_entry *e)
{
	const struct sl_item_list *items = &e->up->tools;

	if (w->up != e->up) {
		w->up = e->up;
		w->part = part_of(l, e->up);
		w->next = 0;
	}
	for (size_t k = 0; k < items->n; k++) {
		size_t i = (w->next + k) % items->n;
		if (items->items[i] == e->def) {
			w->next = i + 1;
			return &w->part->v[i];
		}
	}
	return NULL;
}

/* One 64-bit word into a running digest (a multiply and a rotate: the
 * lookup key of a listing is made on every request). */
static uint64_t mix(uint64_t h, uint64_t x)
{
	h ^= x * 0x9e3779b97f4a7c15ull;
	return (h << 27 | h >> 37) * 0xff51afd7ed558ccdull;
}

/* The catalog tools the view shows its caller, in catalog order (*n of
 * them, presented), and the key a listing of them is kept under: what
 * they are (entry, name and slot, by address: the store is emptied
 * whenever one of them could change), the profile and the version. */
static struct pick *collect(struct sl_listing *l, struct sl_session *s, const struct sl_view *v,
			    const struct sl_caller *who, const char *era, size_t *n, uint64_t *key)
{
	const struct sl_gateway *gw = s->gw;
	const struct sl_entries *tools = &gw->catalog.tools;
	struct pick *picks = sl_alloc((tools->n ? tools->n : 1) * sizeof(*picks));
	struct walk w = { 0 };
	uint64_t h = mix(sl_hash64(era, strlen(era), 0), (uintptr_t)v->profile);
	size_t k = 0;

	for (size_t i = 0; i < tools->n; i++) {
		const struct sl_entry *e = &tools->v[i];
		const char *name = sl_view_exposed(v, e);
		struct shown *sh;

		if (!name || !(sh = slot(l, &w, e)))
			continue;
		if (sh->app_only < 0)
			sh->app_only = sl_mcp_tool_app_only(e->def);
		/* MCP Apps: a View's own tool is not the model's. */
		if (sh->app_only || !sl_stages_visible(gw->gen, who, e->up, e->def))
			continue;
		if (!sh->json || (sh->stamp && sh->stamp != l->stamp))
			present(l, s, w.part, e, sh);
		picks[k++] = (struct pick){ e, name, sh };
		h = mix(mix(mix(h, (uintptr_t)e), (uintptr_t)name), (uintptr_t)sh);
	}
	*n = k;
	*key = h;
	return picks;
}

/* ---- rendering ------------------------------------------------------------------ */

static void put(struct sl_buf *b, const void *p, size_t n)
{
	if (sl_buf_append(b, p, n) < 0)
		sl_oom(); /* the buffer has no cap: only memory ends it */
}

static bool plain_name(const char *name)
{
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c < 0x20 || *c == '"' || *c == '\\')
			return false;
	return true;
}

/* Claude Code's convention (its tool search): a tool whose _meta has
 * "anthropic/alwaysLoad": true is loaded at once, never deferred behind
 * the client's own search, so code mode is not hidden behind a second
 * one. An upstream's own _meta is kept beside it. */
static void mark(yyjson_mut_doc *d, yyjson_mut_val *t)
{
	yyjson_mut_val *meta = yyjson_mut_obj_get(t, "_meta");

	if (!yyjson_mut_is_obj(meta)) {
		yyjson_mut_obj_remove_key(t, "_meta");
		meta = yyjson_mut_obj(d);
		yyjson_mut_obj_add_val(d, t, "_meta", meta);
	}
	yyjson_mut_obj_remove_key(meta, SL_MCP_META_ALWAYS_LOAD);
	yyjson_mut_obj_add_true(d, meta, SL_MCP_META_ALWAYS_LOAD);
}

/* Marks the tools of arr that v loads at once (the gateway's own). */
static void mark_always_load(const struct sl_view *v, yyjson_mut_doc *d, yyjson_mut_val *arr)
{
	yyjson_mut_val *t;
	size_t i, max;

	yyjson_mut_arr_foreach(arr, i, max, t) {
		const char *name = yyjson_mut_get_str(yyjson_mut_obj_get(t, "name"));
		if (name && sl_view_always_load(v, name))
			mark(d, t);
	}
}

/* One tool of a listing: the name, then the presented members. A marked
 * tool, an older client's or an odd name takes the tree. */
static void render_tool(struct sl_buf *b, const struct pick *p, bool marked, const char *era)
{
	yyjson_mut_doc *d;
	yyjson_doc *doc;
	yyjson_mut_val *t, *msg, *res, *arr;
	char *json;
	size_t len;

	if (!marked && !*era && plain_name(p->name)) {
		put(b, "{\"name\":\"", 9);
		put(b, p->name, strlen(p->name));
		put(b, "\"", 1);
		if (p->sh->len > 2)
			put(b, ",", 1);
		put(b, p->sh->json + 1, p->sh->len - 1);
		return;
	}
	doc = yyjson_read(p->sh->json, p->sh->len, 0);
	d = yyjson_mut_doc_new(NULL);
	if (!doc || !d)
		sl_oom(); /* our own writing reads back */
	t = yyjson_val_mut_copy(d, yyjson_doc_get_root(doc));
	yyjson_doc_free(doc);
	if (!yyjson_mut_obj_insert(t, yyjson_mut_str(d, "name"), yyjson_mut_strcpy(d, p->name), 0))
		sl_oom();
	if (marked)
		mark(d, t);
	if (*era) {
		/* The one mapping of messages to older versions, on a message
		 * holding just this tool. */
		msg = yyjson_mut_obj(d);
		res = yyjson_mut_obj(d);
		arr = yyjson_mut_arr(d);
		yyjson_mut_arr_append(arr, t);
		yyjson_mut_obj_add_val(d, res, "tools", arr);
		yyjson_mut_obj_add_val(d, msg, "result", res);
		sl_mcp_era_map(d, msg, era);
	}
	json = sl_json_write_mut_val(t, &len);
	put(b, json, len);
	free(json);
	yyjson_mut_doc_free(d);
}

static struct rendered *render(struct sl_metrics *metrics, const struct sl_view *v,
			       const char *era, struct pick *picks, size_t n)
{
	struct rendered *r = sl_alloc(sizeof(*r));
	struct sl_buf b;
	/* The id cursors carry: of the content alone (the same on every
	 * replica that would write the same bytes), never of addresses. */
	uint64_t id = sl_hash64(era, strlen(era) + 1, 0);

	if (v->profile)
		id = sl_hash64(v->profile->name, strlen(v->profile->name) + 1, id);
	sl_buf_init(&b, SIZE_MAX);
	r->profile = v->profile;
	snprintf(r->era, sizeof(r->era), "%s", era);
	r->n = n;
	r->picks = picks;
	r->at = sl_alloc((n + 1) * sizeof(*r->at));
	for (size_t i = 0; i < n; i++) {
		bool marked = sl_view_always_load(v, picks[i].name);
		r->at[i] = b.len;
		id = sl_hash64(picks[i].name, strlen(picks[i].name) + 1, id);
		id = sl_hash64(&picks[i].sh->hash, sizeof(picks[i].sh->hash), id);
		id = sl_hash64(&marked, sizeof(marked), id);
		render_tool(&b, &picks[i], marked, era);
		if (i + 1 < n)
			put(&b, ",", 1);
	}
	r->at[n] = b.len + 1;
	r->id = id;
	{
		size_t len;
		char *data = sl_buf_take(&b, &len);
		r->bytes = sl_blob_new(data, len);
	}
	sl_metrics_work(metrics, SL_METRICS_LISTING, 1);
	return r;
}

static bool same_view(const struct rendered *r, const struct sl_view *v, const char *era,
		      const struct pick *picks, size_t n)
{
	if (r->n != n || r->profile != v->profile || strcmp(r->era, era) != 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (r->picks[i].e != picks[i].e || r->picks[i].name != picks[i].name ||
		    r->picks[i].sh != picks[i].sh)
			return false;
	return true;
}

/* The rendered listing of the view: kept, or rendered now (and kept when
 * it fits; else *own is set and the caller frees it). Takes picks. */
static struct rendered *listing_of(struct sl_listing *l, struct sl_metrics *metrics,
				   const struct sl_view *v, const char *era, struct pick *picks,
				   size_t n, uint64_t key_hash, bool *own)
{
	char key[17];
	struct sl_lru_entry *e;
	struct rendered *r;

	*own = false;
	snprintf(key, sizeof(key), "%016llx", (unsigned long long)key_hash);
	if ((e = sl_lru_get(&l->cache, key, 0))) {
		r = sl_lru_item(e, struct rendered, link);
		if (same_view(r, v, era, picks, n)) {
			sl_lru_touch(&l->cache, e);
			free(picks);
			return r;
		}
	}
	r = render(metrics, v, era, picks, n);
	{
		size_t bytes = sizeof(*r) + r->bytes->len + (n + 1) * (sizeof(*r->at) + sizeof(*r->picks));
		if (bytes > l->cache.max_bytes)
			*own = true;
		else
			(void)sl_lru_put(&l->cache, key, &r->link, bytes, 0);
	}
	return r;
}

/* ---- cursors -------------------------------------------------------------------- */

static void cursor_what(const char *caller, uint64_t id, uint32_t offset, char *out, size_t size)
{
	snprintf(out, size, "tools/list cursor\n%016llx\n%08x\n%s", (unsigned long long)id,
		 (unsigned)offset, caller);
}

void sl_listing_cursor(const uint8_t key[32], const char *caller, uint64_t id, uint32_t offset,
		       char out[SL_LISTING_CURSOR_LEN + 1])
{
	char what[160], tag[SL_SEAL_TAG_HEX + 1];

	cursor_what(caller, id, offset, what, sizeof(what));
	sl_seal_tag(key, 32, what, tag);
	snprintf(out, SL_LISTING_CURSOR_LEN + 1, "%08x.%016llx.%s", (unsigned)offset,
		 (unsigned long long)id, tag);
}

/* n lower-case hex digits at p, into *v. */
static bool hex_field(const char *p, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c >= '0' && c <= '9')
			x = x << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x = x << 4 | (uint64_t)(c - 'a' + 10);
		else
			return false;
	}
	*v = x;
	return true;
}

bool sl_listing_cursor_read(const uint8_t key[32], const char *caller, const char *text, size_t len,
			    uint64_t *id, uint32_t *offset)
{
	char what[160];
	uint64_t off, lid;

	if (len != SL_LISTING_CURSOR_LEN || text[8] != '.' || text[25] != '.' ||
	    !hex_field(text, 8, &off) || !hex_field(text + 9, 16, &lid))
		return false;
	cursor_what(caller, lid, (uint32_t)off, what, sizeof(what));
	if (!sl_seal_tag_check(key, 32, what, text + 26, SL_SEAL_TAG_HEX))
		return false;
	*id = lid;
	*offset = (uint32_t)off;
	return true;
}

/* ---- tools/list ------------------------------------------------------------------ */

/* The older session-era version s's answers are mapped to, or "". */
static const char *era_of(const struct sl_session *s)
{
	return s->era == SL_ERA_LEGACY && s->version[0] &&
	       strcmp(s->version, SL_MCP_LATEST_LEGACY) < 0 ? s->version : "";
}

void sl_listing_answer(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_gateway *gw = s->gw;
	struct sl_listing *l = gw->listing;
	const char *era = era_of(s), *caller = m->who ? m->who->key : "";
	yyjson_val *cur = m->params ? yyjson_obj_get(m->params, "cursor") : NULL;
	uint32_t page = gw->gen->cfg->limits.tools_page_size, offset = 0;
	yyjson_mut_val *r, *arr, *extra, *t;
	yyjson_mut_doc *d;
	struct rendered *listing = NULL;
	struct pick *picks;
	struct sl_view v;
	uint64_t hash, id = 0, cid = 0;
	size_t n = 0, nextra, total, end, from, splice_off = 0, splice_len = 0;
	struct sl_blob *splice = NULL;
	bool own = false;

	/* MCP pagination: an invalid cursor is -32602 (Invalid params). */
	if (cur && !yyjson_is_str(cur)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: cursor must be a string");
		return;
	}
	if (cur && !sl_listing_cursor_read(gw->gen->key, caller, yyjson_get_str(cur),
					   yyjson_get_len(cur), &cid, &offset)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
				 "Invalid params: this cursor is not one sluice issued to this caller; "
				 "list again without a cursor");
		return;
	}
	catch_up(l, gw);
	sl_view_of(gw, m->who, &v);
	if (v.exposure != SL_EXPOSE_ROUTER && v.exposure != SL_EXPOSE_CODE) {
		picks = collect(l, s, &v, m->who, era, &n, &hash);
		if (n)
			listing = listing_of(l, gw->gen->metrics, &v, era, picks, n, hash, &own);
		else
			free(picks);
	}
	d = sl_session_doc(&r);
	/* The gateway's own tools, made per request (skills change apart
	 * from the catalog): after the catalog's. */
	extra = yyjson_mut_arr(d);
	if (!v.gone)
		sl_router_list(&v, d, extra);
	if (v.code) {
		yyjson_mut_arr_append(extra, sl_codemode_definition(&v, d));
		sl_skills_list(&v, d, extra);
	}
	mark_always_load(&v, d, extra);
	nextra = yyjson_mut_arr_size(extra);
	total = n + nextra;
	if (page || cur) {
		/* The listing's id: the catalog part's, then the gateway's tools. */
		size_t len;
		char *json = sl_json_write_mut_val(extra, &len);
		id = sl_hash64(json, len, listing ? listing->id : 0);
		free(json);
	}
	if (cur && (cid != id || offset >= total)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
				 "Invalid params: the tool list changed since this cursor was issued; "
				 "list again without a cursor");
		yyjson_mut_doc_free(d);
		goto out;
	}
	end = page && total - offset > page ? offset + page : total;
	arr = yyjson_mut_arr(d);
	if (offset < n) {
		/* The listing's own bytes go out by reference, not copied into
		 * the answer (sl_session_answer_spliced). */
		size_t last = end < n ? end : n;
		splice = sl_blob_ref(listing->bytes);
		splice_off = listing->at[offset];
		splice_len = listing->at[last] - 1 - listing->at[offset];
		yyjson_mut_arr_append(arr, yyjson_mut_raw(d, SL_SESSION_SPLICE_MARK));
	}
	/* The gateway's own tools of the page (a value lives in one array). */
	from = offset > n ? offset - n : 0;
	{
		yyjson_mut_val **own_tools = sl_alloc((nextra ? nextra : 1) * sizeof(*own_tools));
		size_t i, max;
		yyjson_mut_arr_foreach(extra, i, max, t)
			own_tools[i] = t;
		yyjson_mut_arr_clear(extra);
		for (i = from; n + i < end; i++)
			yyjson_mut_arr_append(arr, own_tools[i]);
		free(own_tools);
	}
	yyjson_mut_obj_add_val(d, r, "tools", arr);
	if (end < total) {
		char next[SL_LISTING_CURSOR_LEN + 1];
		sl_listing_cursor(gw->gen->key, caller, id, (uint32_t)end, next);
		yyjson_mut_obj_add_strcpy(d, r, "nextCursor", next);
	}
	sl_session_answer_spliced(s, m, modern, true, d, r, splice, splice_off, splice_len);
out:
	if (own)
		rendered_free(listing);
}

/*
 * search_tools and describe_tools answers (see discovery.h): ranked hits as
 * one-line signatures a program can use as written, and .d.ts modules.
 *
 * Names are the ones programs use: sl_code_ident's, never another copy of
 * its rule. The result type is what a call resolves to in a program: the
 * outputSchema's (it describes structuredContent), else a type inferred
 * from the tool's first results, else unknown.
 */
#include "discovery/index.h"
#include "pipeline/call.h"
#include "pipeline/metrics.h"
#include "sandbox/sandbox.h"
#include "upstream/catalog.h"
#include "upstream/upstream.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANSWER_MAX (4u << 20)  /* one answer, whatever the catalog */
#define SUMMARY_MAX 140        /* bytes of a description in a signature line */
#define ORDERED_MORE 16        /* hits put in order beyond k, for those hidden */

/* The documents a translation borrows from: kept until the answer is made,
 * because tsgen keys $ref targets by their document's address. */
struct keep {
	yyjson_doc **v;
	size_t n;
};

static yyjson_val *keep(struct keep *k, yyjson_doc *doc)
{
	if (!doc)
		return NULL;
	k->v = sl_realloc(k->v, (k->n + 1) * sizeof(*k->v));
	k->v[k->n++] = doc;
	return yyjson_doc_get_root(doc);
}

static void keep_free(struct keep *k)
{
	for (size_t i = 0; i < k->n; i++)
		yyjson_doc_free(k->v[i]);
	free(k->v);
}

/* The definition as a client may see it: as the stages present it (pinning
 * strips hidden characters). */
static yyjson_val *clean_def(const struct sl_gen *g, struct keep *k, const struct sl_entry *e)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *m = yyjson_val_mut_copy(d, e->def);
	yyjson_doc *r;
	sl_stages_present(g, d, m);
	r = yyjson_mut_val_imut_copy(m, NULL);
	yyjson_mut_doc_free(d);
	if (!r)
		sl_oom();
	return keep(k, r);
}

static char *ident(const char *name)
{
	char *s = sl_alloc(strlen(name) + 2);
	sl_code_ident(name, s);
	return s;
}

/* The noun a list tool returns many of: list_pull_requests -> pull_request. */
static char *item_base(const char *tool)
{
	static const char *const verbs[] = { "list_", "get_", "search_", "find_", "fetch_", "query_" };
	char *s = NULL;
	size_t n;
	for (size_t i = 0; i < SL_COUNT(verbs) && !s; i++)
		if (strncmp(tool, verbs[i], strlen(verbs[i])) == 0 && tool[strlen(verbs[i])])
			s = sl_strdup(tool + strlen(verbs[i]));
	if (!s)
		return sl_printf("%s_item", tool);
	n = strlen(s);
	if (n > 4 && strcmp(s + n - 3, "ies") == 0)
		strcpy(s + n - 3, "y");
	else if (n > 2 && s[n - 1] == 's' && s[n - 2] != 's')
		s[n - 1] = '\0';
	else {
		char *t = sl_printf("%s_item", s);
		free(s);
		s = t;
	}
	return s;
}

/* How a program names e (name: its name in view v; document doc of its
 * server's part p): tools.<server>.<ident>, or tools.<server>["raw"] when
 * another tool of the server in v has the same identifier (programs are
 * refused the ambiguous one). member: the form for a .d.ts member. Without
 * renames, a tool whose identifier no other tool of its list has is
 * known at once (the part's shared_ident); else the server's tools in the
 * view are compared. */
static char *call_name(const struct sl_discovery_view *v, const struct sl_discovery_part *p,
		       size_t doc, const char *name, bool member)
{
	char *id = ident(name);
	struct sl_buf b;
	int same = 1;

	if (p && (v->renames || p->shared_ident[doc])) {
		same = 0;
		for (size_t j = 0; j < p->n; j++) {
			const struct sl_entry *o = sl_discovery_entry(v, p, j);
			const char *oname = o ? v->local(v->ctx, o) : NULL;
			char *oid;
			if (!oname)
				continue;
			oid = ident(oname);
			same += strcmp(oid, id) == 0;
			free(oid);
		}
	}
	if (same <= 1) {
		char *dotted;
		if (member)
			return id;
		dotted = sl_printf(".%s", id);
		free(id);
		return dotted;
	}
	free(id);
	sl_buf_init(&b, SIZE_MAX);
	(void)!sl_buf_appends(&b, member ? "" : "[");
	(void)!sl_ts_quote(&b, name);
	(void)!sl_buf_appends(&b, member ? "" : "]");
	return sl_buf_take(&b, NULL);
}

struct sig {
	char *args;      /* the argument type (a name in describe, else inline) */
	char *result;    /* the Promise's type */
	unsigned inferred; /* results the result type was inferred from, or 0 */
};

/* Translates one tool's types into ts (its types named after name, its
 * name in the session's view). named: the argument object gets a
 * declaration too (describe_tools). */
static void signature(const struct sl_gen *g, struct sl_ts *ts, struct keep *k,
		      const struct sl_entry *e, const char *name, yyjson_val *def, bool named,
		      struct sig *sig)
{
	yyjson_val *in = yyjson_obj_get(def, "inputSchema"), *os = yyjson_obj_get(def, "outputSchema");
	char *tid = ident(name), *rname = sl_printf("%s_result", tid), *iname = item_base(tid);
	char *aname = named ? sl_printf("%s_args", tid) : NULL;

	if (g && g->metrics)
		sl_metrics_work(g->metrics, SL_METRICS_SIGNATURE, 1);
	memset(sig, 0, sizeof(*sig));
	sig->args = in ? sl_ts_type(ts, in, in, aname, NULL) : NULL;
	if (!sig->args)
		sig->args = sl_strdup("unknown");
	if (os) {
		sig->result = sl_ts_type(ts, os, os, rname, iname);
	} else {
		unsigned samples = 0;
		const char *json = sl_infer_get(sl_gen_state(g, &sl_stage_discovery), e->up->name, e->name,
						&samples);
		yyjson_val *root = json ? keep(k, yyjson_read(json, strlen(json), 0)) : NULL;
		if (root && (sig->result = sl_ts_type(ts, root, root, rname, iname)))
			sig->inferred = samples;
	}
	if (!sig->result)
		sig->result = sl_strdup("unknown");
	free(tid);
	free(rname);
	free(iname);
	free(aname);
}

static void sig_dispose(struct sig *s)
{
	free(s->args);
	free(s->result);
}

/* The first sentence of the description (or the title), on one line. */
static int summary(struct sl_buf *b, yyjson_val *def)
{
	const char *d = sl_json_str(def, "description");
	size_t n = 0;
	bool space = false;
	int rc = 0;

	if (!d || !*d)
		d = sl_json_str(def, "title");
	for (const char *p = d ? d : ""; *p && rc == 0; p++) {
		unsigned char c = (unsigned char)*p;
		size_t brk = sl_ts_break(p);
		if (c <= ' ' || c == 0x7f || brk) {
			space = n > 0;
			if (n >= 20 && p > d && p[-1] == '.')
				break;
			p += brk ? brk - 1 : 0;
			continue;
		}
		if (n >= SUMMARY_MAX && (c & 0xc0) != 0x80) {
			rc = sl_buf_appends(b, "...");
			break;
		}
		if (space)
			rc = sl_buf_append(b, " ", 1), n++;
		space = false;
		if (rc == 0)
			rc = sl_buf_append(b, p, 1), n++;
	}
	return rc;
}

/* The results e's inferred type merges (0: none): a kept line or module
 * made with fewer is made again. */
static unsigned samples_of(const struct sl_gen *g, const struct sl_entry *e)
{
	unsigned samples = 0;
	if (!sl_infer_get(sl_gen_state(g, &sl_stage_discovery), e->up->name, e->name, &samples))
		return 0;
	return samples;
}

/* What follows "tools.<server><.tool>" on e's search line (name: its name
 * in the view): "(args: A): Promise<R>  // summary\n". */
static char *line_suffix(const struct sl_gen *g, struct sl_ts *ts, struct keep *k,
			 const struct sl_entry *e, const char *name)
{
	yyjson_val *def = clean_def(g, k, e);
	struct sl_buf b;
	struct sig sig;

	signature(g, ts, k, e, name, def, false, &sig);
	sl_buf_init(&b, ANSWER_MAX);
	(void)!sl_buf_printf(&b, "(args: %s): Promise<%s>%s  // ", sig.args, sig.result,
			     sig.inferred ? " /* inferred */" : "");
	(void)!summary(&b, def);
	(void)!sl_buf_appends(&b, "\n");
	sig_dispose(&sig);
	return sl_buf_take(&b, NULL);
}

/* e's line suffix as kept in its part (made, and kept, if missing or made
 * with fewer inferred results): for the signature detail and a tool the
 * view does not rename. Borrowed from the part, or (*made set: a line over
 * SL_DISCOVERY_LINE_MAX, not kept) the caller's to free. */
static const char *kept_suffix(const struct sl_discovery_view *v, struct sl_discovery_part *p,
			       size_t doc, const struct sl_entry *e, char **made)
{
	struct sl_discovery_line *l = &p->line[doc];
	unsigned samples = samples_of(v->gen, e);
	struct keep kept = { 0 };
	struct sl_ts *ts;

	if (l->suffix && l->samples == samples)
		return l->suffix;
	if (l->suffix)
		p->line_bytes -= strlen(l->suffix) + 1;
	free(l->suffix);
	/* Its own declarations: names are unique within the line, and the
	 * signature detail shows none of them. */
	ts = sl_ts_new(true);
	l->suffix = line_suffix(v->gen, ts, &kept, e, e->name);
	l->samples = samples;
	sl_ts_free(ts);
	keep_free(&kept);
	if (strlen(l->suffix) > SL_DISCOVERY_LINE_MAX) {
		*made = l->suffix;
		l->suffix = NULL;
		return *made;
	}
	p->line_bytes += strlen(l->suffix) + 1;
	return l->suffix;
}

struct pick {
	struct sl_discovery_part *p;
	size_t doc;
	const struct sl_entry *e;
	const char *name;
};

char *sl_discovery_search(const struct sl_discovery_view *v, const char *query, size_t k,
			  const char *server, enum sl_detail detail, char **msg)
{
	struct sl_discovery_cache *c = v->cache;
	struct sl_upstream *only = NULL;
	const struct sl_bm25 **ix;
	struct sl_discovery_part **pp;
	struct sl_bm25_hit *hits;
	struct pick *pick;
	size_t np = 0, nh, npick = 0, sorted;
	struct sl_ts *ts;
	struct keep kept = { 0 };
	struct sl_buf b;

	if (server && !(only = v->server(v->ctx, server))) {
		*msg = sl_printf("unknown server '%.100s'", server);
		return NULL;
	}
	sl_discovery_sync(v);
	ix = sl_alloc((c->norder + 1) * sizeof(*ix));
	pp = sl_alloc((c->norder + 1) * sizeof(*pp));
	/* Frequencies and lengths are those of the servers searched, all of
	 * their tools (DISCOVERY.md: what is hidden weighs in, never shows). */
	for (size_t i = 0; i < c->norder; i++) {
		struct sl_discovery_part *p = c->order[i];
		if (only ? p->up != only : !v->shows(v->ctx, p->up))
			continue;
		pp[np] = p;
		ix[np++] = p->ix;
	}
	/* The best few are put in order; more only when hidden tools used
	 * them up (ORDERED_MORE at a time). */
	nh = sl_bm25_search(ix, np, query, k + ORDERED_MORE, &hits);
	sorted = k + ORDERED_MORE < nh ? k + ORDERED_MORE : nh;
	pick = sl_alloc(((k < nh ? k : nh) + 1) * sizeof(*pick));
	/* Visibility for the ranked hits in order, until k are shown. */
	for (size_t i = 0; i < nh && npick < k; i++) {
		struct sl_discovery_part *p = pp[hits[i].part];
		const struct sl_entry *e;
		const char *name;
		if (i == sorted) {
			size_t more = nh - i < 4 * ORDERED_MORE ? nh - i : 4 * ORDERED_MORE;
			sl_bm25_best(hits + i, nh - i, more);
			sorted = i + more;
			p = pp[hits[i].part];
		}
		e = sl_discovery_entry(v, p, hits[i].doc);
		name = e ? v->local(v->ctx, e) : NULL;
		if (!name || !sl_stages_visible(v->gen, v->who, e->up, e->def))
			continue;
		pick[npick++] = (struct pick){ p, hits[i].doc, e, name };
	}
	free(hits);
	free(ix);
	free(pp);

	ts = sl_ts_new(true);
	sl_buf_init(&b, ANSWER_MAX);
	for (size_t i = 0; i < npick; i++) {
		const struct pick *h = &pick[i];
		char sid[SL_SERVER_NAME_MAX + 2], *tid = call_name(v, h->p, h->doc, h->name, false);
		char *made = NULL;
		const char *suffix;
		if (detail == SL_DETAIL_SIGNATURE && strcmp(h->name, h->e->name) == 0) {
			suffix = kept_suffix(v, h->p, h->doc, h->e, &made);
		} else {
			/* The full detail declares every type the lines name,
			 * once, under names unique in the answer; a renamed tool's
			 * types are named after its new name. Made per answer:
			 * at most k lines. */
			suffix = made = line_suffix(v->gen, ts, &kept, h->e, h->name);
		}
		sl_code_ident(h->e->up->name, sid);
		(void)!sl_buf_printf(&b, "tools.%s%s%s", sid, tid, suffix);
		free(made);
		free(tid);
	}
	if (detail == SL_DETAIL_FULL && npick) {
		size_t before = b.len;
		(void)!sl_buf_appends(&b, "\n");
		(void)!sl_ts_decls(ts, &b, false);
		if (b.len == before + 1) /* nothing named */
			b.len = before;
	}
	sl_ts_free(ts);
	keep_free(&kept);
	free(pick);
	if (npick == 0) {
		sl_buf_dispose(&b);
		return sl_strdup("no tools match");
	}
	return sl_buf_take(&b, NULL);
}

#define CLOSE_MAX 64 /* bytes of a name compared by edit distance */

/* The Levenshtein distance between a and b (bytes), each at most CLOSE_MAX. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t row[CLOSE_MAX + 1];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

size_t sl_discovery_distance(const char *asked, const char *known)
{
	size_t la = strlen(asked), lb = strlen(known), d;
	if (la > CLOSE_MAX || lb > CLOSE_MAX)
		return SIZE_MAX;
	d = distance(asked, la, known, lb);
	return d > 0 && d <= 2 && d * 3 <= la ? d : SIZE_MAX;
}

/* The visible tool of part p whose name is closest to asked and close
 * enough (sl_discovery_distance), or NULL; borrowed like v->local's
 * answers. */
static const char *closest(const struct sl_discovery_view *v, const struct sl_discovery_part *p,
			   const char *asked)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	for (size_t j = 0; p && j < p->n; j++) {
		const struct sl_entry *e = sl_discovery_entry(v, p, j);
		const char *name = e ? v->local(v->ctx, e) : NULL;
		size_t d = name ? sl_discovery_distance(asked, name) : SIZE_MAX;
		if (d == SIZE_MAX || d >= best_d || !sl_stages_visible(v->gen, v->who, e->up, e->def))
			continue;
		best = name, best_d = d;
	}
	return best;
}

static bool wanted(const char *name, const char **names, size_t n, bool *found)
{
	bool yes = n == 0;
	for (size_t i = 0; i < n; i++) {
		char *id = ident(name);
		if (strcmp(names[i], name) == 0 || strcmp(names[i], id) == 0)
			yes = found[i] = true;
		free(id);
	}
	return yes;
}

/* The module's declarations and tools object for the documents inc[0..n)
 * of p (visible and wanted, in list order). */
static char *module_body(const struct sl_discovery_view *v, struct sl_discovery_part *p,
			 const size_t *inc, size_t n, const char *sid)
{
	struct sl_ts *ts = sl_ts_new(true);
	struct keep kept = { 0 };
	struct sl_buf members, b;

	sl_buf_init(&members, ANSWER_MAX);
	for (size_t i = 0; i < n; i++) {
		const struct sl_entry *e = sl_discovery_entry(v, p, inc[i]);
		const char *name = v->local(v->ctx, e);
		yyjson_val *def = clean_def(v->gen, &kept, e);
		struct sig sig;
		char *tid, *doc;
		bool unseen;
		signature(v->gen, ts, &kept, e, name, def, true, &sig);
		tid = call_name(v, p, inc[i], name, true);
		doc = sl_ts_doc(sl_json_str(def, "description") ? sl_json_str(def, "description") :
				sl_json_str(def, "title"));
		/* No outputSchema and no result seen yet: say when it will be known. */
		unseen = !sig.inferred && !sl_json_obj(def, "outputSchema") && !strcmp(sig.result, "unknown");
		if (doc || sig.inferred || unseen) {
			(void)!sl_buf_printf(&members, "    /** %s", doc ? doc : "");
			if (sig.inferred)
				(void)!sl_buf_printf(&members, "%sThe result type is inferred from %u "
						     "result%s.", doc ? " " : "", sig.inferred,
						     sig.inferred == 1 ? "" : "s");
			else if (unseen)
				(void)!sl_buf_printf(&members, "%sThe result type is unknown until the tool "
						     "has answered a call.", doc ? " " : "");
			(void)!sl_buf_appends(&members, " */\n");
		}
		(void)!sl_buf_printf(&members, "    %s(args: %s): Promise<%s>;\n", tid, sig.args, sig.result);
		free(doc);
		free(tid);
		sig_dispose(&sig);
	}
	sl_buf_init(&b, ANSWER_MAX);
	(void)!sl_ts_decls(ts, &b, true);
	(void)!sl_buf_printf(&b, "export declare const tools: {\n  %s: {\n", sid);
	(void)!sl_buf_append(&b, members.data ? members.data : "", members.len);
	(void)!sl_buf_appends(&b, "  };\n};\n");
	sl_buf_dispose(&members);
	sl_ts_free(ts);
	keep_free(&kept);
	return sl_buf_take(&b, NULL);
}

char *sl_discovery_describe(const struct sl_discovery_view *v, const char *server,
			    const char **names, size_t n, char **msg)
{
	struct sl_discovery_part *p;
	struct sl_upstream *u;
	struct sl_lru_entry *le;
	struct sl_buf key, b;
	const char *body;
	char *made = NULL;
	size_t count = 0, *inc;
	bool *found;
	char sid[SL_SERVER_NAME_MAX + 2];

	u = server ? v->server(v->ctx, server) : NULL;
	if (!u) {
		*msg = sl_printf("unknown server '%.100s'", server ? server : "");
		return NULL;
	}
	sl_code_ident(u->name, sid);
	sl_discovery_sync(v);
	p = sl_discovery_part(v, u);
	found = sl_alloc(n + 1);
	inc = sl_alloc(((p ? p->n : 0) + 1) * sizeof(*inc));
	/* The module is made once for what it depends on: the server's list,
	 * which of its tools are in it under which names, and how many
	 * results each inferred type merges. */
	sl_buf_init(&key, SIZE_MAX);
	(void)!sl_buf_printf(&key, "%s\x1f%llu", u->name,
			     (unsigned long long)(p ? p->version : 0));
	for (size_t j = 0; p && j < p->n; j++) {
		const struct sl_entry *e = sl_discovery_entry(v, p, j);
		const char *name = e ? v->local(v->ctx, e) : NULL;
		if (!name || !sl_stages_visible(v->gen, v->who, u, e->def) ||
		    !wanted(name, names, n, found))
			continue;
		inc[count++] = j;
		(void)!sl_buf_printf(&key, "\x1e%zu\x1f%s\x1f%u", j, name, samples_of(v->gen, e));
	}
	sl_buf_init(&b, ANSWER_MAX);
	(void)!sl_buf_printf(&b, "// %zu tool%s of server \"%s\", called in programs as "
			     "tools.%s.<tool>(args).\n", count, count == 1 ? "" : "s", u->name, sid);
	/* Names not found: each on a comment line; the known ones are still
	 * described (one typo does not cost the model the whole answer). */
	for (size_t i = 0; i < n; i++)
		if (!found[i]) {
			const char *near = closest(v, p, names[i]);
			char *line = sl_printf("server '%s' has no tool '%.100s' (or it is hidden)%s%s%s",
					       u->name, names[i], near ? "; did you mean '" : "",
					       near ? near : "", near ? "'?" : "");
			for (char *q = line; *q; q++) { /* stays one comment line */
				size_t brk = sl_ts_break(q);
				if (brk)
					memset(q, '?', brk), q += brk - 1;
				else if ((unsigned char)*q < ' ' || *q == 0x7f)
					*q = '?';
			}
			if (count == 0) {
				*msg = line;
				sl_buf_dispose(&b);
				sl_buf_dispose(&key);
				free(inc);
				free(found);
				return NULL;
			}
			(void)!sl_buf_printf(&b, "// %s\n", line);
			free(line);
		}
	if ((le = sl_lru_get(&v->cache->modules, key.data, 0))) {
		sl_lru_touch(&v->cache->modules, le);
		body = sl_lru_item(le, struct sl_discovery_module, e)->text;
	} else {
		struct sl_discovery_module *m = sl_alloc(sizeof(*m));
		body = made = module_body(v, p, inc, count, sid);
		m->text = sl_strdup(made);
		/* Too large for the cache alone: refused (and freed). */
		(void)sl_lru_put(&v->cache->modules, key.data, &m->e, strlen(made) + key.len, 0);
	}
	(void)!sl_buf_appends(&b, body);
	free(made);
	sl_buf_dispose(&key);
	free(inc);
	free(found);
	return sl_buf_take(&b, NULL);
}

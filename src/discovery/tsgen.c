/*
 * JSON Schema -> TypeScript (see discovery.h; the mapping table is in
 * docs/internals/DISCOVERY.md). Pure: the input is a schema, the output
 * text; nothing here knows about the gateway, so it can be fuzzed alone.
 *
 * A $ref target becomes a named declaration, made once and referred to by
 * name, so recursive schemas are finite. What TypeScript itself rejects (a
 * type alias that is its own member: `type A = B; type B = A`) is caught by
 * the "direct" stack: the declarations being expanded with no object,
 * array or tuple between them and the reference.
 */
#include "discovery/discovery.h"
#include "core/map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 24              /* nesting below this becomes unknown */
#define MAX_BYTES (64u << 10)     /* one type's text and each declaration */
#define MAX_NODES 20000           /* schemas visited by one translation */
#define MAX_PROPS 1000            /* properties of one object */
#define MAX_TUPLE 64              /* items of one tuple */
#define MAX_DOC 400               /* bytes of one JSDoc comment */
#define MAX_NAME 60               /* bytes of a type name's base */

/* Precedence of an emitted type, to know when to parenthesise. */
enum { P_FAIL = -1, P_UNION, P_INTER, P_ATOM, P_OBJECT /* an object literal */ };

struct decl {
	char *name;
	char *key;     /* "<root address>#<ref>", or NULL */
	char *doc;     /* JSDoc text, or NULL */
	char *body;    /* NULL while it is being built */
	bool object;   /* body is an object literal: written as an interface */
	bool used;     /* referred to by name */
	bool dropped;  /* withdrawn: not written (its name stays taken) */
};

struct sl_ts {
	bool pretty;
	struct decl *v;
	size_t n, cap;
	struct sl_map names; /* taken names (value unused) */
	struct sl_map keys;  /* $ref key -> (void *)(index + 1) */
};

struct gen {
	struct sl_ts *ts;
	yyjson_val *root;
	const char *why;   /* the first failure */
	size_t nodes;
	size_t direct[MAX_DEPTH * 2 + 8];
	size_t ndirect, dbase;
};

struct sl_ts *sl_ts_new(bool pretty)
{
	struct sl_ts *ts = sl_alloc(sizeof(*ts));
	ts->pretty = pretty;
	sl_map_init(&ts->names);
	sl_map_init(&ts->keys);
	return ts;
}

static void decl_dispose(struct decl *d)
{
	free(d->name);
	free(d->key);
	free(d->doc);
	free(d->body);
}

void sl_ts_free(struct sl_ts *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n; i++)
		decl_dispose(&ts->v[i]);
	free(ts->v);
	sl_map_dispose(&ts->names);
	sl_map_dispose(&ts->keys);
	free(ts);
}

/* Names the declarations use for themselves: a schema's "Promise" must not
 * shadow the Promise of the signatures. */
static const char *const taken[] = { "Promise", "Array", "Record", "Partial", "Readonly" };

/* Writes a fresh PascalCase type name for base into name and takes it. */
static void unique_name(struct sl_ts *ts, const char *base, char name[MAX_NAME + 16])
{
	size_t n = 0;
	bool up = true;

	for (const char *p = base ? base : ""; *p && n < MAX_NAME; p++) {
		char c = *p;
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum) {
			up = true;
			continue;
		}
		if (n == 0 && c >= '0' && c <= '9')
			name[n++] = 'T';
		name[n++] = up && c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
		up = false;
	}
	if (n == 0)
		name[n++] = 'T';
	name[n] = '\0';
	for (size_t i = 0; i < SL_COUNT(taken); i++)
		if (strcmp(name, taken[i]) == 0) {
			strcpy(name + n, "Type");
			n += 4;
		}
	for (unsigned k = 2; sl_map_get(&ts->names, name); k++)
		snprintf(name + n, 12, "%u", k);
	sl_map_put(&ts->names, name, ts);
}

static size_t decl_new(struct sl_ts *ts, const char *base, char *key)
{
	struct decl *d;
	if (ts->n == ts->cap) {
		ts->cap = ts->cap ? ts->cap * 2 : 8;
		ts->v = sl_realloc(ts->v, ts->cap * sizeof(*ts->v));
	}
	d = &ts->v[ts->n];
	memset(d, 0, sizeof(*d));
	char name[MAX_NAME + 16];
	unique_name(ts, base, name);
	d->name = sl_strdup(name);
	d->key = key;
	if (key)
		sl_map_put(&ts->keys, key, (void *)(uintptr_t)(ts->n + 1));
	return ts->n++;
}

/* Withdraws the declarations from mark on (a failed translation). */
static void rollback(struct sl_ts *ts, size_t mark)
{
	while (ts->n > mark) {
		struct decl *d = &ts->v[--ts->n];
		sl_map_del(&ts->names, d->name);
		if (d->key)
			sl_map_del(&ts->keys, d->key);
		decl_dispose(d);
	}
}

static int fail(struct gen *g, const char *why)
{
	if (!g->why)
		g->why = why;
	return P_FAIL;
}

static bool out(struct gen *g, struct sl_buf *b, const char *s)
{
	if (sl_buf_appends(b, s) < 0) {
		fail(g, "the type is too large");
		return false;
	}
	return true;
}

static bool outn(struct gen *g, struct sl_buf *b, const char *s, size_t n)
{
	if (sl_buf_append(b, s, n) < 0) {
		fail(g, "the type is too large");
		return false;
	}
	return true;
}

static bool indent(struct gen *g, struct sl_buf *b, int ind)
{
	for (int i = 0; i < ind; i++)
		if (!out(g, b, "  "))
			return false;
	return true;
}

/* A JSON string as a TypeScript string literal: JSON's escapes are valid
 * TypeScript, and U+2028/U+2029 are allowed in literals since ES2019. */
size_t sl_ts_break(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f)
		return 2; /* a C1 control, U+0085 (NEL) among them */
	if (u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9))
		return 3; /* U+2028, U+2029 */
	return 0;
}

static int quote(struct sl_buf *b, const char *s, size_t n)
{
	int rc = sl_buf_append(b, "\"", 1);
	for (size_t i = 0; i < n && rc == 0; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		if (c == '"' || c == '\\') {
			esc[0] = '\\', esc[1] = (char)c;
			rc = sl_buf_append(b, esc, 2);
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			rc = sl_buf_append(b, esc, 6);
		} else if (i + 3 <= n && sl_ts_break(s + i) == 3) {
			snprintf(esc, sizeof(esc), "\\u%04x", 0x2028 + (s[i + 2] & 1));
			rc = sl_buf_append(b, esc, 6);
			i += 2;
		} else {
			rc = sl_buf_append(b, s + i, 1);
		}
	}
	return rc ? rc : sl_buf_append(b, "\"", 1);
}

static bool is_ident(const char *s)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '$'))
			return false;
	return true;
}

int sl_ts_quote(struct sl_buf *b, const char *s)
{
	return quote(b, s, strlen(s));
}

int sl_ts_key(struct sl_buf *b, const char *name)
{
	return is_ident(name) ? sl_buf_appends(b, name) : quote(b, name, strlen(name));
}

/* A description as a one-line JSDoc body: whitespace runs (and line or
 * paragraph separators) become one space, "*" "/" cannot close the
 * comment, control characters go, and it is cut
 * (on a character boundary) at MAX_DOC bytes. NULL if empty. */
char *sl_ts_doc(const char *s)
{
	struct sl_buf b;
	bool space = false;
	if (!s)
		return NULL;
	sl_buf_init(&b, MAX_DOC + 8);
	for (const char *p = s; *p && b.len < MAX_DOC; p++) {
		unsigned char c = (unsigned char)*p;
		size_t brk = sl_ts_break(p);
		if (c <= ' ' || c == 0x7f || brk) {
			space = b.len > 0;
			p += brk ? brk - 1 : 0;
			continue;
		}
		if (space && sl_buf_append(&b, " ", 1) < 0)
			break;
		space = false;
		if (c == '/' && b.len && b.data[b.len - 1] == '*' && sl_buf_append(&b, "\\", 1) < 0)
			break;
		if (c >= 0xc0) { /* a whole UTF-8 sequence, or none of it */
			size_t l = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
			if (strnlen(p, l) < l || b.len + l > MAX_DOC || sl_buf_append(&b, p, l) < 0)
				break;
			p += l - 1;
			continue;
		}
		if (sl_buf_append(&b, p, 1) < 0)
			break;
	}
	if (b.len == 0) {
		sl_buf_dispose(&b);
		return NULL;
	}
	return sl_buf_take(&b, NULL);
}

static char *schema_doc(yyjson_val *s)
{
	const char *d = sl_json_str(s, "description");
	return sl_ts_doc(d ? d : sl_json_str(s, "title"));
}

static int emit(struct gen *g, yyjson_val *s, struct sl_buf *b, int ind, int depth);

/* Emits s into a fresh buffer (the caller disposes it); returns the
 * precedence. */
static int emit_sub(struct gen *g, yyjson_val *s, struct sl_buf *sub, int ind, int depth)
{
	sl_buf_init(sub, MAX_BYTES);
	return emit(g, s, sub, ind, depth);
}

/* Emits s inside an object, array or tuple: a reference from there back to
 * a declaration being expanded is fine for TypeScript. */
static int emit_member(struct gen *g, yyjson_val *s, struct sl_buf *sub, int ind, int depth)
{
	size_t saved = g->dbase;
	int p;
	g->dbase = g->ndirect;
	p = emit_sub(g, s, sub, ind, depth);
	g->dbase = saved;
	return p;
}

static bool out_paren(struct gen *g, struct sl_buf *b, struct sl_buf *t, int prec, int need)
{
	if (prec >= need)
		return outn(g, b, t->data, t->len);
	return out(g, b, "(") && outn(g, b, t->data, t->len) && out(g, b, ")");
}

static int literal(struct gen *g, yyjson_val *v, struct sl_buf *b)
{
	switch (yyjson_get_type(v)) {
	case YYJSON_TYPE_STR:
		if (quote(b, yyjson_get_str(v), yyjson_get_len(v)) < 0)
			return fail(g, "the type is too large");
		return P_ATOM;
	case YYJSON_TYPE_NUM:
	case YYJSON_TYPE_RAW: {
		size_t n;
		char *t = sl_json_write_val(v, &n);
		bool ok = outn(g, b, t, n);
		free(t);
		return ok ? P_ATOM : P_FAIL;
	}
	case YYJSON_TYPE_BOOL:
		return out(g, b, yyjson_get_bool(v) ? "true" : "false") ? P_ATOM : P_FAIL;
	case YYJSON_TYPE_NULL:
		return out(g, b, "null") ? P_ATOM : P_FAIL;
	case YYJSON_TYPE_OBJ: /* no literal type for these: their kind */
		return out(g, b, "{ [key: string]: unknown }") ? P_OBJECT : P_FAIL;
	case YYJSON_TYPE_ARR:
		return out(g, b, "unknown[]") ? P_ATOM : P_FAIL;
	default:
		return fail(g, "an unreadable enum value");
	}
}

static int emit_enum(struct gen *g, yyjson_val *e, struct sl_buf *b)
{
	yyjson_val *v;
	size_t i, n;
	if (!yyjson_is_arr(e))
		return fail(g, "enum is not an array");
	if (yyjson_arr_size(e) == 0)
		return out(g, b, "never") ? P_ATOM : P_FAIL;
	yyjson_arr_foreach(e, i, n, v) {
		if (i && !out(g, b, " | "))
			return P_FAIL;
		if (literal(g, v, b) < 0)
			return P_FAIL;
	}
	return n > 1 ? P_UNION : P_ATOM;
}

static int emit_ref(struct gen *g, const char *ref, struct sl_buf *b, int depth)
{
	struct sl_ts *ts = g->ts;
	yyjson_val *target = NULL;
	char *key, base[MAX_NAME + 1];
	const char *seg;
	size_t idx, bl = 0;
	void *hit;
	struct sl_buf sub;
	int p;

	if (ref[0] != '#')
		return fail(g, "a $ref outside the schema");
	key = sl_printf("%p%s", (void *)g->root, ref);
	hit = sl_map_get(&ts->keys, key);
	if (hit) {
		free(key);
		idx = (size_t)(uintptr_t)hit - 1;
		for (size_t i = g->dbase; i < g->ndirect; i++)
			if (g->direct[i] == idx)
				return fail(g, "a $ref cycle with no object in between");
		ts->v[idx].used = true;
		return out(g, b, ts->v[idx].name) ? P_ATOM : P_FAIL;
	}
	if (ref[1] == '\0')
		target = g->root;
	else if (ref[1] == '/')
		target = yyjson_ptr_get(g->root, ref + 1);
	if (!target) {
		free(key);
		return fail(g, "a $ref that does not resolve");
	}
	if (g->ndirect == SL_COUNT(g->direct)) {
		free(key);
		return fail(g, "$ref chains too long");
	}
	/* The name: the pointer's last segment, ~1 and ~0 decoded. */
	seg = strrchr(ref, '/');
	for (seg = seg ? seg + 1 : "Root"; *seg && bl < MAX_NAME; seg++) {
		if (seg[0] == '~' && (seg[1] == '0' || seg[1] == '1')) {
			base[bl++] = seg[1] == '0' ? '~' : '/';
			seg++;
		} else {
			base[bl++] = *seg;
		}
	}
	base[bl] = '\0';
	idx = decl_new(ts, base, key);
	ts->v[idx].used = true;
	g->direct[g->ndirect++] = idx;
	p = emit_sub(g, target, &sub, ts->pretty ? 0 : -1, depth + 1);
	g->ndirect--;
	if (p < 0) {
		sl_buf_dispose(&sub);
		return P_FAIL;
	}
	ts->v[idx].body = sl_buf_take(&sub, NULL);
	ts->v[idx].object = p == P_OBJECT;
	ts->v[idx].doc = schema_doc(target);
	return out(g, b, ts->v[idx].name) ? P_ATOM : P_FAIL;
}

/* One property or index line of an object literal. */
static bool member(struct gen *g, struct sl_buf *b, int ind, bool *first, const char *doc)
{
	if (ind < 0)
		return out(g, b, *first ? "" : "; ") && ((*first = false), true);
	*first = false;
	if (doc && !(indent(g, b, ind + 1) && out(g, b, "/** ") && out(g, b, doc) && out(g, b, " */\n")))
		return false;
	return indent(g, b, ind + 1);
}

static int emit_object(struct gen *g, yyjson_val *s, struct sl_buf *b, int ind, int depth)
{
	yyjson_val *props = yyjson_obj_get(s, "properties"), *req = yyjson_obj_get(s, "required");
	yyjson_val *ap = yyjson_obj_get(s, "additionalProperties");
	yyjson_val *pp = yyjson_obj_get(s, "patternProperties"), *k, *v;
	struct sl_buf idx, types;
	bool first = true, has_index = false, optional = false;
	size_t i, n;
	int rc = P_FAIL;

	if (props && !yyjson_is_obj(props))
		return fail(g, "properties is not an object");
	if (pp && !yyjson_is_obj(pp))
		return fail(g, "patternProperties is not an object");
	if (yyjson_obj_size(props) > MAX_PROPS)
		return fail(g, "too many properties");
	sl_buf_init(&idx, MAX_BYTES);
	sl_buf_init(&types, MAX_BYTES); /* property types, for the index signature */
	if (!out(g, b, ind < 0 ? "{" : "{\n"))
		goto out;
	sl_json_obj_foreach(props, i, n, k, v) {
		const char *name = yyjson_get_str(k);
		bool required = false, dup = false;
		struct sl_buf t;
		yyjson_val *r, *k2, *v2;
		size_t j, m;
		char *doc;
		int p;

		yyjson_obj_foreach(props, j, m, k2, v2) {
			if (j >= i)
				break;
			dup = dup || strcmp(yyjson_get_str(k2), name) == 0;
		}
		if (dup) /* JSON allows it; TypeScript does not */
			continue;
		yyjson_arr_foreach(req, j, m, r)
			required = required || (yyjson_is_str(r) && strcmp(yyjson_get_str(r), name) == 0);
		p = emit_member(g, v, &t, ind < 0 ? -1 : ind + 1, depth + 1);
		if (p < 0) {
			sl_buf_dispose(&t);
			goto out;
		}
		doc = ind < 0 ? NULL : schema_doc(v);
		bool ok = member(g, b, ind, &first, doc) && sl_ts_key(b, name) == 0 &&
			  out(g, b, required ? ": " : "?: ") && outn(g, b, t.data, t.len) &&
			  (ind < 0 || out(g, b, ";\n")) &&
			  (types.len == 0 || out(g, &types, " | ")) && outn(g, &types, t.data, t.len);
		free(doc);
		sl_buf_dispose(&t);
		if (!ok)
			goto out;
		optional = optional || !required;
	}
	/* The index signature: additionalProperties' schema, else the
	 * patternProperties' union; an object that says nothing of its
	 * properties has unknown ones. */
	if (ap && yyjson_is_obj(ap)) {
		if (emit_member(g, ap, &idx, ind < 0 ? -1 : ind + 1, depth + 1) < 0)
			goto out;
		has_index = true;
	} else if (yyjson_obj_size(pp) > 0) {
		yyjson_obj_foreach(pp, i, n, k, v) {
			struct sl_buf t;
			bool ok = emit_member(g, v, &t, ind < 0 ? -1 : ind + 1, depth + 1) >= 0 &&
				  (idx.len == 0 || out(g, &idx, " | ")) && outn(g, &idx, t.data, t.len);
			sl_buf_dispose(&t);
			if (!ok)
				goto out;
		}
		has_index = true;
	} else if (!props && !(ap && yyjson_is_false(ap))) {
		has_index = out(g, &idx, "unknown");
		if (!has_index)
			goto out;
	} else if (!props) {
		has_index = out(g, &idx, "never"); /* no property at all */
		if (!has_index)
			goto out;
	}
	if (has_index) {
		/* TypeScript wants every property to fit the index signature. */
		bool wide = strcmp(idx.data, "unknown") != 0 && types.len > 0;
		if (!member(g, b, ind, &first, NULL) || !out(g, b, "[key: string]: ") ||
		    !outn(g, b, idx.data, idx.len) ||
		    (wide && !(out(g, b, " | ") && outn(g, b, types.data, types.len))) ||
		    (wide && optional && !out(g, b, " | undefined")) || (ind >= 0 && !out(g, b, ";\n")))
			goto out;
	}
	if ((ind >= 0 && !indent(g, b, ind)) || !out(g, b, "}"))
		goto out;
	rc = P_OBJECT;
out:
	sl_buf_dispose(&idx);
	sl_buf_dispose(&types);
	return rc;
}

static int emit_tuple(struct gen *g, yyjson_val *items, yyjson_val *rest, int64_t min,
		      struct sl_buf *b, int ind, int depth)
{
	yyjson_val *v;
	size_t i, n;

	if (yyjson_arr_size(items) > MAX_TUPLE)
		return out(g, b, "unknown[]") ? P_ATOM : P_FAIL;
	if (!out(g, b, "["))
		return P_FAIL;
	yyjson_arr_foreach(items, i, n, v) {
		struct sl_buf t;
		int p = emit_member(g, v, &t, ind, depth + 1);
		bool ok = p >= 0 && (i == 0 || out(g, b, ", ")) && out_paren(g, b, &t, p, P_INTER) &&
			  ((int64_t)i < min || out(g, b, "?"));
		sl_buf_dispose(&t);
		if (!ok)
			return P_FAIL;
	}
	if (!rest || !yyjson_is_false(rest)) {
		struct sl_buf t;
		int p = P_ATOM;
		sl_buf_init(&t, MAX_BYTES);
		if (rest && !yyjson_is_true(rest))
			p = emit_member(g, rest, &t, ind, depth + 1);
		else if (!out(g, &t, "unknown"))
			p = P_FAIL;
		bool ok = p >= 0 && out(g, b, n ? ", ..." : "...") && out_paren(g, b, &t, p, P_ATOM) &&
			  out(g, b, "[]");
		sl_buf_dispose(&t);
		if (!ok)
			return P_FAIL;
	}
	return out(g, b, "]") ? P_ATOM : P_FAIL;
}

static int emit_array(struct gen *g, yyjson_val *s, struct sl_buf *b, int ind, int depth)
{
	yyjson_val *items = yyjson_obj_get(s, "items"), *prefix = yyjson_obj_get(s, "prefixItems");
	int64_t min = 0;
	struct sl_buf t;
	int p;

	sl_json_int(s, "minItems", &min);
	if (prefix) {
		if (!yyjson_is_arr(prefix))
			return fail(g, "prefixItems is not an array");
		return emit_tuple(g, prefix, items, min, b, ind, depth);
	}
	if (yyjson_is_arr(items)) /* before 2020-12, a tuple */
		return emit_tuple(g, items, yyjson_obj_get(s, "additionalItems"), min, b, ind, depth);
	if (!items || yyjson_is_true(items))
		return out(g, b, "unknown[]") ? P_ATOM : P_FAIL;
	p = emit_member(g, items, &t, ind, depth + 1);
	bool ok = p >= 0 && out_paren(g, b, &t, p, P_ATOM) && out(g, b, "[]");
	sl_buf_dispose(&t);
	return ok ? P_ATOM : P_FAIL;
}

static int emit_kind(struct gen *g, yyjson_val *s, const char *type, struct sl_buf *b, int ind,
		     int depth)
{
	static const struct { const char *json, *ts; } prim[] = {
		{ "string", "string" }, { "integer", "number" }, { "number", "number" },
		{ "boolean", "boolean" }, { "null", "null" },
	};
	if (strcmp(type, "object") == 0)
		return emit_object(g, s, b, ind, depth);
	if (strcmp(type, "array") == 0)
		return emit_array(g, s, b, ind, depth);
	for (size_t i = 0; i < SL_COUNT(prim); i++)
		if (strcmp(type, prim[i].json) == 0)
			return out(g, b, prim[i].ts) ? P_ATOM : P_FAIL;
	return fail(g, "an unknown type name");
}

/* The type the "type" keyword (and the shape keywords) give, or none
 * (b untouched, P_ATOM returned with *none set). */
static int emit_base(struct gen *g, yyjson_val *s, struct sl_buf *b, int ind, int depth, bool *none)
{
	yyjson_val *type = yyjson_obj_get(s, "type"), *v;
	size_t i, n;

	*none = false;
	if (yyjson_is_str(type))
		return emit_kind(g, s, yyjson_get_str(type), b, ind, depth);
	if (yyjson_is_arr(type)) {
		if (yyjson_arr_size(type) == 0)
			return fail(g, "an empty type list");
		yyjson_arr_foreach(type, i, n, v) {
			struct sl_buf t;
			int p;
			if (!yyjson_is_str(v))
				return fail(g, "a type name that is not a string");
			sl_buf_init(&t, MAX_BYTES);
			p = emit_kind(g, s, yyjson_get_str(v), &t, ind, depth);
			bool ok = p >= 0 && (i == 0 || out(g, b, " | ")) && out_paren(g, b, &t, p, P_INTER);
			sl_buf_dispose(&t);
			if (!ok)
				return P_FAIL;
		}
		return n > 1 ? P_UNION : P_ATOM;
	}
	if (type)
		return fail(g, "type is neither a string nor a list");
	if (yyjson_obj_get(s, "properties") || yyjson_obj_get(s, "additionalProperties") ||
	    yyjson_obj_get(s, "patternProperties"))
		return emit_object(g, s, b, ind, depth);
	if (yyjson_obj_get(s, "items") || yyjson_obj_get(s, "prefixItems"))
		return emit_array(g, s, b, ind, depth);
	*none = true;
	return P_ATOM;
}

/* anyOf/oneOf: a union; "unknown" if any member is. */
static int emit_union(struct gen *g, yyjson_val *list, struct sl_buf *b, int ind, int depth)
{
	yyjson_val *v;
	size_t i, n;
	if (!yyjson_is_arr(list))
		return fail(g, "anyOf/oneOf is not an array");
	if (yyjson_arr_size(list) == 0)
		return out(g, b, "never") ? P_ATOM : P_FAIL;
	yyjson_arr_foreach(list, i, n, v) {
		struct sl_buf t;
		int p = emit_sub(g, v, &t, ind, depth + 1);
		bool unknown = p >= 0 && strcmp(t.data ? t.data : "", "unknown") == 0;
		bool ok = p >= 0 && (i == 0 || out(g, b, " | ")) && out_paren(g, b, &t, p, P_INTER);
		sl_buf_dispose(&t);
		if (!ok)
			return P_FAIL;
		if (unknown) {
			sl_buf_reset(b);
			return out(g, b, "unknown") ? P_ATOM : P_FAIL;
		}
	}
	return n > 1 ? P_UNION : P_ATOM;
}

static int emit(struct gen *g, yyjson_val *s, struct sl_buf *b, int ind, int depth)
{
	struct sl_buf parts[16]; /* base, anyOf, oneOf, allOf members (at most 13) */
	int prec[16], np = 0, rc = P_FAIL, p;
	yyjson_val *v, *all;
	size_t i, n;
	bool none, nullable;

	if (++g->nodes > MAX_NODES)
		return fail(g, "the schema is too large");
	if (depth > MAX_DEPTH)
		return out(g, b, "unknown") ? P_ATOM : P_FAIL;
	if (yyjson_is_bool(s))
		return out(g, b, yyjson_get_bool(s) ? "unknown" : "never") ? P_ATOM : P_FAIL;
	if (!yyjson_is_obj(s))
		return fail(g, "a schema that is neither an object nor a boolean");
	nullable = sl_json_true(s, "nullable"); /* OpenAPI 3.0 */
	if ((v = yyjson_obj_get(s, "$ref"))) {
		if (!yyjson_is_str(v))
			return fail(g, "$ref is not a string");
		if (!nullable)
			return emit_ref(g, yyjson_get_str(v), b, depth);
		return emit_ref(g, yyjson_get_str(v), b, depth) < 0 || !out(g, b, " | null") ? P_FAIL : P_UNION;
	}
	/* const and enum say everything: the type keywords beside them add nothing. */
	if ((v = yyjson_obj_get(s, "const")) || (v = yyjson_obj_get(s, "enum"))) {
		p = yyjson_obj_get(s, "const") ? literal(g, v, b) : emit_enum(g, v, b);
		if (p >= 0 && nullable && !out(g, b, " | null"))
			return P_FAIL;
		return p >= 0 && nullable ? P_UNION : p;
	}

	sl_buf_init(&parts[np], MAX_BYTES);
	p = emit_base(g, s, &parts[np], ind, depth, &none);
	np++;
	if (p < 0)
		goto out;
	if (none)
		sl_buf_dispose(&parts[--np]);
	else
		prec[np - 1] = p;
	static const char *const unions[] = { "anyOf", "oneOf" };
	for (size_t u = 0; u < SL_COUNT(unions); u++) {
		if (!(v = yyjson_obj_get(s, unions[u])))
			continue;
		sl_buf_init(&parts[np], MAX_BYTES);
		if ((prec[np] = emit_union(g, v, &parts[np], ind, depth)) < 0) {
			np++;
			goto out;
		}
		np++;
	}
	if ((all = yyjson_obj_get(s, "allOf"))) {
		if (!yyjson_is_arr(all)) {
			fail(g, "allOf is not an array");
			goto out;
		}
		yyjson_arr_foreach(all, i, n, v) {
			if (np == (int)SL_COUNT(parts)) {
				fail(g, "allOf too long");
				goto out;
			}
			if ((prec[np] = emit_sub(g, v, &parts[np], ind, depth + 1)) < 0) {
				np++;
				goto out;
			}
			np++;
		}
	}
	/* The intersection of the parts; "unknown" parts add nothing. */
	int kept = 0, last = P_ATOM, real = 0;
	for (int j = 0; j < np; j++)
		real += strcmp(parts[j].data ? parts[j].data : "", "unknown") != 0;
	for (int j = 0; j < np; j++) {
		if (strcmp(parts[j].data ? parts[j].data : "", "unknown") == 0)
			continue;
		if ((kept && !out(g, b, " & ")) ||
		    !out_paren(g, b, &parts[j], prec[j], real > 1 ? P_INTER : P_UNION))
			goto out;
		last = prec[j];
		kept++;
	}
	if (kept == 0 && !out(g, b, "unknown"))
		goto out;
	rc = kept > 1 ? P_INTER : kept == 1 ? last : P_ATOM;
	if (nullable && strcmp(b->data, "unknown") != 0) {
		if (!out(g, b, " | null"))
			rc = P_FAIL;
		else
			rc = P_UNION;
	}
out:
	for (int j = 0; j < np; j++)
		sl_buf_dispose(&parts[j]);
	return rc;
}

static bool is_plain_array(yyjson_val *s)
{
	static const char *const other[] = { "$ref", "const", "enum", "anyOf", "oneOf", "allOf",
					     "prefixItems", "nullable" };
	yyjson_val *items = yyjson_obj_get(s, "items");
	if (!yyjson_is_obj(s) || !yyjson_equals_str(yyjson_obj_get(s, "type"), "array") ||
	    !yyjson_is_obj(items))
		return false;
	for (size_t i = 0; i < SL_COUNT(other); i++)
		if (yyjson_obj_get(s, other[i]))
			return false;
	return true;
}

char *sl_ts_type(struct sl_ts *ts, yyjson_val *root, yyjson_val *schema, const char *name,
		 const char *item)
{
	struct gen g = { .ts = ts, .root = root };
	size_t mark = ts->n, top = SIZE_MAX;
	struct sl_buf b;
	int p;

	if (!schema)
		return NULL;
	if (item && is_plain_array(schema)) {
		char *t = sl_ts_type(ts, root, yyjson_obj_get(schema, "items"), item, NULL);
		char *r = !t ? NULL : is_ident(t) ? sl_printf("%s[]", t) : sl_printf("Array<%s>", t);
		free(t);
		return r;
	}
	if (name) {
		top = decl_new(ts, name, schema == root ? sl_printf("%p#", (void *)root) : NULL);
		g.direct[g.ndirect++] = top;
	}
	sl_buf_init(&b, MAX_BYTES);
	p = emit(&g, schema, &b, name && ts->pretty ? 0 : -1, 0);
	if (p < 0) {
		sl_buf_dispose(&b);
		rollback(ts, mark);
		return NULL;
	}
	if (top != SIZE_MAX) {
		struct decl *d = &ts->v[top];
		if (p == P_OBJECT || d->used) {
			d->body = sl_buf_take(&b, NULL);
			d->object = p == P_OBJECT;
			d->doc = schema_doc(schema);
			return sl_strdup(d->name);
		}
		d->dropped = true;
		if (d->key)
			sl_map_del(&ts->keys, d->key);
		if (ts->pretty) { /* the inline form is one line */
			sl_buf_reset(&b);
			g.ndirect = 0;
			if (emit(&g, schema, &b, -1, 0) < 0) {
				sl_buf_dispose(&b);
				rollback(ts, mark);
				return NULL;
			}
		}
	}
	return sl_buf_take(&b, NULL);
}

int sl_ts_decls(struct sl_ts *ts, struct sl_buf *b, bool exported)
{
	int rc = 0;
	for (size_t i = 0; i < ts->n && rc == 0; i++) {
		const struct decl *d = &ts->v[i];
		if (d->dropped || !d->body)
			continue;
		if (d->doc)
			rc = sl_buf_printf(b, "/** %s */\n", d->doc);
		if (rc == 0 && d->object)
			rc = sl_buf_printf(b, "%sinterface %s %s\n", exported ? "export " : "", d->name, d->body);
		else if (rc == 0)
			rc = sl_buf_printf(b, "%stype %s = %s;\n", exported ? "export " : "", d->name, d->body);
	}
	return rc;
}

char *sl_ts_from_json(const char *bytes, size_t len, size_t *out_len)
{
	yyjson_doc *doc = yyjson_read(bytes, len, SL_JSON_READ_FLAGS);
	struct sl_ts *ts = sl_ts_new(true);
	yyjson_val *root = yyjson_doc_get_root(doc);
	char *t = root ? sl_ts_type(ts, root, root, "Root", NULL) : NULL;
	struct sl_buf b;

	sl_buf_init(&b, SIZE_MAX);
	if (!t || strcmp(t, "Root") != 0)
		(void)!sl_buf_printf(&b, "type Root = %s;\n", t ? t : "unknown");
	(void)!sl_ts_decls(ts, &b, false);
	free(t);
	sl_ts_free(ts);
	yyjson_doc_free(doc);
	return sl_buf_take(&b, out_len);
}

/* x-mcp-header and Mcp-Param-* headers (SEP-2243); see mcpparam.h. */
#include "proto/mcpparam.h"
#include "core/common.h"
#include "core/escape.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SAFE_INT 9007199254740991.0 /* 2^53 - 1 */
#define SENTINEL_HEAD "=?base64?"
#define SENTINEL_TAIL "?="

/* One declaration: its header name and the properties leading to it. */
struct decl {
	const char *name;
	const char *path[SL_MCPPARAM_DEPTH];
	size_t depth;
	char type; /* 's'tring, 'i'nteger, 'b'oolean */
};

struct decls {
	struct decl v[SL_MCPPARAM_MAX];
	size_t n;
	char *why;
	size_t why_n;
	bool failed;
};

/* RFC 9110 5.6.2 tchar. */
static bool tchar(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static void fail(struct decls *d, const char *fmt, ...) SL_PRINTF(2, 3);
static void fail(struct decls *d, const char *fmt, ...)
{
	va_list ap;

	if (!d->failed && d->why) {
		va_start(ap, fmt);
		vsnprintf(d->why, d->why_n, fmt, ap);
		va_end(ap);
	}
	d->failed = true;
}

/* Keywords whose values are data, not schemas: an "x-mcp-header" key in
 * them annotates nothing. */
static bool data_keyword(const char *k)
{
	return !strcmp(k, "default") || !strcmp(k, "const") || !strcmp(k, "enum") ||
	       !strcmp(k, "examples");
}

static void annotate(struct decls *d, yyjson_val *node, const char **path, size_t depth)
{
	yyjson_val *x = yyjson_obj_get(node, "x-mcp-header");
	const char *name = yyjson_get_str(x), *type = yyjson_get_str(yyjson_obj_get(node, "type"));
	size_t len = yyjson_get_len(x);
	struct decl *e;

	if (!name || !len || len > SL_MCPPARAM_NAME_MAX || strlen(name) != len) {
		fail(d, "an x-mcp-header of property '%.64s' is not a name of 1 to 64 characters",
		     depth ? path[depth - 1] : "");
		return;
	}
	for (size_t i = 0; i < len; i++)
		if (!tchar(name[i])) {
			fail(d, "x-mcp-header '%.64s' is not an HTTP field-name token", name);
			return;
		}
	if (!type || !(!strcmp(type, "string") || !strcmp(type, "integer") || !strcmp(type, "boolean"))) {
		fail(d, "x-mcp-header '%.64s' is on a property that is not a string, integer or "
		     "boolean", name);
		return;
	}
	for (size_t i = 0; i < d->n; i++)
		if (!strcasecmp(d->v[i].name, name)) {
			fail(d, "x-mcp-header '%.64s' is declared twice (names are compared ignoring "
			     "case)", name);
			return;
		}
	if (d->n == SL_MCPPARAM_MAX) {
		fail(d, "more than %d x-mcp-header declarations", SL_MCPPARAM_MAX);
		return;
	}
	e = &d->v[d->n++];
	e->name = name;
	e->depth = depth;
	memcpy(e->path, path, depth * sizeof(*path));
	e->type = type[0];
}

/* reachable: node is a property reached from the root through properties
 * alone (path[0..depth) names it); else an annotation here is invalid. */
static void walk(struct decls *d, yyjson_val *node, bool reachable, const char **path, size_t depth)
{
	yyjson_val *k, *v;
	size_t i, max;

	if (d->failed)
		return;
	if (yyjson_is_arr(node)) {
		yyjson_arr_foreach(node, i, max, v)
			walk(d, v, false, path, depth);
		return;
	}
	if (!yyjson_is_obj(node))
		return;
	if (yyjson_obj_get(node, "x-mcp-header")) {
		if (!reachable || !depth)
			fail(d, "an x-mcp-header (%.64s) is not on a property reached through "
			     "properties alone", yyjson_get_str(yyjson_obj_get(node, "x-mcp-header")) ?
			     yyjson_get_str(yyjson_obj_get(node, "x-mcp-header")) : "?");
		else
			annotate(d, node, path, depth);
	}
	yyjson_obj_foreach(node, i, max, k, v) {
		const char *key = yyjson_get_str(k);
		if (!strcmp(key, "x-mcp-header") || data_keyword(key))
			continue;
		if (!strcmp(key, "properties") && yyjson_is_obj(v)) {
			yyjson_val *pk, *pv;
			size_t j, pmax;
			yyjson_obj_foreach(v, j, pmax, pk, pv) {
				bool deeper = reachable && depth < SL_MCPPARAM_DEPTH;
				if (deeper)
					path[depth] = yyjson_get_str(pk);
				walk(d, pv, deeper, path, deeper ? depth + 1 : depth);
			}
			continue;
		}
		walk(d, v, false, path, depth);
	}
}

static bool collect(yyjson_val *schema, struct decls *d)
{
	const char *path[SL_MCPPARAM_DEPTH];

	/* The root is reachable (its properties are), but not a property. */
	if (yyjson_is_obj(schema))
		walk(d, schema, true, path, 0);
	return !d->failed;
}

bool sl_mcpparam_check(yyjson_val *schema, char *why, size_t n)
{
	struct decls *d = sl_alloc(sizeof(*d));
	bool ok;

	d->why = why;
	d->why_n = n;
	ok = collect(schema, d);
	free(d);
	return ok;
}

bool sl_mcpparam_any(yyjson_val *schema)
{
	struct decls *d = sl_alloc(sizeof(*d));
	bool any = collect(schema, d) && d->n > 0;
	free(d);
	return any;
}

static yyjson_val *argument(const struct decl *e, yyjson_val *args)
{
	yyjson_val *v = args;
	for (size_t i = 0; i < e->depth && v; i++)
		v = yyjson_is_obj(v) ? yyjson_obj_get(v, e->path[i]) : NULL;
	return v && !yyjson_is_null(v) ? v : NULL;
}

/* The argument in the declared type: strings as they are, integers (also
 * 42.0) within the safe range, booleans. */
static bool of_type(const struct decl *e, yyjson_val *v)
{
	switch (e->type) {
	case 's': return yyjson_is_str(v);
	case 'b': return yyjson_is_bool(v);
	default:
		return yyjson_is_num(v) && fabs(yyjson_get_num(v)) <= SAFE_INT &&
		       yyjson_get_num(v) == floor(yyjson_get_num(v));
	}
}

static bool plain_safe(const char *s, size_t n)
{
	if (!n || s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t')
		return false; /* an empty value is sent encoded: curl drops "Name:" */
	for (size_t i = 0; i < n; i++)
		if ((s[i] < 0x20 && s[i] != '\t') || (unsigned char)s[i] > 0x7e)
			return false;
	return !(n >= strlen(SENTINEL_HEAD) + strlen(SENTINEL_TAIL) &&
		 !strncmp(s, SENTINEL_HEAD, strlen(SENTINEL_HEAD)) &&
		 !strcmp(s + n - strlen(SENTINEL_TAIL), SENTINEL_TAIL));
}

char *sl_mcpparam_encode(yyjson_val *v)
{
	const char *s;
	size_t n;
	char *out;

	if (yyjson_is_bool(v))
		return sl_strdup(yyjson_get_bool(v) ? "true" : "false");
	if (yyjson_is_num(v)) {
		double x = yyjson_get_num(v);
		if (fabs(x) > SAFE_INT || x != floor(x))
			return NULL;
		return sl_printf("%.0f", x);
	}
	if (!yyjson_is_str(v))
		return NULL;
	s = yyjson_get_str(v);
	n = yyjson_get_len(v);
	if (plain_safe(s, n) && strlen(s) == n)
		return sl_strdup(s);
	out = sl_alloc(strlen(SENTINEL_HEAD) + SL_BASE64_SIZE(n) + strlen(SENTINEL_TAIL));
	strcpy(out, SENTINEL_HEAD);
	sl_base64(s, n, out + strlen(SENTINEL_HEAD));
	strcat(out, SENTINEL_TAIL);
	return out;
}

char *sl_mcpparam_decode(const char *h, size_t *len)
{
	size_t n = strlen(h), hl = strlen(SENTINEL_HEAD), tl = strlen(SENTINEL_TAIL);

	for (size_t i = 0; i < n; i++)
		if ((h[i] < 0x20 && h[i] != '\t') || (unsigned char)h[i] > 0x7e)
			return NULL;
	if (n >= hl + tl && !strncmp(h, SENTINEL_HEAD, hl) && !strcmp(h + n - tl, SENTINEL_TAIL))
		return sl_unbase64(h + hl, n - hl - tl, len);
	*len = n;
	return sl_strdup(h);
}

size_t sl_mcpparam_headers(yyjson_val *schema, yyjson_val *args, struct sl_mcpparam_header *out,
			   size_t max)
{
	struct decls *d = sl_alloc(sizeof(*d));
	size_t k = 0;

	if (collect(schema, d))
		for (size_t i = 0; i < d->n && k < max; i++) {
			yyjson_val *v = argument(&d->v[i], args);
			char *value = v && of_type(&d->v[i], v) ? sl_mcpparam_encode(v) : NULL;
			if (value && strlen(value) > SL_MCPPARAM_VALUE_MAX) {
				free(value);
				value = NULL;
			}
			if (value) {
				out[k].name = d->v[i].name;
				out[k++].value = value;
			}
		}
	free(d);
	return k;
}

void sl_mcpparam_headers_free(struct sl_mcpparam_header *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(h[i].value);
}

/* MCP 2026-07-28 "Server Validation": integers compare as numbers. */
static bool same(const struct decl *e, yyjson_val *v, const char *got, size_t len)
{
	char *end;
	double x;

	switch (e->type) {
	case 's':
		return len == yyjson_get_len(v) && !memcmp(got, yyjson_get_str(v), len);
	case 'b':
		return !strcmp(got, yyjson_get_bool(v) ? "true" : "false");
	default:
		x = strtod(got, &end);
		return len && *end == '\0' && strlen(got) == len && x == yyjson_get_num(v);
	}
}

const char *sl_mcpparam_mismatch(yyjson_val *schema, yyjson_val *args,
				 const char *(*get)(void *ctx, const char *name), void *ctx,
				 char *buf, size_t n)
{
	struct decls *d = sl_alloc(sizeof(*d));
	const char *why = NULL;

	if (!collect(schema, d)) {
		free(d);
		return NULL; /* not served: the catalog leaves such a tool out */
	}
	for (size_t i = 0; i < d->n && !why; i++) {
		const struct decl *e = &d->v[i];
		yyjson_val *v = argument(e, args);
		const char *h = get(ctx, e->name);
		char *got;
		size_t len = 0;

		if (v && !of_type(e, v))
			continue; /* the tool refuses such an argument itself */
		if (!v && !h)
			continue;
		if (!h) {
			snprintf(buf, n, "Header mismatch: the " SL_MCPPARAM_PREFIX "%s header is missing "
				 "(the tool mirrors that argument into it)", e->name);
			why = buf;
		} else if (!v) {
			snprintf(buf, n, "Header mismatch: the " SL_MCPPARAM_PREFIX "%s header is sent "
				 "without its argument", e->name);
			why = buf;
		} else if (!(got = sl_mcpparam_decode(h, &len))) {
			snprintf(buf, n, "Header mismatch: the " SL_MCPPARAM_PREFIX "%s header holds "
				 "characters a header value may not, or is not valid base64", e->name);
			why = buf;
		} else {
			if (!same(e, v, got, len)) {
				snprintf(buf, n, "Header mismatch: the " SL_MCPPARAM_PREFIX "%s header "
					 "does not match the argument", e->name);
				why = buf;
			}
			free(got);
		}
	}
	free(d);
	return why;
}

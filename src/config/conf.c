/*
 * Config key tables: apply, defaults, reference. See conf.h.
 */
#include "config/conf.h"
#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *sl_conf_field(void *target, const struct sl_conf_key *k)
{
	return (char *)target + k->offset;
}

bool sl_conf_repeated(yyjson_val *obj, yyjson_val *key)
{
	yyjson_obj_iter it;
	yyjson_val *k;
	yyjson_obj_iter_init(obj, &it);
	while ((k = yyjson_obj_iter_next(&it)) && k != key)
		if (yyjson_equals(k, key))
			return true;
	return false;
}

static int vfail(struct sl_conf_ctx *cx, const char *where, const char *fmt, va_list ap)
	SL_PRINTF(3, 0);
static int vfail(struct sl_conf_ctx *cx, const char *where, const char *fmt, va_list ap)
{
	char what[400];
	vsnprintf(what, sizeof(what), fmt, ap);
	sl_err_set(cx->err, "%s%s%s: %s", cx->file ? cx->file : "", cx->file ? ": " : "",
		   where ? where : cx->where, what);
	return SL_ERR_INVALID;
}

int sl_conf_fail(struct sl_conf_ctx *cx, const char *where, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = vfail(cx, where, fmt, ap);
	va_end(ap);
	return rc;
}

int sl_conf_fail_key(struct sl_conf_ctx *cx, const struct sl_conf_key *k, const char *fmt, ...)
{
	char what[300], where[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (cx->flags & SL_CONF_KEY_FIRST)
		return sl_conf_fail(cx, NULL, "\"%s\" %s", k->key, what);
	snprintf(where, sizeof(where), "%s.%s", cx->where, k->key);
	return sl_conf_fail(cx, where, "%s", what);
}

/* What a value of k must be, as messages and the reference say it. */
static const char *shape(const struct sl_conf_key *k, char *buf, size_t n)
{
	size_t len = 0;

	if (k->shape)
		return k->shape;
	switch (k->type) {
	case SL_CONF_BOOL:
		return "true or false";
	case SL_CONF_UINT:
		if (k->max == UINT64_MAX)
			snprintf(buf, n, "a whole number from %llu", (unsigned long long)k->min);
		else
			snprintf(buf, n, "a whole number from %llu to %llu", (unsigned long long)k->min,
				 (unsigned long long)k->max);
		return buf;
	case SL_CONF_STRING:
		return k->min ? "a non-empty string" : "a string";
	case SL_CONF_ENUM:
		buf[0] = '\0';
		for (const struct sl_conf_name *nm = k->names; nm->name && len < n; nm++)
			len += (size_t)snprintf(buf + len, n - len, "%s\"%s\"",
						nm == k->names ? "" : nm[1].name ? ", " : " or ",
						nm->name);
		return buf;
	case SL_CONF_OBJECT:
		return "an object";
	case SL_CONF_CUSTOM:
		break;
	}
	return "?";
}

int sl_conf_bad(struct sl_conf_ctx *cx, const struct sl_conf_key *k)
{
	char buf[300];
	return sl_conf_fail_key(cx, k, "must be %s", shape(k, buf, sizeof(buf)));
}

static void store(void *field, size_t size, uint64_t n)
{
	if (size == sizeof(uint32_t)) {
		uint32_t x = (uint32_t)n;
		memcpy(field, &x, sizeof(x));
	} else {
		memcpy(field, &n, sizeof(n));
	}
}

static int apply_key(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	void *field = sl_conf_field(target, k);
	char where[200];

	switch (k->type) {
	case SL_CONF_BOOL:
		if (!yyjson_is_bool(v))
			return sl_conf_bad(cx, k);
		*(bool *)field = yyjson_get_bool(v);
		return SL_OK;
	case SL_CONF_UINT:
		if (!yyjson_is_uint(v) || yyjson_get_uint(v) < k->min || yyjson_get_uint(v) > k->max)
			return sl_conf_bad(cx, k);
		store(field, k->size, yyjson_get_uint(v));
		return SL_OK;
	case SL_CONF_STRING:
		if (!yyjson_is_str(v) || yyjson_get_len(v) < k->min)
			return sl_conf_bad(cx, k);
		free(*(char **)field);
		*(char **)field = sl_strdup(yyjson_get_str(v));
		return SL_OK;
	case SL_CONF_ENUM:
		for (const struct sl_conf_name *nm = k->names; yyjson_is_str(v) && nm->name; nm++)
			if (strcmp(yyjson_get_str(v), nm->name) == 0) {
				store(field, k->size, (uint32_t)nm->value);
				return SL_OK;
			}
		return sl_conf_bad(cx, k);
	case SL_CONF_OBJECT:
		snprintf(where, sizeof(where), "%s.%s", cx->where, k->key);
		return sl_conf_apply(cx, k->sub, where, v, field);
	case SL_CONF_CUSTOM:
		break;
	}
	return k->parse(cx, k, v, target);
}

/* "a, b, c": the keys of s, so a refused key's message says what is allowed. */
static void key_list(const struct sl_conf_section *s, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < s->nkeys && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", s->keys[i].key);
}

static int unknown(struct sl_conf_ctx *cx, const struct sl_conf_section *s, const char *key)
{
	char *msg;

	if (cx->flags & SL_CONF_STRICT) {
		char known[200];
		key_list(s, known, sizeof(known));
		return sl_conf_fail(cx, NULL, "unknown key \"%.100s\" (known: %s)", key, known);
	}
	msg = sl_printf("%s: unknown key \"%s\" ignored", cx->where, key);
	if (cx->warn) {
		cx->warn(cx, msg);
		return SL_OK;
	}
	sl_log(SL_LOG_WARN, "%s%s%s", cx->file ? cx->file : "", cx->file ? ": " : "", msg);
	free(msg);
	return SL_OK;
}

static const struct sl_conf_key *find(const struct sl_conf_section *s, const char *key)
{
	for (size_t i = 0; i < s->nkeys; i++)
		if (strcmp(s->keys[i].key, key) == 0)
			return &s->keys[i];
	return NULL;
}

int sl_conf_apply(struct sl_conf_ctx *cx, const struct sl_conf_section *s, const char *where,
		  yyjson_val *obj, void *target)
{
	const char *outer_where = cx->where;
	unsigned outer_flags = cx->flags;
	yyjson_obj_iter it;
	yyjson_val *k;
	int rc = SL_OK;

	cx->where = where ? where : s->path;
	cx->flags = s->flags;
	if (!yyjson_is_obj(obj)) {
		rc = sl_conf_fail(cx, NULL, "must be an object");
		goto out;
	}
	yyjson_obj_iter_init(obj, &it);
	while (rc == SL_OK && (k = yyjson_obj_iter_next(&it))) {
		const char *key = yyjson_get_str(k);
		const struct sl_conf_key *ck = find(s, key);
		yyjson_val *v = yyjson_obj_iter_get_val(k);

		if (sl_conf_repeated(obj, k))
			rc = sl_conf_fail(cx, NULL, "\"%.100s\" is given twice", key);
		else if (ck)
			rc = apply_key(cx, ck, v, target);
		else if (!s->other || (rc = s->other(cx, key, v, target)) == SL_CONF_DECLINED)
			rc = unknown(cx, s, key);
	}
out:
	cx->where = outer_where;
	cx->flags = outer_flags;
	return rc;
}

int sl_conf_load(const struct sl_conf_section *s, yyjson_val *obj, void *target,
		 struct sl_err *err)
{
	struct sl_conf_ctx cx = { .err = err };

	sl_conf_defaults(s, target);
	return obj ? sl_conf_apply(&cx, s, NULL, obj, target) : SL_OK;
}

void sl_conf_defaults(const struct sl_conf_section *s, void *target)
{
	for (size_t i = 0; i < s->nkeys; i++) {
		const struct sl_conf_key *k = &s->keys[i];
		void *field = sl_conf_field(target, k);
		switch (k->type) {
		case SL_CONF_BOOL:
			*(bool *)field = k->dflt != 0;
			break;
		case SL_CONF_UINT:
		case SL_CONF_ENUM:
			store(field, k->size, k->dflt);
			break;
		case SL_CONF_OBJECT:
			sl_conf_defaults(k->sub, field);
			break;
		case SL_CONF_STRING:
		case SL_CONF_CUSTOM:
			break;
		}
	}
}

/* The default of k as the reference shows it. */
static const char *default_text(const struct sl_conf_key *k, char *buf, size_t n)
{
	static const char *const units[] = { "KiB", "MiB", "GiB" };
	uint64_t v = k->dflt;
	size_t u = 0;

	if (k->dflt_doc)
		return k->dflt_doc;
	switch (k->type) {
	case SL_CONF_BOOL:
		return k->dflt ? "`true`" : "`false`";
	case SL_CONF_UINT:
		/* Byte sizes read better in binary units: 4194304 (4 MiB). */
		while (strstr(k->key, "Bytes") && v >= 1024 && v % 1024 == 0 && u < SL_COUNT(units)) {
			v /= 1024;
			u++;
		}
		if (u)
			snprintf(buf, n, "`%llu` (%llu %s)", (unsigned long long)k->dflt,
				 (unsigned long long)v, units[u - 1]);
		else
			snprintf(buf, n, "`%llu`", (unsigned long long)k->dflt);
		return buf;
	case SL_CONF_ENUM:
		for (const struct sl_conf_name *nm = k->names; nm->name; nm++)
			if ((uint64_t)nm->value == k->dflt) {
				snprintf(buf, n, "`\"%s\"`", nm->name);
				return buf;
			}
		break;
	case SL_CONF_OBJECT:
		return "`{}`";
	case SL_CONF_STRING:
	case SL_CONF_CUSTOM:
		break;
	}
	return "none";
}

void sl_conf_reference(FILE *f, const struct sl_conf_section *s)
{
	const char *q = strchr(s->path, ' ') ? "" : "`"; /* "top level" is not a key */
	fprintf(f, "## %s%s%s\n\n%s\n\n", q, s->path, q, s->doc);
	fprintf(f, "| key | value | default | meaning |\n|---|---|---|---|\n");
	for (size_t i = 0; i < s->nkeys; i++) {
		const struct sl_conf_key *k = &s->keys[i];
		char sbuf[300], dbuf[100];
		fprintf(f, "| `%s` | %s | %s | %s |\n", k->key, shape(k, sbuf, sizeof(sbuf)),
			default_text(k, dbuf, sizeof(dbuf)), k->doc);
	}
	fprintf(f, "\n");
}

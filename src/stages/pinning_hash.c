/*
 * What a pin is made of (stages/pinning.h): hidden characters stripped
 * from what clients see, the canonical definition and its hash, and the
 * hash of scheme 1 for pins written before scheme 2. Pure functions, apart
 * from the store and the stage (pinning.c). See docs/stages/pinning.md.
 */
#include "stages/pinning.h"
#include "core/digest.h"

#include <stdlib.h>
#include <string.h>

/* Deeper than any real schema; beyond it objects keep their order (still
 * deterministic) and strings are not cleaned, so a hostile definition cannot
 * exhaust the stack. */
#define MAX_DEPTH 128

/* ---- hidden characters --------------------------------------------------- */

/* The length of the invisible character at p (UTF-8), or 0. Every one
 * starts with a byte of 0xC2 or more: ASCII (most of every definition a
 * listing cleans) is one comparison a byte. */
static size_t invisible_at(const unsigned char *p, size_t n)
{
	if (p[0] < 0xC2)
		return 0;
	if (n >= 2 && p[0] == 0xC2 && p[1] == 0xAD) /* U+00AD soft hyphen */
		return 2;
	if (n >= 3 && p[0] == 0xE2 && p[1] == 0x80 &&
	    ((p[2] >= 0x8B && p[2] <= 0x8F) || (p[2] >= 0xAA && p[2] <= 0xAE)))
		return 3; /* U+200B-U+200F, U+202A-U+202E */
	if (n >= 3 && p[0] == 0xE2 && p[1] == 0x81 &&
	    ((p[2] >= 0xA0 && p[2] <= 0xA4) || (p[2] >= 0xA6 && p[2] <= 0xA9)))
		return 3; /* U+2060-U+2064, U+2066-U+2069 */
	if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
		return 3; /* U+FEFF */
	if (n >= 4 && p[0] == 0xF3 && p[1] == 0xA0 && (p[2] == 0x80 || p[2] == 0x81) &&
	    p[3] >= 0x80 && p[3] <= 0xBF)
		return 4; /* U+E0000-U+E007F, the tag block */
	return 0;
}

size_t sl_pinning_strip(char *s, size_t len)
{
	unsigned char *p = (unsigned char *)s;
	size_t r = 0, w = 0;
	while (r < len) {
		size_t k = invisible_at(p + r, len - r);
		if (k) {
			r += k;
			continue;
		}
		p[w++] = p[r++];
	}
	if (w < len)
		p[w] = '\0';
	return w;
}

static void clean_str(yyjson_mut_doc *d, yyjson_mut_val *v)
{
	const char *s = yyjson_mut_get_str(v);
	size_t n = yyjson_mut_get_len(v), k;
	char *copy;
	yyjson_mut_val *nv;

	if (!s)
		return;
	for (k = 0; k < n; k++)
		if (invisible_at((const unsigned char *)s + k, n - k))
			break;
	if (k == n)
		return;
	copy = sl_strndup(s, n);
	n = sl_pinning_strip(copy, n);
	nv = yyjson_mut_strncpy(d, copy, n);
	free(copy);
	if (nv)
		yyjson_mut_set_strn(v, yyjson_mut_get_str(nv), n);
}

/* Every string under v, keys included: an enum value, a default, a
 * property's name or an icon's URL reaches the client as much as a
 * description does. */
static void clean_all(yyjson_mut_doc *d, yyjson_mut_val *v, int depth)
{
	if (depth > MAX_DEPTH)
		return;
	if (yyjson_mut_is_str(v)) {
		clean_str(d, v);
	} else if (yyjson_mut_is_obj(v)) {
		yyjson_mut_obj_iter it = yyjson_mut_obj_iter_with(v);
		yyjson_mut_val *k;
		while ((k = yyjson_mut_obj_iter_next(&it))) {
			clean_str(d, k);
			clean_all(d, yyjson_mut_obj_iter_get_val(k), depth + 1);
		}
	} else if (yyjson_mut_is_arr(v)) {
		yyjson_mut_arr_iter it = yyjson_mut_arr_iter_with(v);
		yyjson_mut_val *x;
		while ((x = yyjson_mut_arr_iter_next(&it)))
			clean_all(d, x, depth + 1);
	}
}

void sl_pinning_clean(yyjson_mut_doc *d, yyjson_mut_val *tool)
{
	clean_all(d, tool, 0);
}

/* ---- scheme 1, for pins written before scheme 2 ---------------------------------
 *
 * Scheme 1 hashed six fields, cleaned of hidden characters in titles and
 * descriptions only. A pin without "scheme" is one: it is compared this
 * way once, and re-pinned under scheme 2 when it still matches. */

static void clean_key_v1(yyjson_mut_doc *d, yyjson_mut_val *obj, const char *key)
{
	yyjson_mut_val *v = yyjson_mut_obj_get(obj, key);
	if (yyjson_mut_is_str(v))
		clean_str(d, v);
}

static void clean_schema_v1(yyjson_mut_doc *d, yyjson_mut_val *v, int depth)
{
	if (depth > MAX_DEPTH)
		return;
	if (yyjson_mut_is_obj(v)) {
		yyjson_mut_obj_iter it = yyjson_mut_obj_iter_with(v);
		yyjson_mut_val *k;
		while ((k = yyjson_mut_obj_iter_next(&it))) {
			yyjson_mut_val *x = yyjson_mut_obj_iter_get_val(k);
			if (yyjson_mut_is_str(x) && (yyjson_mut_equals_str(k, "title") ||
						     yyjson_mut_equals_str(k, "description")))
				clean_str(d, x);
			else
				clean_schema_v1(d, x, depth + 1);
		}
	} else if (yyjson_mut_is_arr(v)) {
		yyjson_mut_arr_iter it = yyjson_mut_arr_iter_with(v);
		yyjson_mut_val *x;
		while ((x = yyjson_mut_arr_iter_next(&it)))
			clean_schema_v1(d, x, depth + 1);
	}
}

static const char *const pinned_fields_v1[] = {
	"name", "title", "description", "inputSchema", "outputSchema", "annotations",
};

void sl_pinning_hash_v1(yyjson_val *def, char hex[SL_PIN_HEX])
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;
	size_t len;
	char *s;

	if (!d)
		sl_oom();
	o = yyjson_mut_obj(d);
	for (size_t i = 0; i < SL_COUNT(pinned_fields_v1); i++) {
		yyjson_val *v = yyjson_obj_get(def, pinned_fields_v1[i]);
		if (v)
			yyjson_mut_obj_add_val(d, o, pinned_fields_v1[i], yyjson_val_mut_copy(d, v));
	}
	clean_key_v1(d, o, "title");
	clean_key_v1(d, o, "description");
	if (yyjson_mut_is_obj(yyjson_mut_obj_get(o, "annotations")))
		clean_key_v1(d, yyjson_mut_obj_get(o, "annotations"), "title");
	clean_schema_v1(d, yyjson_mut_obj_get(o, "inputSchema"), 0);
	clean_schema_v1(d, yyjson_mut_obj_get(o, "outputSchema"), 0);
	s = sl_json_canonical(o, &len);
	sl_sha256_hex(s, len, hex);
	free(s);
	yyjson_mut_doc_free(d);
}

/* ---- the hash ------------------------------------------------------------ */

yyjson_mut_val *sl_pinning_subject(yyjson_mut_doc *d, yyjson_val *def)
{
	yyjson_mut_val *o = yyjson_val_mut_copy(d, def);
	sl_pinning_clean(d, o);
	return o;
}

void sl_pinning_hash(yyjson_val *def, char hex[SL_PIN_HEX], char **canon)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	size_t len;
	char *s;

	if (!d)
		sl_oom();
	s = sl_json_canonical(sl_pinning_subject(d, def), &len);
	sl_sha256_hex(s, len, hex);
	if (canon)
		*canon = s;
	else
		free(s);
	yyjson_mut_doc_free(d);
}

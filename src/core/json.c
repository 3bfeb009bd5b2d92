/* Typed access and serialisation helpers over yyjson. */
#include "core/json.h"

#include <stdlib.h>
#include <string.h>

bool sl_json_depth_ok(yyjson_val *v)
{
	/* The values of an immutable document lie in one array, each container
	 * followed by its members: walk it once, keeping where each open
	 * container ends. */
	yyjson_val *ends[SL_JSON_DEPTH_MAX], *end;
	size_t open = 0;

	if (!v)
		return true;
	for (end = unsafe_yyjson_get_next(v); v < end; v++) {
		while (open && v >= ends[open - 1])
			open--;
		if (yyjson_is_ctn(v)) {
			if (open == SL_JSON_DEPTH_MAX)
				return false;
			ends[open++] = unsafe_yyjson_get_next(v);
		}
	}
	return true;
}

yyjson_doc *sl_json_read(const char *s, size_t n, yyjson_read_flag flg, yyjson_read_err *err)
{
	yyjson_read_err e;
	yyjson_doc *d = yyjson_read_opts((char *)s, n, flg, NULL, &e);

	if (d && !sl_json_depth_ok(yyjson_doc_get_root(d))) {
		yyjson_doc_free(d);
		d = NULL;
		e.code = SL_JSON_READ_ERROR_DEPTH;
		e.msg = SL_JSON_DEPTH_WHY;
		e.pos = 0;
	}
	if (err)
		*err = e;
	return d;
}

yyjson_val *sl_json_obj(yyjson_val *o, const char *key)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	return yyjson_is_obj(v) ? v : NULL;
}

yyjson_val *sl_json_arr(yyjson_val *o, const char *key)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	return yyjson_is_arr(v) ? v : NULL;
}

const char *sl_json_str(yyjson_val *o, const char *key)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	return yyjson_is_str(v) ? yyjson_get_str(v) : NULL;
}

bool sl_json_int(yyjson_val *o, const char *key, int64_t *out)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	if (yyjson_is_sint(v) || (yyjson_is_uint(v) && yyjson_get_uint(v) <= INT64_MAX)) {
		*out = yyjson_get_sint(v);
		return true;
	}
	return false;
}

bool sl_json_true(yyjson_val *o, const char *key)
{
	return yyjson_is_true(yyjson_obj_get(o, key));
}

/* yyjson ends the text with the newline itself, so a large answer (a
 * 10,000-tool listing is 7 MiB) is not read again for its length. The
 * buffer is then cut to the text: yyjson sizes it for the worst case of
 * escaping (several times a long string), and lines are kept in queues
 * whose budgets count what they hold. */
char *sl_json_write_line(yyjson_mut_doc *d, size_t *len)
{
	size_t n;
	char *s = yyjson_mut_write(d, YYJSON_WRITE_NEWLINE_AT_END, &n);
	if (!s)
		sl_oom();
	if (len)
		*len = n;
	return sl_realloc(s, n + 1);
}

char *sl_json_write_val(yyjson_val *v, size_t *len)
{
	char *s = yyjson_val_write(v, 0, len);
	if (!s)
		sl_oom();
	return s;
}

char *sl_json_write_mut_val(yyjson_mut_val *v, size_t *len)
{
	char *s = yyjson_mut_val_write(v, 0, len);
	if (!s)
		sl_oom();
	return s;
}

void sl_json_position(const char *s, size_t n, size_t pos, size_t *line, size_t *col)
{
	size_t l = 1, c = 1;
	for (size_t i = 0; i < pos && i < n; i++) {
		if (s[i] == '\n') {
			l++;
			c = 1;
		} else if (((unsigned char)s[i] & 0xC0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

#define SORT_DEPTH_MAX 128

struct member {
	yyjson_mut_val *key, *val;
	size_t idx;
};

static int member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	size_t lx = yyjson_mut_get_len(x->key), ly = yyjson_mut_get_len(y->key);
	int c = memcmp(yyjson_mut_get_str(x->key), yyjson_mut_get_str(y->key), lx < ly ? lx : ly);
	if (c)
		return c;
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void sort_keys(yyjson_mut_val *v, int depth)
{
	/* Bounded: a hostile document may nest far deeper than the stack. */
	if (depth > SORT_DEPTH_MAX)
		return;
	if (yyjson_mut_is_obj(v)) {
		size_t n = yyjson_mut_obj_size(v), i = 0;
		struct member *m;
		yyjson_mut_obj_iter it;
		yyjson_mut_val *k;
		if (n == 0)
			return;
		m = sl_alloc(n * sizeof(*m));
		it = yyjson_mut_obj_iter_with(v);
		while ((k = yyjson_mut_obj_iter_next(&it)) && i < n) {
			m[i].key = k;
			m[i].val = yyjson_mut_obj_iter_get_val(k);
			m[i].idx = i;
			i++;
		}
		qsort(m, i, sizeof(*m), member_cmp);
		yyjson_mut_obj_clear(v);
		for (size_t j = 0; j < i; j++) {
			sort_keys(m[j].val, depth + 1);
			yyjson_mut_obj_add(v, m[j].key, m[j].val);
		}
		free(m);
	} else if (yyjson_mut_is_arr(v)) {
		yyjson_mut_arr_iter it = yyjson_mut_arr_iter_with(v);
		yyjson_mut_val *x;
		while ((x = yyjson_mut_arr_iter_next(&it)))
			sort_keys(x, depth + 1);
	}
}

void sl_json_sort_keys(yyjson_mut_val *v)
{
	sort_keys(v, 0);
}

char *sl_json_canonical(yyjson_mut_val *v, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *c;
	size_t n = 0;
	char *s;

	if (!d)
		sl_oom();
	c = v ? yyjson_mut_val_mut_copy(d, v) : yyjson_mut_null(d);
	if (!c)
		sl_oom();
	sort_keys(c, 0);
	s = yyjson_mut_val_write(c, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &n);
	yyjson_mut_doc_free(d);
	if (!s)
		sl_oom();
	if (len)
		*len = n;
	return s;
}

static int walk_strings(const struct sl_json_strings *w, yyjson_mut_doc *d, yyjson_mut_val *v,
			yyjson_mut_val *key, size_t depth, struct sl_err *err)
{
	int rc = SL_OK;

	if (depth > w->max_depth) {
		sl_err_set(err, "JSON nested deeper than %zu levels", w->max_depth);
		return SL_ERR_INVALID;
	}
	if (yyjson_mut_is_str(v)) {
		rc = w->str(w->ctx, d, v, key, err);
	} else if (yyjson_mut_is_arr(v)) {
		yyjson_mut_arr_iter it;
		yyjson_mut_val *e;
		yyjson_mut_arr_iter_init(v, &it);
		while (rc == SL_OK && (e = yyjson_mut_arr_iter_next(&it)))
			rc = walk_strings(w, d, e, NULL, depth + 1, err);
	} else if (yyjson_mut_is_obj(v)) {
		yyjson_mut_obj_iter it;
		yyjson_mut_val *k;
		yyjson_mut_obj_iter_init(v, &it);
		while (rc == SL_OK && (k = yyjson_mut_obj_iter_next(&it))) {
			rc = walk_strings(w, d, yyjson_mut_obj_iter_get_val(k), k, depth + 1, err);
			if (rc == SL_OK && w->key)
				rc = w->key(w->ctx, d, k, err);
		}
	}
	return rc;
}

int sl_json_walk_strings(const struct sl_json_strings *w, yyjson_mut_doc *d, yyjson_mut_val *v,
			 struct sl_err *err)
{
	return walk_strings(w, d, v, NULL, 0, err);
}

/* Unit tests of src/core/json.c: typed getters, writers, positions. */
#include "unit.h"

#include "core/json.h"

#include <stdlib.h>

static yyjson_doc *parse(const char *s)
{
	return yyjson_read_opts((char *)s, strlen(s), SL_JSON_READ_FLAGS, NULL, NULL);
}

static const char getters_doc[] =
	"{\"o\":{\"k\":1},\"a\":[1,2],\"s\":\"str\",\"i\":-7,\"u\":42,\"f\":1.5,"
	"\"t\":true,\"F\":false,\"n\":null,\"ts\":\"true\",\"one\":1,"
	"\"big\":18446744073709551615,\"huge\":123456789012345678901234567890,"
	"\"max\":9223372036854775807}";

TEST(json_getters_right_types)
{
	yyjson_doc *d = parse(getters_doc);
	yyjson_val *r = yyjson_doc_get_root(d);
	int64_t i = 0;
	CHECK(d != NULL);
	CHECK(sl_json_obj(r, "o") != NULL);
	CHECK(yyjson_is_obj(sl_json_obj(r, "o")));
	CHECK(sl_json_arr(r, "a") != NULL);
	CHECK_INT(yyjson_arr_size(sl_json_arr(r, "a")), 2);
	CHECK_STR(sl_json_str(r, "s"), "str");
	CHECK(sl_json_int(r, "i", &i));
	CHECK_INT(i, -7);
	CHECK(sl_json_int(r, "u", &i));
	CHECK_INT(i, 42);
	CHECK(sl_json_int(r, "max", &i));
	CHECK(i == INT64_MAX);
	CHECK(sl_json_true(r, "t"));
	yyjson_doc_free(d);
}

TEST(json_getters_wrong_types_and_missing)
{
	yyjson_doc *d = parse(getters_doc);
	yyjson_val *r = yyjson_doc_get_root(d);
	int64_t i = 12345;

	CHECK(sl_json_obj(r, "a") == NULL);
	CHECK(sl_json_obj(r, "s") == NULL);
	CHECK(sl_json_obj(r, "n") == NULL);
	CHECK(sl_json_obj(r, "missing") == NULL);
	CHECK(sl_json_arr(r, "o") == NULL);
	CHECK(sl_json_arr(r, "s") == NULL);
	CHECK(sl_json_arr(r, "missing") == NULL);
	CHECK(sl_json_str(r, "i") == NULL);
	CHECK(sl_json_str(r, "n") == NULL);
	CHECK(sl_json_str(r, "o") == NULL);
	CHECK(sl_json_str(r, "missing") == NULL);
	CHECK(!sl_json_int(r, "f", &i));
	CHECK(!sl_json_int(r, "s", &i));
	CHECK(!sl_json_int(r, "t", &i));
	CHECK(!sl_json_int(r, "n", &i));
	CHECK(!sl_json_int(r, "missing", &i));
	CHECK(!sl_json_int(r, "big", &i));  /* over INT64_MAX */
	CHECK(!sl_json_int(r, "huge", &i)); /* a raw big number */
	CHECK_INT(i, 12345);                /* untouched on failure */
	CHECK(!sl_json_true(r, "F"));
	CHECK(!sl_json_true(r, "ts"));
	CHECK(!sl_json_true(r, "one"));
	CHECK(!sl_json_true(r, "n"));
	CHECK(!sl_json_true(r, "missing"));

	/* A non-object (or NULL) container gives NULL, not a crash. */
	CHECK(sl_json_str(sl_json_arr(r, "a"), "x") == NULL);
	CHECK(sl_json_obj(NULL, "x") == NULL);
	CHECK(sl_json_str(NULL, "x") == NULL);
	CHECK(!sl_json_int(NULL, "x", &i));
	CHECK(!sl_json_true(NULL, "x"));
	yyjson_doc_free(d);
}

TEST(json_write_line_and_vals)
{
	yyjson_mut_doc *md = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(md);
	yyjson_doc *d;
	size_t len = 0;
	char *s;

	yyjson_mut_doc_set_root(md, o);
	yyjson_mut_obj_add_val(md, o, "k", sl_json_mstr(md, "line1\nline2"));
	s = sl_json_write_line(md, &len);
	CHECK_STR(s, "{\"k\":\"line1\\nline2\"}\n");
	CHECK_INT(len, strlen(s));
	/* Exactly one newline, at the end. */
	CHECK(strchr(s, '\n') == s + len - 1);
	free(s);

	s = sl_json_write_mut_val(o, &len);
	CHECK_STR(s, "{\"k\":\"line1\\nline2\"}");
	CHECK_INT(len, strlen(s));
	free(s);
	yyjson_mut_doc_free(md);

	d = parse("{\"a\": [1, 2, {\"b\": 123456789012345678901234567890}]}");
	s = sl_json_write_val(sl_json_arr(yyjson_doc_get_root(d), "a"), &len);
	CHECK_STR(s, "[1,2,{\"b\":123456789012345678901234567890}]");
	CHECK_INT(len, strlen(s));
	free(s);
	yyjson_doc_free(d);
}

TEST(json_mstr_copies)
{
	yyjson_mut_doc *md = yyjson_mut_doc_new(NULL);
	char buf[8] = "abc";
	yyjson_mut_val *v = sl_json_mstr(md, buf);
	buf[0] = 'z';
	CHECK_STR(yyjson_mut_get_str(v), "abc");
	yyjson_mut_doc_free(md);
}

TEST(json_position_ascii)
{
	const char *s = "ab\ncd\n\nxyz";
	size_t line = 0, col = 0;
	sl_json_position(s, strlen(s), 0, &line, &col);
	CHECK_INT(line, 1);
	CHECK_INT(col, 1);
	sl_json_position(s, strlen(s), 1, &line, &col);
	CHECK_INT(line, 1);
	CHECK_INT(col, 2);
	sl_json_position(s, strlen(s), 2, &line, &col); /* the '\n' itself */
	CHECK_INT(line, 1);
	CHECK_INT(col, 3);
	sl_json_position(s, strlen(s), 3, &line, &col);
	CHECK_INT(line, 2);
	CHECK_INT(col, 1);
	sl_json_position(s, strlen(s), 6, &line, &col);
	CHECK_INT(line, 3);
	CHECK_INT(col, 1);
	sl_json_position(s, strlen(s), 9, &line, &col); /* 'z' */
	CHECK_INT(line, 4);
	CHECK_INT(col, 3);
	/* At (or past) the end: the position after the last byte. */
	sl_json_position(s, strlen(s), strlen(s), &line, &col);
	CHECK_INT(line, 4);
	CHECK_INT(col, 4);
	sl_json_position(s, strlen(s), 1000, &line, &col);
	CHECK_INT(line, 4);
	CHECK_INT(col, 4);
}

TEST(json_position_multibyte_utf8)
{
	/* "é" is 2 bytes, "€" 3, "😀" 4: each is one column. */
	const char *s = "\xc3\xa9x\n\xe2\x82\xac\xf0\x9f\x98\x80y";
	size_t line = 0, col = 0;
	sl_json_position(s, strlen(s), 2, &line, &col); /* 'x' */
	CHECK_INT(line, 1);
	CHECK_INT(col, 2);
	sl_json_position(s, strlen(s), 4, &line, &col); /* '€' */
	CHECK_INT(line, 2);
	CHECK_INT(col, 1);
	sl_json_position(s, strlen(s), 7, &line, &col); /* '😀' */
	CHECK_INT(line, 2);
	CHECK_INT(col, 2);
	sl_json_position(s, strlen(s), 11, &line, &col); /* 'y' */
	CHECK_INT(line, 2);
	CHECK_INT(col, 3);
}

/* n arrays nested, innermost "inner" (e.g. "" or "1"), wrapped in pre/post. */
static char *nested(const char *pre, size_t n, const char *inner, const char *post)
{
	size_t pl = strlen(pre), il = strlen(inner), ql = strlen(post);
	char *s = malloc(pl + 2 * n + il + ql + 1);
	memcpy(s, pre, pl);
	memset(s + pl, '[', n);
	memcpy(s + pl + n, inner, il);
	memset(s + pl + n + il, ']', n);
	memcpy(s + pl + 2 * n + il, post, ql + 1);
	return s;
}

static yyjson_doc *gated(const char *s, yyjson_read_err *err)
{
	return sl_json_read(s, strlen(s), SL_JSON_READ_FLAGS, err);
}

TEST(json_depth_gate_limit_exactly)
{
	yyjson_read_err err;
	char *at = nested("", SL_JSON_DEPTH_MAX, "", ""), *over = nested("", SL_JSON_DEPTH_MAX + 1, "", "");
	yyjson_doc *d = gated(at, &err);

	CHECK(d != NULL);
	CHECK(sl_json_depth_ok(yyjson_doc_get_root(d)));
	yyjson_doc_free(d);
	CHECK(gated(over, &err) == NULL);
	CHECK_INT(err.code, SL_JSON_READ_ERROR_DEPTH);
	CHECK(strstr(err.msg, "128") != NULL);
	free(at);
	free(over);

	/* Objects count as arrays do; a scalar at the bottom adds no level. */
	at = nested("", SL_JSON_DEPTH_MAX - 1, "{\"k\":1}", "");
	over = nested("", SL_JSON_DEPTH_MAX - 1, "{\"k\":[1]}", "");
	d = gated(at, NULL);
	CHECK(d != NULL);
	yyjson_doc_free(d);
	CHECK(gated(over, NULL) == NULL);
	free(at);
	free(over);
}

TEST(json_depth_gate_deep_is_refused_without_recursion)
{
	/* 300,000 levels: parsed (yyjson reads iteratively), then refused. */
	yyjson_read_err err;
	char *s = nested("{\"a\":", 300000, "", "}");
	yyjson_doc *d = yyjson_read(s, strlen(s), 0);

	CHECK(d != NULL);
	CHECK(!sl_json_depth_ok(yyjson_doc_get_root(d)));
	yyjson_doc_free(d);
	CHECK(gated(s, &err) == NULL);
	CHECK_INT(err.code, SL_JSON_READ_ERROR_DEPTH);
	free(s);
}

TEST(json_depth_gate_wide_but_shallow_passes)
{
	/* 20,000 siblings, each SL_JSON_DEPTH_MAX - 1 deep under the root array:
	 * the limit is on depth, not on how often a document goes deep. */
	size_t n = 20000, unit = 2 * (SL_JSON_DEPTH_MAX - 1) + 1;
	char *s = malloc(n * unit + 3), *p = s;
	yyjson_doc *d;

	*p++ = '[';
	for (size_t i = 0; i < n; i++) {
		memset(p, '[', SL_JSON_DEPTH_MAX - 1);
		p += SL_JSON_DEPTH_MAX - 1;
		memset(p, ']', SL_JSON_DEPTH_MAX - 1);
		p += SL_JSON_DEPTH_MAX - 1;
		*p++ = i + 1 < n ? ',' : ']';
	}
	*p = '\0';
	d = gated(s, NULL);
	CHECK(d != NULL);
	CHECK_INT(yyjson_arr_size(yyjson_doc_get_root(d)), n);
	yyjson_doc_free(d);
	free(s);

	/* Scalars and empty documents have no depth to speak of. */
	d = gated("42", NULL);
	CHECK(d != NULL && sl_json_depth_ok(yyjson_doc_get_root(d)));
	yyjson_doc_free(d);
	CHECK(sl_json_depth_ok(NULL));
}

TEST(json_depth_gate_parse_errors_pass_through)
{
	yyjson_read_err err;
	CHECK(gated("[1,", &err) == NULL);
	CHECK(err.code != SL_JSON_READ_ERROR_DEPTH && err.code != YYJSON_READ_SUCCESS);
}

static int upper_str(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *s, yyjson_mut_val *key,
		     struct sl_err *err)
{
	(void)d;
	(void)err;
	if (key && strcmp(yyjson_mut_get_str(key), "skip") == 0)
		return SL_OK;
	(*(int *)ctx)++;
	yyjson_mut_set_str(s, "X");
	return SL_OK;
}

static int count_key(void *ctx, yyjson_mut_doc *d, yyjson_mut_val *k, struct sl_err *err)
{
	(void)d;
	(void)k;
	(void)err;
	(*(int *)ctx) += 100;
	return SL_OK;
}

TEST(json_walk_strings_values_keys_depth)
{
	const char *j = "{\"a\":\"x\",\"skip\":\"y\",\"b\":[\"z\",1,{\"c\":\"w\"}]}";
	yyjson_doc *doc = yyjson_read(j, strlen(j), 0);
	yyjson_mut_doc *d = yyjson_doc_mut_copy(doc, NULL);
	int n = 0;
	struct sl_json_strings w = { upper_str, count_key, 8, &n };
	struct sl_err err;
	char *out;

	CHECK_INT(sl_json_walk_strings(&w, d, yyjson_mut_doc_get_root(d), &err), 0);
	/* Three strings rewritten ("skip"'s left), four keys seen. */
	CHECK_INT(n, 403);
	out = yyjson_mut_write(d, 0, NULL);
	CHECK_STR(out, "{\"a\":\"X\",\"skip\":\"y\",\"b\":[\"X\",1,{\"c\":\"X\"}]}");
	free(out);
	w.max_depth = 1;
	CHECK_INT(sl_json_walk_strings(&w, d, yyjson_mut_doc_get_root(d), &err), SL_ERR_INVALID);
	CHECK_STR(err.msg, "JSON nested deeper than 1 levels");
	yyjson_mut_doc_free(d);
	yyjson_doc_free(doc);
}

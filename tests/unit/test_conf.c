/* Unit tests of src/config/conf.c: a key table applied to JSON, its
 * defaults, its messages and its reference. */
#include "unit.h"

#include "config/conf.h"

#include <stdio.h>
#include <stdlib.h>

struct inner {
	uint32_t n;
};

struct target {
	bool on;
	uint32_t small;
	uint64_t big;
	char *name;
	int colour;
	struct inner in;
	int odd;         /* set by the custom parser */
	bool other_seen; /* set by the other hook */
};

static const struct sl_conf_name colours[] = {
	{ "red", 1 }, { "green", 2 }, { "verde", 2 }, { "blue", 3 }, { NULL, 0 },
};

static int parse_odd(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	if (!yyjson_is_uint(v))
		return sl_conf_bad(cx, k);
	if (yyjson_get_uint(v) % 2 == 0)
		return sl_conf_fail_key(cx, k, "is %llu, not odd", (unsigned long long)yyjson_get_uint(v));
	*(int *)sl_conf_field(target, k) = (int)yyjson_get_uint(v);
	return SL_OK;
}

static int other(struct sl_conf_ctx *cx, const char *key, yyjson_val *v, void *target)
{
	if (strcmp(key, "x-extra") != 0)
		return SL_CONF_DECLINED;
	((struct target *)target)->other_seen = true;
	return SL_OK;
}

static const struct sl_conf_key inner_keys[] = {
	{ "n", SL_CONF_UINT, SL_CONF_AT(struct inner, n), .min = 0, .max = 9, .dflt = 7, .doc = "N." },
};
static const struct sl_conf_section inner_section = {
	"t.inner", "Inner.", inner_keys, SL_COUNT(inner_keys), SL_CONF_STRICT, NULL,
};

#define T(f) SL_CONF_AT(struct target, f)
static const struct sl_conf_key keys[] = {
	{ "on", SL_CONF_BOOL, T(on), .dflt = 1, .doc = "On." },
	{ "small", SL_CONF_UINT, T(small), .min = 2, .max = 100, .dflt = 5, .doc = "Small." },
	{ "bigBytes", SL_CONF_UINT, T(big), .min = 1, .max = UINT64_MAX, .dflt = 8u << 20,
	  .doc = "Big." },
	{ "name", SL_CONF_STRING, T(name), .min = 1, .doc = "Name." },
	{ "colour", SL_CONF_ENUM, T(colour), .names = colours, .dflt = 3, .doc = "Colour." },
	{ "inner", SL_CONF_OBJECT, T(in), .sub = &inner_section, .doc = "Inner." },
	{ "odd", SL_CONF_CUSTOM, T(odd), .parse = parse_odd, .shape = "an odd number",
	  .dflt_doc = "none", .doc = "Odd." },
};
#undef T

static const struct sl_conf_section section = {
	"t", "A test section.", keys, SL_COUNT(keys), 0, other,
};
static const struct sl_conf_section strict_section = {
	"t", "A test section.", keys, SL_COUNT(keys), SL_CONF_STRICT, NULL,
};
static const struct sl_conf_section first_section = {
	"t", "A test section.", keys, SL_COUNT(keys), SL_CONF_KEY_FIRST, NULL,
};

static char *warned[4];
static size_t nwarned;

static void on_warn(struct sl_conf_ctx *cx, char *msg)
{
	if (nwarned < SL_COUNT(warned))
		warned[nwarned++] = msg;
	else
		free(msg);
}

/* Applies s to json over defaults; returns the result code, err set. */
static int apply(const struct sl_conf_section *s, const char *json, struct target *t,
		 struct sl_err *err)
{
	struct sl_conf_ctx cx = { .file = "f.json", .err = err, .warn = on_warn };
	yyjson_doc *doc = yyjson_read(json, strlen(json), 0);
	int rc;

	memset(t, 0, sizeof(*t));
	err->msg[0] = '\0';
	sl_conf_defaults(s, t);
	rc = sl_conf_apply(&cx, s, NULL, yyjson_doc_get_root(doc), t);
	CHECK(cx.where == NULL && cx.flags == 0); /* restored for the caller */
	yyjson_doc_free(doc);
	return rc;
}

static void fails(const struct sl_conf_section *s, const char *json, const char *msg)
{
	struct target t;
	struct sl_err err;
	CHECK_INT(apply(s, json, &t, &err), SL_ERR_INVALID);
	if (strcmp(err.msg, msg) != 0) {
		printf("  got \"%s\"\n  not \"%s\"\n", err.msg, msg);
		CHECK(0);
	}
	free(t.name);
}

TEST(conf_defaults)
{
	struct target t;
	struct sl_err err;
	CHECK_INT(apply(&section, "{}", &t, &err), SL_OK);
	CHECK(t.on);
	CHECK_INT(t.small, 5);
	CHECK_INT(t.big, 8u << 20);
	CHECK(t.name == NULL);
	CHECK_INT(t.colour, 3);
	CHECK_INT(t.in.n, 7);
	CHECK_INT(t.odd, 0);
}

TEST(conf_apply_every_type)
{
	struct target t;
	struct sl_err err;
	CHECK_INT(apply(&section, "{\"on\":false,\"small\":100,\"bigBytes\":18446744073709551615,"
			"\"name\":\"n\",\"colour\":\"verde\",\"inner\":{\"n\":0},\"odd\":3,"
			"\"x-extra\":[]}", &t, &err), SL_OK);
	CHECK(!t.on);
	CHECK_INT(t.small, 100);
	CHECK(t.big == UINT64_MAX);
	CHECK_STR(t.name, "n");
	CHECK_INT(t.colour, 2);
	CHECK_INT(t.in.n, 0);
	CHECK_INT(t.odd, 3);
	CHECK(t.other_seen);
	free(t.name);
}

TEST(conf_messages)
{
	fails(&section, "[]", "f.json: t: must be an object");
	fails(&section, "{\"on\":1}", "f.json: t.on: must be true or false");
	fails(&section, "{\"small\":1}", "f.json: t.small: must be a whole number from 2 to 100");
	fails(&section, "{\"small\":101}", "f.json: t.small: must be a whole number from 2 to 100");
	fails(&section, "{\"small\":-3}", "f.json: t.small: must be a whole number from 2 to 100");
	fails(&section, "{\"small\":2.5}", "f.json: t.small: must be a whole number from 2 to 100");
	fails(&section, "{\"small\":\"5\"}", "f.json: t.small: must be a whole number from 2 to 100");
	fails(&section, "{\"bigBytes\":0}", "f.json: t.bigBytes: must be a whole number from 1");
	fails(&section, "{\"name\":\"\"}", "f.json: t.name: must be a non-empty string");
	fails(&section, "{\"colour\":\"pink\"}",
	      "f.json: t.colour: must be \"red\", \"green\", \"verde\" or \"blue\"");
	fails(&section, "{\"colour\":1}", "f.json: t.colour: must be \"red\", \"green\", \"verde\" or \"blue\"");
	fails(&section, "{\"inner\":{\"n\":10}}", "f.json: t.inner.n: must be a whole number from 0 to 9");
	fails(&section, "{\"inner\":{\"m\":1}}", "f.json: t.inner: unknown key \"m\" (known: n)");
	fails(&section, "{\"inner\":1}", "f.json: t.inner: must be an object");
	fails(&section, "{\"odd\":\"x\"}", "f.json: t.odd: must be an odd number");
	fails(&section, "{\"odd\":4}", "f.json: t.odd: is 4, not odd");
	fails(&section, "{\"on\":true,\"on\":true}", "f.json: t: \"on\" is given twice");
	fails(&strict_section, "{\"onn\":true}", "f.json: t: unknown key \"onn\" (known: on, small, bigBytes, name, colour, inner, odd)");
	fails(&first_section, "{\"small\":0}", "f.json: t: \"small\" must be a whole number from 2 to 100");
	fails(&first_section, "{\"odd\":2}", "f.json: t: \"odd\" is 2, not odd");
}

TEST(conf_unknown_keys_warn)
{
	struct target t;
	struct sl_err err;
	nwarned = 0;
	CHECK_INT(apply(&section, "{\"onn\":true,\"inner\":{}}", &t, &err), SL_OK);
	CHECK_INT(nwarned, 1);
	CHECK_STR(warned[0], "t: unknown key \"onn\" ignored");
	for (size_t i = 0; i < nwarned; i++)
		free(warned[i]);
	nwarned = 0;
}

TEST(conf_no_file_no_prefix)
{
	struct sl_conf_ctx cx = { .err = &(struct sl_err){ { 0 } } };
	yyjson_doc *doc = yyjson_read("{\"small\":1}", 11, 0);
	struct target t = { 0 };
	CHECK_INT(sl_conf_apply(&cx, &section, "sluice.t", yyjson_doc_get_root(doc), &t), SL_ERR_INVALID);
	CHECK_STR(cx.err->msg, "sluice.t.small: must be a whole number from 2 to 100");
	yyjson_doc_free(doc);
}

TEST(conf_reference)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	sl_conf_reference(f, &section);
	fclose(f);
	CHECK(strstr(text, "## `t`\n\nA test section.\n") != NULL);
	CHECK(strstr(text, "| `on` | true or false | `true` | On. |\n") != NULL);
	CHECK(strstr(text, "| `small` | a whole number from 2 to 100 | `5` | Small. |\n") != NULL);
	CHECK(strstr(text, "| `bigBytes` | a whole number from 1 | `8388608` (8 MiB) | Big. |\n") != NULL);
	CHECK(strstr(text, "| `name` | a non-empty string | none | Name. |\n") != NULL);
	CHECK(strstr(text, "| `colour` | \"red\", \"green\", \"verde\" or \"blue\" | `\"blue\"` |") != NULL);
	CHECK(strstr(text, "| `inner` | an object | `{}` | Inner. |\n") != NULL);
	CHECK(strstr(text, "| `odd` | an odd number | none | Odd. |\n") != NULL);
	free(text);
}

/* sl_conf_load, as a stage's init uses it: the defaults alone without a
 * section, else the section over them; messages without a file. */
TEST(conf_load_defaults_then_section)
{
	struct target t = { 0 };
	struct sl_err err;
	yyjson_doc *doc = yyjson_read("{\"small\":7}", 11, 0);

	CHECK_INT(sl_conf_load(&strict_section, NULL, &t, &err), SL_OK);
	CHECK(t.on);
	CHECK_INT(t.small, 5);
	CHECK_INT(sl_conf_load(&strict_section, yyjson_doc_get_root(doc), &t, &err), SL_OK);
	CHECK_INT(t.small, 7);
	CHECK_INT(t.in.n, 7);
	yyjson_doc_free(doc);
	doc = yyjson_read("{\"small\":1}", 11, 0);
	CHECK_INT(sl_conf_load(&strict_section, yyjson_doc_get_root(doc), &t, &err), SL_ERR_INVALID);
	CHECK_STR(err.msg, "t.small: must be a whole number from 2 to 100");
	yyjson_doc_free(doc);
}

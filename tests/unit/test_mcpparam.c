/* proto/mcpparam.h: x-mcp-header declarations and Mcp-Param-* values (SEP-2243). */
#include "proto/mcpparam.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static yyjson_doc *doc_of(const char *json)
{
	yyjson_doc *d = yyjson_read(json, strlen(json), 0);
	if (!d)
		abort();
	return d;
}

static bool valid(const char *schema)
{
	yyjson_doc *d = doc_of(schema);
	char why[200] = "";
	bool ok = sl_mcpparam_check(yyjson_doc_get_root(d), why, sizeof(why));
	CHECK(ok || why[0]);
	yyjson_doc_free(d);
	return ok;
}

TEST(mcpparam_declarations_follow_the_rules)
{
	CHECK(valid("{\"type\":\"object\"}"));
	CHECK(valid("{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}}}"));
	CHECK(valid("{\"properties\":{\"w\":{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"integer\","
		    "\"x-mcp-header\":\"Shard\"}}},\"d\":{\"type\":\"boolean\",\"x-mcp-header\":\"Dry\"}}}"));
	/* A property named "properties" is a property, not the keyword. */
	CHECK(valid("{\"properties\":{\"properties\":{\"type\":\"string\",\"x-mcp-header\":\"P\"}}}"));
	/* Data keywords hold values, not schemas. */
	CHECK(valid("{\"properties\":{\"a\":{\"type\":\"object\",\"default\":{\"x-mcp-header\":1}}}}"));

	CHECK(!valid("{\"properties\":{\"r\":{\"type\":\"number\",\"x-mcp-header\":\"R\"}}}"));
	CHECK(!valid("{\"properties\":{\"r\":{\"x-mcp-header\":\"R\"}}}")); /* no type */
	CHECK(!valid("{\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"\"}}}"));
	CHECK(!valid("{\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"Re gion\"}}}"));
	CHECK(!valid("{\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"R\\r\\nX: y\"}}}"));
	CHECK(!valid("{\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":7}}}"));
	CHECK(!valid("{\"properties\":{\"a\":{\"type\":\"string\",\"x-mcp-header\":\"Same\"},"
		     "\"b\":{\"type\":\"string\",\"x-mcp-header\":\"sAME\"}}}"));
	/* Not reached through properties alone. */
	CHECK(!valid("{\"type\":\"string\",\"x-mcp-header\":\"Root\"}"));
	CHECK(!valid("{\"properties\":{\"l\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
		     "\"x-mcp-header\":\"I\"}}}}"));
	CHECK(!valid("{\"anyOf\":[{\"properties\":{\"r\":{\"type\":\"string\",\"x-mcp-header\":\"R\"}}}]}"));
	CHECK(!valid("{\"$defs\":{\"x\":{\"type\":\"string\",\"x-mcp-header\":\"R\"}}}"));
	/* Eight properties steps are fine, nine too deep. */
	for (int steps = 8; steps <= 9; steps++) {
		char deep[600] = "";
		for (int i = 0; i < steps - 1; i++)
			strcat(deep, "{\"properties\":{\"p\":");
		strcat(deep, "{\"properties\":{\"p\":{\"type\":\"string\",\"x-mcp-header\":\"Deep\"}}}");
		for (int i = 0; i < steps - 1; i++)
			strcat(deep, "}}");
		CHECK(valid(deep) == (steps == 8));
	}
}

static char *enc(const char *json)
{
	yyjson_doc *d = doc_of(json);
	char *s = sl_mcpparam_encode(yyjson_doc_get_root(d));
	yyjson_doc_free(d);
	return s;
}

#define CHECK_ENC(json, want)                 \
	do {                                  \
		char *got_ = enc(json);       \
		CHECK_STR(got_, want);        \
		free(got_);                   \
	} while (0)

TEST(mcpparam_values_encode_as_the_spec_shows)
{
	char *s;
	size_t n;

	CHECK_ENC("\"us-west1\"", "us-west1");
	CHECK_ENC("\"Hello, \\u4e16\\u754c\"", "=?base64?SGVsbG8sIOS4lueVjA==?=");
	CHECK_ENC("\" padded \"", "=?base64?IHBhZGRlZCA=?=");
	CHECK_ENC("\"line1\\nline2\"", "=?base64?bGluZTEKbGluZTI=?=");
	CHECK_ENC("\"=?base64?literal?=\"", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
	CHECK_ENC("\"\"", "=?base64?" "?=");
	CHECK_ENC("42", "42");
	CHECK_ENC("-7", "-7");
	CHECK_ENC("42.0", "42");
	CHECK_ENC("true", "true");
	CHECK_ENC("false", "false");
	CHECK(enc("1.5") == NULL);
	CHECK(enc("9007199254740992") == NULL); /* past JavaScript's safe range */
	CHECK(enc("null") == NULL);
	CHECK(enc("{}") == NULL);

	s = sl_mcpparam_decode("=?base64?SGVsbG8sIOS4lueVjA==?=", &n);
	CHECK_STR(s, "Hello, \xe4\xb8\x96\xe7\x95\x8c");
	free(s);
	s = sl_mcpparam_decode("plain value", &n);
	CHECK_STR(s, "plain value");
	CHECK_INT(n, 11);
	free(s);
	CHECK(sl_mcpparam_decode("=?base64?not base64?=", &n) == NULL);
	CHECK(sl_mcpparam_decode("=?base64?SGVsbG8\n=?=", &n) == NULL);
	CHECK(sl_mcpparam_decode("a\x01", &n) == NULL);
	CHECK(sl_mcpparam_decode("caf\xc3\xa9", &n) == NULL);
}

struct hdrs {
	const char *name[4], *value[4];
};

static const char *get(void *ctx, const char *name)
{
	struct hdrs *h = ctx;
	for (int i = 0; i < 4 && h->name[i]; i++)
		if (!strcasecmp(h->name[i], name))
			return h->value[i];
	return NULL;
}

TEST(mcpparam_headers_out_and_checks_in)
{
	yyjson_doc *schema = doc_of("{\"properties\":{\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
				    "\"w\":{\"type\":\"object\",\"properties\":{\"shard\":{\"type\":\"integer\","
				    "\"x-mcp-header\":\"Shard\"}}},\"sql\":{\"type\":\"string\"}}}");
	yyjson_doc *args = doc_of("{\"region\":\"eu\",\"w\":{\"shard\":7},\"sql\":\"x\"}");
	yyjson_doc *partial = doc_of("{\"region\":null,\"sql\":\"x\"}");
	yyjson_val *s = yyjson_doc_get_root(schema), *a = yyjson_doc_get_root(args);
	struct sl_mcpparam_header hs[SL_MCPPARAM_MAX];
	struct hdrs ok = { { "region", "shard" }, { "eu", "7.0" } };
	struct hdrs wrong = { { "Region", "Shard" }, { "eu", "8" } };
	struct hdrs missing = { { "Region" }, { "eu" } };
	struct hdrs none = { { NULL }, { NULL } };
	char buf[200];
	size_t n = sl_mcpparam_headers(s, a, hs, SL_MCPPARAM_MAX);

	CHECK_INT(n, 2);
	CHECK_STR(hs[0].name, "Region");
	CHECK_STR(hs[0].value, "eu");
	CHECK_STR(hs[1].name, "Shard");
	CHECK_STR(hs[1].value, "7");
	sl_mcpparam_headers_free(hs, n);
	/* null and absent arguments have no header. */
	CHECK_INT(sl_mcpparam_headers(s, yyjson_doc_get_root(partial), hs, SL_MCPPARAM_MAX), 0);

	CHECK(sl_mcpparam_mismatch(s, a, get, &ok, buf, sizeof(buf)) == NULL);
	CHECK(strstr(sl_mcpparam_mismatch(s, a, get, &wrong, buf, sizeof(buf)), "Mcp-Param-Shard"));
	CHECK(strstr(sl_mcpparam_mismatch(s, a, get, &missing, buf, sizeof(buf)), "missing"));
	CHECK(sl_mcpparam_mismatch(s, yyjson_doc_get_root(partial), get, &none, buf, sizeof(buf)) == NULL);
	CHECK(strstr(sl_mcpparam_mismatch(s, yyjson_doc_get_root(partial), get, &missing, buf,
					  sizeof(buf)), "without its argument"));
	yyjson_doc_free(schema);
	yyjson_doc_free(args);
	yyjson_doc_free(partial);
}

/*
 * Fuzz target: x-mcp-header declarations and Mcp-Param-* values
 * (src/proto/mcpparam.c, SEP-2243). An input starting with '{' is a JSON
 * object {"schema": <inputSchema>, "args": <arguments>}, else the bytes
 * are a header value a client sent.
 *
 * Invariants checked:
 *   - for a schema sl_mcpparam_check takes, every header made toward a
 *     server has a token name and a value of visible ASCII and spaces
 *     and tabs only, as RFC 9110 allows (no CR, LF or other control: nothing
 *     can forge another header),
 *     within SL_MCPPARAM_VALUE_MAX, and validating those very headers
 *     against the same call finds no mismatch;
 *   - a header value decodes to bytes that, sent as a string argument,
 *     encode to a value that decodes to the same bytes.
 *
 * fuzz-flags: -max_len=4096 -dict=tests/fuzz/schema.dict
 */
#include "fuzz.h"

#include "proto/mcpparam.h"

#include <string.h>
#include <strings.h>

struct sent {
	struct sl_mcpparam_header *h;
	size_t n;
};

static const char *lookup(void *ctx, const char *name)
{
	struct sent *s = ctx;
	for (size_t i = 0; i < s->n; i++)
		if (!strcasecmp(s->h[i].name, name))
			return s->h[i].value;
	return NULL;
}

static void one_value(const uint8_t *data, size_t size)
{
	char *h = malloc(size + 1), *got, *again, *enc;
	size_t len, len2;
	yyjson_mut_doc *d;
	yyjson_doc *frozen;

	memcpy(h, data, size);
	h[size] = '\0';
	if ((got = sl_mcpparam_decode(h, &len))) {
		d = yyjson_mut_doc_new(NULL);
		yyjson_mut_doc_set_root(d, yyjson_mut_strn(d, got, len));
		frozen = yyjson_mut_doc_imut_copy(d, NULL);
		enc = sl_mcpparam_encode(yyjson_doc_get_root(frozen));
		ASSERT(enc);
		for (const char *c = enc; *c; c++)
			ASSERT(*c == '\t' || (*c >= 0x20 && *c < 0x7f));
		again = sl_mcpparam_decode(enc, &len2);
		ASSERT(again && len2 == len && !memcmp(again, got, len));
		free(again);
		free(enc);
		yyjson_doc_free(frozen);
		yyjson_mut_doc_free(d);
		free(got);
	}
	free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_mcpparam_header hs[SL_MCPPARAM_MAX];
	struct sent s = { hs, 0 };
	yyjson_doc *doc;
	yyjson_val *schema, *args;
	char why[200], buf[200];

	if (!size || data[0] != '{') {
		one_value(data, size);
		return 0;
	}
	if (!(doc = sl_json_read((const char *)data, size, 0, NULL)))
		return 0;
	schema = yyjson_obj_get(yyjson_doc_get_root(doc), "schema");
	args = yyjson_obj_get(yyjson_doc_get_root(doc), "args");
	if (sl_mcpparam_check(schema, why, sizeof(why))) {
		s.n = sl_mcpparam_headers(schema, args, hs, SL_MCPPARAM_MAX);
		for (size_t i = 0; i < s.n; i++) {
			ASSERT(*hs[i].name && strlen(hs[i].name) <= SL_MCPPARAM_NAME_MAX);
			for (const char *c = hs[i].name; *c; c++)
				ASSERT(*c > 0x20 && *c < 0x7f && !strchr("\"(),/:;<=>?@[\\]{}", *c));
			ASSERT(*hs[i].value && strlen(hs[i].value) <= SL_MCPPARAM_VALUE_MAX);
			for (const char *c = hs[i].value; *c; c++)
				ASSERT(*c == '\t' || (*c >= 0x20 && *c < 0x7f));
		}
		ASSERT(sl_mcpparam_mismatch(schema, args, lookup, &s, buf, sizeof(buf)) == NULL);
		sl_mcpparam_headers_free(hs, s.n);
	} else {
		ASSERT(why[0]);
	}
	yyjson_doc_free(doc);
	return 0;
}

/*
 * Fuzz target: values of the shared state read back from Redis
 * (src/shared/state.c; docs/internals/REPLICAS.md): a cached result, which
 * sl_shared_object checks before the cache stage answers a call with it
 * (src/stages/cache.c), and the result ids a client names to read_result,
 * which become Redis keys (sl_shared_result_key). Redis may be shared or
 * compromised and the ids come from clients, so both are hostile. The
 * input's first byte picks the size cap (1 to 256 times 64 bytes); the rest
 * is the value, and its first 26 bytes are also tried as a result id.
 *
 * Invariants checked:
 *   - a value taken is at most the cap, and its root is a JSON object
 *     nested within SL_JSON_DEPTH_MAX levels, which writes back as JSON
 *     that is taken again; a refusal says why;
 *   - a key is made only for an id of the shared shape ('s' and 24 lower
 *     hex digits), is exactly <prefix>result:<caller>:<id>, and never for
 *     a caller that is not hex; a local id ('r') never makes one.
 *
 * fuzz-flags: -max_len=20000
 */
#include "fuzz.h"

#include "core/json.h"
#include "shared/state.h"

#include <string.h>

static void check_id(const char *in, size_t size)
{
	char id[SL_RESULT_ID_SIZE + 1];
	size_t n = size < sizeof(id) - 1 ? size : sizeof(id) - 1;
	char *key, *want;

	memcpy(id, in, n);
	id[n] = '\0';
	key = sl_shared_result_key("p:", "00ff", id);
	ASSERT(!key == !sl_shared_result_id_shared(id));
	ASSERT(!(sl_shared_result_id_local(id) && key));
	if (key) {
		want = sl_printf("p:result:00ff:%s", id);
		ASSERT(strcmp(key, want) == 0);
		ASSERT(!strchr(id, ':'));
		free(want);
	}
	free(key);
	key = sl_shared_result_key("p:", "00f:f", id);
	ASSERT(!key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	yyjson_doc *doc, *again;
	size_t max, len;
	char *json;

	if (size < 1)
		return 0;
	max = ((size_t)data[0] + 1) * 64;
	check_id((const char *)data + 1, size - 1);
	doc = sl_shared_object((const char *)data + 1, size - 1, max, &why);
	if (!doc) {
		ASSERT(why && *why);
		return 0;
	}
	ASSERT(size - 1 <= max);
	ASSERT(yyjson_is_obj(yyjson_doc_get_root(doc)) && sl_json_depth_ok(yyjson_doc_get_root(doc)));
	json = sl_json_write_val(yyjson_doc_get_root(doc), &len);
	ASSERT(json);
	again = sl_shared_object(json, len, SIZE_MAX, &why);
	ASSERT(again && yyjson_equals(yyjson_doc_get_root(doc), yyjson_doc_get_root(again)));
	yyjson_doc_free(again);
	free(json);
	yyjson_doc_free(doc);
	return 0;
}

/* Key names, result ids and the check of values read back; see state.h. */
#include "shared/state.h"
#include "core/escape.h"
#include "core/json.h"

#include <string.h>

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

void sl_shared_result_id(char out[SL_RESULT_ID_SIZE], bool shared)
{
	unsigned char raw[SL_RESULT_ID_HEX / 2];

	sl_random(raw, sizeof(raw));
	out[0] = shared ? 's' : 'r';
	sl_hex(raw, sizeof(raw), out + 1);
}

static bool id_shape(const char *id, char first)
{
	return id && id[0] == first && strlen(id) == SL_RESULT_ID_HEX + 1 &&
	       all_hex(id + 1, SL_RESULT_ID_HEX);
}

bool sl_shared_result_id_shared(const char *id)
{
	return id_shape(id, 's');
}

bool sl_shared_result_id_local(const char *id)
{
	return id_shape(id, 'r');
}

char *sl_shared_result_key(const char *prefix, const char *caller, const char *id)
{
	if (!sl_shared_result_id_shared(id) || !caller || !*caller ||
	    !all_hex(caller, strlen(caller)))
		return NULL;
	return sl_printf("%sresult:%s:%s", prefix, caller, id);
}

char *sl_shared_cache_key(const char *prefix, const char *sha)
{
	return sl_printf("%scache:%s", prefix, sha);
}

char *sl_shared_quota_key(const char *prefix, const char *scope, const char *key)
{
	return sl_printf("%squota:%s:%s", prefix, scope, key);
}

char *sl_shared_once_key(const char *prefix, const char *purpose, const char *id)
{
	return sl_printf("%sonce:%s:%s", prefix, purpose, id);
}

char *sl_shared_once_epoch_key(const char *prefix)
{
	return sl_printf("%sonce:epoch", prefix);
}

yyjson_doc *sl_shared_object(const char *text, size_t len, size_t max, const char **why)
{
	yyjson_doc *d;

	if (len > max) {
		*why = "it is larger than the configured cap of a shared entry";
		return NULL;
	}
	if (!(d = sl_json_read(text, len, SL_JSON_READ_FLAGS, NULL))) {
		*why = "it is not valid JSON";
		return NULL;
	}
	if (!yyjson_is_obj(yyjson_doc_get_root(d))) {
		yyjson_doc_free(d);
		*why = "it is not a JSON object";
		return NULL;
	}
	return d;
}

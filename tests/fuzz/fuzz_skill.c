/*
 * Fuzz target: the skill files sluice reads from disk (src/gateway/skills.c):
 * a skill file <dataDir>/skills/report.json (sl_skill_parse, as
 * sl_skill_read calls it) and the pins file skill-pins.json
 * (sl_skill_pins_parse, and sl_skill_pins_with as `sluice skills approve`
 * and save_skill rewrite it). Anything that can write the data directory
 * can put bytes there, so both are hostile input; the input is tried as
 * each.
 *
 * Invariants checked:
 *   - a skill the parser takes is named as its file, has code of 1 to
 *     SL_SKILL_CODE_MAX bytes without NUL, a description and an inputSchema
 *     (if any, a JSON object) within their bounds, and a 64-hex-digit pin;
 *     written back (sl_skill_json) and parsed again it is the same skill
 *     (same pin, same owner label), and it is never taken for a file of
 *     another name;
 *   - a refusal says why;
 *   - pins text either parses to an object or pins nothing; rewritten with
 *     a pin set it holds exactly that pin for the name and every other
 *     string pin it held; rewritten with the pin forgotten it holds none
 *     for the name.
 *
 * fuzz-flags: -max_len=8192
 */
#include "fuzz.h"

#include "gateway/skills.h"

#include <string.h>

static const char sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static bool hex64(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static void check_skill(const char *data, size_t size)
{
	struct sl_skill sk, again;
	struct sl_err err = { 0 };
	yyjson_doc *sd;
	size_t len;
	char *json;

	if (sl_skill_parse(data, size, "report", &sk, &err) < 0) {
		ASSERT(err.msg[0] != '\0');
		return;
	}
	ASSERT(strcmp(sk.name, "report") == 0);
	ASSERT(sk.code_len > 0 && sk.code_len <= SL_SKILL_CODE_MAX);
	ASSERT(!memchr(sk.code, '\0', sk.code_len) && sk.code[sk.code_len] == '\0');
	ASSERT(strlen(sk.description) <= SL_SKILL_DESC_MAX);
	ASSERT(hex64(sk.sha));
	if (sk.schema) {
		ASSERT(strlen(sk.schema) <= SL_SKILL_SCHEMA_MAX);
		sd = sl_json_read(sk.schema, strlen(sk.schema), 0, NULL);
		ASSERT(sd && yyjson_is_obj(yyjson_doc_get_root(sd)));
		yyjson_doc_free(sd);
	}
	ASSERT(sl_skill_parse(data, size, "other", &again, &err) < 0);
	json = sl_skill_json(&sk, &len);
	ASSERT(json && sl_skill_parse(json, len, "report", &again, &err) == 0);
	ASSERT(strcmp(again.sha, sk.sha) == 0 && again.code_len == sk.code_len);
	ASSERT(memcmp(again.code, sk.code, sk.code_len) == 0);
	ASSERT(strcmp(again.description, sk.description) == 0);
	ASSERT(!again.schema == !sk.schema);
	ASSERT(!again.owner == !sk.owner && (!sk.owner || strcmp(again.owner, sk.owner) == 0));
	sl_skill_dispose(&again);
	free(json);
	sl_skill_dispose(&sk);
}

/* Every string pin of before other than name's is in after, unchanged. */
static void others_kept(yyjson_doc *before, yyjson_val *after, const char *name)
{
	yyjson_val *k, *v;
	size_t i, max;

	if (!before)
		return;
	sl_json_obj_foreach(yyjson_doc_get_root(before), i, max, k, v) {
		if (!yyjson_is_str(v) || strcmp(yyjson_get_str(k), name) == 0 ||
		    memchr(yyjson_get_str(k), '\0', yyjson_get_len(k)))
			continue;
		/* yyjson keeps the last of duplicate keys on a lookup; the
		 * rewrite copies them all, so some value under k is v's. */
		bool found = false;
		size_t j, jmax;
		yyjson_val *k2, *v2;
		sl_json_obj_foreach(after, j, jmax, k2, v2)
			found |= yyjson_equals(k, k2) && yyjson_equals(v, v2);
		ASSERT(found);
	}
}

static void check_pins(const char *data, size_t size)
{
	yyjson_doc *before = sl_skill_pins_parse(data, size), *after;
	yyjson_val *root;
	size_t len;
	char *text;

	if (before)
		ASSERT(yyjson_is_obj(yyjson_doc_get_root(before)));
	text = sl_skill_pins_with(data, size, "report", sha, &len);
	after = sl_skill_pins_parse(text, len);
	ASSERT(after);
	root = yyjson_doc_get_root(after);
	ASSERT(sl_json_str(root, "report") && strcmp(sl_json_str(root, "report"), sha) == 0);
	others_kept(before, root, "report");
	yyjson_doc_free(after);
	free(text);

	text = sl_skill_pins_with(data, size, "report", NULL, &len);
	after = sl_skill_pins_parse(text, len);
	ASSERT(after && !yyjson_obj_get(yyjson_doc_get_root(after), "report"));
	yyjson_doc_free(after);
	free(text);
	yyjson_doc_free(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_skill((const char *)data, size);
	check_pins((const char *)data, size);
	return 0;
}

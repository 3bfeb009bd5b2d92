/*
 * Fuzz target: what a replica reads from Redis to adopt a session
 * (src/shared/sessions.c): the session record, and the sealed session id.
 * Redis may be shared or compromised, so both are hostile input. The input
 * is the record; its first 65 bytes are also tried as a session id.
 *
 * Invariants checked:
 *   - a record the parser takes has every field in range (a session-era
 *     version, an object of capabilities, at most SL_SESSION_RECORD_SUBS
 *     non-empty subscriptions), and built again and parsed again it gives
 *     the same fields;
 *   - a record for one caller is never taken for another;
 *   - an id the check takes is exactly one sl_session_id_make would make
 *     (checked by changing one character: refused).
 *
 * fuzz-flags: -max_len=4096
 */
#include "fuzz.h"

#include "proto/mcp.h"
#include "shared/sessions.h"

#include <string.h>

static const uint8_t key[32] = "sluice fuzz key, 32 bytes long!";

static void check_id(const uint8_t *data, size_t size)
{
	char id[SL_SESSION_ID_MAX];
	size_t n = size < 65 ? size : 65;

	memcpy(id, data, n);
	id[n] = '\0';
	if (sl_session_id_check(key, id, "alice")) {
		ASSERT(!sl_session_id_check(key, id, "bob"));
		id[n / 2] ^= 1;
		ASSERT(!sl_session_id_check(key, id, "alice"));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_session_record rec, again;
	struct sl_err err;
	size_t len;
	char *json;

	check_id(data, size);
	if (sl_session_record_parse((const char *)data, size, "alice", &rec, &err) < 0)
		return 0;
	ASSERT(sl_mcp_legacy_version(rec.version));
	ASSERT(yyjson_is_obj(rec.caps));
	ASSERT(rec.nsubs <= SL_SESSION_RECORD_SUBS);
	for (size_t i = 0; i < rec.nsubs; i++)
		ASSERT(rec.subs[i][0] != '\0');
	ASSERT(sl_session_record_parse((const char *)data, size, "bob", &again, &err) < 0);
	json = sl_session_record_build(&rec, &len);
	if (json) {
		ASSERT(sl_session_record_parse(json, len, "alice", &again, &err) == 0);
		ASSERT(strcmp(again.version, rec.version) == 0 && again.nsubs == rec.nsubs);
		for (size_t i = 0; i < rec.nsubs; i++)
			ASSERT(strcmp(again.subs[i], rec.subs[i]) == 0);
		ASSERT(!rec.log_level == !again.log_level);
		ASSERT(!rec.client_info == !again.client_info);
		sl_session_record_dispose(&again);
		free(json);
	}
	sl_session_record_dispose(&rec);
	return 0;
}

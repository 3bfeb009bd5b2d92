/*
 * Fuzz target: a replica's heartbeat entry as another replica reads it
 * from the Redis hash <prefix>replicas (sl_fleet_parse, src/shared/fleet.c;
 * docs/internals/REPLICAS.md, "The fleet"). Redis may be shared or
 * written by something hostile, and what is taken is shown by GET /status.
 * The input is the hash field (the replica id), a newline, and the value.
 *
 * Invariants checked:
 *   - an accepted entry's id is its field and a valid replica id; its
 *     version and listen address are NUL-terminated within their buffers
 *     and free of control characters; its pid fits an int32, and it was
 *     seen at a time not after an hour past the reader's clock;
 *   - the same bytes give the same member, and a reader an hour and a
 *     minute earlier refuses an entry seen that far ahead;
 *   - a refusal says why.
 *
 * fuzz-flags: -max_len=6000
 */
#include "fuzz.h"

#include "shared/fleet.h"

#include <string.h>

#define NOW 1800000000000ull /* the reader's wall clock, ms */

static bool clean(const char *s, size_t size)
{
	size_t n = strnlen(s, size);

	if (n == size)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data, *nl = memchr(in, '\n', size), *why = NULL;
	size_t flen = nl ? (size_t)(nl - in) : 0;
	const char *value = nl ? nl + 1 : in;
	size_t vlen = size - (size_t)(value - in);
	struct sl_fleet_member m, again;

	memset(&m, 0, sizeof(m));
	if (!sl_fleet_parse(in, flen, value, vlen, NOW, &m, &why)) {
		ASSERT(why && *why);
		return 0;
	}
	ASSERT(strlen(m.id) == flen && memcmp(m.id, in, flen) == 0 && sl_fleet_id_ok(m.id));
	ASSERT(clean(m.version, sizeof(m.version)) && clean(m.listen, sizeof(m.listen)));
	ASSERT(m.pid >= 0 && m.pid <= INT32_MAX);
	ASSERT(m.seen_ms > 0 && m.seen_ms <= NOW + SL_FLEET_PRUNE_MS);
	ASSERT(vlen <= SL_FLEET_ENTRY_MAX);
	memset(&again, 0, sizeof(again));
	ASSERT(sl_fleet_parse(in, flen, value, vlen, NOW, &again, &why));
	ASSERT(memcmp(&m, &again, sizeof(m)) == 0);
	if (m.seen_ms > NOW - 60000)
		ASSERT(!sl_fleet_parse(in, flen, value, vlen, NOW - SL_FLEET_PRUNE_MS - 60000,
				       &again, &why));
	ASSERT(strcmp(sl_fleet_state(m.seen_ms, NOW), "alive") == 0 ||
	       strcmp(sl_fleet_state(m.seen_ms, NOW), "gone") == 0);
	return 0;
}

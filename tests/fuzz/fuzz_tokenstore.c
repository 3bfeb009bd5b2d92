/*
 * Fuzz target: a token store file to a record (src/oauth/store.c,
 * sl_oauth_record_decode), what `sluice auth status`, the gateway's OAuth
 * client and every reload read from $XDG_STATE_HOME/sluice/oauth/. The
 * input's first byte says whether a key is set (bit 0); the rest is the
 * file. The seeds hold plain records and records sealed with this
 * target's key, so the fuzzer reaches the JSON inside a sealed one.
 *
 * Invariants checked:
 *   - a refusal names the file and makes no record; an accepted record
 *     has its url and user;
 *   - an accepted record written back (plain, and sealed under the key)
 *     reads back to the same record: the plain encodings are identical;
 *   - a sealed file opens with its key only: never without a key, never
 *     with another key; with one byte of it changed it is refused or (a
 *     base64 spelling of the same bytes) reads as the same record.
 *
 * fuzz-flags: -max_len=8192 -dict=tests/fuzz/tokenstore.dict
 */
#include "fuzz.h"

#include "oauth/store.h"

#include <string.h>

#define NAME "/state/sluice/oauth/f.json"

static const uint8_t key[SL_OAUTH_KEY_LEN] = "sluice fuzz token-store key 32B";
static const uint8_t other[SL_OAUTH_KEY_LEN] = "another key, also 32 bytes long";

/* d decodes under k to a record whose plain encoding is want. */
static void reads_back(const char *d, size_t n, const uint8_t *k, const char *want, size_t wlen)
{
	struct sl_oauth_record r = { 0 };
	struct sl_err err;
	size_t len;
	char *again;

	ASSERT(sl_oauth_record_decode(NAME, d, n, k, &r, &err) == 0);
	again = sl_oauth_record_encode(&r, NULL, &len);
	ASSERT(again != NULL && len == wlen && memcmp(again, want, len) == 0);
	free(again);
	sl_oauth_record_dispose(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_oauth_record r = { 0 };
	struct sl_err err = { { 0 } };
	const uint8_t *k;
	const char *file;
	char *plain, *sealed;
	size_t n, plen, slen;

	if (size < 1)
		return 0;
	k = (data[0] & 1) ? key : NULL;
	file = (const char *)data + 1;
	n = size - 1;

	if (sl_oauth_record_decode(NAME, file, n, k, &r, &err) < 0) {
		ASSERT(strstr(err.msg, NAME) != NULL);
		ASSERT(r.url == NULL && r.user == NULL);
		return 0;
	}
	ASSERT(r.url != NULL && r.user != NULL);

	plain = sl_oauth_record_encode(&r, NULL, &plen);
	ASSERT(plain != NULL); /* what was read is UTF-8 */
	reads_back(plain, plen, NULL, plain, plen);
	reads_back(plain, plen, key, plain, plen);
	sealed = sl_oauth_record_encode(&r, key, &slen);
	ASSERT(sealed != NULL);
	reads_back(sealed, slen, key, plain, plen);
	sl_oauth_record_dispose(&r);

	ASSERT(sl_oauth_record_decode(NAME, sealed, slen, NULL, &r, &err) == SL_ERR_INVALID);
	ASSERT(sl_oauth_record_decode(NAME, sealed, slen, other, &r, &err) == SL_ERR_INVALID);
	ASSERT(strstr(err.msg, "another key") != NULL);
	/* One byte of the sealed text changed (past the prefix). */
	sealed[17 + size % (slen - 17)] ^= 0x01;
	if (sl_oauth_record_decode(NAME, sealed, slen, key, &r, &err) == 0) {
		sl_oauth_record_dispose(&r);
		reads_back(sealed, slen, key, plain, plen);
	}
	ASSERT(r.url == NULL);
	free(sealed);
	free(plain);
	return 0;
}

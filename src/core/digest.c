/* SHA-256, HMAC and AES-256-GCM through Nettle; see digest.h. */
#include "core/digest.h"
#include "core/escape.h"

#include <nettle/gcm.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nettle/sha2.h>

void sl_sha256_hex(const void *p, size_t n, char out[SL_SHA256_HEX])
{
	struct sha256_ctx ctx;
	uint8_t md[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, n, p);
	sha256_digest(&ctx, sizeof(md), md);
	sl_hex(md, SHA256_DIGEST_SIZE, out);
}

void sl_hmac_sha256(const void *key, size_t klen, const void *p, size_t n, uint8_t out[32])
{
	struct hmac_sha256_ctx ctx;

	hmac_sha256_set_key(&ctx, klen, key);
	hmac_sha256_update(&ctx, n, p);
	hmac_sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

unsigned long long sl_seal_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec;
}

void sl_hmac_sha256_hex(const void *key, size_t klen, const void *p, size_t n,
			char out[SL_SHA256_HEX])
{
	struct hmac_sha256_ctx ctx;
	uint8_t md[SHA256_DIGEST_SIZE];

	hmac_sha256_set_key(&ctx, klen, key);
	hmac_sha256_update(&ctx, n, p);
	hmac_sha256_digest(&ctx, sizeof(md), md);
	sl_hex(md, SHA256_DIGEST_SIZE, out);
}

static void seal_mac(const void *key, size_t klen, unsigned long long expiry, const char *what,
		     char out[SL_SHA256_HEX])
{
	char *msg = sl_printf("%llx\n%s", expiry, what);
	sl_hmac_sha256_hex(key, klen, msg, strlen(msg), out);
	free(msg);
}

void sl_seal_tag(const void *key, size_t klen, const char *what, char out[SL_SEAL_TAG_HEX + 1])
{
	char mac[SL_SHA256_HEX];

	sl_hmac_sha256_hex(key, klen, what, strlen(what), mac);
	memcpy(out, mac, SL_SEAL_TAG_HEX);
	out[SL_SEAL_TAG_HEX] = '\0';
}

bool sl_seal_tag_check(const void *key, size_t klen, const char *what, const char *tag, size_t len)
{
	char want[SL_SEAL_TAG_HEX + 1];
	unsigned char diff = 0;

	if (len != SL_SEAL_TAG_HEX)
		return false;
	sl_seal_tag(key, klen, what, want);
	for (size_t i = 0; i < SL_SEAL_TAG_HEX; i++) /* constant time */
		diff |= (unsigned char)(want[i] ^ tag[i]);
	return diff == 0;
}

char *sl_seal(const void *key, size_t klen, unsigned long long expiry, const char *what)
{
	char mac[SL_SHA256_HEX];
	seal_mac(key, klen, expiry, what, mac);
	return sl_printf("%llx.%s", expiry, mac);
}

/* A state's "EXPIRY." prefix: the expiry and the prefix's length, in its
 * one spelling (lower-case hex, no sign, space or 0x, as the seals write
 * it): "A" for "a" would be another text for the same state. */
static bool read_expiry(const char *state, unsigned long long *expiry, int *used)
{
	char canon[24];

	*used = 0;
	return sscanf(state, "%llx.%n", expiry, used) == 1 && *used > 0 &&
	       snprintf(canon, sizeof(canon), "%llx.", *expiry) == *used &&
	       memcmp(canon, state, (size_t)*used) == 0;
}

enum sl_seal_check sl_seal_check(const void *key, size_t klen, const char *state, const char *what)
{
	unsigned long long expiry;
	char mac[SL_SHA256_HEX];
	int used = 0;
	unsigned char diff = 0;

	if (!read_expiry(state, &expiry, &used) || strlen(state + used) != SL_SHA256_HEX - 1)
		return SL_SEAL_FORGED;
	seal_mac(key, klen, expiry, what, mac);
	for (size_t i = 0; i < SL_SHA256_HEX - 1; i++) /* constant time */
		diff |= (unsigned char)(mac[i] ^ state[used + i]);
	if (diff)
		return SL_SEAL_FORGED;
	return expiry < sl_seal_now() ? SL_SEAL_EXPIRED : SL_SEAL_OK;
}

/* ---- the AEAD ---------------------------------------------------------------- */

void sl_aead_seal(const uint8_t key[SL_AEAD_KEY], const void *ad, size_t adlen,
		  const void *plain, size_t n, uint8_t *out)
{
	struct gcm_aes256_ctx gcm;

	sl_random(out, SL_AEAD_NONCE);
	gcm_aes256_set_key(&gcm, key);
	gcm_aes256_set_iv(&gcm, SL_AEAD_NONCE, out);
	gcm_aes256_update(&gcm, adlen, ad);
	gcm_aes256_encrypt(&gcm, n, out + SL_AEAD_NONCE, plain);
	gcm_aes256_digest(&gcm, SL_AEAD_TAG, out + SL_AEAD_NONCE + n);
	explicit_bzero(&gcm, sizeof(gcm));
}

bool sl_aead_open(const uint8_t key[SL_AEAD_KEY], const void *ad, size_t adlen,
		  const uint8_t *blob, size_t blen, void *plain)
{
	struct gcm_aes256_ctx gcm;
	uint8_t tag[SL_AEAD_TAG];
	size_t n;
	bool ok;

	if (blen < SL_AEAD_OVERHEAD)
		return false;
	n = blen - SL_AEAD_OVERHEAD;
	gcm_aes256_set_key(&gcm, key);
	gcm_aes256_set_iv(&gcm, SL_AEAD_NONCE, blob);
	gcm_aes256_update(&gcm, adlen, ad);
	gcm_aes256_decrypt(&gcm, n, plain, blob + SL_AEAD_NONCE);
	gcm_aes256_digest(&gcm, SL_AEAD_TAG, tag);
	explicit_bzero(&gcm, sizeof(gcm));
	ok = memeql_sec(tag, blob + SL_AEAD_NONCE + n, SL_AEAD_TAG);
	if (!ok)
		explicit_bzero(plain, n);
	return ok;
}

/* The key private seals are made with: one key, one algorithm. */
static void private_key(const void *key, size_t klen, uint8_t out[SL_AEAD_KEY])
{
	static const char label[] = "sluice private seal key v1";
	sl_hmac_sha256(key, klen, label, sizeof(label) - 1, out);
}

char *sl_seal_private(const void *key, size_t klen, unsigned long long expiry, const char *what,
		      const void *plain, size_t n)
{
	uint8_t k[SL_AEAD_KEY], *blob = sl_alloc(n + SL_AEAD_OVERHEAD);
	char *ad = sl_printf("%llx\n%s", expiry, what);
	char *b64 = sl_alloc(SL_BASE64URL_SIZE(n + SL_AEAD_OVERHEAD)), *out;

	private_key(key, klen, k);
	sl_aead_seal(k, ad, strlen(ad), plain, n, blob);
	explicit_bzero(k, sizeof(k));
	sl_base64url(blob, n + SL_AEAD_OVERHEAD, b64);
	out = sl_printf("%llx.%s", expiry, b64);
	free(b64);
	free(blob);
	free(ad);
	return out;
}

enum sl_seal_check sl_seal_open(const void *key, size_t klen, const char *state, const char *what,
				char **plain, size_t *n, char id[SL_SEAL_ID_HEX + 1])
{
	unsigned long long expiry;
	int used = 0;
	size_t blen = 0;
	uint8_t k[SL_AEAD_KEY], *blob;
	char *ad, *out;
	bool ok;

	*plain = NULL;
	*n = 0;
	if (!read_expiry(state, &expiry, &used) ||
	    !(blob = sl_unbase64url(state + used, strlen(state + used), &blen)))
		return SL_SEAL_FORGED;
	if (blen < SL_AEAD_OVERHEAD) {
		free(blob);
		return SL_SEAL_FORGED;
	}
	if (id)
		sl_hex(blob, SL_AEAD_NONCE, id);
	ad = sl_printf("%llx\n%s", expiry, what);
	out = sl_alloc(blen - SL_AEAD_OVERHEAD + 1);
	private_key(key, klen, k);
	ok = sl_aead_open(k, ad, strlen(ad), blob, blen, out);
	explicit_bzero(k, sizeof(k));
	free(ad);
	free(blob);
	if (!ok) {
		free(out);
		return SL_SEAL_FORGED;
	}
	if (expiry < sl_seal_now()) {
		explicit_bzero(out, blen - SL_AEAD_OVERHEAD);
		free(out);
		return SL_SEAL_EXPIRED;
	}
	out[blen - SL_AEAD_OVERHEAD] = '\0';
	*plain = out;
	*n = blen - SL_AEAD_OVERHEAD;
	return SL_SEAL_OK;
}

unsigned long long sl_seal_expiry(const char *state)
{
	unsigned long long expiry;
	int used;
	return read_expiry(state, &expiry, &used) ? expiry : 0;
}

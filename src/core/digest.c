/* SHA-256 through Nettle; see digest.h. */
#include "core/digest.h"

#include <nettle/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <nettle/sha2.h>

static void to_hex(const uint8_t *md, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[2 * SHA256_DIGEST_SIZE] = '\0';
}

void sl_sha256_hex(const void *p, size_t n, char out[SL_SHA256_HEX])
{
	struct sha256_ctx ctx;
	uint8_t md[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, n, p);
	sha256_digest(&ctx, sizeof(md), md);
	to_hex(md, out);
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
	to_hex(md, out);
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

enum sl_seal_check sl_seal_check(const void *key, size_t klen, const char *state, const char *what)
{
	unsigned long long expiry;
	char mac[SL_SHA256_HEX];
	int used = 0;
	unsigned char diff = 0;

	if (sscanf(state, "%llx.%n", &expiry, &used) != 1 || used == 0 ||
	    strlen(state + used) != SL_SHA256_HEX - 1)
		return SL_SEAL_FORGED;
	seal_mac(key, klen, expiry, what, mac);
	for (size_t i = 0; i < SL_SHA256_HEX - 1; i++) /* constant time */
		diff |= (unsigned char)(mac[i] ^ state[used + i]);
	if (diff)
		return SL_SEAL_FORGED;
	return expiry < sl_seal_now() ? SL_SEAL_EXPIRED : SL_SEAL_OK;
}

/* SHA-256 through Nettle; see digest.h. */
#include "core/digest.h"

#include <nettle/hmac.h>
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

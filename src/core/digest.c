/* SHA-256 through Nettle; see digest.h. */
#include "core/digest.h"

#include <nettle/sha2.h>

void sl_sha256_hex(const void *p, size_t n, char out[SL_SHA256_HEX])
{
	static const char hex[] = "0123456789abcdef";
	struct sha256_ctx ctx;
	uint8_t md[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, n, p);
	sha256_digest(&ctx, sizeof(md), md);
	for (size_t i = 0; i < sizeof(md); i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

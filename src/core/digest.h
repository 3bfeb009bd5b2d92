/*
 * SHA-256 (through Nettle): pins of tool definitions, the audit's hash of
 * arguments, cache keys; and HMAC-SHA-256 for state handed to clients that
 * must come back unchanged (MCP 2026-07-28 requestState).
 */
#ifndef SL_CORE_DIGEST_H
#define SL_CORE_DIGEST_H

#include "core/common.h"

#define SL_SHA256_HEX 65 /* 64 hex digits and a NUL */

void sl_sha256_hex(const void *p, size_t n, char out[SL_SHA256_HEX]);
/* HMAC-SHA-256 of p under key, as hex. */
void sl_hmac_sha256_hex(const void *key, size_t klen, const void *p, size_t n,
			char out[SL_SHA256_HEX]);

#endif

/*
 * SHA-256 (through Nettle): pins of tool definitions, the audit's hash of
 * arguments, cache keys. Not a password hash or a MAC.
 */
#ifndef SL_CORE_DIGEST_H
#define SL_CORE_DIGEST_H

#include "core/common.h"

#define SL_SHA256_HEX 65 /* 64 hex digits and a NUL */

void sl_sha256_hex(const void *p, size_t n, char out[SL_SHA256_HEX]);

#endif

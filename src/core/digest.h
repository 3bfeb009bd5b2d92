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
/* HMAC-SHA-256 of p under key, raw (32 bytes). */
void sl_hmac_sha256(const void *key, size_t klen, const void *p, size_t n, uint8_t out[32]);
/* HMAC-SHA-256 of p under key, as hex. */
void sl_hmac_sha256_hex(const void *key, size_t klen, const void *p, size_t n,
			char out[SL_SHA256_HEX]);

/* Seconds of the wall clock: the time seals expire on, so that a state
 * sealed by one replica (sluice.shared.secret) expires on another's clock
 * at the same moment (a monotonic clock counts from each host's boot). */
unsigned long long sl_seal_now(void);

/*
 * A state handed to a client that must come back unchanged (an MCP
 * 2026-07-28 requestState): "EXPIRY.MAC", EXPIRY the second (hex, on
 * sl_seal_now's clock) after which
 * it is refused, MAC the HMAC-SHA-256 of "EXPIRY\nwhat" under key. what
 * names everything the state stands for (its purpose first, so a state of
 * one kind never passes for another).
 * Returns the state (the caller frees it).
 */
char *sl_seal(const void *key, size_t klen, unsigned long long expiry, const char *what);
enum sl_seal_check { SL_SEAL_OK, SL_SEAL_FORGED, SL_SEAL_EXPIRED };
/* Whether state is sl_seal(key, e, what) for an e not yet past (compared
 * in constant time); a malformed state is FORGED. */
enum sl_seal_check sl_seal_check(const void *key, size_t klen, const char *state, const char *what);

/*
 * The same seal, short and without an expiry, for ids a client hands back
 * that must name only what sluice issued (session ids, task ids): the
 * first 128 bits of HMAC-SHA-256 of what under key, as 32 hex digits.
 * what names its purpose first, as for sl_seal.
 */
#define SL_SEAL_TAG_HEX 32
void sl_seal_tag(const void *key, size_t klen, const char *what, char out[SL_SEAL_TAG_HEX + 1]);
/* Whether tag, len bytes, is sl_seal_tag(key, what) (compared in constant
 * time; a tag of another length is not). */
bool sl_seal_tag_check(const void *key, size_t klen, const char *what, const char *tag, size_t len);

#endif

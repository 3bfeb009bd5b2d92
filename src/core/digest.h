/*
 * SHA-256 (through Nettle): pins of tool definitions, the audit's hash of
 * arguments, cache keys; HMAC-SHA-256 for state handed to clients that
 * must come back unchanged (MCP 2026-07-28 requestState); and AES-256-GCM
 * (Nettle) for state that must also stay private: one seal format for
 * the whole gateway, below.
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

/*
 * AES-256-GCM, the one AEAD of the gateway (Nettle: never hand-written):
 * a fresh random 96-bit nonce per seal, the 128-bit tag checked in
 * constant time. A blob is nonce || ciphertext || tag, SL_AEAD_OVERHEAD
 * bytes longer than the plaintext. What ad names is authenticated, not
 * encrypted.
 */
#define SL_AEAD_KEY 32
#define SL_AEAD_NONCE 12
#define SL_AEAD_TAG 16
#define SL_AEAD_OVERHEAD (SL_AEAD_NONCE + SL_AEAD_TAG)
/* Seals plain[0..n) under key with associated data ad[0..adlen) into out,
 * which holds n + SL_AEAD_OVERHEAD bytes. */
void sl_aead_seal(const uint8_t key[SL_AEAD_KEY], const void *ad, size_t adlen,
		  const void *plain, size_t n, uint8_t *out);
/* Opens blob[0..blen) into plain (blen - SL_AEAD_OVERHEAD bytes): false,
 * and plain wiped, when blob is shorter than the overhead, or was sealed
 * under another key or with other associated data, or was changed. */
bool sl_aead_open(const uint8_t key[SL_AEAD_KEY], const void *ad, size_t adlen,
		  const uint8_t *blob, size_t blen, void *plain);

/*
 * sl_seal for a state whose content is private (a program's recorded
 * results): "EXPIRY.BLOB", EXPIRY as sl_seal's, BLOB the base64url of
 * sl_aead_seal(plain) under a key derived from key (HMAC-SHA-256 of a
 * fixed label: the generation's key is never used by two algorithms),
 * with "EXPIRY\nwhat" as associated data: what binds it as for sl_seal
 * (purpose first, the caller identity, what it is for), and nothing of
 * plain can be read from it. Returns the state (the caller frees it).
 */
char *sl_seal_private(const void *key, size_t klen, unsigned long long expiry, const char *what,
		      const void *plain, size_t n);
/* Opens a state of sl_seal_private(key, e, what, ...) for an e not yet
 * past: OK with *plain (malloc'd, NUL after its *n bytes; the caller
 * frees it) and id (may be NULL) the seal's nonce in hex, which names
 * this one seal whatever the spelling of its copy (base64 has several for
 * one blob: a single-use mark is kept under id, never under the text);
 * else FORGED (another key or what, changed, malformed) or EXPIRED
 * (authentic but past its expiry), *plain NULL. */
#define SL_SEAL_ID_HEX (2 * SL_AEAD_NONCE)
enum sl_seal_check sl_seal_open(const void *key, size_t klen, const char *state, const char *what,
				char **plain, size_t *n, char id[SL_SEAL_ID_HEX + 1]);
/* The expiry a state of sl_seal or sl_seal_private carries (unverified:
 * for a state that was checked), or 0 for a malformed one. */
unsigned long long sl_seal_expiry(const char *state);

#endif

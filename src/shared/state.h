/*
 * What replicas share besides pins (docs/internals/REPLICAS.md): the
 * results kept for read_result, the result cache, and the rate-limit
 * buckets. This is the pure part: key names, result ids, and the check
 * every value read back from Redis passes (Redis may be shared with
 * others, or compromised: what it returns is untrusted input). No I/O;
 * tests/unit/test_sharedstate.c covers it.
 *
 * Keys (prefix: sluice.shared.redis.keyPrefix):
 *   <prefix>result:<caller>:<id>   a whole result, PX the governor's ttlMs;
 *                                  caller is the session's credential hash,
 *                                  so one caller never names another's
 *   <prefix>cache:<sha256>         a cached result, PX the cache's ttlMs
 *   <prefix>quota:<scope>:<key>    a token bucket (hash u, t, d, n), PEXPIRE
 *                                  when it would be full and the day over
 *   <prefix>once:<purpose>:<id>    a used approval (shared/once.h), PX until
 *                                  its state expires
 *
 * API:
 *   sl_shared_result_id(id, true);           "s" + 24 hex digits (96 random bits)
 *   if (sl_shared_result_id_shared(id)) key = sl_shared_result_key(prefix, cred, id);
 *   key = sl_shared_cache_key(prefix, sha);  owned
 *   key = sl_shared_quota_key(prefix, "subject", who->key);
 *   doc = sl_shared_object(text, len, max, &why);  NULL: why says what is wrong
 */
#ifndef SL_SHARED_STATE_H
#define SL_SHARED_STATE_H

#include "core/common.h"

#include <yyjson.h>

#define SL_RESULT_ID_HEX 24                     /* 96 bits, unguessable */
#define SL_RESULT_ID_SIZE (1 + SL_RESULT_ID_HEX + 1)

/* A fresh random result id: 's' (kept in the shared store as well) or
 * 'r' (kept only by this replica), then 24 lowercase hex digits. */
void sl_shared_result_id(char out[SL_RESULT_ID_SIZE], bool shared);
/* True if id has the shape of an id kept in the shared store. */
bool sl_shared_result_id_shared(const char *id);
/* True if id has the shape of a random local id ('r' + 24 hex). */
bool sl_shared_result_id_local(const char *id);
/* <prefix>result:<caller>:<id>, owned; NULL unless id is a shared id and
 * caller a non-empty string of hex digits (no separator can sneak in). */
char *sl_shared_result_key(const char *prefix, const char *caller, const char *id);
/* <prefix>cache:<sha256 hex>, owned. */
char *sl_shared_cache_key(const char *prefix, const char *sha);
/* <prefix>quota:<scope>:<key>, owned. The scope is a fixed word, so the
 * key (a caller's hash or a profile's name) cannot make two the same. */
char *sl_shared_quota_key(const char *prefix, const char *scope, const char *key);
/* <prefix>once:<purpose>:<id>, owned. purpose is a fixed word and id a
 * seal's hex id: neither holds a separator. */
char *sl_shared_once_key(const char *prefix, const char *purpose, const char *id);
/* <prefix>once:epoch, owned: when the shared store's data began (no
 * purpose is "epoch" with no id, so it names no mark). */
char *sl_shared_once_epoch_key(const char *prefix);
/* A value read back from Redis that should be a JSON object (a cached
 * result): at most max bytes, valid JSON, an object. Returns the document
 * (the caller frees it), or NULL with *why (static text) saying which. */
yyjson_doc *sl_shared_object(const char *text, size_t len, size_t max, const char **why);

#endif

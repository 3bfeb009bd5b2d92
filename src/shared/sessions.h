/*
 * Sessions across replicas (docs/internals/REPLICAS.md, "Sessions"): with
 * sluice.shared.secret, a Streamable HTTP session id is sealed,
 * "RANDOM.TAG" (32 hex digits each), TAG the first half of the
 * HMAC-SHA-256 of "sluice-session\nRANDOM\nCALLER" under the generation's
 * key (CALLER: the caller's key, sl_caller.key, or "" for none), so any
 * replica with the same secret can tell an id it did not issue from a
 * forged one, and for which identity it was issued. With
 * sluice.shared.redis too, the session's record is kept at
 * <prefix>session:<id> for as long as the session is used (a TTL of the
 * session idle timeout, refreshed on use), and a replica that is sent an id
 * it does not hold adopts the session from it.
 *
 * The record, JSON of at most SL_SESSION_RECORD_MAX bytes:
 *   {"v": 1, "caller": CALLER, "protocolVersion": "2025-11-25",
 *    "capabilities": {...}, "clientInfo": {...} or absent,
 *    "logLevel": "info" or absent, "subscriptions": ["uri", ...]}
 * Redis is untrusted input: the parser checks every field, its size, and
 * that the record is the one for this caller.
 *
 * API:
 *   sl_session_id_make(key, caller, id);       a new sealed id
 *   if (sl_session_id_check(key, id, caller)) ...ours and this caller's...
 *   json = sl_session_record_build(&rec, &len);  NULL when over the bound
 *   if (sl_session_record_parse(json, len, caller, &rec, &err) < 0) ...404...
 *   sl_session_record_dispose(&rec);
 *   sl_session_store_put(redis, id, json, len, ttl_ms);  fire and forget
 *   sl_session_store_get(redis, id, on_record, ctx, &err); <0: at once (degraded)
 *   sl_session_store_end(redis, id);            DELETE: the record goes, and every
 *                                               replica holding the session hears it
 *   l = sl_session_store_listen(redis, on_ended, on_up, ctx);  on_ended(ctx, id),
 *                                               on_up(ctx) at each (re)connect
 *   sl_session_store_unlisten(l);
 */
#ifndef SL_SHARED_SESSIONS_H
#define SL_SHARED_SESSIONS_H

#include "core/common.h"

#include <yyjson.h>

#define SL_SESSION_ID_MAX 72        /* "RANDOM.TAG" and a NUL, with room */
#define SL_SESSION_RECORD_MAX 65536 /* bytes of one record in Redis */
#define SL_SESSION_RECORD_SUBS 1024 /* subscriptions in one (the session's own bound) */

struct sl_redis;
struct sl_redis_listener;

/* Fills id with a new sealed id for caller (a caller key, "" for none). */
void sl_session_id_make(const uint8_t key[32], const char *caller, char id[SL_SESSION_ID_MAX]);
/* True if id is one sl_session_id_make made under key for caller. */
bool sl_session_id_check(const uint8_t key[32], const char *id, const char *caller);

struct sl_session_record {
	yyjson_doc *doc;        /* parsed: owns what the fields point into */
	const char *caller;
	const char *version;    /* protocolVersion */
	yyjson_val *caps;       /* capabilities, an object */
	yyjson_val *client_info;/* an object, or NULL */
	const char *log_level;  /* or NULL */
	const char **subs;      /* subscriptions (owned array of borrowed strings) */
	size_t nsubs;
};

/* The record's JSON (owned; *len its length), or NULL when it would be
 * over SL_SESSION_RECORD_MAX. doc is not used. */
char *sl_session_record_build(const struct sl_session_record *rec, size_t *len);
/* Parses a record from Redis for caller. Returns 0 with *rec filled (the
 * caller disposes it), or SL_ERR_INVALID with err saying what was wrong. */
int sl_session_record_parse(const char *json, size_t len, const char *caller,
			    struct sl_session_record *rec, struct sl_err *err) SL_MUST_USE;
void sl_session_record_dispose(struct sl_session_record *rec);

/* json NULL: no record (missing or expired); else its bytes, borrowed for
 * the call. error: Redis failed (down, timed out), json is NULL. */
typedef void sl_session_record_fn(void *ctx, const char *json, size_t len, const char *error);

/* False when the SET could not be sent (degraded, too many in flight):
 * the caller tries again later. */
bool sl_session_store_put(struct sl_redis *r, const char *id, const char *json, size_t len,
			  uint64_t ttl_ms);
/* fn runs later, exactly once, unless this fails at once (degraded, too
 * many commands in flight: err says why). */
int sl_session_store_get(struct sl_redis *r, const char *id, sl_session_record_fn *fn, void *ctx,
			 struct sl_err *err) SL_MUST_USE;
/* Removes the record and announces the end on <prefix>sessions. */
void sl_session_store_end(struct sl_redis *r, const char *id);
/* on_ended(ctx, id) for each announced end (id checked: the shape of an
 * id, at most SL_SESSION_ID_MAX - 1 characters; it is Redis's input);
 * on_up(ctx) after every (re)connect to Redis, and at once if connected
 * now: Redis may have come back empty, so the records of the sessions
 * held are written again (REPLICAS.md, "Redis back"). */
struct sl_redis_listener *sl_session_store_listen(struct sl_redis *r,
						  void (*on_ended)(void *ctx, const char *id),
						  void (*on_up)(void *ctx), void *ctx);
void sl_session_store_unlisten(struct sl_redis_listener *l); /* NULL is fine */

#endif

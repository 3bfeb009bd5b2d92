/*
 * The Redis client of the shared state layer (docs/internals/REPLICAS.md),
 * on hiredis: one command connection and one subscriber connection on the
 * gateway's libuv loop, each (re)connected with AUTH and SELECT, with
 * backoff (250 ms doubling to 5 s) while Redis is down. The client is
 * *connected* when both are up, *degraded* otherwise: one warning per
 * outage, one info line on recovery, and every command issued while
 * degraded fails at once with the reason, so its caller keeps to its local
 * state and nothing waits on Redis. Commands in flight are bounded
 * (maxPending), each has a deadline (commandTimeoutMs: past it the
 * connection is dropped), and so is each reply as it arrives
 * (maxReplyBytes).
 *
 * API (the gateway owns one, made by `serve` when sluice.shared.redis is
 * set; a reload keeps it):
 *   r = sl_redis_new(loop, &cfg->redis);
 *   if (sl_redis_command(r, on_reply, ctx, 3, argv, lens, &err) < 0) ...local...
 *       on_reply(ctx, reply, NULL) later, or on_reply(ctx, NULL, why)
 *   l = sl_redis_listen(r, "sluice:pins", on_message, on_up, ctx);
 *       on_message(ctx, payload, len) per message on the channel;
 *       on_up(ctx) after every (re)connect (and at once if connected now):
 *       time to reconcile what was missed; channel NULL: on_up only
 *   sl_redis_unlisten(l);
 *   sl_redis_status(r, d, obj);   {url, state, since, lastError} for /status
 *   sl_redis_free(r);
 * For a short-lived command (`sluice pins approve`), without a loop:
 *   if (sl_redis_sync_open(&cfg->redis, &s, &err) == 0) {
 *           rc = sl_redis_sync_command(s, argc, argv, lens, &err);
 *           sl_redis_sync_close(s);
 *   }
 */
#ifndef SL_SHARED_REDIS_H
#define SL_SHARED_REDIS_H

#include "config/config.h"
#include "core/common.h"

#include <hiredis/hiredis.h>
#include <uv.h>
#include <yyjson.h>

enum sl_redis_state { SL_REDIS_CONNECTED, SL_REDIS_DEGRADED };

struct sl_redis;
struct sl_redis_listener;

/* reply: borrowed for the call (NULL on failure, error then says why). */
typedef void sl_redis_reply_fn(void *ctx, redisReply *reply, const char *error);
typedef void sl_redis_message_fn(void *ctx, const char *payload, size_t len);
typedef void sl_redis_up_fn(void *ctx);

/* Starts connecting at once; cfg is copied. Never fails: an unreachable
 * Redis is the degraded state. */
struct sl_redis *sl_redis_new(uv_loop_t *loop, const struct sl_redis_config *cfg);
/* Fails every pending command (their callbacks run, with an error), closes
 * the connections; the memory goes once libuv has closed the handles.
 * A listener may be removed later: the memory waits for it. NULL is fine. */
void sl_redis_free(struct sl_redis *r);
/* Sends a command. fn (may be NULL) runs later with the reply, never inside
 * this call. Fails at once (SL_ERR_STATE, err says why) while degraded or
 * with maxPending commands in flight. */
int sl_redis_command(struct sl_redis *r, sl_redis_reply_fn *fn, void *ctx, int argc,
		     const char **argv, const size_t *lens, struct sl_err *err) SL_MUST_USE;
struct sl_redis_listener *sl_redis_listen(struct sl_redis *r, const char *channel,
					  sl_redis_message_fn *on_message, sl_redis_up_fn *on_up,
					  void *ctx);
void sl_redis_unlisten(struct sl_redis_listener *l);
enum sl_redis_state sl_redis_state(const struct sl_redis *r);
/* The key prefix (sluice.shared.redis.keyPrefix). Borrowed. */
const char *sl_redis_prefix(const struct sl_redis *r);
/* Adds {"redis": url, "state", "since" (ISO 8601), "lastError"} to obj;
 * r NULL: {"state": "off"}. */
void sl_redis_status(const struct sl_redis *r, yyjson_mut_doc *d, yyjson_mut_val *obj);

struct sl_redis_sync;
int sl_redis_sync_open(const struct sl_redis_config *cfg, struct sl_redis_sync **out,
		       struct sl_err *err) SL_MUST_USE;
/* One command; an error reply fails it. */
int sl_redis_sync_command(struct sl_redis_sync *s, int argc, const char **argv,
			  const size_t *lens, struct sl_err *err) SL_MUST_USE;
void sl_redis_sync_close(struct sl_redis_sync *s);

#endif

/*
 * Rate limits across replicas (docs/stages/quota.md, REPLICAS.md): with
 * sluice.shared.redis connected, the quota stage's buckets live in Redis,
 * one hash per identity (<prefix>quota:<scope>:<key>: u tokens in
 * SL_BUCKET_UNITs, t the last refill in ms, d the UTC day, n its calls),
 * and one Lua script (EVAL) refills every bucket of a call, checks them
 * all, and takes from all or none, atomically for the fleet, on Redis's
 * clock (TIME), with PEXPIRE once a bucket would be full and its day
 * over. The stage suspends for the answer (at most commandTimeoutMs);
 * when Redis is down, or answers what the script cannot have, the call is
 * counted by the process-local store: a limit is then per replica.
 *
 * API:
 *   if (sl_quota_shared_ask(r, &waits, c, asks, n, done, ctx)) return SL_STAGE_AGAIN;
 *       done(ctx, c, asks, n, rc, &why) later: rc 1 admitted, 0 refused
 *       (why), -1 not counted (count locally); asks are copies
 *   sl_quota_shared_cancel(&waits, c);   the stage's cancel hook
 *   sl_quota_shared_parse(reply, n, &admitted, &why)   the script's answer
 */
#ifndef SL_STAGES_QUOTA_SHARED_H
#define SL_STAGES_QUOTA_SHARED_H

#include "core/list.h"
#include "stages/quota.h"

#include <hiredis/hiredis.h>

struct sl_call;
struct sl_redis;
struct sl_quota_wait;

extern const char sl_quota_script[];

typedef void sl_quota_shared_fn(void *ctx, struct sl_call *c, const struct sl_quota_ask *asks,
				size_t n, int rc, const struct sl_quota_refusal *why);

/* Sends the script for c's asks (n at most 2). False (nothing sent, done
 * never runs) when r is not connected or the command cannot go. */
bool sl_quota_shared_ask(struct sl_redis *r, struct sl_list *waits, struct sl_call *c,
			 const struct sl_quota_ask *asks, size_t n, sl_quota_shared_fn *done,
			 void *ctx);
/* c was cancelled while waiting: done never runs for it; c resumes now. */
void sl_quota_shared_cancel(struct sl_list *waits, struct sl_call *c);
/* The script's reply for n asks: {0} admitted; {1, ask (1..n), window (1
 * minute, 2 day), retry ms (>= 1)} refused. Returns 0 (with *admitted,
 * and *why when refused, its limit from asks), or -1 for anything else
 * (an error reply, a wrong shape or range: Redis is not trusted). */
int sl_quota_shared_parse(const redisReply *reply, const struct sl_quota_ask *asks, size_t n,
			  bool *admitted, struct sl_quota_refusal *why);

#endif

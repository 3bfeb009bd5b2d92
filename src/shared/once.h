/*
 * Single-use marks (docs/internals/REPLICAS.md, "Single-use approvals"):
 * a state that authorises an effect (a person's approval carried back in a
 * 2026-07-28 requestState: a confirmation of the policy stage, a program's
 * retry) is good for one use. Whoever accepts such a state claims its id
 * (the seal's nonce, never the state's text, which has several spellings)
 * first, and goes on only if the claim is the first.
 *
 * Here: a bounded map (core/lru.h) of the ids used, each kept until its
 * state's own expiry (after which the state is refused as expired anyway)
 * and SL_ONCE_SLACK_MS more.
 * At SL_ONCE_MAX live ids a new claim is refused rather than an old mark
 * forgotten (forgetting one would let its approval run again), unless the
 * shared store keeps the marks too (then the oldest one here goes).
 *
 * Across replicas (sluice.shared.redis): SET <prefix>once:<purpose>:<id> 1
 * NX PX <until the expiry>: the first replica to set it wins; a replica
 * that finds it set refuses. While Redis is degraded (or the command
 * fails) the claim is refused (UNSURE): an approval that cannot be shown
 * unused is not used; the person is asked again later.
 *
 * A Redis that restarts empty (no persistence), or is emptied, forgets
 * the marks it held. So <prefix>once:epoch holds when its data began
 * (sl_seal_now's clock, seconds): each replica sets it, if missing, on
 * every (re)connect (first writer wins: a Redis that kept its data keeps
 * its epoch), and a claim (one Lua script, one round trip) that finds it
 * missing sets it. A state issued before the epoch plus SL_ONCE_SLACK_MS
 * (the replicas' clocks may differ by as much) is refused (UNSURE): its
 * mark may have gone with the old data. Fail closed: an approval pending
 * across such a restart, or given within that slack after it, is refused
 * once and the person asked again.
 *
 * API (the gateway owns one, services->once, pipeline/gen.h):
 *   o = sl_once_new(SL_ONCE_MAX);
 *   sl_once_share(o, redis);          the epoch on every (re)connect
 *   v = sl_once_claim(o, redis, "confirm", id, issued, expiry, fn, ctx, &w, &why);
 *       FIRST, USED, UNSURE (why: static text): decided now, fn never runs;
 *       WAIT: fn(ctx, verdict, why) runs once, later, from the loop, unless
 *       sl_once_cancel(w) first
 *   sl_once_free(o);
 */
#ifndef SL_SHARED_ONCE_H
#define SL_SHARED_ONCE_H

#include "core/common.h"

#define SL_ONCE_MAX 65536     /* live marks of one process (about 200 bytes each) */
#define SL_ONCE_SLACK_MS 30000 /* a mark outlives its state's expiry by this much: replicas'
				* clocks may differ by as much and still agree */

struct sl_once;
struct sl_once_wait;
struct sl_redis;

enum sl_once_verdict {
	SL_ONCE_FIRST,  /* the first use: go on */
	SL_ONCE_USED,   /* used before (here, or on another replica): refuse */
	SL_ONCE_UNSURE, /* cannot be shown unused (why says why): refuse */
	SL_ONCE_WAIT,   /* asked Redis: the verdict comes through fn */
};

typedef void sl_once_fn(void *ctx, enum sl_once_verdict v, const char *why);

struct sl_once *sl_once_new(size_t max);
/* Frees the marks; claims waiting on Redis still get their verdict (the
 * wait does not need o). NULL is fine. */
void sl_once_free(struct sl_once *o);
/* Sets the shared store's epoch, if missing, on each (re)connect of redis
 * (and now, if connected), until sl_once_free. Once; o NULL is fine. */
void sl_once_share(struct sl_once *o, struct sl_redis *redis);
/* Claims id (lowercase hex, the seal's id) for purpose (a fixed word),
 * for a state issued at issued until expiry (sl_seal_now's clock). redis:
 * NULL, or the shared store. See the API above; *wait is set only for
 * WAIT. o NULL (no gateway): UNSURE. */
enum sl_once_verdict sl_once_claim(struct sl_once *o, struct sl_redis *redis, const char *purpose,
				   const char *id, unsigned long long issued, unsigned long long expiry,
				   sl_once_fn *fn, void *ctx, struct sl_once_wait **wait,
				   const char **why);
/* Gives back a claim that came FIRST and whose effect never started (a
 * program refused admission, "busy"): the same state may be used again.
 * With redis the shared mark is deleted too (fire and forget). */
void sl_once_release(struct sl_once *o, struct sl_redis *redis, const char *purpose,
		     const char *id);
/* The verdict of a claim's reply from Redis (NULL: none came): FIRST, USED,
 * or UNSURE with *why (static text), also for any answer the claim's
 * script cannot give. Pure (for tests). */
struct redisReply;
enum sl_once_verdict sl_once_verdict_of(const struct redisReply *reply, const char **why);
/* The claim's owner no longer wants the verdict: fn never runs. */
void sl_once_cancel(struct sl_once_wait *w);
/* Live marks held here (for tests). */
size_t sl_once_count(struct sl_once *o);

#endif

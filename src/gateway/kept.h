/*
 * Where whole results for read_result are kept, and how they are found
 * again (docs/stages/governor.md, docs/internals/REPLICAS.md):
 *
 *   a session-era session: in its own store (gone with the session);
 *   a 2026-07-28 request, which is a session of its own: in the governor's
 *     store of callers' results, each entry bound to the caller's
 *     credential hash (s->cred), so the next request of the same caller
 *     reads it, and another caller never does;
 *   with sluice.shared.redis connected, and the result at most
 *     sluice.governor.maxSharedBytes: in Redis as well, under
 *     <prefix>result:<caller>:<id> with PX ttlMs, its id 's' + 96 random
 *     bits, so every replica finds it for that caller.
 *
 * With Redis configured, every id is random ('s...' shared, 'r...' kept by
 * this replica only), so two replicas never hand out the same id.
 *
 * The governor (a stage) keeps through sl_kept_keeper, which the gateway
 * registers on the generation's services (stages/governor.h); the results
 * are the session's, so this is the session's owner's code.
 *
 * API:
 *   if (sl_kept_put(gov, s, json, len, id, NULL, NULL, NULL)) ...id names it (json taken)
 *   if (sl_kept_put(gov, s, json, len, id, stored, ctx, &w) && w)
 *       ...stored(ctx, ok) once Redis has it (or failed): answer after it,
 *       so that another replica reads what the client was told
 *   w = sl_kept_get(gov, s, id, fn, ctx);
 *       fn(ctx, text, len, NULL) or fn(ctx, NULL, 0, why): once, maybe at
 *       once (w is then NULL); else later, when Redis answers (at most
 *       commandTimeoutMs, the client's bound)
 *   sl_kept_abandon(w);   the asker is gone: fn never runs
 */
#ifndef SL_GATEWAY_KEPT_H
#define SL_GATEWAY_KEPT_H

#include "core/common.h"
#include "stages/governor.h"

struct sl_session;

/* text is borrowed for the call. */
typedef void sl_kept_fn(void *ctx, const char *text, size_t len, const char *why);

/* Keeps json (taken) for s's client; true with its id in id, false when
 * it alone is over the store's cap. When it goes to Redis and stored is
 * not NULL, *wait is the write's (else NULL): stored runs once, later,
 * when Redis answers (at most commandTimeoutMs), unless abandoned. */
bool sl_kept_put(const struct sl_governor *gov, struct sl_session *s, char *json, size_t len,
		 char id[SL_KEPT_ID_SIZE], sl_kept_stored_fn *stored, void *ctx,
		 struct sl_kept_wait **wait);
/* Looks id up for s's client; see above. */
struct sl_kept_wait *sl_kept_get(const struct sl_governor *gov, struct sl_session *s,
				 const char *id, sl_kept_fn *fn, void *ctx);
/* The asker is gone: its fn or stored never runs. NULL is fine. */
void sl_kept_abandon(struct sl_kept_wait *w);
/* sl_kept_put and sl_kept_abandon, for the governor. */
extern const struct sl_keeper sl_kept_keeper;

#endif

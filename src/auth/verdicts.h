/*
 * Verdicts on tokens, remembered by the token's SHA-256 (never the token)
 * for a while: a JWT whose signature and claims were checked, until it
 * expires; an introspection answer, for introspection.cacheSeconds. At
 * most max entries: a new one pushes out the oldest (core/lru.h).
 *
 *   sl_verdicts_init(&v, 4096);
 *   sl_verdicts_put(&v, hash, who, SL_VERDICT_OK, "", until_ms);   who: a new reference is taken
 *   sl_verdicts_put_stale(&v, hash, who, fresh_ms, until_ms);     OK; past fresh_ms it is stale
 *   const struct sl_verdict *e = sl_verdicts_get(&v, hash);       NULL: none, or past until_ms
 */
#ifndef SL_AUTH_VERDICTS_H
#define SL_AUTH_VERDICTS_H

#include "auth/caller.h"
#include "core/digest.h"
#include "core/lru.h"

enum sl_verdict_kind { SL_VERDICT_OK, SL_VERDICT_DENIED, SL_VERDICT_FAILED };

struct sl_verdict {
	struct sl_lru_entry e;           /* its key and deadline (until_ms) */
	uint64_t fresh_ms;               /* past it, until until_ms, it is stale: it serves
					  * while the token is asked about again */
	enum sl_verdict_kind kind;
	struct sl_caller *who;           /* OK: the caller */
	char why[160];                   /* DENIED, FAILED: the reason */
};

struct sl_verdicts {
	struct sl_lru lru;               /* oldest first: a hit does not renew */
};

void sl_verdicts_init(struct sl_verdicts *v, size_t max);
void sl_verdicts_dispose(struct sl_verdicts *v);
/* Replaces any verdict under key, until until_ms (monotonic, sl_now_ms;
 * never 0); nothing when max is 0. */
void sl_verdicts_put(struct sl_verdicts *v, const char *key, struct sl_caller *who,
		     enum sl_verdict_kind kind, const char *why, uint64_t until_ms);
/* An OK verdict for who, fresh until fresh_ms (<= until_ms), then stale
 * until until_ms. */
void sl_verdicts_put_stale(struct sl_verdicts *v, const char *key, struct sl_caller *who,
			   uint64_t fresh_ms, uint64_t until_ms);
/* The live verdict under key (an expired one is dropped), or NULL. */
const struct sl_verdict *sl_verdicts_get(struct sl_verdicts *v, const char *key);
/* Forgets the verdict under key, if any. */
void sl_verdicts_del(struct sl_verdicts *v, const char *key);

#endif

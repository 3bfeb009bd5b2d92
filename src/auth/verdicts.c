/*
 * Remembered verdicts: see verdicts.h.
 */
#include "auth/verdicts.h"

#include <stdio.h>
#include <stdlib.h>

static void verdict_free(struct sl_lru_entry *e, void *arg)
{
	struct sl_verdict *v = sl_lru_item(e, struct sl_verdict, e);

	(void)arg;
	sl_caller_unref(v->who);
	free(v);
}

void sl_verdicts_init(struct sl_verdicts *v, size_t max)
{
	sl_lru_init(&v->lru, max, 0, verdict_free, NULL);
}

void sl_verdicts_dispose(struct sl_verdicts *v)
{
	sl_lru_dispose(&v->lru);
}

static void put(struct sl_verdicts *v, const char *key, struct sl_caller *who,
		enum sl_verdict_kind kind, const char *why, uint64_t fresh_ms, uint64_t until_ms)
{
	struct sl_verdict *e;

	if (!v->lru.max_count)
		return;
	e = sl_alloc(sizeof(*e));
	e->fresh_ms = fresh_ms;
	e->kind = kind;
	e->who = sl_caller_ref(who);
	snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
	(void)sl_lru_put(&v->lru, key, &e->e, 0, until_ms);
}

void sl_verdicts_put(struct sl_verdicts *v, const char *key, struct sl_caller *who,
		     enum sl_verdict_kind kind, const char *why, uint64_t until_ms)
{
	put(v, key, who, kind, why, until_ms, until_ms);
}

void sl_verdicts_put_stale(struct sl_verdicts *v, const char *key, struct sl_caller *who,
			   uint64_t fresh_ms, uint64_t until_ms)
{
	put(v, key, who, SL_VERDICT_OK, NULL, fresh_ms, until_ms);
}

void sl_verdicts_del(struct sl_verdicts *v, const char *key)
{
	(void)sl_lru_del(&v->lru, key);
}

const struct sl_verdict *sl_verdicts_get(struct sl_verdicts *v, const char *key)
{
	struct sl_lru_entry *e = sl_lru_get(&v->lru, key, sl_now_ms());
	return e ? sl_lru_item(e, struct sl_verdict, e) : NULL;
}

/*
 * Remembered verdicts: see verdicts.h.
 */
#include "auth/verdicts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_verdicts_init(struct sl_verdicts *v, size_t max)
{
	memset(v, 0, sizeof(*v));
	sl_map_init(&v->map);
	v->max = max;
}

static void drop(struct sl_verdicts *v, struct sl_verdict *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		v->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		v->tail = e->prev;
	sl_map_del(&v->map, e->key);
	sl_caller_unref(e->who);
	free(e);
	v->n--;
}

void sl_verdicts_dispose(struct sl_verdicts *v)
{
	while (v->head)
		drop(v, v->head);
	sl_map_dispose(&v->map);
}

void sl_verdicts_put(struct sl_verdicts *v, const char *key, struct sl_caller *who,
		     enum sl_verdict_kind kind, const char *why, uint64_t until_ms)
{
	struct sl_verdict *e;

	if (!v->max)
		return;
	if ((e = sl_map_get(&v->map, key)))
		drop(v, e);
	while (v->n >= v->max)
		drop(v, v->head);
	e = sl_alloc(sizeof(*e));
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->kind = kind;
	e->who = sl_caller_ref(who);
	snprintf(e->why, sizeof(e->why), "%s", why ? why : "");
	e->until_ms = until_ms;
	e->prev = v->tail;
	if (v->tail)
		v->tail->next = e;
	else
		v->head = e;
	v->tail = e;
	sl_map_put(&v->map, e->key, e);
	v->n++;
}

const struct sl_verdict *sl_verdicts_get(struct sl_verdicts *v, const char *key)
{
	struct sl_verdict *e = sl_map_get(&v->map, key);

	if (e && sl_now_ms() >= e->until_ms) {
		drop(v, e);
		return NULL;
	}
	return e;
}

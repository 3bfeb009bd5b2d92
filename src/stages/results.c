/*
 * The stores of full results for read_result; see results.h. A store is
 * a bounded map (core/lru.h) in the order results were kept, never
 * touched (the oldest go first), by bytes and count, each entry's
 * deadline ttl_ms after it was kept. The key is owner and id, so that an
 * entry of another owner's is as unknown as one never kept.
 */
#include "stages/results.h"
#include "core/lru.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	struct sl_lru_entry e;   /* bytes: the JSON's length */
	char id[32];
	char *json;
	size_t len;
};

struct sl_results {
	struct sl_lru lru;       /* max_count 0: only bytes bound it */
	uint64_t ttl_ms;
	uint64_t next_id;
};

static void entry_free(struct sl_lru_entry *le, void *arg)
{
	struct entry *e = sl_lru_item(le, struct entry, e);

	(void)arg;
	free(e->json);
	free(e);
}

struct sl_results *sl_results_new(uint64_t ttl_ms, size_t max_bytes)
{
	struct sl_results *r = sl_alloc(sizeof(*r));
	sl_lru_init(&r->lru, 0, max_bytes, entry_free, NULL);
	r->ttl_ms = ttl_ms;
	r->next_id = 1;
	return r;
}

void sl_results_free(struct sl_results *r)
{
	if (!r)
		return;
	sl_lru_dispose(&r->lru);
	free(r);
}

/* Entries are kept in insertion order with one TTL, so expiry is from the
 * front too. */
static void expire(struct sl_results *r)
{
	uint64_t now = sl_now_ms();
	struct sl_lru_entry *e;

	while ((e = sl_lru_oldest(&r->lru)) && now >= e->until_ms)
		sl_lru_drop(&r->lru, e);
}

/* "owner\nid": an id and an owner (each as kept, cut to its size) name one entry. */
static char *key_of(const char *owner, const char *id)
{
	return sl_printf("%s\n%s", owner ? owner : "", id);
}

void sl_results_set_max_count(struct sl_results *r, size_t max_count)
{
	sl_lru_set_bounds(&r->lru, max_count, r->lru.max_bytes);
}

const char *sl_results_put(struct sl_results *r, char *json, size_t len)
{
	return sl_results_put_as(r, NULL, NULL, json, len);
}

const char *sl_results_put_as(struct sl_results *r, const char *id, const char *owner, char *json,
			      size_t len)
{
	char who[65], *key;
	struct entry *e;

	expire(r);
	if (len > r->lru.max_bytes) {
		free(json);
		return NULL;
	}
	e = sl_alloc(sizeof(*e));
	if (id)
		snprintf(e->id, sizeof(e->id), "%s", id);
	else
		snprintf(e->id, sizeof(e->id), "r%llu", (unsigned long long)r->next_id++);
	snprintf(who, sizeof(who), "%s", owner ? owner : "");
	e->json = json;
	e->len = len;
	key = key_of(who, e->id);
	/* Past a bound the oldest go first; e alone fits (above). */
	(void)sl_lru_put(&r->lru, key, &e->e, len, sl_now_ms() + r->ttl_ms);
	free(key);
	return e->id;
}

const char *sl_results_get(struct sl_results *r, const char *id, size_t *len)
{
	return sl_results_get_for(r, id, NULL, len);
}

const char *sl_results_get_for(struct sl_results *r, const char *id, const char *owner,
			       size_t *len)
{
	struct sl_lru_entry *le;
	struct entry *e;
	char *key;

	expire(r);
	key = key_of(owner, id);
	le = sl_lru_peek(&r->lru, key);
	free(key);
	if (!le)
		return NULL;
	e = sl_lru_item(le, struct entry, e);
	*len = e->len;
	return e->json;
}

/* The stores of full results for read_result; see results.h. */
#include "stages/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	struct entry *next;   /* newer */
	char id[32];
	char owner[65];       /* the caller it belongs to ("": the store's one owner) */
	char *json;
	size_t len;
	uint64_t expires_ms;
};

struct sl_results {
	struct entry *oldest, *newest;
	size_t bytes, max_bytes;
	size_t count, max_count; /* max_count 0: only bytes bound it */
	uint64_t ttl_ms;
	uint64_t next_id;
};

struct sl_results *sl_results_new(uint64_t ttl_ms, size_t max_bytes)
{
	struct sl_results *r = sl_alloc(sizeof(*r));
	r->ttl_ms = ttl_ms;
	r->max_bytes = max_bytes;
	r->next_id = 1;
	return r;
}

static void drop_oldest(struct sl_results *r)
{
	struct entry *e = r->oldest;
	r->oldest = e->next;
	if (!r->oldest)
		r->newest = NULL;
	r->bytes -= e->len;
	r->count--;
	free(e->json);
	free(e);
}

void sl_results_free(struct sl_results *r)
{
	if (!r)
		return;
	while (r->oldest)
		drop_oldest(r);
	free(r);
}

/* Entries are kept in insertion order, so expiry is from the front too. */
static void expire(struct sl_results *r)
{
	uint64_t now = sl_now_ms();
	while (r->oldest && r->oldest->expires_ms <= now)
		drop_oldest(r);
}

void sl_results_set_max_count(struct sl_results *r, size_t max_count)
{
	r->max_count = max_count;
}

const char *sl_results_put(struct sl_results *r, char *json, size_t len)
{
	return sl_results_put_as(r, NULL, NULL, json, len);
}

const char *sl_results_put_as(struct sl_results *r, const char *id, const char *owner, char *json,
			      size_t len)
{
	struct entry *e;

	expire(r);
	if (len > r->max_bytes) {
		free(json);
		return NULL;
	}
	while (r->oldest && (r->bytes + len > r->max_bytes ||
			     (r->max_count && r->count >= r->max_count)))
		drop_oldest(r);
	e = sl_alloc(sizeof(*e));
	if (id)
		snprintf(e->id, sizeof(e->id), "%s", id);
	else
		snprintf(e->id, sizeof(e->id), "r%llu", (unsigned long long)r->next_id++);
	snprintf(e->owner, sizeof(e->owner), "%s", owner ? owner : "");
	r->count++;
	e->json = json;
	e->len = len;
	e->expires_ms = sl_now_ms() + r->ttl_ms;
	if (r->newest)
		r->newest->next = e;
	else
		r->oldest = e;
	r->newest = e;
	r->bytes += len;
	return e->id;
}

const char *sl_results_get(struct sl_results *r, const char *id, size_t *len)
{
	return sl_results_get_for(r, id, NULL, len);
}

const char *sl_results_get_for(struct sl_results *r, const char *id, const char *owner,
			       size_t *len)
{
	expire(r);
	for (struct entry *e = r->oldest; e; e = e->next)
		if (strcmp(e->id, id) == 0 && strcmp(e->owner, owner ? owner : "") == 0) {
			*len = e->len;
			return e->json;
		}
	return NULL;
}

/*
 * The bounded map: see lru.h. The map finds an entry by key, the list
 * keeps the order; both hold the same entries at all times.
 */
#include "core/lru.h"

#include <stdlib.h>
#include <string.h>

void sl_lru_init(struct sl_lru *l, size_t max_count, size_t max_bytes, sl_lru_free_fn free_fn,
		 void *arg)
{
	memset(l, 0, sizeof(*l));
	sl_map_init(&l->map);
	sl_list_init(&l->order);
	l->max_count = max_count;
	l->max_bytes = max_bytes;
	l->free = free_fn;
	l->arg = arg;
}

void sl_lru_drop(struct sl_lru *l, struct sl_lru_entry *e)
{
	sl_list_remove(&e->link);
	/* The key is the map's copy: read it before the map frees it. */
	sl_map_del(&l->map, e->key);
	l->count--;
	l->bytes -= e->bytes;
	e->key = NULL;
	l->free(e, l->arg);
}

void sl_lru_dispose(struct sl_lru *l)
{
	struct sl_list *n;

	while ((n = sl_list_first(&l->order)))
		sl_lru_drop(l, sl_list_entry(n, struct sl_lru_entry, link));
	sl_map_dispose(&l->map);
}

static bool over(const struct sl_lru *l, size_t count, size_t bytes)
{
	return (l->max_count && count > l->max_count) || (l->max_bytes && bytes > l->max_bytes);
}

static void evict(struct sl_lru *l, size_t count, size_t bytes)
{
	struct sl_lru_entry *old;

	while (over(l, l->count + count, l->bytes + bytes) && (old = sl_lru_oldest(l)))
		sl_lru_drop(l, old);
}

void sl_lru_set_bounds(struct sl_lru *l, size_t max_count, size_t max_bytes)
{
	l->max_count = max_count;
	l->max_bytes = max_bytes;
	evict(l, 0, 0);
}

bool sl_lru_put(struct sl_lru *l, const char *key, struct sl_lru_entry *e, size_t bytes,
		uint64_t until_ms)
{
	if (l->max_bytes && bytes > l->max_bytes) {
		l->free(e, l->arg);
		return false;
	}
	sl_lru_del(l, key);
	evict(l, 1, bytes);
	sl_map_put(&l->map, key, e);
	/* The map copied the key; the entry points at that copy. */
	e->key = sl_map_key(&l->map, key);
	e->bytes = bytes;
	e->until_ms = until_ms;
	sl_list_push_back(&l->order, &e->link);
	l->count++;
	l->bytes += bytes;
	return true;
}

static bool expired(const struct sl_lru_entry *e, uint64_t now_ms)
{
	return e->until_ms && now_ms >= e->until_ms;
}

struct sl_lru_entry *sl_lru_get(struct sl_lru *l, const char *key, uint64_t now_ms)
{
	struct sl_lru_entry *e = sl_map_get(&l->map, key);

	if (e && expired(e, now_ms)) {
		sl_lru_drop(l, e);
		return NULL;
	}
	return e;
}

struct sl_lru_entry *sl_lru_peek(const struct sl_lru *l, const char *key)
{
	return sl_map_get(&l->map, key);
}

void sl_lru_touch(struct sl_lru *l, struct sl_lru_entry *e)
{
	sl_list_remove(&e->link);
	sl_list_push_back(&l->order, &e->link);
}

bool sl_lru_del(struct sl_lru *l, const char *key)
{
	struct sl_lru_entry *e = sl_map_get(&l->map, key);

	if (!e)
		return false;
	sl_lru_drop(l, e);
	return true;
}

size_t sl_lru_expire(struct sl_lru *l, uint64_t now_ms)
{
	struct sl_list *n, *next;
	size_t dropped = 0;

	sl_list_each_safe(n, next, &l->order) {
		struct sl_lru_entry *e = sl_list_entry(n, struct sl_lru_entry, link);
		if (expired(e, now_ms)) {
			sl_lru_drop(l, e);
			dropped++;
		}
	}
	return dropped;
}

struct sl_lru_entry *sl_lru_oldest(const struct sl_lru *l)
{
	struct sl_list *n = sl_list_first(&l->order);
	return n ? sl_list_entry(n, struct sl_lru_entry, link) : NULL;
}

static void set_member_free(struct sl_lru_entry *e, void *arg)
{
	(void)arg;
	free(e);
}

void sl_lru_init_set(struct sl_lru *l, size_t max_count)
{
	sl_lru_init(l, max_count, 0, set_member_free, NULL);
}

bool sl_lru_set_add(struct sl_lru *l, const char *key)
{
	struct sl_lru_entry *e = sl_lru_get(l, key, 0);

	if (e) {
		sl_lru_touch(l, e);
		return false;
	}
	(void)sl_lru_put(l, key, sl_alloc(sizeof(*e)), 0, 0);
	return true;
}

/*
 * One bounded map with least-recently-used eviction and a time to live:
 * every cache of the gateway is one of these (token verdicts, key sets,
 * kept results, the cache stage, per-user links, tokenize maps, quota
 * subjects, pending web logins, held subject tokens). Keys are strings (copied); an entry is the caller's struct with a
 * struct sl_lru_entry embedded, freed through the map's free callback when
 * it is evicted, expires, is replaced or deleted, or the map is disposed.
 *
 * Bounds: at most max_count entries and max_bytes of the sizes their
 * owners declare (0: no bound of that kind). A put that would pass a bound
 * first evicts the least recently used entries; an entry larger than
 * max_bytes alone is refused (and freed). Expiry is lazy: a get of an
 * expired entry drops it and returns NULL, and sl_lru_expire drops every
 * expired entry (for a periodic sweep).
 *
 * API:
 *   struct item { struct sl_lru_entry e; ... };
 *   static void item_free(struct sl_lru_entry *e, void *arg) { free(sl_lru_item(e, struct item, e)); }
 *   struct sl_lru l;  sl_lru_init(&l, 1000, 0, item_free, NULL);
 *   sl_lru_put(&l, "key", &it->e, bytes, until_ms);   until_ms 0: never expires
 *   struct sl_lru_entry *e = sl_lru_get(&l, "key", now_ms);   NULL: none or expired
 *   sl_lru_touch(&l, e);                               now the most recently used
 *   e = sl_lru_peek(&l, "key");                        expired or not, nothing changes
 *   sl_lru_del(&l, "key");  sl_lru_dispose(&l);
 *
 * A bounded set of keys (what was already warned about):
 *   sl_lru_init_set(&l, 4096);  if (sl_lru_set_add(&l, "key")) ...first time
 */
#ifndef SL_CORE_LRU_H
#define SL_CORE_LRU_H

#include "core/common.h"
#include "core/list.h"
#include "core/map.h"

#include <stdbool.h>

struct sl_lru_entry {
	struct sl_list link;  /* in the map's order: least recently used first */
	const char *key;      /* the map's copy, for the owner to read */
	size_t bytes;         /* what the owner declared it holds */
	uint64_t until_ms;    /* sl_now_ms() deadline; 0: never expires */
};

typedef void (*sl_lru_free_fn)(struct sl_lru_entry *e, void *arg);

struct sl_lru {
	struct sl_map map;    /* key -> struct sl_lru_entry * */
	struct sl_list order; /* least recently used first */
	size_t count, bytes;
	size_t max_count, max_bytes;
	sl_lru_free_fn free;
	void *arg;
};

#define sl_lru_item(e, type, member) sl_list_entry(e, type, member)

void sl_lru_init(struct sl_lru *l, size_t max_count, size_t max_bytes, sl_lru_free_fn free_fn,
		 void *arg);
/* Frees every entry. */
void sl_lru_dispose(struct sl_lru *l);
/* Changes the bounds, evicting at once what no longer fits. */
void sl_lru_set_bounds(struct sl_lru *l, size_t max_count, size_t max_bytes);
/* Keeps e under key (taken) as the most recently used: an entry already
 * under key is freed first, then the least recently used entries until e
 * fits. False: bytes alone is over max_bytes; e was freed, and nothing
 * else changed. */
bool sl_lru_put(struct sl_lru *l, const char *key, struct sl_lru_entry *e, size_t bytes,
		uint64_t until_ms);
/* The live entry under key (an expired one, at now_ms, is freed), or NULL.
 * Does not change the order: a cache that wants least-recently-*used*
 * rather than oldest-first calls sl_lru_touch on a hit. */
struct sl_lru_entry *sl_lru_get(struct sl_lru *l, const char *key, uint64_t now_ms);
/* The entry under key, expired or not, changing nothing (for counts and
 * reports that must not drop what they look at), or NULL. */
struct sl_lru_entry *sl_lru_peek(const struct sl_lru *l, const char *key);
/* e becomes the most recently used. */
void sl_lru_touch(struct sl_lru *l, struct sl_lru_entry *e);
/* Frees the entry under key, if any; true if there was one. */
bool sl_lru_del(struct sl_lru *l, const char *key);
/* Frees e (an entry of l). */
void sl_lru_drop(struct sl_lru *l, struct sl_lru_entry *e);
/* Frees every entry expired at now_ms; returns how many. */
size_t sl_lru_expire(struct sl_lru *l, uint64_t now_ms);
/* The least recently used entry, or NULL. */
struct sl_lru_entry *sl_lru_oldest(const struct sl_lru *l);

/* l as a set of at most max_count keys, the least recently added (or
 * found) forgotten first. */
void sl_lru_init_set(struct sl_lru *l, size_t max_count);
/* True if key was not in the set (now it is); false if it was (now the
 * most recent). */
bool sl_lru_set_add(struct sl_lru *l, const char *key);

#endif

/*
 * A string-keyed hash map (open addressing, linear probing) for lookups by
 * name: exposed tool names, request ids. Keys are copied; values borrowed.
 *
 * API:
 *   struct sl_map m; sl_map_init(&m);
 *   sl_map_put(&m, "k", v);  v = sl_map_get(&m, "k");  sl_map_del(&m, "k");
 *   sl_map_each(&m, fn, ctx);          fn(key, value, ctx) for every entry
 *   sl_map_dispose(&m);
 */
#ifndef SL_CORE_MAP_H
#define SL_CORE_MAP_H

#include "core/common.h"

struct sl_map_slot {
	char *key;   /* NULL: empty; TOMBSTONE: deleted */
	void *value;
};

struct sl_map {
	struct sl_map_slot *slots;
	size_t cap;   /* power of two */
	size_t used;  /* live + deleted */
	size_t live;
};

void sl_map_init(struct sl_map *m);
void sl_map_dispose(struct sl_map *m);
/* Replaces any value under key. */
void sl_map_put(struct sl_map *m, const char *key, void *value);
void *sl_map_get(const struct sl_map *m, const char *key);
/* The map's own copy of key (lives until the entry is deleted), or NULL. */
const char *sl_map_key(const struct sl_map *m, const char *key);
/* Returns the removed value, or NULL. key may be the map's own copy. */
void *sl_map_del(struct sl_map *m, const char *key);
typedef void sl_map_each_fn(const char *key, void *value, void *ctx);

/* Calls fn for every entry, in no particular order. fn may delete the entry
 * it is given (sl_map_del) but must not add any: a put may move them all. */
void sl_map_each(struct sl_map *m, sl_map_each_fn *fn, void *ctx);

/* The first value (in no particular order) for which pred is true, or NULL.
 * pred must not change the map. */
void *sl_map_find(const struct sl_map *m, bool (*pred)(const void *value, const void *ctx),
		  const void *ctx);

#endif

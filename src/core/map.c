/* String-keyed open-addressing hash map. */
#include "core/map.h"

#include <stdlib.h>
#include <string.h>

static char tombstone[1];

static bool live(const struct sl_map_slot *s)
{
	return s->key && s->key != tombstone;
}

void sl_map_init(struct sl_map *m)
{
	memset(m, 0, sizeof(*m));
}

void sl_map_dispose(struct sl_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (live(&m->slots[i]))
			free(m->slots[i].key);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

static size_t hash(const char *k)
{
	return (size_t)sl_hash64(k, strlen(k), 0);
}

static struct sl_map_slot *find(const struct sl_map *m, const char *key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct sl_map_slot *s = &m->slots[i];
		if (!s->key)
			return NULL;
		if (s->key != tombstone && strcmp(s->key, key) == 0)
			return s;
	}
}

static void insert(struct sl_map *m, char *key, void *value)
{
	for (size_t i = hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct sl_map_slot *s = &m->slots[i];
		if (!s->key) {
			s->key = key;
			s->value = value;
			m->used++;
			m->live++;
			return;
		}
	}
}

static void rehash(struct sl_map *m, size_t cap)
{
	struct sl_map_slot *old = m->slots;
	size_t ocap = m->cap;

	m->slots = sl_alloc(cap * sizeof(*m->slots));
	m->cap = cap;
	m->used = m->live = 0;
	for (size_t i = 0; i < ocap; i++)
		if (live(&old[i]))
			insert(m, old[i].key, old[i].value);
	free(old);
}

void sl_map_put(struct sl_map *m, const char *key, void *value)
{
	struct sl_map_slot *s = find(m, key);
	if (s) {
		s->value = value;
		return;
	}
	if ((m->used + 1) * 4 >= m->cap * 3)
		rehash(m, m->cap ? (m->live * 2 >= m->cap ? m->cap * 2 : m->cap) : 16);
	insert(m, sl_strdup(key), value);
}

void *sl_map_get(const struct sl_map *m, const char *key)
{
	struct sl_map_slot *s = find(m, key);
	return s ? s->value : NULL;
}

const char *sl_map_key(const struct sl_map *m, const char *key)
{
	struct sl_map_slot *s = find(m, key);
	return s ? s->key : NULL;
}

void *sl_map_del(struct sl_map *m, const char *key)
{
	struct sl_map_slot *s = find(m, key);
	void *v;
	if (!s)
		return NULL;
	v = s->value;
	free(s->key);
	s->key = tombstone;
	s->value = NULL;
	m->live--;
	return v;
}

void sl_map_each(struct sl_map *m, sl_map_each_fn *fn, void *ctx)
{
	/* A delete leaves a tombstone and never rehashes: the slots stay put. */
	for (size_t i = 0; i < m->cap; i++)
		if (live(&m->slots[i]))
			fn(m->slots[i].key, m->slots[i].value, ctx);
}

void *sl_map_find(const struct sl_map *m, bool (*pred)(const void *value, const void *ctx),
		  const void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (live(&m->slots[i]) && pred(m->slots[i].value, ctx))
			return m->slots[i].value;
	return NULL;
}

/*
 * Tool pins across replicas (docs/internals/REPLICAS.md): every pin a
 * store changes goes to the Redis hash <prefix>pins (field "KEY\nTOOL",
 * value {"key", "tool", "pin": entry or null}) and is announced on the
 * channel <prefix>pins; every replica applies what it hears to its own
 * store (its pin file too) and its clients hear tools/list_changed. On
 * each (re)connect a replica reconciles with the hash: per tool key the
 * pin with the later pinnedAt wins (last writer wins), so an approval made
 * here while Redis was down reaches the others once it is back. The pin
 * file stays the store without Redis, or while it is down.
 *
 * The store itself is the pinning stage's (stages/pinning.c): this side
 * sees it only through struct sl_pin_store below, which the stage hands
 * it (sl_pinning_link), so the shared link knows no stage.
 *
 * API:
 *   sp = sl_shared_pins_attach(redis, store, changed, ctx);  a gateway's store
 *       changed(ctx) after pins another replica made were applied
 *   sl_shared_pins_detach(sp);                               NULL is fine
 *   push = sl_shared_pins_push_start(store, &cfg->redis);    `sluice pins`
 *   ...approve, forget...
 *   rc = sl_shared_pins_push_end(push, &sent, &err);  <0: some reached only the file
 */
#ifndef SL_SHARED_PINS_H
#define SL_SHARED_PINS_H

#include "config/config.h"
#include "core/common.h"

#include <yyjson.h>

struct sl_redis;
struct sl_shared_pins;
struct sl_shared_pins_push;

/* A pin the store changed (approve, forget, first sight, moves): key, tool,
 * and the new entry {"sha256", "scheme", "pinnedAt", "definition"}
 * (borrowed for the call), or NULL when it was forgotten. */
typedef void sl_pins_change_fn(void *ctx, const char *key, const char *tool, yyjson_val *entry);

/*
 * A pin store as the shared link uses it: the functions are the store's,
 * self the store (borrowed: it outlives the link that holds this).
 */
struct sl_pin_store {
	void *self;
	/* The stored entry of key's tool (after re-reading a changed file), or
	 * NULL; key "" re-reads alone. Borrowed until the next change. */
	yyjson_val *(*entry)(void *self, const char *key, const char *tool);
	/* Every stored pin: {key: {tool: entry}}, or NULL. Borrowed likewise. */
	yyjson_val *(*servers)(void *self);
	/* Stores entry (NULL: forgets the pin) as another replica made it, in
	 * the store's file too; not told to the observer. *changed says
	 * whether it differed. */
	int (*put)(void *self, const char *key, const char *tool, yyjson_val *entry, bool *changed,
		   struct sl_err *err);
	/* Hears every pin the store changes itself from now on (fn NULL: none). */
	void (*observe)(void *self, sl_pins_change_fn *fn, void *ctx);
};

/* The hash field of a pin: "KEY\nTOOL", owned by the caller. */
char *sl_shared_pins_field(const char *key, const char *tool);
/* The message (and hash value) for a pin: {"key", "tool", "pin"}, owned. */
char *sl_shared_pins_message(const char *key, const char *tool, yyjson_val *entry, size_t *len);
/* Parses a message into *doc (the caller frees it); false if it is not one. */
bool sl_shared_pins_parse(const char *msg, size_t len, yyjson_doc **doc, const char **key,
			  const char **tool, yyjson_val **entry);
/* Whether the pin theirs should replace ours (NULL: none) when reconciling:
 * a later pinnedAt, or the same moment and a different definition. */
bool sl_shared_pins_newer(yyjson_val *theirs, yyjson_val *ours);

struct sl_shared_pins *sl_shared_pins_attach(struct sl_redis *r, struct sl_pin_store store,
					     void (*changed)(void *ctx), void *ctx);
void sl_shared_pins_detach(struct sl_shared_pins *sp);

struct sl_shared_pins_push *sl_shared_pins_push_start(struct sl_pin_store store,
						      const struct sl_redis_config *cfg);
int sl_shared_pins_push_end(struct sl_shared_pins_push *p, size_t *sent, struct sl_err *err)
	SL_MUST_USE;

#endif

/*
 * Tool pinning (rug-pull defence): a SHA-256 pin per (server identity, tool)
 * (sl_pinning_key: command and arguments, or URL; pins keyed by name alone
 * are moved there once at load) over the
 * canonical JSON of the tool's whole definition, cleaned as clients see it
 * (pin scheme 2; a pin of scheme 1, six fields, is re-pinned once while it
 * still matches), kept in <stateDir>/pins.json. A definition that changed
 * since it was pinned (or, by config, a new tool on a known server) is
 * hidden and refused until `sluice pins approve`. Invisible, bidirectional
 * and tag characters are stripped from every string of a definition, keys
 * included, always.
 * See docs/stages/pinning.md.
 *
 * API (the stage is sl_stage_pinning in the table, whose state, struct
 * sl_pinning, owns one open store and whose present hook cleans what
 * clients see; these are for `sluice pins` and tests):
 *   sl_pinning_clean(d, tool);              strip hidden characters from a copied definition
 *   sl_pinning_hash(def, hex);              the pin of a definition
 *   if (sl_pinning_open(cfg, section, tolerant, &pins, &err) < 0) ...
 *   st = sl_pinning_check(pins, server, def, &pin);
 *   sl_pinning_close(pins);
 */
#ifndef SL_STAGES_PINNING_H
#define SL_STAGES_PINNING_H

#include "pipeline/call.h"
#include "shared/pins.h"

#define SL_PIN_HEX 65 /* 64 hex digits and a NUL */

/* Removes U+200B-U+200F, U+202A-U+202E, U+2060-U+2064, U+2066-U+2069,
 * U+FEFF, U+E0000-U+E007F and U+00AD from s in place; returns the new
 * length. */
size_t sl_pinning_strip(char *s, size_t len);
/* Strips those characters from a tool definition (or a router summary)
 * that will be shown to a client: every string in it, object keys included,
 * to a depth of 128. The definition is a copy in d; strings are replaced in
 * d. Pure: the stage's present hook (sl_stages_present) calls it on what
 * clients see. */
void sl_pinning_clean(yyjson_mut_doc *d, yyjson_mut_val *tool);
/* The pinned part of a tool definition (all of it, cleaned), in d. */
yyjson_mut_val *sl_pinning_subject(yyjson_mut_doc *d, yyjson_val *def);
/* SHA-256 (hex) of the canonical subject of def; *canon (if not NULL)
 * receives the canonical JSON, which the caller frees. */
void sl_pinning_hash(yyjson_val *def, char hex[SL_PIN_HEX], char **canon);
/* The pin of def under scheme 1 (six fields, titles and descriptions
 * cleaned), which pins without a "scheme" are of: for the store, which
 * re-pins those that still match. */
void sl_pinning_hash_v1(yyjson_val *def, char hex[SL_PIN_HEX]);


/* ---- the pin store, for the stage and `sluice pins` ---- */

enum sl_pin_status {
	SL_PIN_OK,      /* pinned, unchanged */
	SL_PIN_FIRST,   /* the server has no pins yet: trusted at first sight */
	SL_PIN_NEW,     /* not pinned, on a server that has pins */
	SL_PIN_CHANGED, /* pinned, and the definition differs */
};

/* The store: the pins file of one state directory as last read, owned by
 * whoever opened it (the stage's state owns one; `sluice pins` opens its
 * own, without the pipeline). */
struct sl_pins;
/* The stage's state: its store, its modes and what it already warned about. */
struct sl_pinning;

/* Opens the store the config names (sluice.pinning, whose every key is
 * checked) into *out, owned by the caller. tolerant: a corrupt pins file is
 * read as empty (for `pins reset`) instead of failing. On failure err says
 * why and *out is untouched. */
int sl_pinning_open(const struct sl_config *cfg, yyjson_val *section, bool tolerant,
		    struct sl_pins **out, struct sl_err *err) SL_MUST_USE;
/* Frees the store (NULL is fine). */
void sl_pinning_close(struct sl_pins *pins);
/* The pins file's path, or NULL without a state directory. Borrowed. */
const char *sl_pinning_file(const struct sl_pins *pins);
/* The status of a live definition; *pin (if not NULL) gets the stored entry
 * {"sha256", "pinnedAt", "definition"} (borrowed until the next store
 * change) or NULL. */
/* A status's word, as `sluice pins list` and /admin show it: "ok",
 * "unpinned", "new" or "changed". */
const char *sl_pin_status_name(enum sl_pin_status st);
enum sl_pin_status sl_pinning_check(const struct sl_pins *pins, const char *server,
				    yyjson_val *def, yyjson_val **pin);
/* The stored pins: the "servers" object {server: {tool: entry}}, or NULL.
 * Borrowed until the next store change. */
yyjson_val *sl_pinning_servers(const struct sl_pins *pins);
/* Stores the current definitions of defs[0..n) of server (approve). */
int sl_pinning_approve(struct sl_pins *pins, const char *server, yyjson_val *const *defs,
		       size_t n, struct sl_err *err) SL_MUST_USE;
/* Forgets pins: all (server NULL), a server's (tool NULL) or one. *count
 * gets how many were forgotten. */
int sl_pinning_forget(struct sl_pins *pins, const char *server, const char *tool,
		      size_t *count, struct sl_err *err) SL_MUST_USE;

/* Hears every pin the store changes (approve, forget, first sight, moves;
 * sl_pins_change_fn, shared/pins.h). Changes made by sl_pinning_put are
 * not told. fn NULL: none. */
void sl_pinning_observe(struct sl_pins *pins, sl_pins_change_fn *fn, void *ctx);
/* The stored entry of key's tool (after re-reading a changed file), or
 * NULL. Borrowed until the next store change. */
yyjson_val *sl_pinning_entry(struct sl_pins *pins, const char *key, const char *tool);
/* Stores entry (NULL: forgets the pin) as another replica made it, in the
 * file too; *changed says whether it differed from the stored one. */
int sl_pinning_put(struct sl_pins *pins, const char *key, const char *tool, yyjson_val *entry,
		   bool *changed, struct sl_err *err) SL_MUST_USE;

/* The key a server's pins are kept under: its name, "#", and 16 hex digits
 * of the SHA-256 of its identity (command and arguments, or URL; never
 * env). Owned by the caller. */
char *sl_pinning_key(const struct sl_server_config *sc);
/* pins as the shared link uses it (shared/pins.h): observe, entry,
 * servers and put above, on pins (borrowed). */
struct sl_pin_store sl_pinning_link(struct sl_pins *pins);

/* ---- held-back tools, for the gateway, `sluice check` and tools/list ---- */

struct sl_upstream;

/* `sluice pins approve SERVER[.TOOL]` and the admin page's approve
 * (gateway/admin.c), one path: stores the live definitions of up's tools
 * (tool NULL: all of them) in pins, in one write. fn (NULL: none) hears
 * each tool approved, with its status before. *n gets how many. */
typedef void sl_pin_approved_fn(void *ctx, const struct sl_upstream *up, yyjson_val *def,
				enum sl_pin_status before);
int sl_pinning_approve_live(struct sl_pins *pins, const struct sl_upstream *up, const char *tool,
			    sl_pin_approved_fn *fn, void *ctx, size_t *n,
			    struct sl_err *err) SL_MUST_USE;
/* `sluice pins reset [SERVER[.TOOL]]` and the admin page's reset: forgets
 * the pins of server (NULL: all) or of its tool, under the identity key of
 * cfg's server of that name and under the bare name (an earlier sluice's
 * key). *count gets how many were forgotten. */
int sl_pinning_reset(struct sl_pins *pins, const struct sl_config *cfg, const char *server,
		     const char *tool, size_t *count, struct sl_err *err) SL_MUST_USE;
/* The stage state's store (borrowed, the state's), or NULL for pg NULL:
 * what the running gateway approves and resets in. */
struct sl_pins *sl_pinning_store(struct sl_pinning *pg);

enum sl_pin_hold {
	SL_PIN_SHOWN,        /* pinned and unchanged, or let through by the config */
	SL_PIN_HELD_CHANGED, /* hidden: its definition changed since it was pinned */
	SL_PIN_HELD_NEW,     /* hidden: a new tool, and sluice.pinning.new is "block" */
};

/* A server's held-back tools: how many of each kind, and the change's
 * signature (SHA-256 over their names and pins, "" when none). */
struct sl_pin_review {
	size_t changed, fresh;
	char sig[SL_PIN_HEX];
};

/* Whether the stage (pg, from sl_gen_state; NULL: no pinning) hides def of
 * up. Changes nothing (first-sight pinning happens when a client lists). */
enum sl_pin_hold sl_pinning_hold(struct sl_pinning *pg, const struct sl_upstream *up,
				 yyjson_val *def);
/* Counts up's held-back tools into *r; changes nothing. */
void sl_pinning_review(struct sl_pinning *pg, const struct sl_upstream *up,
		       struct sl_pin_review *r);
/* The gateway heard up's (new) lists: logs one warning per server when the
 * set of held-back tools is new (how many, and the `sluice pins diff` and
 * `approve` commands), never again for the same set. Shares the pins
 * (sl_pinning_share). Returns how many are held back. */
size_t sl_pinning_announce(struct sl_pinning *pg, const struct sl_upstream *up);
/* Once the services the state was made with have a Redis link, the
 * state's pins (pg NULL: none) are shared with the other replicas from now
 * on (shared/pins.h), and pins they change are announced to the services'
 * tools_changed observer. Called when the gateway gets its Redis link or
 * takes a new generation, and at each announce; once is enough. */
void sl_pinning_share(struct sl_pinning *pg);
/* Whether pg (NULL: none) asks people about held-back tools (askOnChange,
 * on a gateway without authenticated callers: with them, trusting a change
 * is the operator's act, docs/stages/pinning.md). */
bool sl_pinning_asks(const struct sl_pinning *pg);
/* With askOnChange, asks through ask (a client that can elicit; the gateway
 * calls this for each server the listing caller who may see) about up's
 * held-back set, unless a client was asked about that set already or one
 * of its tools is hidden from who (ask->sees): accept pins it and the
 * services' tools_changed observer hears it. Never suspends. */
void sl_pinning_offer(struct sl_pinning *pg, const struct sl_asker *ask,
		      const struct sl_caller *who, struct sl_upstream *up);

extern const struct sl_stage sl_stage_pinning;

#endif

/*
 * Tool pinning (rug-pull defence): a SHA-256 pin per (server, tool) over the
 * canonical JSON of the tool's name, title, description, inputSchema,
 * outputSchema and annotations, kept in <stateDir>/pins.json. A definition
 * that changed since it was pinned (or, by config, a new tool on a known
 * server) is hidden and refused until `sluice pins approve`. Invisible,
 * bidirectional and tag characters are stripped from tool metadata always.
 * See docs/stages/pinning.md.
 *
 * API (the stage is sl_stage_pinning in the table; these are for the
 * gateway's listings, `sluice pins` and tests):
 *   sl_pinning_clean(d, tool);              strip hidden characters from a copied definition
 *   sl_pinning_hash(def, hex);              the pin of a definition
 *   sl_pinning_write_atomic(dir, name, data, len, &err);
 */
#ifndef SL_STAGES_PINNING_H
#define SL_STAGES_PINNING_H

#include "pipeline/call.h"

#define SL_PIN_HEX 65 /* 64 hex digits and a NUL */

/* Removes U+200B-U+200F, U+202A-U+202E, U+2060-U+2064, U+2066-U+2069,
 * U+FEFF, U+E0000-U+E007F and U+00AD from s in place; returns the new
 * length. */
size_t sl_pinning_strip(char *s, size_t len);
/* Strips those characters from a tool definition (or a router summary)
 * that will be shown to a client: title, description, annotations.title and
 * every "title"/"description" string inside inputSchema and outputSchema.
 * The definition is a copy in d; strings are replaced in d. */
void sl_pinning_clean(yyjson_mut_doc *d, yyjson_mut_val *tool);
/* The pinned part of a tool definition (the six fields, cleaned), in d. */
yyjson_mut_val *sl_pinning_subject(yyjson_mut_doc *d, yyjson_val *def);
/* SHA-256 (hex) of the canonical subject of def; *canon (if not NULL)
 * receives the canonical JSON, which the caller frees. */
void sl_pinning_hash(yyjson_val *def, char hex[SL_PIN_HEX], char **canon);

/* Writes dir/name atomically: a temp file in dir, fsync, rename, fsync of
 * dir. On failure the old file is untouched, no temp file is left, and err
 * says what failed. */
int sl_pinning_write_atomic(const char *dir, const char *name, const char *data, size_t len,
			    struct sl_err *err) SL_MUST_USE;

/* ---- the pin store, for the stage and `sluice pins` ---- */

enum sl_pin_status {
	SL_PIN_OK,      /* pinned, unchanged */
	SL_PIN_FIRST,   /* the server has no pins yet: trusted at first sight */
	SL_PIN_NEW,     /* not pinned, on a server that has pins */
	SL_PIN_CHANGED, /* pinned, and the definition differs */
};

/* Opens the store the config names (sluice.pinning), replacing any open
 * one. tolerant: a corrupt pins file is read as empty (for `pins reset`)
 * instead of failing. */
int sl_pinning_open(const struct sl_config *cfg, yyjson_val *section, bool tolerant,
		    struct sl_err *err) SL_MUST_USE;
void sl_pinning_close(void);
/* The pins file's path (after open). */
const char *sl_pinning_file(void);
/* The status of a live definition; *pin (if not NULL) gets the stored entry
 * {"sha256", "pinnedAt", "definition"} (borrowed until the next store
 * change) or NULL. */
enum sl_pin_status sl_pinning_check(const char *server, yyjson_val *def, yyjson_val **pin);
/* The stored pins: the "servers" object {server: {tool: entry}}, or NULL. */
yyjson_val *sl_pinning_servers(void);
/* Stores the current definitions of defs[0..n) of server (approve). */
int sl_pinning_approve(const char *server, yyjson_val *const *defs, size_t n,
		       struct sl_err *err) SL_MUST_USE;
/* Forgets pins: all (server NULL), a server's (tool NULL) or one. *count
 * gets how many were forgotten. */
int sl_pinning_forget(const char *server, const char *tool, size_t *count,
		      struct sl_err *err) SL_MUST_USE;

extern const struct sl_stage sl_stage_pinning;

#endif

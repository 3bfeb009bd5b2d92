/*
 * The response governor: a token budget for what enters the model's
 * context. Results over it are shortened (JSON structurally, text head and
 * tail) with a marker that names a result id; the whole result stays in
 * the session's store for read_result. Results handed to a program are
 * never shortened.
 */
#ifndef SL_STAGES_GOVERNOR_H
#define SL_STAGES_GOVERNOR_H

#include "core/json.h"

struct sl_session;

bool sl_governor_enabled(void);
/* The budget in estimated tokens (bytes / 4). */
size_t sl_governor_max_tokens(void);
static inline size_t sl_tokens(size_t bytes)
{
	return (bytes + 3) / 4;
}

/* Shortens text to about budget bytes: head, a marker, tail. Returns a
 * new string (caller frees). id may be NULL (no read_result hint). */
char *sl_governor_cut_text(const char *text, size_t len, size_t budget, const char *id);
/* Governs a program's final output for the model: returns NULL if it fits,
 * else the shortened text (caller frees), the whole kept in s's store. */
char *sl_governor_output(struct sl_session *s, const char *text, size_t len);

/* The store of s, created on first use with the governor's TTL and cap. */
struct sl_results *sl_governor_store(struct sl_session *s);

#endif

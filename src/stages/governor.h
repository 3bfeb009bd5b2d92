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
/* The stage's state: its settings (sl_gen_state(gen, &sl_stage_governor)). */
struct sl_governor;

bool sl_governor_enabled(const struct sl_governor *gov);
/* The budget in estimated tokens (bytes / 4). */
size_t sl_governor_max_tokens(const struct sl_governor *gov);
static inline size_t sl_tokens(size_t bytes)
{
	return (bytes + 3) / 4;
}

/* Shortens text to about budget bytes: head, a marker, tail. Returns a
 * new string (caller frees) of *out_len bytes (text and so the result may
 * hold NUL). id may be NULL (no read_result hint). */
char *sl_governor_cut_text(const char *text, size_t len, size_t budget, const char *id,
			   size_t *out_len);

/* ttlMs; maxSharedBytes; the store of 2026-07-28 callers' results
 * (gateway/kept.h), the governor's. */
uint64_t sl_governor_ttl_ms(const struct sl_governor *gov);
size_t sl_governor_shared_bytes(const struct sl_governor *gov);
struct sl_results *sl_governor_callers(const struct sl_governor *gov);
/* The store of s, created on first use with the governor's TTL and cap. */
struct sl_results *sl_governor_store(const struct sl_governor *gov, struct sl_session *s);

#endif

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
struct sl_kept_wait;
/* The stage's state: its settings (sl_gen_state(gen, &sl_stage_governor)). */
struct sl_governor;

#define SL_KEPT_ID_SIZE 32

typedef void sl_kept_stored_fn(void *ctx, bool ok);

/*
 * Where the whole of a shortened result is kept for read_result. Kept
 * results belong to the session the call (c->session) or the program's
 * answer (o->session) came through, which the governor hands on without
 * looking into it; the session's owner keeps them (gateway/kept.c) and
 * registers this on the generation's services (pipeline/gen.h). Without
 * it (no gateway) nothing is kept and no id is offered.
 */
struct sl_keeper {
	/* Keeps json (taken) for s's client; true with its id in id, false
	 * when it alone is over the store's cap. When it goes to the shared
	 * store and stored is not NULL, *wait is the write's (else NULL):
	 * stored runs once, later (at most commandTimeoutMs), unless
	 * abandoned. */
	bool (*put)(const struct sl_governor *gov, struct sl_session *s, char *json, size_t len,
		    char id[SL_KEPT_ID_SIZE], sl_kept_stored_fn *stored, void *ctx,
		    struct sl_kept_wait **wait);
	/* The asker of a put is gone: its stored never runs. NULL is fine. */
	void (*abandon)(struct sl_kept_wait *w);
};

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

/* ttlMs; maxStoreBytes; maxSharedBytes; the store of 2026-07-28 callers'
 * results (stages/results.h, gateway/kept.h), the governor's. */
uint64_t sl_governor_ttl_ms(const struct sl_governor *gov);
size_t sl_governor_store_bytes(const struct sl_governor *gov);
size_t sl_governor_shared_bytes(const struct sl_governor *gov);
struct sl_results *sl_governor_callers(const struct sl_governor *gov);

#endif

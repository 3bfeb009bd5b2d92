/*
 * Full results kept for read_result: when the governor shortens a result
 * for the model's context, the whole one stays here for a while (TTL) and
 * within a memory cap (the oldest go first). A session-era session has a
 * store of its own; the governor keeps one more for 2026-07-28 requests,
 * whose entries each belong to a caller (owner), since every such request
 * is a session of its own (gateway/kept.h).
 *
 * API:
 *   r = sl_results_new(ttl_ms, max_bytes);
 *   id = sl_results_put(r, json, len);    takes json; id is valid until the next put
 *   text = sl_results_get(r, "r3", &len); borrowed; NULL if unknown or expired
 *   sl_results_free(r);
 */
#ifndef SL_STAGES_RESULTS_H
#define SL_STAGES_RESULTS_H

#include "core/common.h"

struct sl_results;

struct sl_results *sl_results_new(uint64_t ttl_ms, size_t max_bytes);
void sl_results_free(struct sl_results *r);
/* Keeps json (taken). Returns its id, or NULL if it alone exceeds the cap. */
const char *sl_results_put(struct sl_results *r, char *json, size_t len);
const char *sl_results_get(struct sl_results *r, const char *id, size_t *len);
/* Also at most max_count entries (the oldest go first); 0: no count cap. */
void sl_results_set_max_count(struct sl_results *r, size_t max_count);
/* As put, under id (copied, at most 31 bytes; NULL: the next "rN") and for
 * owner (copied, at most 64 bytes; NULL: none). */
const char *sl_results_put_as(struct sl_results *r, const char *id, const char *owner, char *json,
			      size_t len);
/* As get, only an entry of owner's (NULL: an entry put without one). */
const char *sl_results_get_for(struct sl_results *r, const char *id, const char *owner,
			       size_t *len);

#endif

/*
 * Injection guard: scores the decoded text of tool results for prompt
 * injection (weighted PCRE2 patterns over a normalised copy of the text,
 * plus hidden-text tricks: Unicode tag characters, zero-width runs, bidi
 * overrides). At or above a threshold the result gets a warning block
 * prepended ("warn", the default) or is withheld ("withhold"). A program's
 * calls are never given the block (it would change the data the program
 * computes on): warn only logs there, withhold rejects the call.
 *
 * Config: sluice.guard {enabled, threshold, action, patterns: [{regex,
 * weight, name?}]}. See docs/stages/guard.md.
 *
 * The stage's state (struct sl_guard) belongs to a generation: its init
 * compiles the built-in and custom patterns and reads the settings; its
 * fini frees them. A reload makes a new one; nothing is kept in globals.
 *
 * API (g from the generation at hand, borrowed for as long as it lives):
 *   const struct sl_guard *g = sl_gen_state(gen, &sl_stage_guard);
 *   int s = sl_guard_score_text(g, text, len);
 *   int s = sl_guard_explain(g, text, len, why, sizeof(why));   s and reasons
 *   if (sl_guard_enabled(g) && s >= sl_guard_threshold(g)) ...
 * Everything here runs on the loop's thread (the state holds match scratch).
 */
#ifndef SL_STAGES_GUARD_H
#define SL_STAGES_GUARD_H

#include "core/common.h"

/* One generation's guard: its patterns and settings (opaque). */
struct sl_guard;

/* The score of one text (UTF-8, need not be NUL-terminated or valid) under
 * g's patterns: the summed weights of every pattern and hidden-text trick
 * found in it, each counted once. Never fails; 0 for empty text, and 0
 * when g is NULL (no guard in the generation). Scores also when g is
 * disabled: callers ask sl_guard_enabled first. */
int sl_guard_score_text(const struct sl_guard *g, const char *s, size_t n);

/* The same score; writes the top reasons ("instruction override, secrecy")
 * to why (NUL-terminated, cut to n) when why is not NULL. */
int sl_guard_explain(const struct sl_guard *g, const char *s, size_t n, char *why, size_t whyn);

/* g's threshold (sluice.guard.threshold; the default when g is NULL). */
int sl_guard_threshold(const struct sl_guard *g);
/* False when sluice.guard.enabled is false, or g is NULL. */
bool sl_guard_enabled(const struct sl_guard *g);

#endif

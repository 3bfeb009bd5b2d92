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
 * API (also usable before the stage's init, with the built-in patterns):
 *   int s = sl_guard_score_text(text, len);
 *   int s = sl_guard_explain(text, len, why, sizeof(why));   s and reasons
 *   if (s >= sl_guard_threshold()) ...
 */
#ifndef SL_STAGES_GUARD_H
#define SL_STAGES_GUARD_H

#include "core/common.h"

/* The score of one text (UTF-8, need not be NUL-terminated or valid): the
 * summed weights of every pattern and hidden-text trick found in it, each
 * counted once. Never fails; 0 for empty text. */
int sl_guard_score_text(const char *s, size_t n);

/* The same score; writes the top reasons ("instruction override, secrecy")
 * to why (NUL-terminated, cut to n) when why is not NULL. */
int sl_guard_explain(const char *s, size_t n, char *why, size_t whyn);

/* The configured threshold (the default before init). */
int sl_guard_threshold(void);
/* False when sluice.guard.enabled is false. */
bool sl_guard_enabled(void);

#endif

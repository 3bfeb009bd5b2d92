/*
 * Tokenised personal data (docs/stages/tokenize.md): e-mail addresses,
 * phone numbers, payment cards, IBANs, US SSNs, UK NINOs and custom
 * patterns in what reaches the model become stable per-session
 * placeholders (<EMAIL_1>); placeholders the model sends back in a tool
 * call's arguments become the real values again, toward the servers and
 * tools sluice.tokenize.restoreTo allows.
 *
 * The stage is two entries of the stage table (pipeline/stages.c): the
 * request half (restore) before the cache, so the cache keys on real
 * arguments; the response half (tokenise) after it, so the cache stores
 * real results that each session sees through its own placeholders. Both
 * share one state (sl_stage_tokenize's), and run on the loop's thread.
 *
 * API (t borrowed from the generation at hand; key names a map: one per
 * client, the call's client_key, pipeline/call.h):
 *   size_t n = sl_tokenize_text(t, key, in, len, &out, &outlen);
 *   if (n == SL_TOKENIZE_FAILED) ... withhold the text
 *   else if (n > 0) ... use out, then free(out)
 */
#ifndef SL_STAGES_TOKENIZE_H
#define SL_STAGES_TOKENIZE_H

#include "core/common.h"
#include <yyjson.h>

#define SL_TOKENIZE_FAILED ((size_t)-1)

struct sl_tokenize;

/* Replaces every value of an enabled kind in in[0..len) by its placeholder
 * in key's map (made on first use). Returns the number replaced and sets
 * *out to a malloc'd NUL-terminated copy (NULL when 0 or on failure: a
 * text over maxTextBytes, a custom pattern's match limit). */
size_t sl_tokenize_text(struct sl_tokenize *t, const char *key, const char *in, size_t len,
			char **out, size_t *outlen);

/* Replaces every placeholder of key's map in in[0..len) by its value; an
 * unknown placeholder stays. Same returns as sl_tokenize_text. */
size_t sl_tokenize_restore(struct sl_tokenize *t, const char *key, const char *in, size_t len,
			   char **out, size_t *outlen);

/* Whether placeholders are restored toward up's tool (restoreTo). */
bool sl_tokenize_restores_to(const struct sl_tokenize *t, const char *up, const char *tool);

/* The checks, for tests: a digit string passes Luhn; an IBAN (compact,
 * upper case) passes ISO 13616 mod 97. */
bool sl_tokenize_luhn(const char *digits, size_t n);
bool sl_tokenize_iban_ok(const char *s, size_t n);

/* How many values key's map holds, and how many maps there are. */
size_t sl_tokenize_count(const struct sl_tokenize *t, const char *key);
size_t sl_tokenize_maps(const struct sl_tokenize *t);

#endif

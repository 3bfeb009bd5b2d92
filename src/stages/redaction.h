/*
 * Redaction: secrets in tool arguments and tool results are replaced by
 * [REDACTED:<kind>] before they leave the gateway, in both directions.
 * The stage (sl_stage_redaction, in pipeline/stages.c) rewrites c->args in
 * its request hook and the result in its response hook; the functions here
 * let other modules scan text too (code mode scans a program's final answer
 * again). See docs/stages/redaction.md for the patterns and the config.
 *
 * The patterns are compiled by the stage's init into the state of a
 * generation (struct sl_redaction: PCRE2, JIT where the machine allows
 * it), and freed by its fini; nothing is kept in globals. With "enabled":
 * false, or a NULL state, nothing is redacted. Everything here runs on the
 * loop's thread (the state holds match scratch).
 *
 * API (r from the generation at hand, borrowed for as long as it lives):
 *   const struct sl_redaction *r = sl_gen_state(gen, &sl_stage_redaction);
 *   char *out;
 *   size_t n = sl_redact_text(r, text, len, &out);
 *   if (n == SL_REDACT_FAILED) ... withhold the text: it could not be scanned
 *   else if (n > 0) ... use out (n secrets replaced), then free(out)
 */
#ifndef SL_STAGES_REDACTION_H
#define SL_STAGES_REDACTION_H

#include "core/common.h"
#include <yyjson.h>

/* What sl_redact_text returns when the engine failed (a match limit, an
 * output over its cap): the text must not be passed on. */
#define SL_REDACT_FAILED ((size_t)-1)

/* One generation's redaction: its patterns and settings (opaque). */
struct sl_redaction;

/* Scans in[0..len) with r's patterns (r NULL or disabled: nothing is
 * replaced). Returns the number of secrets replaced and sets *out to a
 * malloc'd, NUL-terminated copy with each replaced, or *out = NULL when
 * nothing was (0) or on failure (SL_REDACT_FAILED). */
size_t sl_redact_text(const struct sl_redaction *r, const char *in, size_t len, char **out);

/* The same with the output's length (the input may hold NUL bytes) and the
 * reason of a failure in err (may be NULL). */
size_t sl_redact_textn(const struct sl_redaction *r, const char *in, size_t len, char **out,
		       size_t *outlen, struct sl_err *err);

/* Redacts every string value under v (not the keys) with r's patterns, in
 * place, recursively to r's configured depth (r NULL or disabled: nothing);
 * new strings are allocated in d. A string member whose key names a secret
 * ("password", "api_key", ...) is replaced whole.
 * Adds the number of replacements to *count. Returns 0, or SL_ERR_INVALID
 * (too deep) / SL_ERR_TOO_LARGE (engine failure) with err set; v may then be
 * partly redacted and must not be passed on. */
int sl_redact_json(const struct sl_redaction *r, yyjson_mut_doc *d, yyjson_mut_val *v,
		   size_t *count, struct sl_err *err) SL_MUST_USE;

/* The built-in pattern kinds, in the order they are tried (for tests and
 * docs): i from 0 while the result is not NULL. */
const char *sl_redact_builtin_kind(size_t i);

#endif

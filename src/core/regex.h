/*
 * Trying many PCRE2 patterns on many short strings (the guard's and
 * redaction's): most strings of a call are keys and short values that no
 * pattern can match, and starting a match costs far more than knowing it
 * cannot. Each pattern keeps what PCRE2's own study of it says: the least
 * length of a match and the bytes a match can start with. A string too
 * short, or holding none of those bytes, is not tried. A pattern the JIT
 * compiled is run by its JIT entry (pcre2_jit_match: no per-call checks;
 * every pattern here takes any bytes, by PCRE2_MATCH_INVALID_UTF or by not
 * being UTF).
 *
 * API:
 *   struct sl_re re; sl_re_init(&re, code);     after pcre2_compile (JIT-compiles it)
 *   struct sl_re_bytes b; sl_re_scan(&b, s, n); once per string
 *   if (sl_re_may_match(&re, &b, n - off)) rc = sl_re_match(&re, s, n, off, md, mctx);
 */
#ifndef SL_CORE_REGEX_H
#define SL_CORE_REGEX_H

#include "core/common.h"

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

struct sl_re {
	pcre2_code *code;     /* borrowed: its owner frees it */
	bool jit;             /* JIT-compiled (else the interpreter runs it) */
	uint32_t minlen;      /* no match is shorter (in characters, never more
			       * than their bytes) */
	bool firsts;          /* first holds every byte a match can start with */
	uint64_t first[4];    /* a bit per byte value */
};

/* The bytes a string holds, a bit per byte value. */
struct sl_re_bytes {
	uint64_t has[4];
};

void sl_re_init(struct sl_re *re, pcre2_code *code);
void sl_re_scan(struct sl_re_bytes *b, const char *s, size_t n);

/* False when no match can be found in a string of n bytes holding b. */
static inline bool sl_re_may_match(const struct sl_re *re, const struct sl_re_bytes *b, size_t n)
{
	if (n < re->minlen)
		return false;
	return !re->firsts || ((re->first[0] & b->has[0]) | (re->first[1] & b->has[1]) |
			       (re->first[2] & b->has[2]) | (re->first[3] & b->has[3]));
}
/* pcre2_match's result for s[0, n) from off. */
int sl_re_match(const struct sl_re *re, const char *s, size_t n, size_t off,
		pcre2_match_data *md, pcre2_match_context *mctx);

#endif

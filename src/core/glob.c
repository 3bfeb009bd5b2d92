/* Glob patterns over names; see glob.h. */
#include "core/glob.h"

/* Length of the UTF-8 character starting at s (1 for a stray byte). */
static size_t utf8_len(const char *s)
{
	size_t n = 1;
	while (n < 4 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n++;
	return n;
}

bool sl_glob_match(const char *pat, const char *s)
{
	/* Iterative, with one backtrack point: linear in practice, never
	 * exponential on many stars. */
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*pat == '*') {
			star = pat++;
			resume = s;
		} else if (*pat == '?') {
			pat++;
			s += utf8_len(s);
		} else if (*pat && *pat == *s) {
			pat++;
			s++;
		} else if (star) {
			pat = star + 1;
			resume += utf8_len(resume);
			s = resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

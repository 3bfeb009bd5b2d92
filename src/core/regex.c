/* PCRE2 patterns tried cheaply on short strings; see regex.h. */
#include "core/regex.h"

#include <string.h>

static void set_bit(uint64_t *bits, unsigned c)
{
	bits[c >> 6] |= 1ull << (c & 63);
}

void sl_re_init(struct sl_re *re, pcre2_code *code)
{
	uint32_t type = 0, cu = 0;
	const uint8_t *bitmap = NULL;

	memset(re, 0, sizeof(*re));
	re->code = code;
	/* Without JIT (a kernel that forbids executable mappings) PCRE2's
	 * interpreter runs the same pattern, only slower. */
	re->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
	if (pcre2_pattern_info(code, PCRE2_INFO_MINLENGTH, &re->minlen) != 0)
		re->minlen = 0;
	if (pcre2_pattern_info(code, PCRE2_INFO_FIRSTCODETYPE, &type) != 0)
		return;
	if (type == 1 && pcre2_pattern_info(code, PCRE2_INFO_FIRSTCODEUNIT, &cu) == 0 &&
	    cu < 0x80) {
		/* One first code unit. Whether it is caseless is not told:
		 * a letter stands for both of its cases. Past ASCII the other
		 * case of a character may begin with another byte: no filter. */
		set_bit(re->first, cu);
		if ((cu | 0x20) >= 'a' && (cu | 0x20) <= 'z')
			set_bit(re->first, cu ^ 0x20);
		re->firsts = true;
	} else if (type == 0 && pcre2_pattern_info(code, PCRE2_INFO_FIRSTBITMAP, &bitmap) == 0 &&
		   bitmap) {
		/* The start bitmap PCRE2 itself skips by (cases included):
		 * 32 bytes, bit c % 8 of byte c / 8 for byte value c. */
		for (unsigned c = 0; c < 256; c++)
			if (bitmap[c >> 3] & (1u << (c & 7)))
				set_bit(re->first, c);
		re->firsts = true;
	}
}

void sl_re_scan(struct sl_re_bytes *b, const char *s, size_t n)
{
	memset(b->has, 0, sizeof(b->has));
	for (size_t i = 0; i < n; i++)
		set_bit(b->has, (unsigned char)s[i]);
}

int sl_re_match(const struct sl_re *re, const char *s, size_t n, size_t off,
		pcre2_match_data *md, pcre2_match_context *mctx)
{
	if (re->jit)
		return pcre2_jit_match(re->code, (PCRE2_SPTR)s, n, off, 0, md, mctx);
	return pcre2_match(re->code, (PCRE2_SPTR)s, n, off, 0, md, mctx);
}

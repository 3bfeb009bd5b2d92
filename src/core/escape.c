/* Escaping peer text for a person or a log; see escape.h. */
#include "core/escape.h"

#include <nettle/base64.h>

#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at s and its code point in *cp;
 * 0 for anything else (a stray byte, an overlong form, a surrogate). */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len = s[0] < 0x80 ? 1 : s[0] < 0xC0 ? 0 : s[0] < 0xE0 ? 2 : s[0] < 0xF0 ? 3 :
		     s[0] < 0xF8 ? 4 : 0;
	uint32_t c;

	if (len == 0 || len > n)
		return 0;
	c = len == 1 ? s[0] : s[0] & (0x7Fu >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3F);
	}
	if (c < least[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

/* A code point that changes what a reader sees around it rather than
 * showing itself: controls, bidi controls and marks, line separators. */
static bool hides(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E ||
	       cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

int sl_escape(struct sl_buf *b, const char *s, size_t len, enum sl_escape_style style)
{
	const unsigned char *p = (const unsigned char *)s;
	bool quoted = style == SL_ESCAPE_QUOTED;
	size_t start = b->len, i = 0, n;
	int rc = quoted ? sl_buf_append(b, "\"", 1) : 0;
	uint32_t cp;

	while (rc == 0 && i < len) {
		n = utf8_char(p + i, len - i, &cp);
		if (n == 0) {
			rc = sl_buf_printf(b, "\\x%02x", p[i]);
			i++;
			continue;
		}
		if (cp == '\n' || cp == '\r' || cp == '\t')
			rc = sl_buf_appends(b, cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t");
		else if (quoted && (cp == '"' || cp == '\\'))
			rc = sl_buf_appends(b, cp == '"' ? "\\\"" : "\\\\");
		else if (hides(cp) && cp < 0x80 && !quoted)
			rc = sl_buf_printf(b, "\\x%02x", (unsigned)cp);
		else if (hides(cp))
			rc = sl_buf_printf(b, "\\u%04x", (unsigned)cp);
		else if (style == SL_ESCAPE_HTML && cp < 0x80 && strchr("&<>\"'", (int)cp))
			rc = sl_buf_appends(b, cp == '&' ? "&amp;" : cp == '<' ? "&lt;" :
					       cp == '>' ? "&gt;" : cp == '"' ? "&quot;" : "&#39;");
		else
			rc = sl_buf_append(b, p + i, n);
		i += n;
	}
	if (rc == 0 && quoted)
		rc = sl_buf_append(b, "\"", 1);
	if (rc < 0) {
		b->len = start;
		if (b->data)
			b->data[start] = '\0';
	}
	return rc;
}

char *sl_url_encode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = sl_alloc(strlen(s) * 3 + 1), *o = out;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

/* Base64 of p in out (NUL-terminated): the URL alphabet without padding,
 * or the standard one with it. */
static size_t encode64(const void *p, size_t n, char *out, bool url)
{
	struct base64_encode_ctx ctx;
	size_t k;

	if (url)
		base64url_encode_init(&ctx);
	else
		base64_encode_init(&ctx);
	k = base64_encode_update(&ctx, out, n, p);
	k += base64_encode_final(&ctx, out + k);
	while (url && k && out[k - 1] == '=')
		k--;
	out[k] = '\0';
	return k;
}

void sl_hex(const void *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

size_t sl_base64url(const void *p, size_t n, char *out)
{
	return encode64(p, n, out, true);
}

void *sl_unbase64url(const char *s, size_t n, size_t *len)
{
	struct base64_decode_ctx ctx;
	size_t padded, got = 0;
	char *in;
	uint8_t *out;
	int ok;

	while (n && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return NULL;
	padded = (n + 3) / 4 * 4;
	in = sl_alloc(padded + 1);
	out = sl_alloc(BASE64_DECODE_LENGTH(padded) + 1);
	memcpy(in, s, n);
	memset(in + n, '=', padded - n);
	base64url_decode_init(&ctx);
	ok = base64_decode_update(&ctx, &got, out, padded, in) && base64_decode_final(&ctx);
	free(in);
	if (!ok) {
		free(out);
		return NULL;
	}
	out[got] = 0;
	*len = got;
	return out;
}

size_t sl_base64(const void *p, size_t n, char *out)
{
	return encode64(p, n, out, false);
}

void *sl_unbase64(const char *s, size_t n, size_t *len)
{
	struct base64_decode_ctx ctx;
	size_t got = 0, pad = 0;
	uint8_t *out;

	/* Nettle skips whitespace; a header value's payload holds none. */
	if (n % 4)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (ch == '=') {
			if (i + 2 < n || ++pad > 2)
				return NULL;
		} else if (pad || !((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
				    (ch >= '0' && ch <= '9') || ch == '+' || ch == '/')) {
			return NULL;
		}
	}
	out = sl_alloc(BASE64_DECODE_LENGTH(n) + 1);
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &got, out, n, s) || !base64_decode_final(&ctx)) {
		free(out);
		return NULL;
	}
	out[got] = 0;
	*len = got;
	return out;
}

/*
 * Escaping peer text before a person or a log reads it: every control
 * character (C0, DEL, C1), the bidi controls and marks (U+061C, U+200E,
 * U+200F, U+202A-U+202E, U+2066-U+2069), the line and paragraph separators
 * (U+2028, U+2029) and every byte that is not part of valid UTF-8 become
 * visible escapes. What comes out is valid UTF-8 that can neither break a
 * line, move a terminal's cursor, nor reorder the text shown around it.
 *
 * API:
 *   sl_escape(&b, s, len, SL_ESCAPE_LOG);     a<LF>b<ESC> -> a\nb\x1b
 *   sl_escape(&b, s, len, SL_ESCAPE_QUOTED);  a"b<ESC>    -> "a\"b\u001b"
 *   sl_escape(&b, s, len, SL_ESCAPE_HTML);    <a href="x">  -> &lt;a href=&quot;x&quot;&gt;
 * A byte that is not UTF-8 is \xNN in both styles.
 */
#ifndef SL_CORE_ESCAPE_H
#define SL_CORE_ESCAPE_H

#include "core/buf.h"

enum sl_escape_style {
	SL_ESCAPE_LOG,    /* the text as is, controls escaped (\n \r \t \xNN \uNNNN) */
	SL_ESCAPE_QUOTED, /* a JSON string: quotes around, " and \ escaped too */
	SL_ESCAPE_HTML,   /* LOG, and & < > " ' as entities: text or a quoted attribute
			   * value in an HTML page (the web login's, oauth/weblogin.c) */
};

/* Appends s[0..len) to b, escaped. Returns 0 or SL_ERR_TOO_LARGE (over b's
 * cap: nothing appended). At most 6 bytes come out per byte in, plus 2. */
int sl_escape(struct sl_buf *b, const char *s, size_t len, enum sl_escape_style style) SL_MUST_USE;

/* Percent-encoding for a URL's query or an application/x-www-form-urlencoded
 * body: every byte but the unreserved characters (A-Z a-z 0-9 - . _ ~)
 * becomes %XX. Malloc'd. */
char *sl_url_encode(const char *s);

/* Unpadded base64url (RFC 4648 5, as JOSE and PKCE write it) of p[0..n),
 * through Nettle, into out, which holds SL_BASE64URL_SIZE(n) bytes; NUL
 * terminated. Returns the length written. */
#define SL_BASE64URL_SIZE(n) (((n) + 2) / 3 * 4 + 1)
size_t sl_base64url(const void *p, size_t n, char *out);
/* The bytes of unpadded base64url s[0..n) (padding accepted), malloc'd
 * with a NUL after them, their count in *len; NULL when s is not
 * base64url. */
void *sl_unbase64url(const char *s, size_t n, size_t *len);
/* Padded base64 (RFC 4648 4, the standard alphabet) of p[0..n) into out,
 * which holds SL_BASE64_SIZE(n) bytes; NUL terminated. Returns the length. */
#define SL_BASE64_SIZE(n) (((n) + 2) / 3 * 4 + 1)
size_t sl_base64(const void *p, size_t n, char *out);
/* The bytes of padded base64 s[0..n), malloc'd with a NUL after them,
 * their count in *len; NULL unless s is exactly that (no whitespace). */
void *sl_unbase64(const char *s, size_t n, size_t *len);

/* Lowercase hexadecimal of p[0..n) into out, which holds 2n + 1 bytes; NUL
 * terminated. */
void sl_hex(const void *p, size_t n, char *out);

#endif

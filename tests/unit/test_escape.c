/* Unit tests of src/core/escape.c: what a log line or a confirmation shows
 * of peer text. */
#include "unit.h"
#include "core/escape.h"

#include <stdlib.h>

static char *esc(const char *s, size_t len, enum sl_escape_style style)
{
	struct sl_buf b;
	sl_buf_init(&b, 1 << 16);
	CHECK_INT(sl_escape(&b, s, len, style), 0);
	return sl_buf_take(&b, NULL);
}

#define ESC_IS(lit, style, want)                                    \
	do {                                                        \
		char *got_ = esc(lit, sizeof(lit) - 1, style);      \
		CHECK_STR(got_, want);                              \
		free(got_);                                         \
	} while (0)

TEST(escape_log_controls)
{
	/* Line breaks, a forged second line, terminal escapes (CSI, OSC). */
	ESC_IS("a\n{\"type\":\"call\"}\r\tb", SL_ESCAPE_LOG, "a\\n{\"type\":\"call\"}\\r\\tb");
	ESC_IS("\x1b[31mred\x1b]0;title\x07", SL_ESCAPE_LOG, "\\x1b[31mred\\x1b]0;title\\x07");
	ESC_IS("nul\0del\x7f", SL_ESCAPE_LOG, "nul\\x00del\\x7f");
	/* C1 (NEL, CSI), bidi controls and marks, line separators. */
	ESC_IS("\xc2\x85\xc2\x9b", SL_ESCAPE_LOG, "\\u0085\\u009b");
	ESC_IS("a\xe2\x80\xae" "b\xe2\x81\xa6\xe2\x81\xa9\xe2\x80\x8f\xd8\x9c\xe2\x80\xa8", SL_ESCAPE_LOG,
	       "a\\u202eb\\u2066\\u2069\\u200f\\u061c\\u2028");
	/* Not UTF-8: a stray continuation, an 8-bit CSI, overlong, a surrogate, cut. */
	ESC_IS("\x80\x9b\xc0\xaf\xed\xa0\x80\xe2\x80", SL_ESCAPE_LOG,
	       "\\x80\\x9b\\xc0\\xaf\\xed\\xa0\\x80\\xe2\\x80");
	/* Text is kept: quotes, backslashes, non-ASCII letters, emoji. */
	ESC_IS("\"q\" \\ caf\xc3\xa9 \xf0\x9f\x99\x82", SL_ESCAPE_LOG, "\"q\" \\ caf\xc3\xa9 \xf0\x9f\x99\x82");
}

TEST(escape_quoted_is_a_json_string)
{
	ESC_IS("", SL_ESCAPE_QUOTED, "\"\"");
	ESC_IS("docs\", pull_number=1", SL_ESCAPE_QUOTED, "\"docs\\\", pull_number=1\"");
	ESC_IS("a\\b\nc\x1b\xe2\x80\xae", SL_ESCAPE_QUOTED, "\"a\\\\b\\nc\\u001b\\u202e\"");
	ESC_IS("caf\xc3\xa9\xff", SL_ESCAPE_QUOTED, "\"caf\xc3\xa9\\xff\"");
}

TEST(escape_over_the_cap_appends_nothing)
{
	struct sl_buf b;
	sl_buf_init(&b, 8);
	CHECK_INT(sl_buf_append(&b, "ab", 2), 0);
	CHECK_INT(sl_escape(&b, "\x1b\x1b", 2, SL_ESCAPE_LOG), SL_ERR_TOO_LARGE);
	CHECK_INT(b.len, 2);
	CHECK_STR(b.data, "ab");
	sl_buf_dispose(&b);
}

/* The web login's pages show an authorization server's words and a
 * caller's name: markup comes out as text, in an element or in a quoted
 * attribute, and controls as in a log. */
TEST(escape_html_is_text)
{
	ESC_IS("<script>alert('x')</script>", SL_ESCAPE_HTML,
	       "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
	ESC_IS("\" onmouseover=\"x\" a=&amp;", SL_ESCAPE_HTML,
	       "&quot; onmouseover=&quot;x&quot; a=&amp;amp;");
	ESC_IS("alice\n\x1b[2J\xe2\x80\xae\xff", SL_ESCAPE_HTML, "alice\\n\\x1b[2J\\u202e\\xff");
	ESC_IS("caf\xc3\xa9 \xe2\x9c\x93", SL_ESCAPE_HTML, "caf\xc3\xa9 \xe2\x9c\x93");
}

TEST(escape_hex_is_lowercase_and_terminated)
{
	static const unsigned char b[] = { 0x00, 0x0f, 0xa5, 0xff, 0x10 };
	char out[2 * sizeof(b) + 2];

	memset(out, 'x', sizeof(out));
	sl_hex(b, sizeof(b), out);
	CHECK_STR(out, "000fa5ff10");
	CHECK(out[sizeof(out) - 1] == 'x'); /* 2n + 1 bytes written, no more */
	sl_hex(b, 0, out);
	CHECK_STR(out, "");
}

/* Unit tests of the TypeScript stripper (src/sandbox/strip.c): the bytecode
 * built into the library loads and strips, lines stay where they were,
 * refusals say where, the interrupt stops it, and columns of the stripped
 * JavaScript map back to the TypeScript. */
#include "unit.h"

#include "sandbox/strip.h"

#include <stdlib.h>
#include <string.h>

static int never(void *opaque)
{
	return 0;
}

static int always(void *opaque)
{
	return 1;
}

static unsigned long lines_of(const char *s)
{
	unsigned long n = 1;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

TEST(strip_removes_types_and_keeps_lines)
{
	static const char ts[] = "interface A { x: number }\n"
				 "enum E { a, b }\n"
				 "const v: A = { x: 1 } satisfies A;\n"
				 "function f<T>(x: T): T { return x!; }\n"
				 "return f<number>(v.x as number) + E.b;";
	struct sl_strip *s = sl_strip_load(never, NULL);
	struct sl_strip_error e;
	char *out = NULL;
	size_t n;

	CHECK(s != NULL);
	CHECK_INT(sl_strip_run(s, ts, sizeof(ts) - 1, &out, &n, &e), 0);
	CHECK(out && strlen(out) == n);
	CHECK(out && !strstr(out, "interface") && !strstr(out, ": number") && !strstr(out, "satisfies"));
	CHECK(out && strstr(out, "return f(v.x ) + E.b;"));
	CHECK_INT(lines_of(out), lines_of(ts));
	free(out);

	/* A refusal: the message without sucrase's own "(line:col)", and the
	 * position, 1-based. */
	CHECK_INT(sl_strip_run(s, "let a = 1;\nlet b: = 2;", 22, &out, &n, &e), -1);
	CHECK_STR(e.message, "Unexpected token");
	CHECK_INT(e.line, 2);
	CHECK_INT(e.column, 8);
	sl_strip_free(s);
}

TEST(strip_stops_when_interrupted)
{
	/* Loading runs the bundle's top level: an interrupt that always
	 * fires stops it, and the load says so (NULL), rather than leaving a
	 * stripper without its function. */
	CHECK(sl_strip_load(always, NULL) == NULL);
}

static int stop_now;

static int when_told(void *opaque)
{
	return stop_now;
}

TEST(strip_run_stops_when_interrupted)
{
	struct sl_strip *s;
	struct sl_strip_error e;
	size_t len = 0, cap = 64 * 20000;
	char *ts = malloc(cap + 1), *out = NULL;
	size_t n;

	stop_now = 0;
	s = sl_strip_load(when_told, NULL);
	CHECK(s != NULL && ts != NULL);
	while (len + 20 <= cap) {
		memcpy(ts + len, "let a: number = 1;\n", 19);
		len += 19;
	}
	ts[len] = '\0';
	stop_now = 1;
	CHECK_INT(sl_strip_run(s, ts, len, &out, &n, &e), -1);
	CHECK(strstr(e.message, "interrupted") != NULL);
	free(ts);
	sl_strip_free(s);
}

TEST(strip_column_maps_to_the_typescript)
{
	const char *ts = "const a = 1;\nconst c: number = (undefined as any).foo;\n";
	const char *js = "const a = 1;\nconst c = (undefined ).foo;\n";

	/* Before anything was removed: the same column. */
	CHECK_INT(sl_strip_column(ts, js, 2, 7), 7);
	/* `(` and `undefined` after ": number" moved right by 8. */
	CHECK_INT(sl_strip_column(ts, js, 2, 11), 19);
	CHECK_INT(sl_strip_column(ts, js, 2, 12), 20);
	/* `.foo` after " as any": right by 14. */
	CHECK_INT(sl_strip_column(ts, js, 2, 23), 37);
	/* A line untouched, a line that does not exist, column 0. */
	CHECK_INT(sl_strip_column(ts, js, 1, 5), 5);
	CHECK_INT(sl_strip_column(ts, js, 9, 5), 5);
	CHECK_INT(sl_strip_column(ts, js, 2, 0), 0);
	/* Columns count characters: é is two bytes, one column. */
	CHECK_INT(sl_strip_column("let é: T = 1;", "let é = 1;", 1, 7), 10);
	/* Text the stripper added (an enum's body) maps to where it is. */
	CHECK_INT(sl_strip_column("enum E { a }", "var E; (function (E) {})(E || (E = {}));", 1, 30), 13);
}

TEST(strip_char_column_counts_characters)
{
	/* The engine counts bytes: "é" is 2, "🎉" 4; a column is a character. */
	const char *src = "let a = 1;\nconst s = \"é🎉\"; x.y;\n";
	CHECK_INT(sl_strip_char_column(src, 2, 21), 17);
	CHECK_INT(sl_strip_char_column(src, 2, 11), 11);
	CHECK_INT(sl_strip_char_column(src, 1, 5), 5);
	/* Past the line's end, a missing line, column 0: left as they are. */
	CHECK_INT(sl_strip_char_column(src, 1, 40), 11);
	CHECK_INT(sl_strip_char_column(src, 9, 5), 5);
	CHECK_INT(sl_strip_char_column(src, 2, 0), 0);
}

TEST(strip_refusal_column_is_in_characters)
{
	/* sucrase says UTF-16 units (the emoji is two): the refusal is
	 * reported in characters, as every position of code mode is. */
	struct sl_strip *s = sl_strip_load(never, NULL);
	struct sl_strip_error e;
	char *out = NULL;
	size_t n;
	const char *ts = "const s: string = \"é🎉\"; let x: number = 1; x = ;";

	CHECK(s != NULL);
	CHECK_INT(sl_strip_run(s, ts, strlen(ts), &out, &n, &e), -1);
	CHECK_INT(e.line, 1);
	CHECK_INT(e.column, 48);
	sl_strip_free(s);
}

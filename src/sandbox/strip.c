/* The TypeScript stripper of code mode; see strip.h. */
#include "sandbox/strip.h"
#include "sandbox/heap.h"

#include <quickjs.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* build/<out>/gen/stripper.c, made by scripts/stripper/jsbc.c. */
extern const uint8_t sl_stripper_bc[];
extern const size_t sl_stripper_bc_len;

struct sl_strip {
	struct sl_heap *heap;
	JSRuntime *rt;
	JSContext *ctx;
	JSValue fn;
	int (*interrupt)(void *opaque);
	void *opaque;
};

static int on_interrupt(JSRuntime *rt, void *opaque)
{
	struct sl_strip *s = opaque;
	return s->interrupt ? s->interrupt(s->opaque) : 0;
}

/* One transform here, in the zygote, then a collection: what sucrase and
 * the engine set up on first use (tables, shapes, caches) is then in every
 * worker already, and no collection is due in a worker, which would write
 * to every object of the stripper's heap and so copy all its pages from
 * the zygote. Measured (scripts/stripper, docs/internals/SANDBOX.md): a
 * worker's first transform of a small program fell from about 10 ms to
 * about 1 ms. */
static void warm_up(struct sl_strip *s)
{
	static const char ts[] =
		"interface A<T> { x?: T; readonly y: number[] }\n"
		"enum E { a = 1, b }\n"
		"type U = A<string> | null;\n"
		"class C<T> implements A<T> { constructor(private z: T, public y: number[] = []) {} }\n"
		"function f<T extends object>(v: T, k?: keyof T): T | undefined { return v!; }\n"
		"const u = (f({ x: 1 }) as unknown as U) satisfies U;\n"
		"return u?.x ?? E.b;";
	struct sl_strip_error e;
	char *out;
	size_t n;

	if (sl_strip_run(s, ts, sizeof(ts) - 1, &out, &n, &e) == 0)
		free(out);
	JS_RunGC(s->rt);
	JS_SetGCThreshold(s->rt, SL_STRIP_HEAP / 2);
}

void sl_strip_free(struct sl_strip *s)
{
	struct sl_heap *heap;

	if (!s)
		return;
	if (s->ctx) {
		JS_FreeValue(s->ctx, s->fn);
		JS_FreeContext(s->ctx);
	}
	if (s->rt)
		JS_FreeRuntime(s->rt);
	heap = s->heap;
	sl_heap_functions()->js_free(heap, s);
	sl_heap_free(heap);
}

void sl_strip_own(struct sl_strip *s)
{
	sl_heap_own(s->heap);
}

static struct sl_strip *load(struct sl_strip *s)
{
	JSValue fn, r, global;

	if (!(s->ctx = JS_NewContext(s->rt)))
		return NULL;
	fn = JS_ReadObject(s->ctx, sl_stripper_bc, sl_stripper_bc_len, JS_READ_OBJ_BYTECODE);
	if (JS_IsException(fn))
		return NULL;
	r = JS_EvalFunction(s->ctx, fn); /* takes fn */
	if (JS_IsException(r))
		return NULL;
	JS_FreeValue(s->ctx, r);
	global = JS_GetGlobalObject(s->ctx);
	s->fn = JS_GetPropertyStr(s->ctx, global, "strip");
	JS_FreeValue(s->ctx, global);
	if (!JS_IsFunction(s->ctx, s->fn))
		return NULL;
	warm_up(s);
	return s;
}

struct sl_strip *sl_strip_load(int (*interrupt)(void *opaque), void *opaque)
{
	/* s itself is in its heap, which a worker copies before it strips:
	 * none of the stripper's state is in the zygote's pages. */
	struct sl_heap *heap = sl_heap_new();
	struct sl_strip *s = heap ? sl_heap_functions()->js_calloc(heap, 1, sizeof(*s)) : NULL;

	if (!s) {
		sl_heap_free(heap);
		return NULL;
	}
	s->heap = heap;
	if (!(s->rt = JS_NewRuntime2(sl_heap_functions(), s->heap))) {
		sl_strip_free(s);
		return NULL;
	}
	s->interrupt = interrupt;
	s->opaque = opaque;
	JS_SetMemoryLimit(s->rt, SL_STRIP_HEAP);
	/* sucrase parses by recursive descent: deep nesting needs stack, and
	 * past this it says so (a RangeError) instead of crashing. */
	JS_SetMaxStackSize(s->rt, 2u << 20);
	JS_SetInterruptHandler(s->rt, on_interrupt, s);
	s->fn = JS_UNDEFINED;
	if (!load(s)) {
		if (s->ctx)
			JS_FreeValue(s->ctx, JS_GetException(s->ctx));
		sl_strip_free(s);
		return NULL;
	}
	return s;
}

static unsigned long uint_prop(JSContext *ctx, JSValue o, const char *name)
{
	JSValue v = JS_GetPropertyStr(ctx, o, name);
	uint32_t n = 0;
	if (JS_ToUint32(ctx, &n, v) < 0)
		n = 0;
	JS_FreeValue(ctx, v);
	return n;
}

static const char *nth_line(const char *s, unsigned long line);
static size_t seq(const char *p);

/* The column in characters of UTF-16 column col (1-based) of src's line:
 * what the stripper says (a JavaScript string's index), in the unit every
 * position of code mode is given in. */
static unsigned long utf16_to_chars(const char *src, unsigned long line, unsigned long col)
{
	const char *p = nth_line(src, line);
	unsigned long units = 1, chars = 1;

	if (!p || col == 0)
		return col;
	for (; units < col && *p && *p != '\n'; p += seq(p), chars++)
		units += seq(p) == 4 ? 2 : 1;
	return chars;
}

/* err from what the stripper threw: {message, line, column} from its own
 * parser, an engine error (memory, stack) otherwise. */
static void refusal(JSContext *ctx, JSValue exc, struct sl_strip_error *err)
{
	JSValue m = JS_IsObject(exc) ? JS_GetPropertyStr(ctx, exc, "message") : JS_DupValue(ctx, exc);
	const char *ms = JS_IsUndefined(m) || JS_IsNull(m) ? NULL : JS_ToCString(ctx, m);

	snprintf(err->message, sizeof(err->message), "%s", ms ? ms : "out of memory");
	if (JS_IsObject(exc) && !JS_IsError(exc)) {
		err->line = uint_prop(ctx, exc, "line");
		err->column = uint_prop(ctx, exc, "column");
	}
	if (ms)
		JS_FreeCString(ctx, ms);
	JS_FreeValue(ctx, m);
}

int sl_strip_run(struct sl_strip *s, const char *src, size_t len, char **out, size_t *out_len,
		 struct sl_strip_error *err)
{
	JSContext *ctx = s->ctx;
	JSValue arg = JS_NewStringLen(ctx, src, len), r;
	const char *cs;
	size_t n;

	memset(err, 0, sizeof(*err));
	if (JS_IsException(arg)) {
		refusal(ctx, JS_GetException(ctx), err);
		return -1;
	}
	r = JS_Call(ctx, s->fn, JS_UNDEFINED, 1, &arg);
	JS_FreeValue(ctx, arg);
	if (JS_IsException(r)) {
		JSValue exc = JS_GetException(ctx);
		refusal(ctx, exc, err);
		err->column = utf16_to_chars(src, err->line, err->column);
		JS_FreeValue(ctx, exc);
		return -1;
	}
	cs = JS_ToCStringLen(ctx, &n, r);
	JS_FreeValue(ctx, r);
	if (!cs || !(*out = malloc(n + 1))) {
		snprintf(err->message, sizeof(err->message), "out of memory");
		return -1;
	}
	memcpy(*out, cs, n);
	(*out)[n] = '\0';
	*out_len = n;
	JS_FreeCString(ctx, cs);
	return 0;
}

/* ---- columns ---------------------------------------------------------------- */

static const char *nth_line(const char *s, unsigned long line)
{
	while (s && --line > 0)
		if ((s = strchr(s, '\n')) != NULL)
			s++;
	return s;
}

/* The length of the UTF-8 sequence at p (1 for a stray byte). */
static size_t seq(const char *p)
{
	size_t n = 1;
	while (p[n] && ((unsigned char)p[n] & 0xc0) == 0x80)
		n++;
	return n;
}

static bool at_eol(const char *p)
{
	return *p == '\0' || *p == '\n';
}

/* Where the character at q is next found in in's line from p on, and its
 * column (from col); NULL when it is not. */
static const char *find(const char *p, unsigned long col, const char *q, unsigned long *found)
{
	size_t n = seq(q);
	for (; !at_eol(p); p += seq(p), col++) {
		if (seq(p) == n && memcmp(p, q, n) == 0) {
			*found = col;
			return p;
		}
	}
	return NULL;
}

unsigned long sl_strip_column(const char *in, const char *out, unsigned long line,
			      unsigned long col)
{
	const char *p = nth_line(in, line), *q = nth_line(out, line), *f;
	unsigned long pc = 1, qc = 1, fc;

	if (!p || !q || col == 0)
		return col;
	for (; !at_eol(q) && qc < col; q += seq(q), qc++) {
		if ((f = find(p, pc, q, &fc)) != NULL) {
			p = f + seq(f);
			pc = fc + 1;
		}
	}
	if (!at_eol(q) && find(p, pc, q, &fc))
		return fc;
	return pc;
}

unsigned long sl_strip_char_column(const char *text, unsigned long line, unsigned long col)
{
	const char *p = nth_line(text, line), *end;
	unsigned long chars = 1;

	if (!p || col == 0)
		return col;
	for (end = p + (col - 1); p < end && *p && *p != '\n'; p += seq(p))
		chars++;
	return chars;
}

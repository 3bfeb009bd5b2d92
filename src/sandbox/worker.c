/*
 * The worker side of code mode: QuickJS with ECMAScript built-ins plus
 * `tools`, `console` and the host APIs of runtime.h (timers, URL, crypto,
 * Intl, ...), nothing else (no std/os modules, no bytecode loading, no
 * Atomics or SharedArrayBuffer). One program per process.
 *
 * The program is the body of an async function. Tool calls become CALL
 * frames; the worker runs pending jobs until the program's promise settles,
 * blocking on the socket for RESULT frames while calls are in flight.
 */
#include "sandbox/worker.h"
#include "sandbox/frame.h"
#include "sandbox/heap.h"
#include "sandbox/runtime.h"
#include "sandbox/strip.h"

#include <quickjs.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FILENAME "program.js"
#define WRAP_HEAD "(async () => {"
#define WRAP_TAIL "\n})()"

struct pending_call {
	JSValue resolve, reject;
	char *frame;      /* queued while over the in-flight cap */
	size_t len;
	char *server, *tool;        /* as called: named by the error of a failed call */
	unsigned long line, col;    /* where it was called, in program.js (0: unknown) */
	bool sent, done;
};

struct sl_worker {
	struct sl_code_limits lim;
	struct sl_heap *heap;          /* the engine's (heap.h) */
	JSRuntime *rt;
	JSContext *ctx;
	JSValue set_servers;
	JSValue runtime;               /* runtime.h's hooks */
	int fd;
	uint64_t deadline_ms;
	uint64_t cpu_deadline_ns;
	const char *abort_kind; /* set: the interrupt handler stops the program */
	char *console;
	size_t console_len;
	bool console_cut;
	unsigned long lines, last_col; /* the program as sent: its lines, its last line's length */
	char *source;                  /* the program as sent (for hints), NUL-terminated */
	struct pending_call *calls;
	uint32_t ncalls, inflight;
	uint32_t replayed;             /* the RUN frame's: calls answered from a record */
	struct sl_strip *strip;        /* NULL: it failed to load (TypeScript is refused) */
	char lang[4];                  /* the RUN frame's language: "js", "ts" or "" (either) */
	char *ts, *stripped;           /* a stripped program: the TypeScript and the JavaScript run */
	char *js;                      /* what the engine compiles (its columns are its bytes);
					* NULL: a position is in characters already */
	uint32_t pre, post;            /* the RUN frame's: the code's bytes around the program */
	unsigned long head;            /* characters before the program on its first line */
};

/* ---- frames (blocking; the worker does nothing else meanwhile) --------- */

SL_NORETURN static void die(int code)
{
	_exit(code);
}

static void write_full(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die(3);
		c += w;
		n -= (size_t)w;
	}
}

static void read_full(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			die(3);
		c += r;
		n -= (size_t)r;
	}
}

static void send_frame(struct sl_worker *w, uint32_t kind, const char *p, size_t n)
{
	unsigned char h[SL_FRAME_HEADER];
	sl_frame_header(h, kind, (uint32_t)n);
	write_full(w->fd, h, sizeof(h));
	write_full(w->fd, p, n);
}

/* The worker's own buffers (frames, JSON text, the source): from its
 * engine's heap (heap.h), not malloc's, whose pages are the zygote's: the
 * first write to each would be a copy on the program's own time. Not
 * counted against the engine's limit, so that the answer is still built
 * when the program has exhausted its heap. */
static struct sl_heap *buffers;

static void *buf_realloc(void *p, size_t n)
{
	p = sl_heap_functions()->js_realloc(buffers, p, n);
	if (!p)
		die(5);
	return p;
}

static void buf_free(void *p)
{
	sl_heap_functions()->js_free(buffers, p);
}

/* Reads one frame of the expected kind; anything else ends the worker. */
static char *recv_frame(struct sl_worker *w, uint32_t want, uint32_t max, size_t *len)
{
	unsigned char h[SL_FRAME_HEADER];
	uint32_t kind, n;
	char *p;

	read_full(w->fd, h, sizeof(h));
	if (!sl_frame_parse_header(h, &kind, &n, max) || kind != want)
		die(4);
	p = buf_realloc(NULL, (size_t)n + 1);
	read_full(w->fd, p, n);
	p[n] = '\0';
	*len = n;
	return p;
}

/* ---- JSON text built in C (works even when the JS heap is exhausted) ---- */

struct text {
	char *p;
	size_t len, cap;
};

static void text_add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		size_t c = t->cap ? t->cap : 256;
		while (c < t->len + n + 1)
			c *= 2;
		t->p = buf_realloc(t->p, c);
		t->cap = c;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static void text_str(struct text *t, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	text_add(t, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			text_add(t, e, 2);
		} else if (c < 0x20) {
			text_add(t, esc, 6);
		} else {
			text_add(t, (const char *)&c, 1);
		}
	}
	text_add(t, "\"", 1);
}

static void text_cstr(struct text *t, const char *s)
{
	text_add(t, s, strlen(s));
}

/* ---- strings out of the engine ------------------------------------------ */

static unsigned hex4(const char *s)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = (unsigned char)s[i];
		v = v << 4 | (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

/*
 * Every string the worker sends is made here: v as UTF-8 of *len bytes in
 * a copy of its own (free it), U+0000 included (lengths, never C strings).
 * A JavaScript string may hold a lone surrogate, which has no UTF-8: the
 * engine writes it as the three bytes of its code point (ED A0..BF xx) and
 * JSON.stringify as a \udXXX escape, which no strict JSON reader takes. Both
 * become U+FFFD, in the same number of bytes. json: v is JSON text, whose

 * escapes are read as escapes (the text "\\ud800" is left alone). NULL on
 * an exception. *len is the whole length, but only the first max bytes are
 * copied and made: past its limit a caller needs the length alone, and a
 * huge string then costs no more than its limit.
 */
static char *utf8(JSContext *ctx, JSValueConst v, size_t max, size_t *len, bool json)
{
	size_t n, keep;
	const char *s = JS_ToCStringLen(ctx, &n, v);
	char *p;

	if (!s)
		return NULL;
	keep = n < max ? n : max;
	p = buf_realloc(NULL, keep + 1);
	memcpy(p, s, keep);
	p[keep] = '\0';
	JS_FreeCString(ctx, s);
	for (size_t i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c == 0xED && i + 2 < keep && ((unsigned char)p[i + 1] & 0xE0) == 0xA0) {
			memcpy(p + i, "\xEF\xBF\xBD", 3);
			i += 2;
		} else if (json && c == '\\' && i + 5 < keep && p[i + 1] == 'u') {
			unsigned u = hex4(p + i + 2);
			if ((u & 0xFC00) == 0xD800 && i + 11 < keep && p[i + 6] == '\\' &&
			    p[i + 7] == 'u' && (hex4(p + i + 8) & 0xFC00) == 0xDC00) {
				i += 11; /* a pair */
				continue;
			}
			if ((u & 0xF800) == 0xD800)
				memcpy(p + i + 2, "fffd", 4);
			i += 5;
		} else if (json && c == '\\') {
			i++;
		}
	}
	*len = n;
	return p;
}

/* ---- the end of a program ------------------------------------------------ */

SL_NORETURN static void finish(struct sl_worker *w, const char *kind, const char *msg,
			       size_t msg_len)
{
	struct text t = { 0 };
	text_cstr(&t, kind ? "{\"ok\":false,\"kind\":" : "{\"ok\":true,\"value\":");
	if (kind) {
		text_str(&t, kind, strlen(kind));
		text_cstr(&t, ",\"error\":");
	}
	text_str(&t, msg, msg_len);
	text_cstr(&t, ",\"console\":");
	text_str(&t, w->console ? w->console : "", w->console_len);
	if (w->console_cut)
		text_cstr(&t, ",\"consoleCut\":true");
	text_cstr(&t, "}");
	send_frame(w, SL_FRAME_DONE, t.p, t.len);
	die(0);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_interrupt(JSRuntime *rt, void *opaque)
{
	struct sl_worker *w = opaque;
	if (w->abort_kind)
		return 1;
	if (w->deadline_ms && mono_ms() >= w->deadline_ms)
		w->abort_kind = "timeout";
	else if (w->cpu_deadline_ns && cpu_ns() >= w->cpu_deadline_ns)
		w->abort_kind = "cpu";
	return w->abort_kind != NULL;
}

/* ": there is no server 'x' in tools: the servers are ..." when the program
 * names a server that does not exist. Best effort: the prelude's hint runs
 * only if the engine still runs code (not after a timeout or at the memory
 * limit), and any failure of its own adds nothing. */
static void hint(struct sl_worker *w, struct text *out)
{
	JSContext *ctx = w->ctx;
	JSValue fn, src, r;
	const char *h;

	if (!w->source || w->abort_kind)
		return;
	fn = JS_GetPropertyStr(ctx, w->set_servers, "hint");
	src = JS_NewString(ctx, w->source);
	r = JS_IsFunction(ctx, fn) && !JS_IsException(src) ?
	    JS_Call(ctx, fn, JS_UNDEFINED, 1, &src) : JS_UNDEFINED;
	if (JS_IsException(r)) {
		JS_FreeValue(ctx, JS_GetException(ctx));
	} else if (JS_IsString(r) && (h = JS_ToCString(ctx, r)) != NULL) {
		text_cstr(out, ": ");
		text_cstr(out, h);
		JS_FreeCString(ctx, h);
	}
	JS_FreeValue(ctx, r);
	JS_FreeValue(ctx, src);
	JS_FreeValue(ctx, fn);
}

/* The column in the program as sent of the engine's line:col (a byte
 * column in w->js): in characters, in the TypeScript when it was
 * stripped, without what precedes the program on its first line. */
static unsigned long program_column(struct sl_worker *w, unsigned long line, unsigned long col)
{
	if (w->js)
		col = sl_strip_char_column(w->js, line, col);
	if (w->stripped)
		col = sl_strip_column(w->ts, w->stripped, line, col);
	if (line == 1 && col > w->head)
		col -= w->head;
	return col;
}

static bool ident_char(char c)
{
	return c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9');
}

/* Whether name, which a JavaScript run found undefined, reads as a type:
 * a built-in type's name, or one the program writes after ':' or '<'. */
static bool type_like(const char *src, const char *name)
{
	static const char *const types[] = { "number", "string", "boolean", "any", "unknown",
					     "never", "object", "bigint", "symbol", "void" };
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(name, types[i]) == 0)
			return true;
	for (const char *p = src; n && (p = strstr(p, name)) != NULL; p += n) {
		const char *b = p;
		char after = p[n];
		if (ident_char(after) || (p > src && ident_char(p[-1])))
			continue;
		while (b > src && (b[-1] == ' ' || b[-1] == '\t'))
			b--;
		if (b > src && (b[-1] == ':' || b[-1] == '<'))
			return true;
	}
	return false;
}

/* "tools.github.list_issues" (or tools["git-hub"]... where a name is not
 * an identifier) for a failed call's error. */
static void text_member(struct text *t, const char *name)
{
	bool ident = *name && !(*name >= '0' && *name <= '9');
	for (const char *p = name; *p && ident; p++)
		ident = ident_char(*p);
	if (ident) {
		text_cstr(t, ".");
		text_cstr(t, name);
	} else {
		text_cstr(t, "[");
		text_str(t, name, strlen(name));
		text_cstr(t, "]");
	}
}

/* The own string property name of o, or NULL (free with JS_FreeCString). */
static const char *own_string(JSContext *ctx, JSValue o, const char *name)
{
	JSValue v = JS_GetPropertyStr(ctx, o, name);
	const char *s = JS_IsString(v) ? JS_ToCString(ctx, v) : NULL;
	JS_FreeValue(ctx, v);
	return s;
}

/* "Name: message (line L, column C)" for an exception value; for a failed
 * tool call, "Error: tools.S.T failed (line L, column C): message". */
static void describe(struct sl_worker *w, JSValue exc, struct text *out)
{
	JSContext *ctx = w->ctx;
	char *s;
	size_t n;

	if (JS_IsError(exc)) {
		JSValue name = JS_GetPropertyStr(ctx, exc, "name");
		JSValue msg = JS_GetPropertyStr(ctx, exc, "message");
		JSValue stack = JS_GetPropertyStr(ctx, exc, "stack");
		size_t nl = 0, ml = 0;
		char *ns = utf8(ctx, name, SIZE_MAX, &nl, false);
		char *ms = utf8(ctx, msg, SIZE_MAX, &ml, false);
		const char *ss = JS_IsString(stack) ? JS_ToCString(ctx, stack) : NULL;
		const char *at = ss ? strstr(ss, FILENAME ":") : NULL;
		unsigned long line = 0, col = 0;
		char pos[96] = "";
		const char *server = own_string(ctx, exc, "server"), *tool = own_string(ctx, exc, "tool");

		if (at && sscanf(at + strlen(FILENAME) + 1, "%lu:%lu", &line, &col) == 2) {
			/* Positions are the wrapper's: its head shares the
			 * program's first line, its tail follows the last. */
			col = program_column(w, line, col);
			snprintf(pos, sizeof(pos), " (line %lu, column %lu)", line, col);
		}
		if (server && tool && ms) {
			/* A failed tool call: which one, where, then why. */
			text_cstr(out, "Error: tools");
			text_member(out, server);
			text_member(out, tool);
			text_cstr(out, " failed");
			text_cstr(out, pos);
			text_cstr(out, ": ");
			text_add(out, ms, ml);
		} else if (line > w->lines && ns && strcmp(ns, "SyntaxError") == 0) {
			/* The parser met the wrapper's own closing tokens: the
			 * program left something open, or closed one too many. */
			text_cstr(out, "SyntaxError: the program ends too early: an expression, bracket, parenthesis "
				  "or string is left open, or a bracket is closed that was never opened");
			snprintf(pos, sizeof(pos), " (at the end of the program: line %lu, column %lu)",
				 w->lines, w->last_col + 1);
			text_cstr(out, pos);
		} else {
			if (ns)
				text_add(out, ns, nl);
			else
				text_cstr(out, "Error");
			text_cstr(out, ": ");
			if (ms)
				text_add(out, ms, ml);
			text_cstr(out, pos);
			if (ns && strcmp(ns, "TypeError") == 0)
				hint(w, out);
			if (ns && ms && strcmp(ns, "ReferenceError") == 0 && !w->lang[0] &&
			    !w->stripped && w->source && ml > 15 &&
			    strcmp(ms + ml - 15, " is not defined") == 0) {
				ms[ml - 15] = '\0';
				if (type_like(w->source, ms))
					text_cstr(out, ": if the program is TypeScript, send language "
						  "\"ts\" (without one, code that parses as JavaScript "
						  "runs as JavaScript: f<number>(x) is two comparisons)");
			}
		}
		buf_free(ns);
		buf_free(ms);
		if (ss)
			JS_FreeCString(ctx, ss);
		JS_FreeCString(ctx, server);
		JS_FreeCString(ctx, tool);
		JS_FreeValue(ctx, name);
		JS_FreeValue(ctx, msg);
		JS_FreeValue(ctx, stack);
		return;
	}
	s = utf8(ctx, exc, SIZE_MAX, &n, false);
	text_cstr(out, "Uncaught ");
	if (s) {
		text_add(out, s, n);
		buf_free(s);
	} else {
		text_cstr(out, "exception");
	}
}

SL_NORETURN static void fail_with(struct sl_worker *w, const char *kind, JSValue exc)
{
	struct text t = { 0 };
	if (w->abort_kind)
		kind = w->abort_kind;
	if (strcmp(kind, "timeout") == 0) {
		text_cstr(&t, "the program ran past its time limit");
	} else if (strcmp(kind, "cpu") == 0) {
		text_cstr(&t, "the program used more than its CPU time limit");
	} else if (strcmp(kind, "calls") == 0) {
		char m[96];
		snprintf(m, sizeof(m), "the program made more than %u tool calls", w->lim.max_calls);
		text_cstr(&t, m);
	} else if (JS_IsNull(exc) || JS_IsUninitialized(exc)) {
		/* The engine throws null when it cannot even build an error. */
		char m[96];
		snprintf(m, sizeof(m), "the program ran out of memory (limit %zu MiB)",
			 w->lim.heap_bytes >> 20);
		text_cstr(&t, m);
		kind = "memory";
	} else {
		describe(w, exc, &t);
		if (strstr(t.p ? t.p : "", "out of memory"))
			kind = "memory";
	}
	finish(w, kind, t.p ? t.p : "", t.len);
}

/* ---- tools and console ----------------------------------------------------- */

static void error_at(JSContext *ctx, JSValue exc, unsigned long *line, unsigned long *col);

static void send_call(struct sl_worker *w, struct pending_call *c)
{
	send_frame(w, SL_FRAME_CALL, c->frame, c->len);
	buf_free(c->frame);
	c->frame = NULL;
	c->sent = true;
	w->inflight++;
}

/* call(server, tool, args) -> Promise */
static JSValue js_call(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	struct sl_worker *w = JS_GetContextOpaque(ctx);
	char *server, *tool, *args;
	size_t slen, tlen, alen;
	JSValue json, funcs[2], promise, where;
	struct pending_call *c;
	struct text t = { 0 };
	char idbuf[32];
	unsigned long line, col;

	if (argc < 3)
		return JS_ThrowTypeError(ctx, "call needs a server, a tool and arguments");
	if (!JS_IsObject(argv[2]) || JS_IsArray(argv[2]) || JS_IsFunction(ctx, argv[2]))
		return JS_ThrowTypeError(ctx, "tool arguments must be an object");
	/* Serialising runs the program's code (getters, toJSON, Proxy traps,
	 * toString), which may call tools itself: everything that can run it
	 * comes before the call-count check, so that nothing can come between
	 * the check and the write of the slot it checked. */
	{
		/* Made JSON as a return value is (a Set an array, a BigInt a number...). */
		JSValue plain = sl_runtime_result(ctx, w->runtime, argv[2], true);
		if (JS_IsException(plain))
			return plain;
		json = JS_JSONStringify(ctx, plain, JS_UNDEFINED, JS_UNDEFINED);
		JS_FreeValue(ctx, plain);
	}
	if (JS_IsException(json))
		return json;
	/* Where the program calls: its failure's error points there. The
	 * namespace's get took it (here()); else (a tool taken by
	 * Object.values, say) it is where the call is made. */
	if (argc >= 4 && JS_IsArray(argv[3])) {
		JSValue lj = JS_GetPropertyUint32(ctx, argv[3], 0), cj = JS_GetPropertyUint32(ctx, argv[3], 1);
		uint32_t lv = 0, cv = 0;
		if (JS_ToUint32(ctx, &lv, lj) < 0 || JS_ToUint32(ctx, &cv, cj) < 0)
			lv = cv = 0;
		JS_FreeValue(ctx, lj);
		JS_FreeValue(ctx, cj);
		line = lv;
		col = cv;
	} else {
		where = JS_NewError(ctx);
		if (JS_IsException(where)) {
			JS_FreeValue(ctx, json);
			return where;
		}
		error_at(ctx, where, &line, &col);
		JS_FreeValue(ctx, where);
	}
	server = utf8(ctx, argv[0], w->lim.max_args, &slen, false);
	tool = server ? utf8(ctx, argv[1], w->lim.max_args, &tlen, false) : NULL;
	args = tool ? utf8(ctx, json, w->lim.max_args, &alen, true) : NULL;
	JS_FreeValue(ctx, json);
	if (!args)
		promise = JS_EXCEPTION;
	else if (alen > w->lim.max_args)
		promise = JS_ThrowRangeError(ctx, "tool arguments are %zu bytes of JSON, over the limit of %zu",
					     alen, w->lim.max_args);
	else if (w->ncalls >= w->lim.max_calls) {
		w->abort_kind = "calls";
		promise = JS_ThrowInternalError(ctx, "tool call limit reached");
	} else
		promise = JS_NewPromiseCapability(ctx, funcs);
	if (JS_IsException(promise)) {
		buf_free(server);
		buf_free(tool);
		buf_free(args);
		return promise;
	}
	c = &w->calls[w->ncalls];
	snprintf(idbuf, sizeof(idbuf), "{\"id\":%u,\"server\":", w->ncalls);
	w->ncalls++;
	text_cstr(&t, idbuf);
	text_str(&t, server, slen);
	text_cstr(&t, ",\"tool\":");
	text_str(&t, tool, tlen);
	text_cstr(&t, ",\"args\":");
	text_add(&t, args, alen);
	text_cstr(&t, "}");
	buf_free(args);
	c->server = server;
	c->tool = tool;
	c->line = line;
	c->col = col;
	c->resolve = funcs[0];
	c->reject = funcs[1];
	c->frame = t.p;
	c->len = t.len;
	if (w->inflight < w->lim.max_inflight)
		send_call(w, c);
	return promise;
}

/* here() -> [line, column] of the program's innermost frame, in program.js
 * (the engine's byte column), or undefined. */
static JSValue js_here(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	JSValue e = JS_NewError(ctx), a;
	unsigned long line, col;

	if (JS_IsException(e))
		return e;
	error_at(ctx, e, &line, &col);
	JS_FreeValue(ctx, e);
	if (!line)
		return JS_UNDEFINED;
	a = JS_NewArray(ctx);
	JS_SetPropertyUint32(ctx, a, 0, JS_NewInt64(ctx, (int64_t)line));
	JS_SetPropertyUint32(ctx, a, 1, JS_NewInt64(ctx, (int64_t)col));
	return a;
}

/* log(text): console output, capped. */
static JSValue js_log(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	struct sl_worker *w = JS_GetContextOpaque(ctx);
	size_t n, room;
	char *s;

	if (argc < 1 || w->console_cut)
		return JS_UNDEFINED;
	room = w->lim.max_console - w->console_len;
	s = utf8(ctx, argv[0], room, &n, false);
	if (!s)
		return JS_EXCEPTION;
	if (n + 1 > room) {
		/* Cut on a character boundary: s[n] is the first byte left out. */
		n = room > 0 ? room - 1 : 0;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
		w->console_cut = true;
	}
	if (!w->console)
		w->console = buf_realloc(NULL, w->lim.max_console + 1);
	memcpy(w->console + w->console_len, s, n);
	w->console_len += n;
	if (!w->console_cut)
		w->console[w->console_len++] = '\n';
	w->console[w->console_len] = '\0';
	buf_free(s);
	return JS_UNDEFINED;
}

/* The global `tools` and `console`, built once per worker before the kernel
 * boundary goes up. Servers are resolved by name (raw or identifier), tools
 * only when called; a server's own keys are the tool names the RUN frame
 * lists for it (the caller's view: nothing hidden is listed). */
static const char prelude[] =
	"(function (call, log, here) {\n"
	"  'use strict';\n"
	"  const byName = new Map(), keysOf = new Map();\n"
	"  let idents = [];\n"
	"  const refuse = () => false;\n"
	"  const namespace = (server) => new Proxy({}, {\n"
	"    get(t, tool) {\n"
	"      if (typeof tool !== 'string' || tool === 'then' || tool === 'toJSON') return undefined;\n"
	/* Where the program names the tool: its call's position, taken
	 * before the arguments are evaluated (their code would move it). */
	"      const at = here();\n"
	"      return (args) => call(server, tool, args === undefined ? {} : args, at);\n"
	"    },\n"
	"    ownKeys() { return (keysOf.get(server) ?? []).slice(); },\n"
	"    getOwnPropertyDescriptor(t, tool) {\n"
	"      if (!(keysOf.get(server) ?? []).includes(tool)) return undefined;\n"
	"      return { value: (args) => call(server, tool, args === undefined ? {} : args),\n"
	"               enumerable: true, configurable: true, writable: false };\n"
	"    },\n"
	"    set: refuse, defineProperty: refuse, deleteProperty: refuse, setPrototypeOf: refuse,\n"
	"    preventExtensions: refuse,\n"
	"  });\n"
	"  const tools = new Proxy({}, {\n"
	"    get(t, name) { const s = typeof name === 'string' ? byName.get(name) : undefined;\n"
	"      return s === undefined ? undefined : namespace(s); },\n"
	"    has(t, name) { return byName.has(name); },\n"
	"    ownKeys() { return idents.slice(); },\n"
	"    getOwnPropertyDescriptor(t, name) {\n"
	"      if (!idents.includes(name)) return undefined;\n"
	"      return { value: namespace(byName.get(name)), enumerable: true, configurable: true, writable: false };\n"
	"    },\n"
	"    set: refuse, defineProperty: refuse, deleteProperty: refuse, setPrototypeOf: refuse,\n"
	"    preventExtensions: refuse,\n"
	"  });\n"
	"  const text = (a) => { if (typeof a === 'string') return a;\n"
	"    try { const s = JSON.stringify(a); return s === undefined ? String(a) : s; }\n"
	"    catch (e) { return String(a); } };\n"
	"  const out = (level) => (...args) => log((level ? level + ': ' : '') + args.map(text).join(' '));\n"
	"  const console = Object.freeze({ log: out(''), info: out(''), warn: out('warn'), error: out('error'), debug: out('') });\n"
	"  Object.defineProperty(globalThis, 'tools', { value: tools, enumerable: false, configurable: false, writable: false });\n"
	"  Object.defineProperty(globalThis, 'console', { value: console, enumerable: false, configurable: false, writable: false });\n"
	"  for (const n of ['Atomics', 'SharedArrayBuffer', 'WebAssembly']) delete globalThis[n];\n"
	/* Every worker is a copy of one engine: the engine's own Math.random
	 * state would repeat in every program. xoshiro128** seeded per program. */
	"  let s0 = 1, s1 = 2, s2 = 3, s3 = 4;\n"
	"  const rotl = (x, k) => (x << k) | (x >>> (32 - k));\n"
	"  const next = () => { const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0; const t = s1 << 9;\n"
	"    s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t; s3 = rotl(s3, 11); return r; };\n"
	"  Object.defineProperty(Math, 'random', { value: function random() {\n"
	"    return ((next() >>> 5) * 67108864 + (next() >>> 6)) / 9007199254740992; },\n"
	"    writable: true, configurable: true });\n"
	"  const setServers = (list, seed) => { keysOf.clear();\n"
	"    for (const [raw, ident, keys] of list) { byName.set(raw, raw); byName.set(ident, raw);\n"
	"      keysOf.set(raw, Array.isArray(keys) ? [...new Set(keys.filter((k) => typeof k === 'string'))] : []); }\n"
	"    idents = list.map((p) => p[1]);\n"
	"    [s0, s1, s2, s3] = seed.map((x) => x | 0); if (!(s0 | s1 | s2 | s3)) s0 = 1; };\n"
	/* For a TypeError: the servers the program names that do not exist
	 * (tools.nosuch.x() fails as "cannot read property 'x' of undefined",
	 * since tools.nosuch is undefined, as feature tests expect). */
	"  setServers.hint = (src) => {\n"
	"    const re = /\\btools\\s*(?:\\.\\s*([A-Za-z_$][\\w$]*)|\\[\\s*(['\"])([^'\"\\n]*)\\2\\s*\\])/g;\n"
	"    const bad = []; let m;\n"
	"    while ((m = re.exec(src)) && bad.length < 8) { const n = m[1] ?? m[3];\n"
	"      if (!byName.has(n) && !bad.includes(n)) bad.push(n); }\n"
	"    if (!bad.length) return undefined;\n"
	"    return 'there is no server ' + bad.map((n) => `'${n}'`).join(', ') + ' in tools: ' +\n"
	"      (idents.length ? 'the servers are ' + idents.join(', ') : 'no server is connected');\n"
	"  };\n"
	"  return setServers;\n"
	"})";

/* The program's time and CPU limits hold while it is stripped too. */
static int strip_interrupt(void *opaque)
{
	return on_interrupt(NULL, opaque);
}

struct sl_worker *sl_worker_prepare(const struct sl_code_limits *l)
{
	/* The worker's own state is in its engine's heap too, which it copies
	 * before it writes anything: none of it is in the zygote's pages. */
	struct sl_heap *heap = sl_heap_new();
	const JSMallocFunctions *f = sl_heap_functions();
	struct sl_worker *w = heap ? f->js_calloc(heap, 1, sizeof(*w)) : NULL;
	JSValue fn, args[3];

	if (!w)
		return NULL;
	w->lim = *l;
	w->heap = buffers = heap;
	w->calls = f->js_calloc(heap, l->max_calls + 1, sizeof(*w->calls));
	w->rt = JS_NewRuntime2(f, heap);
	if (!w->calls || !w->rt)
		return NULL;
	JS_SetMemoryLimit(w->rt, l->heap_bytes);
	JS_SetMaxStackSize(w->rt, l->stack_bytes ? l->stack_bytes : 1u << 20);
	JS_SetInterruptHandler(w->rt, on_interrupt, w);
	w->ctx = JS_NewContextRaw(w->rt);
	if (!w->ctx)
		return NULL;
	JS_AddIntrinsicBaseObjects(w->ctx);
	JS_AddIntrinsicDate(w->ctx);
	JS_AddIntrinsicEval(w->ctx);
	JS_AddIntrinsicRegExpCompiler(w->ctx);
	JS_AddIntrinsicRegExp(w->ctx);
	JS_AddIntrinsicJSON(w->ctx);
	JS_AddIntrinsicProxy(w->ctx);
	JS_AddIntrinsicMapSet(w->ctx);
	JS_AddIntrinsicTypedArrays(w->ctx);
	JS_AddIntrinsicPromise(w->ctx);
	JS_AddIntrinsicBigInt(w->ctx);
	JS_AddIntrinsicWeakRef(w->ctx);
	JS_SetContextOpaque(w->ctx, w);
	w->runtime = sl_runtime_load(w->ctx);
	if (JS_IsException(w->runtime))
		return NULL;

	/* Loaded here, in the zygote, once: a worker only runs it. */
	w->strip = sl_strip_load(strip_interrupt, w);
	fn = JS_Eval(w->ctx, prelude, sizeof(prelude) - 1, "<prelude>", JS_EVAL_TYPE_GLOBAL);
	if (JS_IsException(fn))
		return NULL;
	args[0] = JS_NewCFunction(w->ctx, js_call, "call", 3);
	args[1] = JS_NewCFunction(w->ctx, js_log, "log", 1);
	args[2] = JS_NewCFunction(w->ctx, js_here, "here", 0);
	w->set_servers = JS_Call(w->ctx, fn, JS_UNDEFINED, 3, args);
	JS_FreeValue(w->ctx, args[0]);
	JS_FreeValue(w->ctx, args[1]);
	JS_FreeValue(w->ctx, args[2]);
	JS_FreeValue(w->ctx, fn);
	if (JS_IsException(w->set_servers))
		return NULL;
	return w;
}

/* Settles call c with a RESULT frame's value or error. */
static void settle(struct sl_worker *w, const char *frame, size_t len)
{
	JSContext *ctx = w->ctx;
	JSValue res = JS_ParseJSON(ctx, frame, len, "<result>"), idv, okv, arg;
	uint32_t id;
	struct pending_call *c;

	if (JS_IsException(res))
		fail_with(w, "memory", JS_GetException(ctx));
	idv = JS_GetPropertyStr(ctx, res, "id");
	if (JS_ToUint32(ctx, &id, idv) < 0 || id >= w->ncalls || !w->calls[id].sent ||
	    w->calls[id].done)
		die(4); /* a forged or repeated answer */
	JS_FreeValue(ctx, idv);
	c = &w->calls[id];
	/* Time the gateway spent waiting for a person does not count. */
	JSValue paused = JS_GetPropertyStr(ctx, res, "pausedMs");
	uint32_t pms = 0;
	if (!JS_IsUndefined(paused) && JS_ToUint32(ctx, &pms, paused) == 0) {
		w->deadline_ms += pms;
		sl_runtime_pause(pms);
	}
	JS_FreeValue(ctx, paused);
	okv = JS_GetPropertyStr(ctx, res, "ok");
	/* Settling runs the program's code (a `then` getter on
	 * Object.prototype), which may call tools: c stays valid (the slots
	 * never move) and is marked done only after. */
	if (JS_ToBool(ctx, okv)) {
		arg = JS_GetPropertyStr(ctx, res, "value");
		JS_Call(ctx, c->resolve, JS_UNDEFINED, 1, &arg);
	} else {
		JSValue msg = JS_GetPropertyStr(ctx, res, "error");
		int flags = JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE;
		arg = JS_NewError(ctx);
		/* Defined, not set: a setter the program put on Error.prototype
		 * does not run here. Which call failed, and where the program
		 * made it: its stack is that place, so an uncaught one says so
		 * (describe), and a caught one can be told apart. */
		JS_DefinePropertyValueStr(ctx, arg, "message", msg, flags);
		JS_DefinePropertyValueStr(ctx, arg, "server", JS_NewString(ctx, c->server),
					  flags | JS_PROP_ENUMERABLE);
		JS_DefinePropertyValueStr(ctx, arg, "tool", JS_NewString(ctx, c->tool),
					  flags | JS_PROP_ENUMERABLE);
		if (c->line) {
			char stack[96];
			snprintf(stack, sizeof(stack), "    at " FILENAME ":%lu:%lu\n", c->line, c->col);
			JS_DefinePropertyValueStr(ctx, arg, "stack", JS_NewString(ctx, stack), flags);
			JS_DefinePropertyValueStr(ctx, arg, "line", JS_NewInt64(ctx, (int64_t)c->line),
						  flags | JS_PROP_ENUMERABLE);
			JS_DefinePropertyValueStr(ctx, arg, "column",
						  JS_NewInt64(ctx, (int64_t)program_column(w, c->line, c->col)),
						  flags | JS_PROP_ENUMERABLE);
		}
		JS_Call(ctx, c->reject, JS_UNDEFINED, 1, &arg);
	}
	JS_FreeValue(ctx, arg);
	JS_FreeValue(ctx, okv);
	JS_FreeValue(ctx, res);
	JS_FreeValue(ctx, c->resolve);
	JS_FreeValue(ctx, c->reject);
	c->done = true;
	w->inflight--;
	/* A slot is free: send the oldest queued call. */
	for (uint32_t i = 0; i < w->ncalls && w->inflight < w->lim.max_inflight; i++)
		if (!w->calls[i].sent)
			send_call(w, &w->calls[i]);
}

static void run_jobs(struct sl_worker *w)
{
	JSContext *c;
	int r;
	while ((r = JS_ExecutePendingJob(w->rt, &c)) > 0)
		;
	if (r < 0 || w->abort_kind)
		fail_with(w, "error", JS_GetException(w->ctx));
}

/* Reads the RUN frame: checks the version, sets the servers, returns the code. */
static JSValue start(struct sl_worker *w, const char *run, size_t len)
{
	JSContext *ctx = w->ctx;
	JSValue o = JS_ParseJSON(ctx, run, len, "<run>"), v, servers, seed, clock, code;
	int32_t version = 0;

	if (JS_IsException(o))
		die(4);
	v = JS_GetPropertyStr(ctx, o, "v");
	if (JS_ToInt32(ctx, &version, v) < 0 || version != SL_FRAME_VERSION)
		die(4);
	servers = JS_GetPropertyStr(ctx, o, "servers");
	seed = JS_GetPropertyStr(ctx, o, "seed");
	clock = JS_GetPropertyStr(ctx, o, "clock");
	{
		JSValue r = JS_GetPropertyStr(ctx, o, "replayed");
		if (!JS_IsUndefined(r) && JS_ToUint32(ctx, &w->replayed, r) < 0)
			die(4);
		JS_FreeValue(ctx, r);
	}
	{
		JSValue args[2] = { servers, seed };
		JSValue r = JS_Call(ctx, w->set_servers, JS_UNDEFINED, 2, args);
		if (JS_IsException(r))
			die(4);
		JS_FreeValue(ctx, r);
	}
	if (sl_runtime_start(ctx, w->runtime, w->lim.timeout_ms, seed, clock) < 0)
		die(4);
	code = JS_GetPropertyStr(ctx, o, "code");
	{
		JSValue lang = JS_GetPropertyStr(ctx, o, "lang");
		const char *ls = JS_IsString(lang) ? JS_ToCString(ctx, lang) : NULL;
		if (ls && (strcmp(ls, "js") == 0 || strcmp(ls, "ts") == 0))
			strcpy(w->lang, ls);
		else if (ls)
			die(4);
		JS_FreeCString(ctx, ls);
		JS_FreeValue(ctx, lang);
	}
	/* A skill's: text around its code (its arguments before it, on its
	 * first line), which positions leave out. */
	{
		JSValue pre = JS_GetPropertyStr(ctx, o, "pre"), post = JS_GetPropertyStr(ctx, o, "post");
		w->pre = w->post = 0;
		if ((!JS_IsUndefined(pre) && JS_ToUint32(ctx, &w->pre, pre) < 0) ||
		    (!JS_IsUndefined(post) && JS_ToUint32(ctx, &w->post, post) < 0))
			die(4);
		JS_FreeValue(ctx, pre);
		JS_FreeValue(ctx, post);
	}
	JS_FreeValue(ctx, servers);
	JS_FreeValue(ctx, seed);
	JS_FreeValue(ctx, clock);
	JS_FreeValue(ctx, v);
	JS_FreeValue(ctx, o);
	return code;
}

/* ---- TypeScript ------------------------------------------------------------ */

static bool is_syntax(JSContext *ctx, JSValue exc)
{
	JSValue name = JS_IsError(exc) ? JS_GetPropertyStr(ctx, exc, "name") : JS_UNDEFINED;
	const char *n = JS_IsString(name) ? JS_ToCString(ctx, name) : NULL;
	bool syntax = n && strcmp(n, "SyntaxError") == 0;
	JS_FreeCString(ctx, n);
	JS_FreeValue(ctx, name);
	return syntax;
}

/* Where in program.js the engine says an error is (0, 0: it does not). */
static void error_at(JSContext *ctx, JSValue exc, unsigned long *line, unsigned long *col)
{
	JSValue stack = JS_GetPropertyStr(ctx, exc, "stack");
	const char *ss = JS_IsString(stack) ? JS_ToCString(ctx, stack) : NULL;
	const char *at = ss ? strstr(ss, FILENAME ":") : NULL;

	*line = *col = 0;
	if (!at || sscanf(at + strlen(FILENAME) + 1, "%lu:%lu", line, col) != 2)
		*line = *col = 0;
	JS_FreeCString(ctx, ss);
	JS_FreeValue(ctx, stack);
}

/* The stripper's refusal as a SyntaxError at its position, which
 * describe() reports as it reports the engine's own. */
static JSValue strip_error(JSContext *ctx, const struct sl_strip_error *e)
{
	JSValue exc = JS_NewError(ctx);
	char stack[96];
	int flags = JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE;

	snprintf(stack, sizeof(stack), "    at " FILENAME ":%lu:%lu\n", e->line, e->column);
	JS_DefinePropertyValueStr(ctx, exc, "name", JS_NewString(ctx, "SyntaxError"), flags);
	JS_DefinePropertyValueStr(ctx, exc, "message", JS_NewString(ctx, e->message), flags);
	if (e->line)
		JS_DefinePropertyValueStr(ctx, exc, "stack", JS_NewString(ctx, stack), flags);
	return exc;
}

/* sl_strip_run in this worker, whose stripper's memory is first made its
 * own (strip.h): not before, so that a JavaScript program never pays for
 * copying it. */
static int strip(struct sl_worker *w, struct text *src, char **js, size_t *n,
		 struct sl_strip_error *err)
{
	sl_strip_own(w->strip);
	return sl_strip_run(w->strip, src->p, src->len, js, n, err);
}

/* Says, in a JavaScript SyntaxError's message, that the program is
 * TypeScript when the stripper takes it: language "js" was asked for. */
static void say_typescript(struct sl_worker *w, JSValue exc, struct text *src)
{
	JSContext *ctx = w->ctx;
	struct sl_strip_error e;
	char *js = NULL;
	size_t n;

	if (!w->strip || strip(w, src, &js, &n, &e) < 0 || w->abort_kind)
		return;
	free(js);
	JSValue m = JS_GetPropertyStr(ctx, exc, "message");
	const char *ms = JS_ToCString(ctx, m);
	struct text t = { 0 };
	text_cstr(&t, ms ? ms : "");
	text_cstr(&t, " (the program is TypeScript, and language \"js\" was asked for: "
		  "send language \"ts\", or none, to run it)");
	JS_DefinePropertyValueStr(ctx, exc, "message", JS_NewStringLen(ctx, t.p, t.len),
				  JS_PROP_WRITABLE | JS_PROP_CONFIGURABLE);
	buf_free(t.p);
	JS_FreeCString(ctx, ms);
	JS_FreeValue(ctx, m);
}

/* src stripped, then compiled and started; fails the program when the
 * stripper refuses it (err: why) and report is set. */
static JSValue run_stripped(struct sl_worker *w, struct text *src, struct sl_strip_error *err,
			    bool report)
{
	JSContext *ctx = w->ctx;
	char *js;
	size_t n;

	if (!w->strip) {
		static const char m[] = "TypeScript is unavailable: the type stripper failed to "
					"load in this gateway's sandbox; send JavaScript";
		finish(w, "error", m, sizeof(m) - 1);
	}
	if (strip(w, src, &js, &n, err) < 0) {
		if (w->abort_kind)
			fail_with(w, "error", JS_NULL);
		if (strstr(err->message, "out of memory")) {
			char m[128];
			snprintf(m, sizeof(m), "the program is too large to strip its types "
				 "(the stripper's heap limit is %u MiB)", SL_STRIP_HEAP >> 20);
			finish(w, "memory", m, strlen(m));
		}
		if (report) {
			w->js = NULL; /* the stripper counts characters */
			fail_with(w, "syntax", strip_error(w->ctx, err));
		}
		return JS_EXCEPTION;
	}
	w->ts = src->p;
	w->stripped = js;
	w->js = js;
	JSValue r = JS_Eval(ctx, js, n, FILENAME, JS_EVAL_TYPE_GLOBAL);
	if (JS_IsException(r)) {
		JSValue exc = JS_GetException(ctx);
		fail_with(w, is_syntax(ctx, exc) ? "syntax" : "error", exc);
	}
	return r;
}

/* The program compiled and started: JavaScript, or TypeScript stripped
 * first (docs/internals/SANDBOX.md, "TypeScript"). Language "ts" is always
 * stripped, "js" never; with none, the program is parsed as JavaScript and
 * only if that parser refuses it is it stripped and parsed again (so that
 * plain JavaScript pays nothing, and runs as JavaScript even where the two
 * read it differently, as `f < a > (b)`). When both refuse it, the error
 * reported is the one of the parser that got further. */
static JSValue compile(struct sl_worker *w, struct text *src)
{
	JSContext *ctx = w->ctx;
	struct sl_strip_error e;
	unsigned long line, col;
	JSValue r, exc;

	if (strcmp(w->lang, "ts") == 0)
		return run_stripped(w, src, &e, true);
	w->js = src->p;
	r = JS_Eval(ctx, src->p, src->len, FILENAME, JS_EVAL_TYPE_GLOBAL);
	if (!JS_IsException(r))
		return r;
	exc = JS_GetException(ctx);
	if (!is_syntax(ctx, exc))
		fail_with(w, "error", exc);
	if (w->lang[0] || !w->strip) {
		if (w->lang[0])
			say_typescript(w, exc, src);
		fail_with(w, "syntax", exc);
	}
	r = run_stripped(w, src, &e, false);
	if (!JS_IsException(r)) {
		JS_FreeValue(ctx, exc);
		return r;
	}
	error_at(ctx, exc, &line, &col);
	col = sl_strip_char_column(src->p, line, col);
	if (e.line > line || (e.line == line && e.column > col)) {
		JS_FreeValue(ctx, exc);
		w->js = NULL; /* the stripper counts characters */
		fail_with(w, "syntax", strip_error(ctx, &e));
	}
	fail_with(w, "syntax", exc);
}

/* The program's return value as JSON text (runtime.h: Map, Set, Date,
 * BigInt, typed arrays made what a model expects), JS_UNDEFINED when
 * there is none, or JS_EXCEPTION. */
static JSValue result_json(struct sl_worker *w, JSValueConst v)
{
	JSValue c = sl_runtime_result(w->ctx, w->runtime, v, false), s;
	if (JS_IsException(c))
		return c;
	s = JS_JSONStringify(w->ctx, c, JS_UNDEFINED, JS_UNDEFINED);
	JS_FreeValue(w->ctx, c);
	return s;
}

/* A program that returned nothing and printed nothing: its answer says
 * how to get one, since "undefined" alone reads as a result. */
SL_NORETURN static void finish_undefined(struct sl_worker *w)
{
	static const char hinted[] = "undefined (the program returned nothing: end it with "
				     "`return <value>`)";
	if (w->console_len)
		finish(w, NULL, "undefined", strlen("undefined"));
	finish(w, NULL, hinted, sizeof(hinted) - 1);
}

/* Waits ms, or until a RESULT can be read when calls are in flight:
 * true when one can. The program's deadline ends it (a timer is never set
 * past it, but the clocks round differently). */
static bool wait_ms(struct sl_worker *w, double ms)
{
	uint64_t end = mono_ms() + (uint64_t)ms + 1;
	for (uint64_t now = mono_ms(); now < end; now = mono_ms()) {
		if (w->deadline_ms && now >= w->deadline_ms) {
			w->abort_kind = "timeout";
			fail_with(w, "timeout", JS_NULL);
		}
		uint64_t left = (w->deadline_ms && w->deadline_ms < end ? w->deadline_ms : end) - now;
		struct timespec ts = { (time_t)(left / 1000u), (long)(left % 1000u) * 1000000 };
		struct pollfd pfd = { .fd = w->fd, .events = POLLIN };
		int r = ppoll(&pfd, w->inflight ? 1 : 0, &ts, NULL);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			die(3);
	}
	return false;
}

/* Timers (runtime.h): true when one fired (its jobs are then run), false
 * when a RESULT is to be read first or none is pending. Live, the worker
 * waits until the earliest is due or a RESULT comes, whichever is first.
 * In a replayable run the clock is virtual: calls in flight are waited
 * for first, then the clock jumps to the timer, so a replay fires the
 * same timers in the same order at the same times; it waits in real time
 * as well (the clock still jumps) only once it has issued every call the
 * retry answers from its record, so a replay does not wait but a back-off
 * against a live server does. A timer is never due after the time limit
 * (refused when set). */
static bool timers_step(struct sl_worker *w)
{
	double due = sl_runtime_next(w->ctx, w->runtime), now;

	if (due == -2)
		fail_with(w, "error", JS_GetException(w->ctx));
	if (due < 0)
		return false;
	if (sl_runtime_virtual()) {
		if (w->inflight)
			return false;
		if (w->ncalls >= w->replayed && due > (now = sl_runtime_now()))
			(void)wait_ms(w, due - now);
	} else {
		while ((now = sl_runtime_now()) < due)
			if (wait_ms(w, due - now))
				return false;
	}
	if (sl_runtime_fire(w->ctx, w->runtime) < 0)
		fail_with(w, "error", JS_GetException(w->ctx));
	return true;
}

/* A fixed program run once before READY, behind the boundary: a fresh
 * process pays for every page it first touches (copy-on-write and, on the
 * VMs measured here, the hypervisor's own page tables), and this moves that
 * cost for the pages every program touches off the program's own time
 * (docs/internals/SANDBOX.md, "The floor, third pass"). It leaves no global
 * binding; the RUN frame sets the servers, seed and clock afresh. */
static void warm_up(struct sl_worker *w)
{
	static const char run[] = "{\"v\":1,\"code\":\"\",\"servers\":[],\"seed\":[1,2,3,4]}";
	static const char prog[] = WRAP_HEAD "return [1, 2].map((x) => ({ x }));" WRAP_TAIL;
	JSContext *ctx = w->ctx;
	JSValue code = start(w, run, sizeof(run) - 1), p, v, s;

	JS_FreeValue(ctx, code);
	/* The clocks a program's deadlines read (their vDSO pages). */
	if (mono_ms() == 0 || cpu_ns() == 0)
		die(5);
	p = JS_Eval(ctx, prog, sizeof(prog) - 1, FILENAME, JS_EVAL_TYPE_GLOBAL);
	if (JS_IsException(p))
		die(5);
	run_jobs(w);
	v = JS_PromiseResult(ctx, p);
	s = result_json(w, v);
	JS_FreeValue(ctx, s);
	JS_FreeValue(ctx, v);
	JS_FreeValue(ctx, p);
}

void sl_worker_run(struct sl_worker *w, int fd, unsigned boundaries)
{
	JSContext *ctx = w->ctx;
	struct text src = { 0 };
	size_t len;
	char *run;
	JSValue code, promise;
	const char *cs;
	size_t clen;

	sl_heap_own(w->heap); /* before any write to w, which it holds */
	w->fd = fd;
	warm_up(w);
	{
		char ready[48];
		int n = snprintf(ready, sizeof(ready), "{\"boundaries\":%u}", boundaries);
		send_frame(w, SL_FRAME_READY, ready, (size_t)n);
	}
	run = recv_frame(w, SL_FRAME_RUN, (uint32_t)((w->lim.max_source + w->lim.max_args * 2) * 6 +
						     65536 + SL_FRAME_KEYS_MAX), &len);
	w->deadline_ms = mono_ms() + w->lim.timeout_ms;
	w->cpu_deadline_ns = cpu_ns() + w->lim.cpu_ms * 1000000u;
	code = start(w, run, len);
	buf_free(run);
	cs = JS_ToCStringLen(ctx, &clen, code);
	/* The program proper is the code less the gateway's pre and post. */
	if (!cs || (size_t)w->pre + w->post > clen || clen - w->pre - w->post > w->lim.max_source ||
	    memchr(cs, '\n', w->pre))
		die(4);
	w->source = buf_realloc(NULL, clen - w->pre - w->post + 1);
	memcpy(w->source, cs + w->pre, clen - w->pre - w->post);
	w->source[clen - w->pre - w->post] = '\0';
	w->lines = 1;
	w->last_col = 0;
	for (const char *p = w->source; *p; p++) {
		if (*p == '\n') {
			w->lines++;
			w->last_col = 0;
		} else if (((unsigned char)*p & 0xc0) != 0x80) {
			w->last_col++; /* columns count characters, not bytes */
		}
	}
	text_cstr(&src, WRAP_HEAD);
	text_add(&src, cs, clen);
	text_cstr(&src, WRAP_TAIL);
	/* The program proper, after the gateway's head on its first line. */
	w->head = sl_strip_char_column(src.p, 1, strlen(WRAP_HEAD) + w->pre + 1) - 1;
	JS_FreeCString(ctx, cs);
	JS_FreeValue(ctx, code);

	promise = compile(w, &src); /* src is now w->js, or w->ts */
	for (;;) {
		run_jobs(w);
		JSPromiseStateEnum st = JS_PromiseState(ctx, promise);
		if (st == JS_PROMISE_FULFILLED) {
			JSValue v = JS_PromiseResult(ctx, promise), s;
			char *out;
			size_t n;
			s = JS_IsString(v) ? JS_DupValue(ctx, v) : result_json(w, v);
			if (JS_IsException(s))
				fail_with(w, "error", JS_GetException(ctx));
			if (JS_IsUndefined(s))
				finish_undefined(w);
			out = utf8(ctx, s, w->lim.max_output, &n, !JS_IsString(v));
			if (!out)
				fail_with(w, "memory", JS_GetException(ctx));
			if (n > w->lim.max_output) {
				char m[128];
				snprintf(m, sizeof(m), "the return value is %zu bytes, over the limit of %zu",
					 n, w->lim.max_output);
				finish(w, "output", m, strlen(m));
			}
			finish(w, NULL, out, n);
		}
		if (st == JS_PROMISE_REJECTED)
			fail_with(w, "error", JS_PromiseResult(ctx, promise));
		if (timers_step(w))
			continue;
		if (w->inflight == 0) {
			static const char m[] = "the program's promise never settled (nothing left to wait for)";
			finish(w, "error", m, sizeof(m) - 1);
		}
		run = recv_frame(w, SL_FRAME_RESULT, (uint32_t)(w->lim.max_result + 4096), &len);
		settle(w, run, len);
		buf_free(run);
	}
}

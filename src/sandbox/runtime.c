/*
 * The host functions runtime.js is given, and the hooks the worker calls
 * (runtime.h). Each is small and bounded by its input: no function here
 * reaches outside the process.
 */
#include "sandbox/runtime.h"
#include "core/digest.h"

#include <string.h>
#include <time.h>

extern const uint8_t sl_runtime_bc[];
extern const size_t sl_runtime_bc_len;

static struct {
	uint64_t t0_ns;      /* the program's start, CLOCK_MONOTONIC */
	uint64_t paused_ms;  /* waited for a person: off the program's clock */
	bool virtual;        /* replayable: the clock moves only with timers */
	double vnow;         /* the virtual clock */
	uint8_t key[16];     /* crypto's seed */
	uint64_t counter;    /* blocks drawn */
	uint8_t block[32];
	unsigned used;       /* bytes of block given out */
} rt = { .used = 32 };

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double sl_runtime_now(void)
{
	double t;
	if (rt.virtual)
		return rt.vnow;
	t = (double)(mono_ns() - rt.t0_ns) / 1e6 - (double)rt.paused_ms;
	return t < 0 ? 0 : t;
}

bool sl_runtime_virtual(void)
{
	return rt.virtual;
}

void sl_runtime_pause(uint64_t ms)
{
	rt.paused_ms += ms;
}

static JSValue js_now(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	return JS_NewFloat64(ctx, sl_runtime_now());
}

static JSValue js_advance(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	double t;
	if (argc < 1 || JS_ToFloat64(ctx, &t, argv[0]) < 0)
		return JS_EXCEPTION;
	if (rt.virtual && t > rt.vnow)
		rt.vnow = t;
	return JS_UNDEFINED;
}

/* The bytes of buf from off, n of them, or NULL (a TypeError thrown). */
static uint8_t *span(JSContext *ctx, JSValueConst buf, JSValueConst off, JSValueConst n,
		     size_t *len)
{
	size_t size;
	uint32_t o, k;
	uint8_t *p = JS_GetArrayBuffer(ctx, &size, buf);

	if (!p || JS_ToUint32(ctx, &o, off) < 0 || JS_ToUint32(ctx, &k, n) < 0 ||
	    (size_t)o + k > size) {
		JS_ThrowTypeError(ctx, "not a span of an ArrayBuffer");
		return NULL;
	}
	*len = k;
	return p + o;
}

/* HMAC-SHA-256(seed, counter) blocks: the same seed gives the same bytes,
 * so a replayed program draws what it drew the first time. */
static JSValue js_fill(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	size_t n;
	uint8_t *p = argc >= 3 ? span(ctx, argv[0], argv[1], argv[2], &n) : NULL;

	if (!p)
		return JS_EXCEPTION;
	for (size_t i = 0; i < n; i++) {
		if (rt.used == sizeof(rt.block)) {
			uint8_t msg[8];
			for (int b = 0; b < 8; b++)
				msg[b] = (uint8_t)(rt.counter >> (8 * b));
			rt.counter++;
			sl_hmac_sha256(rt.key, sizeof(rt.key), msg, sizeof(msg), rt.block);
			rt.used = 0;
		}
		p[i] = rt.block[rt.used++];
	}
	return JS_UNDEFINED;
}

/* s as UTF-8: the engine writes a lone surrogate as its three bytes
 * (ED A0..BF xx), which are not UTF-8: each becomes U+FFFD. */
static JSValue js_encode(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	size_t n, len;
	const char *s = argc >= 1 ? JS_ToCStringLen(ctx, &n, argv[0]) : NULL;
	uint8_t *p;
	JSValue r;

	if (!s)
		return JS_EXCEPTION;
	/* Copied once, into the array itself (counted in the program's heap),
	 * and mended there. */
	r = JS_NewUint8ArrayCopy(ctx, (const uint8_t *)s, n);
	JS_FreeCString(ctx, s);
	p = JS_IsException(r) ? NULL : JS_GetUint8Array(ctx, &len, r);
	for (size_t i = 0; p && i + 2 < len; i++)
		if (p[i] == 0xED && (p[i + 1] & 0xE0) == 0xA0) {
			memcpy(p + i, "\xEF\xBF\xBD", 3);
			i += 2;
		}
	return r;
}

/* The length of the well-formed UTF-8 sequence at p (Unicode 15, table
 * 3-7), or 0 with *bad set to the length of its maximal ill-formed
 * subpart, which the WHATWG decoder replaces by one U+FFFD. */
static size_t utf8_seq(const uint8_t *p, size_t n, size_t *bad)
{
	uint8_t c = p[0], lo = 0x80, hi = 0xBF;
	size_t need, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 1;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 2;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 3;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		*bad = 1;
		return 0;
	}
	for (i = 1; i <= need; i++) {
		if (i >= n || p[i] < lo || p[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return need + 1;
}

static JSValue js_decode(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
	size_t n, k, bad, o = 0;
	uint8_t *p = argc >= 4 ? span(ctx, argv[0], argv[1], argv[2], &n) : NULL, *out;
	bool fatal = argc >= 4 && JS_ToBool(ctx, argv[3]);
	JSValue r;

	if (!p)
		return JS_EXCEPTION;
	/* The output's size first: each well-formed sequence as is, each
	 * ill-formed subpart as U+FFFD's 3 bytes (the first one stops a fatal
	 * decoder). */
	for (size_t i = 0; i < n; i += k ? k : bad) {
		k = utf8_seq(p + i, n - i, &bad);
		if (!k && fatal)
			return JS_ThrowTypeError(ctx, "TextDecoder: the input is not valid UTF-8 (byte %zu)",
						 i);
		o += k ? k : 3;
	}
	out = js_malloc(ctx, o + 1);
	if (!out)
		return JS_EXCEPTION;
	o = 0;
	for (size_t i = 0; i < n; i += k ? k : bad) {
		k = utf8_seq(p + i, n - i, &bad);
		if (k) {
			memcpy(out + o, p + i, k);
			o += k;
			continue;
		}
		memcpy(out + o, "\xEF\xBF\xBD", 3);
		o += 3;
	}
	r = JS_NewStringLen(ctx, (const char *)out, o);
	js_free(ctx, out);
	return r;
}

JSValue sl_runtime_load(JSContext *ctx)
{
	static const JSCFunctionListEntry host[] = {
		JS_CFUNC_DEF("now", 0, js_now),
		JS_CFUNC_DEF("advance", 1, js_advance),
		JS_CFUNC_DEF("fill", 3, js_fill),
		JS_CFUNC_DEF("encode", 1, js_encode),
		JS_CFUNC_DEF("decode", 4, js_decode),
	};
	JSValue fn, obj, hooks;

	if (JS_AddIntrinsicDOMException(ctx) < 0 || JS_AddIntrinsicAToB(ctx) < 0)
		return JS_EXCEPTION;
	fn = JS_ReadObject(ctx, sl_runtime_bc, sl_runtime_bc_len, JS_READ_OBJ_BYTECODE);
	if (JS_IsException(fn))
		return fn;
	fn = JS_EvalFunction(ctx, fn); /* the script's value: the function */
	if (JS_IsException(fn))
		return fn;
	obj = JS_NewObject(ctx);
	JS_SetPropertyFunctionList(ctx, obj, host, sizeof(host) / sizeof(host[0]));
	hooks = JS_Call(ctx, fn, JS_UNDEFINED, 1, (JSValueConst *)&obj);
	JS_FreeValue(ctx, obj);
	JS_FreeValue(ctx, fn);
	return hooks;
}

static JSValue call_hook(JSContext *ctx, JSValueConst hooks, const char *name, int argc,
			 JSValueConst *argv)
{
	JSValue f = JS_GetPropertyStr(ctx, hooks, name);
	JSValue r = JS_Call(ctx, f, hooks, argc, argv);
	JS_FreeValue(ctx, f);
	return r;
}

int sl_runtime_start(JSContext *ctx, JSValueConst hooks, uint64_t limit_ms, JSValueConst seed,
		     JSValueConst clock)
{
	JSValue args[2], r;

	for (uint32_t i = 0; i < 4; i++) {
		JSValue x = JS_GetPropertyUint32(ctx, seed, i);
		uint32_t v = 0;
		int bad = JS_ToUint32(ctx, &v, x);
		JS_FreeValue(ctx, x);
		if (bad < 0)
			return -1;
		for (int b = 0; b < 4; b++)
			rt.key[i * 4 + b] = (uint8_t)(v >> (8 * b));
	}
	rt.counter = 0;
	rt.used = sizeof(rt.block);
	rt.t0_ns = mono_ns();
	rt.paused_ms = 0;
	rt.vnow = 0;
	rt.virtual = JS_IsNumber(clock);
	args[0] = JS_NewFloat64(ctx, (double)limit_ms);
	args[1] = JS_DupValue(ctx, clock);
	r = call_hook(ctx, hooks, "start", 2, args);
	JS_FreeValue(ctx, args[1]);
	if (JS_IsException(r))
		return -1;
	JS_FreeValue(ctx, r);
	return 0;
}

double sl_runtime_next(JSContext *ctx, JSValueConst hooks)
{
	JSValue r = call_hook(ctx, hooks, "next", 0, NULL);
	double t = -1;
	if (JS_IsException(r) || JS_ToFloat64(ctx, &t, r) < 0)
		t = -2;
	JS_FreeValue(ctx, r);
	return t;
}

int sl_runtime_fire(JSContext *ctx, JSValueConst hooks)
{
	JSValue r = call_hook(ctx, hooks, "fire", 0, NULL);
	if (JS_IsException(r))
		return -1;
	JS_FreeValue(ctx, r);
	return 0;
}

JSValue sl_runtime_result(JSContext *ctx, JSValueConst hooks, JSValueConst v, bool args)
{
	JSValue a[2] = { JS_DupValue(ctx, v),
			 JS_NewString(ctx, args ? "the arguments" : "the return value") };
	JSValue r = JS_IsException(a[1]) ? JS_EXCEPTION : call_hook(ctx, hooks, "result", 2, a);
	JS_FreeValue(ctx, a[0]);
	JS_FreeValue(ctx, a[1]);
	return r;
}

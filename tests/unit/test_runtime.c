/* Unit tests of code mode's host APIs (src/sandbox/runtime.c and
 * runtime.js) in a context of their own: UTF-8 both ways with what is
 * not UTF-8, random bytes that repeat for the same seed (a replay) and
 * differ for another, the virtual clock and timer order of a replayable
 * run, the timer bound, and return values made JSON. */
#include "unit.h"

#include "sandbox/runtime.h"

#include <string.h>

struct rt {
	JSRuntime *rt;
	JSContext *ctx;
	JSValue hooks;
};

static void rt_open(struct rt *r, uint32_t s0, double clock)
{
	char seed[64];
	JSValue sv, cv;

	r->rt = JS_NewRuntime();
	JS_SetMemoryLimit(r->rt, 64u << 20);
	r->ctx = JS_NewContextRaw(r->rt);
	JS_AddIntrinsicBaseObjects(r->ctx);
	JS_AddIntrinsicDate(r->ctx);
	JS_AddIntrinsicEval(r->ctx);
	JS_AddIntrinsicRegExpCompiler(r->ctx);
	JS_AddIntrinsicRegExp(r->ctx);
	JS_AddIntrinsicJSON(r->ctx);
	JS_AddIntrinsicProxy(r->ctx);
	JS_AddIntrinsicMapSet(r->ctx);
	JS_AddIntrinsicTypedArrays(r->ctx);
	JS_AddIntrinsicPromise(r->ctx);
	JS_AddIntrinsicBigInt(r->ctx);
	JS_AddIntrinsicWeakRef(r->ctx);
	r->hooks = sl_runtime_load(r->ctx);
	snprintf(seed, sizeof(seed), "[%u,2,3,4]", s0);
	sv = JS_ParseJSON(r->ctx, seed, strlen(seed), "seed");
	cv = clock >= 0 ? JS_NewFloat64(r->ctx, clock) : JS_UNDEFINED;
	CHECK_INT(sl_runtime_start(r->ctx, r->hooks, 5000, sv, cv), 0);
	JS_FreeValue(r->ctx, sv);
}

static void rt_close(struct rt *r)
{
	JS_FreeValue(r->ctx, r->hooks);
	JS_FreeContext(r->ctx);
	JS_FreeRuntime(r->rt);
}

/* The JSON of what the code evaluates to, as a program's answer is made;
 * "throws: message" when it throws. */
static char *eval(struct rt *r, const char *code)
{
	static char out[1024];
	JSValue v = JS_Eval(r->ctx, code, strlen(code), "program.js", JS_EVAL_TYPE_GLOBAL), c, s;
	const char *p;

	c = JS_IsException(v) ? JS_EXCEPTION : sl_runtime_result(r->ctx, r->hooks, v, false);
	s = JS_IsException(c) ? JS_EXCEPTION : JS_JSONStringify(r->ctx, c, JS_UNDEFINED, JS_UNDEFINED);
	if (JS_IsException(s)) {
		JSValue e = JS_GetException(r->ctx);
		p = JS_ToCString(r->ctx, e);
		snprintf(out, sizeof(out), "throws: %s", p ? p : "?");
		JS_FreeValue(r->ctx, e);
	} else {
		p = JS_ToCString(r->ctx, s);
		snprintf(out, sizeof(out), "%s", p ? p : "undefined");
	}
	JS_FreeCString(r->ctx, p);
	JS_FreeValue(r->ctx, s);
	JS_FreeValue(r->ctx, c);
	JS_FreeValue(r->ctx, v);
	return out;
}

TEST(runtime_utf8_both_ways)
{
	struct rt r;
	rt_open(&r, 1, -1);
	/* A lone surrogate encodes as U+FFFD; an overlong, a surrogate's
	 * bytes, a cut sequence and a stray byte each decode as U+FFFD (one
	 * per maximal ill-formed subpart, as the WHATWG decoder does). */
	CHECK_STR(eval(&r, "Array.from(new TextEncoder().encode('a\\ud800b'))"), "[97,239,191,189,98]");
	CHECK_STR(eval(&r, "new TextDecoder().decode(new Uint8Array([0xc0, 0x80, 0x41, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98]))"),
		  "\"\xEF\xBF\xBD\xEF\xBF\xBD" "A" "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
	CHECK_STR(eval(&r, "new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x68, 0x69]))"), "\"hi\"");
	CHECK_STR(eval(&r, "new TextDecoder().decode(new Uint8Array([1, 0x68, 0x69, 2]).subarray(1, 3))"), "\"hi\"");
	CHECK(strstr(eval(&r, "new TextDecoder('utf-8', {fatal: true}).decode(new Uint8Array([0x61, 0x80]))"),
		     "not valid UTF-8 (byte 1)") != NULL);
	rt_close(&r);
}

/* What a program with this seed draws (one program per process: the
 * state is the process's, so each is opened and closed in turn). */
static void draw(uint32_t seed, char *out, size_t n)
{
	struct rt r;
	rt_open(&r, seed, -1);
	snprintf(out, n, "%s", eval(&r, "[crypto.randomUUID(), Array.from(crypto.getRandomValues(new Uint8Array(40)))]"));
	rt_close(&r);
}

TEST(runtime_random_bytes_follow_the_seed)
{
	struct rt r;
	char x[512], y[512], z[512];

	draw(7, x, sizeof(x));
	draw(7, y, sizeof(y));
	draw(8, z, sizeof(z));
	CHECK_STR(x, y);
	CHECK(strcmp(x, z) != 0);
	rt_open(&r, 7, -1);
	CHECK(strstr(eval(&r, "crypto.getRandomValues(new Uint8Array(65537))"), "at most 65536") != NULL);
	CHECK(strstr(eval(&r, "crypto.getRandomValues(new Float64Array(2))"), "integer typed array") != NULL);
	rt_close(&r);
}

TEST(runtime_virtual_clock_and_timer_order)
{
	struct rt r;
	const char *set;
	double due;

	rt_open(&r, 1, 1.7e12);
	CHECK(sl_runtime_virtual());
	/* (CHECK_STR evaluates its arguments twice: code with effects runs first.) */
	set = eval(&r, "globalThis.log = []; setTimeout(() => log.push('b', performance.now()), 30);"
		   "setTimeout(() => log.push('a', Date.now() - 1.7e12), 10);"
		   "clearTimeout(setTimeout(() => log.push('x'), 5)); 0");
	CHECK_STR(set, "0");
	for (int i = 0; i < 4 && (due = sl_runtime_next(r.ctx, r.hooks)) >= 0; i++)
		CHECK_INT(sl_runtime_fire(r.ctx, r.hooks), 0);
	CHECK_STR(eval(&r, "log"), "[\"a\",10,\"b\",30]");
	CHECK(sl_runtime_now() == 30);
	CHECK(strstr(eval(&r, "setTimeout(() => {}, 4971)"), "would fire after the program's time limit of 5000 ms") != NULL);
	CHECK(strstr(eval(&r, "for (let i = 0; i < 1001; i++) setTimeout(() => {}, 1)"), "at most 1000") != NULL);
	rt_close(&r);
}

TEST(runtime_return_values_as_json)
{
	struct rt r;
	const char *set;

	rt_open(&r, 1, -1);
	CHECK_STR(eval(&r, "new Map([['a', 1], ['b', new Set([1, 2])]])"), "{\"a\":1,\"b\":[1,2]}");
	CHECK_STR(eval(&r, "new Map([[1, 'x'], ['1', 'y']])"), "[[1,\"x\"],[\"1\",\"y\"]]");
	CHECK_STR(eval(&r, "[new Date(0), new Date(NaN), 2n ** 53n - 1n, 2n ** 53n, new Int16Array([-1]), /a+/g]"),
		  "[\"1970-01-01T00:00:00.000Z\",null,9007199254740991,\"9007199254740992\",[-1],\"/a+/g\"]");
	CHECK_STR(eval(&r, "({ u: undefined, f() {}, n: null, s: new String('s'), url: new URL('http://h.com/a b') })"),
		  "{\"n\":null,\"s\":\"s\",\"url\":\"http://h.com/a%20b\"}");
	CHECK(strstr(eval(&r, "let a = []; for (let i = 0; i < 200; i++) a = [a]; a"), "deeper than 128 levels") != NULL);
	/* A program that broke the prototypes it could reach still gets its value. */
	set = eval(&r, "Array.prototype.push = null; Map.prototype.entries = null; Object.keys = null;"
		   "new Map([['k', [1]]])");
	CHECK_STR(set, "{\"k\":[1]}");
	rt_close(&r);
}

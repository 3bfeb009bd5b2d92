/*
 * The host APIs of code mode's runtime, beside the engine's built-ins:
 * timers, URL, TextEncoder/TextDecoder, atob/btoa, structuredClone,
 * crypto, performance, en-US Intl and locale methods, and the conversion
 * of a program's return value (docs/internals/SANDBOX.md, "The runtime's
 * APIs"). Most of it is our own JavaScript (runtime.js, compiled to
 * bytecode at build time); the few host functions it needs are here,
 * small and bounded. Nothing reaches outside the worker: no network, no
 * files, no clock but the program's own.
 *
 * One program per process: the state is the process's own.
 *
 * API (the context prepared in the zygote, then in the worker):
 *   hooks = sl_runtime_load(ctx);              JS_EXCEPTION when it fails
 *   sl_runtime_start(ctx, hooks, limit, seed, clock);   at RUN
 *   due = sl_runtime_next(ctx, hooks);         -1: no timer pending
 *   sl_runtime_fire(ctx, hooks);               runs the earliest timer
 *   json = sl_runtime_result(ctx, hooks, v, args);   the value JSON.stringify takes
 */
#ifndef SL_SANDBOX_RUNTIME_H
#define SL_SANDBOX_RUNTIME_H

#include <quickjs.h>

#include <stdbool.h>
#include <stdint.h>

/* Adds the engine's atob/btoa and DOMException, and runs runtime.js in
 * ctx; returns its hooks (owned) or JS_EXCEPTION. */
JSValue sl_runtime_load(JSContext *ctx);

/* A program starts: its time limit (timeoutMs), the RUN frame's seed (an
 * array of four 32-bit numbers: crypto's random bytes derive from it) and
 * clock (a number: the run is replayable, so the program's clock is
 * virtual and Date reads that time plus it; anything else: real time).
 * -1 on a malformed frame. */
int sl_runtime_start(JSContext *ctx, JSValueConst hooks, uint64_t limit_ms, JSValueConst seed,
		     JSValueConst clock);

/* The program's clock, ms since it started (virtual in a replayable run). */
double sl_runtime_now(void);
/* True in a replayable run: timers never wait, the clock jumps. */
bool sl_runtime_virtual(void);
/* ms a confirmation waited for a person: not on the program's clock. */
void sl_runtime_pause(uint64_t ms);

/* The earliest pending timer's time on the program's clock, -1 when none
 * is pending, -2 on an exception (pending in ctx: the interrupt handler
 * stopped the engine, or the program broke what it reads). */
double sl_runtime_next(JSContext *ctx, JSValueConst hooks);
/* Runs the earliest timer's callback: -1 when it threw (the exception is
 * pending in ctx). */
int sl_runtime_fire(JSContext *ctx, JSValueConst hooks);
/* v as the value JSON.stringify is given (owned), or JS_EXCEPTION: a
 * program's return value, or (args) a tool call's arguments, which errors
 * then name. */
JSValue sl_runtime_result(JSContext *ctx, JSValueConst hooks, JSValueConst v, bool args);

#endif

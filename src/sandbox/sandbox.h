/*
 * The gateway side of code mode.
 *
 * A sandbox owns the zygote and a small pool of workers prepared in
 * advance (forked, limited, engine ready, kernel boundary up, waiting for a
 * program). A program takes one worker, never reused, and the pool is
 * refilled behind it; the programs waiting for a worker and those running
 * are the sandbox's own business. At most codeMode.maxConcurrent programs
 * hold a worker (or wait for one) at once, whoever started them; up to
 * codeMode.maxQueued more wait in a queue, first come first served, and
 * one more ends at once as "busy" (docs/internals/SANDBOX.md, "Admission").
 *
 * The sandbox knows nothing of upstreams, the catalog, sessions or the call
 * pipeline: a program reaches tools only through its host (struct
 * sl_sandbox_host below), which the gateway implements in
 * gateway/codemode.c and a unit test can fake.
 *
 * API:
 *   sb = sl_sandbox_new(loop, cfg, &err);  codeMode's limits, pool, admission
 *   p = sl_program_start(sb, &host, code, len, done, step, ctx);
 *   ... host->call starts each tool call; the host answers with
 *       sl_program_call_done(p, id, ...) (and sl_program_call_human)
 *   sl_program_cancel(p);               the worker is killed, host->cancel for each call
 *   ... done(ctx, p) runs exactly once; then sl_program_free(p)
 *   sl_sandbox_free(sb);                running programs are cancelled; the zygote and
 *                                       every worker end
 */
#ifndef SL_SANDBOX_SANDBOX_H
#define SL_SANDBOX_SANDBOX_H

#include "config/config.h"
#include "core/json.h"

#include <uv.h>

struct sl_sandbox;
struct sl_program;

/* A sandbox with cfg's sluice.codeMode (limits, poolSize, maxConcurrent,
 * maxQueued, require), copied: NULL when the zygote cannot start (err says
 * why). Programs are refused unless every boundary in cfg->code_require
 * (SL_B_* bits) is in force. */
struct sl_sandbox *sl_sandbox_new(uv_loop_t *loop, const struct sl_config *cfg, struct sl_err *err);
void sl_sandbox_free(struct sl_sandbox *sb);
/* The boundaries in force (SL_B_* bits), as the last worker reported them. */
unsigned sl_sandbox_boundaries(const struct sl_sandbox *sb);
/* Programs admitted (waiting for their worker or running: at most
 * maxConcurrent) and programs queued for a slot (sluice status). */
void sl_sandbox_load(const struct sl_sandbox *sb, unsigned *admitted, unsigned *queued);
/* Whether a program of owner (a host's owner, or NULL) would get a slot at
 * once: one is free, nothing waits, and owner holds fewer than its share
 * (codeMode.maxConcurrentPerCaller). */
bool sl_sandbox_can_run(const struct sl_sandbox *sb, const char *owner);
/* The boundaries in force, as names separated by spaces (in buf). */
const char *sl_sandbox_describe(unsigned boundaries, char *buf, size_t n);

/* ---- the host: how a program reaches tools ---------------------------------------- */

/* A tool the host resolved a program's names to. The names are the raw ones
 * (for progress and messages), borrowed from the host until the loop runs
 * again: the sandbox copies what it keeps. */
struct sl_sandbox_tool {
	void *server;             /* the host's own handle for the server */
	const char *server_name;
	const char *tool;
};

/* One tool call in flight: the host's, opaque to the sandbox. */
struct sl_sandbox_call;

/*
 * Copied into each program by sl_program_start; ctx must stay valid until
 * the program's done callback has run (the sandbox never uses the host
 * after that). None of these suspends or fails the program: a refusal is an
 * answer the program sees.
 */
struct sl_sandbox_host {
	void *ctx;
	/* The raw name of the host's i-th server, for i = 0, 1, ... until NULL:
	 * the servers a program can name (borrowed until the loop runs again). */
	const char *(*server)(void *ctx, size_t i);
	/* What tools.<server>.<tool> names (raw names or identifiers): 0 with
	 * *out set, or SL_ERR_NOT_FOUND with the message the program's call
	 * throws in err. */
	int (*resolve)(void *ctx, const char *server, const char *tool,
		       struct sl_sandbox_tool *out, struct sl_err *err);
	/* Starts tool t as call number id of program p; args is consumed (its
	 * root is the arguments object). Before anything can end the call, it
	 * sets *handle to its handle (owned by the host). It reports the end
	 * exactly once with sl_program_call_done(p, id, ...), which may happen
	 * before call returns (a stage that answers at once). */
	void (*call)(void *ctx, struct sl_program *p, uint32_t id, const struct sl_sandbox_tool *t,
		     yyjson_mut_doc *args, struct sl_sandbox_call **handle);
	/* The program ended and no longer wants call h: the host stops it and
	 * reports nothing more of it (it frees h itself, now or later). */
	void (*cancel)(void *ctx, struct sl_sandbox_call *h);
	/* Whose program it is: a caller's identity (SL_SHA256_HEX at most,
	 * copied), whose programs share codeMode.maxConcurrentPerCaller and
	 * maxQueuedPerCaller; NULL: it counts only against the global limits. */
	const char *owner;
	/* Optional: appends to keys (an array in d) the names a program may
	 * call on server (a raw name server gave), as strings: what
	 * Object.keys(tools.<server>) lists. NULL: it lists nothing. */
	void (*tools)(void *ctx, const char *server, yyjson_mut_doc *d, yyjson_mut_val *keys);
};

/* The host's report that call id of program p ended: value (built in d) is
 * what the program's await resolves to, or error (borrowed, error_len bytes,
 * which may hold NUL) the message it throws; exactly one of them is set. d
 * is consumed (NULL with an error). */
void sl_program_call_done(struct sl_program *p, uint32_t id, yyjson_mut_doc *d,
			  yyjson_mut_val *value, const char *error, size_t error_len);
/* A call of p started (true) or stopped (false) waiting for a person: the
 * program's wall clock stops meanwhile. */
void sl_program_call_human(struct sl_program *p, bool waiting);

/* ---- programs ---------------------------------------------------------------------- */

/* What a program ended with. */
struct sl_program_result {
	bool ok;
	const char *kind;   /* on failure: error, syntax, timeout, cpu, memory, output, calls, crash,
			     * busy (refused: maxConcurrent running and maxQueued waiting) */
	char *text;         /* the return value, or the failure's message */
	size_t text_len;    /* its bytes: text may hold NUL, as may console */
	char *console;      /* captured console output ("" if none) */
	size_t console_len;
	bool console_cut;
	bool cancelled;     /* no answer is due */
	uint32_t calls;
	double duration_ms; /* from sl_program_start to the end, queue and worker wait included */
};

typedef void (*sl_program_done_fn)(void *ctx, struct sl_program *p);
/* A tool call of the program finished (for progress notifications); the
 * raw names, borrowed for the callback. */
typedef void (*sl_program_step_fn)(void *ctx, struct sl_program *p, const char *server,
				   const char *tool);

/* Starts code (copied) with the tools of host (copied; see its contract).
 * Never fails and never calls done inside itself: a program that cannot
 * run ends from the loop (one refused as busy, at once). A queued program
 * has no deadline yet: timeoutMs counts from when it gets its slot, and
 * sl_program_cancel takes it out of the queue. step may be NULL. The program is owned by the
 * caller: sl_program_free it once done ran (inside done is fine). */
struct sl_program *sl_program_start(struct sl_sandbox *sb, const struct sl_sandbox_host *host,
				    const char *code, size_t len, sl_program_done_fn done,
				    sl_program_step_fn step, void *ctx);
/* Right after sl_program_start: the program runs with Math.random seeded
 * from seed and a fixed clock (Date.now() and new Date() are clock_ms),
 * so that a run can be repeated exactly (gateway/replay.h). */
void sl_program_fix(struct sl_program *p, const uint32_t seed[4], uint64_t clock_ms);
/* The program's language, before its worker asks for it (right after
 * sl_program_start): "js", "ts" (its types are stripped first), or NULL
 * (the default: JavaScript, else TypeScript when it does not parse as
 * JavaScript; docs/internals/SANDBOX.md, "TypeScript"). */
void sl_program_set_language(struct sl_program *p, const char *lang);
/* Right after sl_program_start: the code's first pre bytes (on its first
 * line) and last post bytes are the gateway's, around the program proper
 * (a skill's arguments and wrapping): positions in errors are the
 * program's own, and only it counts against codeMode.maxSourceBytes.
 * Ignored unless they fit in the code, pre without a line feed. */
void sl_program_set_wrap(struct sl_program *p, size_t pre, size_t post);
/* The worker is killed and every call in flight cancelled through the
 * host; done runs (now) with result cancelled. Nothing once done ran. */
void sl_program_cancel(struct sl_program *p);
const struct sl_program_result *sl_program_result(const struct sl_program *p);
/* Unique in this sandbox, from 1: the parent of the program's calls. */
uint64_t sl_program_id(const struct sl_program *p);
void sl_program_free(struct sl_program *p);

/* What a program's call resolves to for tool result r, built in d:
 * structuredContent, else a lone text block (parsed when it is a JSON object
 * or array), else a lone other block as is, else the blocks (text blocks as
 * strings). Also what inferred result types describe. */
yyjson_mut_val *sl_program_value(yyjson_mut_doc *d, yyjson_val *r);

/* The identifier a server or tool name is reachable by as tools.<ident>:
 * characters outside [A-Za-z0-9_$] become '_', and a leading digit or a
 * reserved word gets a leading '_'. out holds at least strlen(name) + 2. */
void sl_code_ident(const char *name, char *out);

#endif

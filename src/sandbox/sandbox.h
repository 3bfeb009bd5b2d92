/*
 * The gateway side of code mode.
 *
 * A sandbox owns the zygote and a small pool of workers prepared in
 * advance (forked, limited, engine ready, kernel boundary up, waiting for a
 * program). A program takes one worker, never reused, and the pool is
 * refilled behind it.
 *
 * API:
 *   sb = sl_sandbox_new(loop, &limits, pool_size, &err);
 *   p = sl_program_start(sb, gw, code, done, progress, ctx);
 *   sl_program_cancel(p);               the worker is killed, its calls cancelled
 *   ... done(ctx, p) runs exactly once; then sl_program_free(p)
 *   sl_sandbox_free(sb);                the zygote and every worker end
 */
#ifndef SL_SANDBOX_SANDBOX_H
#define SL_SANDBOX_SANDBOX_H

#include "gateway/gateway.h"
#include "sandbox/worker.h"

#include <uv.h>

#define SL_POOL_MAX 16

struct sl_program;

struct sl_wslot {
	int fd;
	int pidfd;
	pid_t pid;
};

struct sl_sandbox {
	uv_loop_t *loop;
	struct sl_code_limits lim;
	int ctl;
	pid_t zygote;
	uv_poll_t *ctl_poll;      /* one per zygote: a restart makes a new one */
	bool ctl_open;
	unsigned ns;              /* namespaces the zygote got */
	unsigned boundaries;      /* everything in force, from the last READY */
	unsigned require;         /* boundaries a program must have, or it is refused */
	struct sl_wslot ready[SL_POOL_MAX];
	int nready;
	int requested;            /* forks asked for, not yet received */
	int pool;
	struct sl_program *waiting;  /* programs waiting for a worker */
	struct sl_program *running;  /* programs with a worker */
	uint64_t next_id;
	uint64_t started_ms;      /* when the zygote was last started */
	char error[512];
};

struct sl_sandbox *sl_sandbox_new(uv_loop_t *loop, const struct sl_code_limits *l, int pool,
				  struct sl_err *err);
void sl_sandbox_free(struct sl_sandbox *sb);
/* The boundaries in force, as names separated by spaces (static buffer). */
const char *sl_sandbox_describe(unsigned boundaries, char *buf, size_t n);

/* What a program ended with. */
struct sl_program_result {
	bool ok;
	const char *kind;   /* on failure: error, syntax, timeout, cpu, memory, output, calls, crash */
	char *text;         /* the return value, or the failure's message */
	char *console;      /* captured console output ("" if none) */
	bool console_cut;
	bool cancelled;     /* no answer is due */
	uint32_t calls;
	double duration_ms; /* from sl_program_start to the end, waiting for a worker included */
};

typedef void (*sl_program_done_fn)(void *ctx, struct sl_program *p);
/* A tool call of the program finished (for progress notifications). */
typedef void (*sl_program_step_fn)(void *ctx, struct sl_program *p, const char *server,
				   const char *tool);

struct sl_program *sl_program_start(struct sl_sandbox *sb, struct sl_gateway *gw,
				    const char *code, size_t len, sl_program_done_fn done,
				    sl_program_step_fn step, void *ctx);
void sl_program_cancel(struct sl_program *p);
/* The client session the program runs for: its tool calls carry it (for
 * stages that need to ask the human). */
void sl_program_bind_session(struct sl_program *p, struct sl_session *s);
const struct sl_program_result *sl_program_result(const struct sl_program *p);
uint64_t sl_program_id(const struct sl_program *p);
void sl_program_free(struct sl_program *p);

/* What a program's call resolves to for tool result r, built in d:
 * structuredContent, else a lone text block (parsed when it is a JSON object
 * or array), else a lone other block as is, else the blocks (text blocks as
 * strings). Also what inferred result types describe. */
yyjson_mut_val *sl_program_value(yyjson_mut_doc *d, yyjson_val *r);

/* The server a program names (raw name or identifier), or NULL. */
struct sl_upstream *sl_code_server(struct sl_gateway *gw, const char *name);
/* The tool's own name for `name` (raw, or an identifier that only one of
 * u's tools sanitises to), borrowed from the catalog; NULL with msg set
 * otherwise. */
const char *sl_code_tool(struct sl_gateway *gw, struct sl_upstream *u, const char *name, char *msg,
			 size_t n);

/* The identifier a server or tool name is reachable by as tools.<ident>:
 * characters outside [A-Za-z0-9_$] become '_', and a leading digit or a
 * reserved word gets a leading '_'. out holds at least strlen(name) + 2. */
void sl_code_ident(const char *name, char *out);

#endif

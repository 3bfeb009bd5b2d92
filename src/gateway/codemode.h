/*
 * execute_code, the gateway tool of code mode: its definition (the servers
 * and the limits in under 150 tokens), the host programs run with (what
 * tools.<server>.<tool> names, and its calls through the pipeline), and its
 * answer from a program's result. The program itself runs in src/sandbox/,
 * which sees the gateway only through that host.
 */
#ifndef SL_GATEWAY_CODEMODE_H
#define SL_GATEWAY_CODEMODE_H

#include "gateway/gateway.h"
#include "sandbox/sandbox.h"

#define SL_EXECUTE_CODE "execute_code"

struct sl_caller;
struct sl_output;
struct sl_session;

/* A program ended; gen is the generation it ran on (borrowed for this
 * call), for sl_codemode_output. The owner frees p here or later. */
typedef void (*sl_codemode_done_fn)(void *ctx, struct sl_program *p, struct sl_gen *gen);
/* Starts code on gw's sandbox (which must exist) for session s (NULL: no
 * client, as for sluice exec), on the gateway's current generation, which
 * the program holds to its end: its tool calls are pipeline calls of
 * origin code on that generation whose parent is the program's id, bound
 * to s (stages that ask the human ask through it). step and ctx as for
 * sl_program_start. */
struct sl_program *sl_codemode_run(struct sl_gateway *gw, struct sl_session *s, const char *code,
				   size_t len, sl_codemode_done_fn done, sl_program_step_fn step,
				   void *ctx);

/* The server a program names (raw name or identifier), or NULL. */
struct sl_upstream *sl_codemode_server(struct sl_gateway *gw, const char *name);
/* The tool's own name for `name` (raw, or an identifier that only one of
 * u's tools sanitises to), borrowed from the catalog; NULL with msg set
 * otherwise. Tools gen's policy denies to who (NULL: anonymous) are not
 * there (stages/policy.h, sl_policy_hides): the message is the one for a
 * missing tool, and they make no identifier ambiguous. gen NULL: no policy. */
const char *sl_codemode_tool(struct sl_gateway *gw, const struct sl_gen *gen,
			     const struct sl_caller *who, struct sl_upstream *u, const char *name,
			     char *msg, size_t n);
/* What a program's tools.<server>.<tool> names for who, as the host's
 * resolve answers it: 0 with *out set (out->server is the upstream), or
 * SL_ERR_NOT_FOUND with the message the program sees in err. */
int sl_codemode_resolve(struct sl_gateway *gw, const struct sl_gen *gen,
			const struct sl_caller *who, const char *server, const char *tool,
			struct sl_sandbox_tool *out, struct sl_err *err);

/* The execute_code tool definition, built in d. */
yyjson_mut_val *sl_codemode_definition(struct sl_gateway *gw, yyjson_mut_doc *d);
/* A finished program's answer for the model: the return value (and console
 * output under [console]), or the failure's kind and message; no text when
 * it was cancelled. It is run through gen's output hooks (redacted,
 * scored, governed with s's store, audited, recorded): o then holds what
 * the model gets; free it with sl_output_dispose. s is NULL for sluice exec. */
void sl_codemode_output(struct sl_gen *gen, const struct sl_program_result *r, uint64_t program,
			struct sl_session *s, struct sl_output *o);
/* The execute_code result for o, built in d: the guard's warning (if any)
 * and the answer as text blocks, isError when the program failed. */
yyjson_mut_val *sl_codemode_result(const struct sl_output *o, yyjson_mut_doc *d);
/* Checks what code mode needs of the config: two servers must not share an
 * identifier (tools.git_hub for both "git-hub" and "git_hub"). */
int sl_codemode_check(const struct sl_config *c, struct sl_err *err) SL_MUST_USE;

#endif

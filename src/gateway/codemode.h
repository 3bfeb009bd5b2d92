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
#include "proto/trace.h"
#include "sandbox/sandbox.h"

#define SL_EXECUTE_CODE "execute_code"

struct sl_caller;
struct sl_output;
struct sl_session;

/* A program ended; gen is the generation it ran on (borrowed for this
 * call), for sl_codemode_output. The owner frees p here or later. */
typedef void (*sl_codemode_done_fn)(void *ctx, struct sl_program *p, struct sl_gen *gen);
/* Starts code on gw's sandbox (which must exist) for session s (NULL: no
 * client, as for sluice exec; else the program sees the servers and tools
 * of s's profile, as it is at each call), on the gateway's current generation, which
 * the program holds to its end: its tool calls are pipeline calls of
 * origin code on that generation whose parent is the program's id, bound
 * to s (stages that ask the human ask through it) and made by s's own
 * caller. step and ctx as for sl_program_start. */
struct sl_program *sl_codemode_run(struct sl_gateway *gw, struct sl_session *s, const char *code,
				   size_t len, sl_codemode_done_fn done, sl_program_step_fn step,
				   void *ctx);

struct sl_replay;
/* sl_codemode_run for the execute_code request of s sent by who (NULL:
 * anonymous; a reference is taken): the program's tool calls carry who,
 * the request's caller. rp, when not NULL, is a run that may end to ask a
 * 2026-07-28 client (gateway/replay.h): fixed seed and clock from rp,
 * recorded calls answered from rp, calls a stage answers input_required
 * suspend the program (it ends cancelled; rp says why). rp (the owner's)
 * must outlive done. trace (copied; NULL: none) is the request's W3C
 * trace context, which the program's calls carry (SEP-414). */
struct sl_program *sl_codemode_run_replay(struct sl_gateway *gw, struct sl_session *s,
					  struct sl_caller *who, const char *code, size_t len,
					  struct sl_replay *rp, const struct sl_trace_ctx *trace,
					  sl_codemode_done_fn done, sl_program_step_fn step,
					  void *ctx);

struct sl_view;

/* The server of view v a program names (raw name or identifier), or NULL. */
struct sl_upstream *sl_codemode_server(const struct sl_view *v, const char *name);
/* The catalog tool of u that `name` names in v (its name there, or an
 * identifier that only one of u's tools there sanitises to); NULL with msg
 * set otherwise. Tools the current policy denies to v's caller are not
 * there (stages/policy.h, sl_policy_hides): the message is the one for a
 * missing tool, and they make no identifier ambiguous. */
const struct sl_entry *sl_codemode_tool(const struct sl_view *v, struct sl_upstream *u,
					const char *name, char *msg, size_t n);
/* What a program's tools.<server>.<tool> names in v, as the host's resolve
 * answers it: 0 with *out set (out->server is the upstream, out->tool the
 * server's own name for the tool), or SL_ERR_NOT_FOUND with the message
 * the program sees in err. */
int sl_codemode_resolve(const struct sl_view *v, const char *server, const char *tool,
			struct sl_sandbox_tool *out, struct sl_err *err);

/* The execute_code tool definition for v (its servers), built in d. */
yyjson_mut_val *sl_codemode_definition(const struct sl_view *v, yyjson_mut_doc *d);
/* A finished program's answer for the model: the return value (and console
 * output under [console]), or the failure's kind and message; no text when
 * it was cancelled. It is run through gen's output hooks (redacted,
 * scored, governed with s's store, audited and recorded as who's, the
 * caller of its execute_code request): o then holds what the model gets;
 * free it with sl_output_dispose. s and who are NULL for sluice exec;
 * trace (borrowed, may be NULL) is the request's traceparent, the parent
 * of the program's span. */
void sl_codemode_output(struct sl_gen *gen, const struct sl_program_result *r, uint64_t program,
			struct sl_session *s, const struct sl_caller *who,
			const struct sl_trace *trace, struct sl_output *o);
/* The execute_code result for o, built in d: the guard's warning (if any)
 * and the answer as text blocks, isError when the program failed. */
yyjson_mut_val *sl_codemode_result(const struct sl_output *o, yyjson_mut_doc *d);
struct sl_skill;
/* The saved skill name as it may run now for who (gateway/skills.h,
 * shelves): who's own, else the operator's; never another caller's. 0 with
 * *out set (dispose it), or SL_ERR_NOT_FOUND with the program's message in
 * err when there is none, policy denies who skills.<name>, or it is not
 * approved (changed on disk since save_skill or `sluice skills approve`:
 * hidden); SL_ERR_TOO_LARGE (err says so) when its code is over
 * codeMode.maxSourceBytes; another error when its file is bad (the log
 * says why). */
int sl_codemode_skill(const struct sl_gateway *gw, const struct sl_caller *who, const char *name,
		      struct sl_skill *out, struct sl_err *err) SL_MUST_USE;
/* Policy denies who the skill name (the rule's glob on skills.<name>):
 * to who it does not exist. */
bool sl_codemode_skill_denied(const struct sl_gateway *gw, const struct sl_caller *who,
			      const char *name);
/* There is a file named like a skill on the operator's shelf or who's
 * (tools.skills is in who's programs). */
bool sl_codemode_skills_exist(const struct sl_caller *who);
/* The program a call of sk runs (malloc'd, *len set): args (JSON text of
 * the arguments object) as the constant `args`, then sk's code. nested
 * (tools.skills.x from a program): it returns the JSON text of the code's
 * value, which the caller's await parses back. *pre and *post: the bytes
 * before and after sk's code, for sl_program_set_wrap. */
char *sl_codemode_skill_code(const struct sl_skill *sk, const char *args, size_t args_len,
			     bool nested, size_t *len, size_t *pre, size_t *post);
/* Checks what code mode needs of the config: two servers must not share an
 * identifier (tools.git_hub for both "git-hub" and "git_hub"), and none
 * may be tools.skills, where the saved skills are. */
int sl_codemode_check(const struct sl_config *c, struct sl_err *err) SL_MUST_USE;

#endif

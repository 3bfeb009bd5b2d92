/*
 * execute_code, the gateway tool of code mode: its definition (the servers
 * and the limits in under 150 tokens) and its answer from a program's result.
 * The program itself runs in src/sandbox/.
 */
#ifndef SL_GATEWAY_CODEMODE_H
#define SL_GATEWAY_CODEMODE_H

#include "gateway/gateway.h"
#include "sandbox/sandbox.h"

#define SL_EXECUTE_CODE "execute_code"

struct sl_output;
struct sl_session;

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

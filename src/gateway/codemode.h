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

/* The execute_code tool definition, built in d. */
yyjson_mut_val *sl_codemode_definition(struct sl_gateway *gw, yyjson_mut_doc *d);
/* The tool result for a finished program, built in d: the return value
 * (and console output under [console]), or an isError result naming the
 * failure's kind. */
yyjson_mut_val *sl_codemode_result(const struct sl_program_result *r, yyjson_mut_doc *d);
/* Checks what code mode needs of the config: two servers must not share an
 * identifier (tools.git_hub for both "git-hub" and "git_hub"). */
int sl_codemode_check(const struct sl_config *c, struct sl_err *err) SL_MUST_USE;

#endif

/*
 * The sluice commands. Each runs its own event loop to completion and
 * returns the process exit code.
 *
 *   serve: one MCP session on stdin/stdout
 *   check: start every server once, print what each offers, exit
 */
#ifndef SL_CLI_CLI_H
#define SL_CLI_CLI_H

#include "config/config.h"

int sl_cli_serve(const struct sl_config *cfg);
int sl_cli_check(const struct sl_config *cfg);
int sl_cli_exec(struct sl_config *cfg, const char *code, size_t len);
int sl_cli_doctor(struct sl_config *cfg);

#endif

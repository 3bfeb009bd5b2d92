/*
 * Fixtures shared by the unit tests: a generation (config plus every
 * stage's state) built from a config text, as the gateway builds one.
 */
#ifndef SL_TESTS_FIXTURE_H
#define SL_TESTS_FIXTURE_H

#include "pipeline/call.h"

/* Parses config_json (a whole config file) and builds a generation with
 * the production stage table. Returns NULL with err set when the config or
 * a stage refuses it. Free with sl_gen_unref. */
struct sl_gen *t_gen(const char *config_json, struct sl_err *err);
/* The same from a "sluice" object alone: {"mcpServers": {}, "sluice": sluice_json}. */
struct sl_gen *t_gen_sluice(const char *sluice_json, struct sl_err *err);

/* A generation of an empty config with no stage at all: for tests that need
 * a call and drive stages by hand. Shared, never freed. */
struct sl_gen *t_gen_bare(void);

/* What the log holds after fn logs at info and above: logs go to a fresh
 * file for fn's run, then back to stderr. The caller frees it. */
char *t_logged(void (*fn)(void));

#endif

/*
 * sluice exec: run one program against the configured servers from a
 * terminal, as execute_code would, and print exactly what the model would
 * get, after the same output hooks (redaction, guard, governor): the
 * guard's warning if any, then the answer (console output under
 * [console]) on stdout; on failure "<kind>: <message>" on stderr with exit
 * status 1.
 */
#include "cli/cli.h"
#include "core/log.h"
#include "gateway/codemode.h"
#include "pipeline/call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct exec {
	struct sl_gateway *gw;
	const char *code;
	size_t len;
	int rc;
};

static void on_stopped(void *ctx)
{
	struct exec *ex = ctx;
	sl_gateway_free(ex->gw);
}

static void on_done(void *ctx, struct sl_program *p, struct sl_gen *gen)
{
	struct exec *ex = ctx;
	struct sl_output o;

	sl_codemode_output(gen, sl_program_result(p), sl_program_id(p), NULL, NULL, NULL, &o);
	if (o.warning)
		printf("%s\n", o.warning);
	/* The answer may hold NUL: written by length. */
	fwrite(o.text, 1, o.text_len, o.is_error ? stderr : stdout);
	fputc('\n', o.is_error ? stderr : stdout);
	if (o.is_error)
		ex->rc = 1;
	fflush(stdout);
	sl_output_dispose(&o);
	sl_program_free(p);
	sl_gateway_stop(ex->gw, on_stopped, ex);
}

static void on_settled(void *ctx)
{
	struct exec *ex = ctx;
	if (!ex->gw->sandbox) {
		fprintf(stderr, "sluice: code mode is unavailable: %s\n", ex->gw->code_error);
		ex->rc = 1;
		sl_gateway_stop(ex->gw, on_stopped, ex);
		return;
	}
	sl_codemode_run(ex->gw, NULL, ex->code, ex->len, on_done, NULL, ex);
}

int sl_cli_exec(struct sl_gen *gen, const char *code, size_t len)
{
	const struct sl_config *cfg = gen->cfg;
	uv_loop_t *loop = uv_default_loop();
	struct exec ex = { .code = code, .len = len };

	if (len > cfg->code.max_source) {
		fprintf(stderr, "sluice: the program is %zu bytes, over the limit of %zu\n", len,
			cfg->code.max_source);
		return 1;
	}
	ex.gw = sl_gateway_new(loop, gen);
	sl_gateway_start(ex.gw, NULL);
	sl_gateway_when_settled(ex.gw, on_settled, &ex);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return ex.rc;
}

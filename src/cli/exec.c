/*
 * sluice exec: run one program against the configured servers from a
 * terminal, as execute_code would, and print what the model would get:
 * the return value on stdout, console output on stderr, and on failure
 * "<kind>: <message>" on stderr with exit status 1.
 */
#include "cli/cli.h"
#include "core/log.h"
#include "gateway/codemode.h"
#include "stages/audit.h"
#include "stages/telemetry.h"

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

static void on_done(void *ctx, struct sl_program *p)
{
	struct exec *ex = ctx;
	const struct sl_program_result *r = sl_program_result(p);

	sl_audit_program(sl_program_id(p), 0, r->ok ? "ok" : r->kind, r->calls, r->duration_ms,
			 r->ok ? strlen(r->text) : 0);
	sl_telemetry_program(sl_program_id(p), 0, r->ok ? "ok" : r->kind, r->calls, r->duration_ms,
			     r->ok ? strlen(r->text) : 0);
	if (*r->console)
		fprintf(stderr, "[console]\n%s%s", r->console,
			r->console_cut ? "\n[console output cut at its limit]\n" : "");
	if (r->ok) {
		printf("%s\n", r->text);
	} else {
		fprintf(stderr, "%s: %s\n", r->kind, r->text);
		ex->rc = 1;
	}
	fflush(stdout);
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

int sl_cli_exec(struct sl_config *cfg, const char *code, size_t len)
{
	uv_loop_t *loop = uv_default_loop();
	struct exec ex = { .code = code, .len = len };

	if (len > cfg->code.max_source) {
		fprintf(stderr, "sluice: the program is %zu bytes, over the limit of %zu\n", len,
			cfg->code.max_source);
		return 1;
	}
	cfg->code_enabled = true;
	ex.gw = sl_gateway_new(loop, cfg);
	sl_gateway_start(ex.gw, NULL);
	sl_gateway_when_settled(ex.gw, on_settled, &ex);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return ex.rc;
}

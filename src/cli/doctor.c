/*
 * sluice doctor: what the kernel offers code mode on this machine, and
 * which boundaries a real worker ends up with (it runs `return 1`).
 */
#include "cli/cli.h"
#include "gateway/codemode.h"
#include "sandbox/kernel.h"
#include "sandbox/sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct doctor {
	struct sl_gateway *gw;
	int rc;
};

static void on_stopped(void *ctx)
{
	struct doctor *dr = ctx;
	sl_gateway_free(dr->gw);
}

static void on_done(void *ctx, struct sl_program *p, struct sl_gen *gen)
{
	struct doctor *dr = ctx;
	const struct sl_program_result *r = sl_program_result(p);
	unsigned have = sl_sandbox_boundaries(dr->gw->sandbox);
	char buf[256];

	printf("a worker ran `return 1`: %s%s%s\n", r->ok ? "ok, " : "FAILED: ",
	       r->ok ? "result " : r->kind, r->ok ? r->text : "");
	if (!r->ok) {
		printf("  %s\n", r->text);
		dr->rc = 1;
	}
	printf("\nboundaries in force for each program:\n");
	printf("  engine: QuickJS heap limit %zu MiB, stack %zu KiB, interrupt at the deadline\n",
	       dr->gw->gen->cfg->code.heap_bytes >> 20, dr->gw->gen->cfg->code.stack_bytes >> 10);
	for (unsigned bit = 1; bit < SL_B_ALL; bit <<= 1)
		printf("  %-13s %s\n", sl_boundary_name(bit), have & bit ? "yes" : "NO");
	if (dr->gw->gen->cfg->code_require & ~have) {
		printf("\nmissing boundaries required by sluice.codeMode.require: %s\n",
		       sl_sandbox_describe(dr->gw->gen->cfg->code_require & ~have, buf, sizeof(buf)));
		dr->rc = 1;
	}
	fflush(stdout);
	sl_program_free(p);
	sl_gateway_stop(dr->gw, on_stopped, dr);
}

static void on_settled(void *ctx)
{
	struct doctor *dr = ctx;
	if (!dr->gw->sandbox) {
		printf("code mode is unavailable: %s\n", dr->gw->code_error);
		dr->rc = 1;
		sl_gateway_stop(dr->gw, on_stopped, dr);
		return;
	}
	sl_codemode_run(dr->gw, NULL, "return 1", 8, on_done, NULL, dr);
}

int sl_cli_doctor(struct sl_gen *gen)
{
	uv_loop_t *loop = uv_default_loop();
	struct doctor dr = { 0 };
	FILE *f;
	char line[256];

	printf("sluice %s\n\nkernel:\n", SL_VERSION);
	f = fopen("/proc/sys/kernel/osrelease", "re");
	if (f && fgets(line, sizeof(line), f))
		printf("  release       %s", line);
	if (f)
		fclose(f);
	f = fopen("/proc/sys/kernel/seccomp/actions_avail", "re");
	printf("  seccomp       %s", f && fgets(line, sizeof(line), f) ? line : "not available\n");
	if (f)
		fclose(f);
	printf("  landlock ABI  %d%s\n", sl_kernel_landlock_abi(),
	       sl_kernel_landlock_abi() ? "" : " (not available)");
	f = fopen("/proc/sys/user/max_user_namespaces", "re");
	printf("  user namespaces allowed: %s", f && fgets(line, sizeof(line), f) ? line : "unknown\n");
	if (f)
		fclose(f);
	printf("\n");
	fflush(stdout);

	/* main gave it no upstream: none is needed to look at the sandbox. */
	dr.gw = sl_gateway_new(loop, gen);
	sl_gateway_start(dr.gw, NULL);
	sl_gateway_when_settled(dr.gw, on_settled, &dr);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return dr.rc;
}

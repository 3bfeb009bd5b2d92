/*
 * sluice check: validate the config, start every server once, and print
 * what each one offers (or why it failed). Exit 0 if every enabled server
 * came up.
 */
#include "cli/cli.h"
#include "core/log.h"
#include "gateway/gateway.h"

#include <stdio.h>
#include <string.h>

struct check {
	struct sl_gateway *gw;
	int rc;
};

static void on_stopped(void *ctx)
{
	struct check *ck = ctx;
	sl_gateway_free(ck->gw);
}

static void on_settled(void *ctx)
{
	struct check *ck = ctx;
	struct sl_gateway *gw = ck->gw;
	const struct sl_config *cfg = gw->cfg;

	printf("%-24s %-10s %-11s %6s %9s %9s %7s\n", "SERVER", "STATUS", "PROTOCOL", "TOOLS",
	       "RESOURCES", "TEMPLATES", "PROMPTS");
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		printf("%-24s %-10s %-11s %6zu %9zu %9zu %7zu\n", u->name,
		       sl_upstream_state_name(u->state),
		       u->protocol_version ? u->protocol_version : "-", u->tools.n, u->resources.n,
		       u->templates.n, u->prompts.n);
		if (u->error)
			printf("  %s: %s\n", u->state == SL_UP_READY ? "note" : "error", u->error);
		if (u->state != SL_UP_READY && !u->cfg->disabled)
			ck->rc = 1;
	}
	printf("\n%zu tools exposed in %s mode", gw->catalog.tools.n, sl_exposure_name(cfg->exposure));
	if (cfg->exposure == SL_EXPOSE_PASSTHROUGH || cfg->exposure == SL_EXPOSE_HYBRID) {
		printf(":\n");
		for (size_t i = 0; i < gw->catalog.tools.n; i++)
			printf("  %s\n", gw->catalog.tools.v[i].exposed);
	} else if (cfg->exposure == SL_EXPOSE_CODE) {
		printf(" behind search_tools, describe_tools and execute_code\n");
	} else {
		printf(" behind search_tools, describe_tools, list_servers, list_tools and invoke_tool\n");
	}
	fflush(stdout);
	sl_gateway_stop(gw, on_stopped, ck);
}

int sl_cli_check(struct sl_gen *gen)
{
	const struct sl_config *cfg = gen->cfg;
	uv_loop_t *loop = uv_default_loop();
	struct check ck = { 0 };

	printf("config %s: %zu servers, exposure %s\n", cfg->path, cfg->nservers,
	       sl_exposure_name(cfg->exposure));
	for (size_t i = 0; i < cfg->nwarnings; i++)
		printf("  warning: %s\n", cfg->warnings[i]);
	ck.gw = sl_gateway_new(loop, gen);
	sl_gateway_start(ck.gw, NULL);
	sl_gateway_when_settled(ck.gw, on_settled, &ck);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	return ck.rc;
}

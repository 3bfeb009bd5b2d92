/*
 * sluice check: validate the config, start every server once, and print
 * what each one offers (or why it failed). Exit 0 if every enabled server
 * came up.
 */
#include "cli/cli.h"
#include "auth/caller.h"
#include "gateway/view.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "oauth/client.h"
#include "stages/pinning.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PROGRESS_MS 100 /* how often the servers' states are looked at */

/* Progress on stderr while the servers start (a person waits, and a slow
 * npx download can take a minute): on a terminal one line rewritten in
 * place, else one plain line per server as it settles, for logs and CI.
 * A server has settled as the gateway counts it (check_settled in
 * gateway.c): no longer starting for the first time. */
struct check {
	struct sl_gateway *gw;
	int rc;
	uv_timer_t progress;
	bool tty;
	bool *told;   /* per upstream: its line was printed (not on a tty) */
	size_t ntold; /* settled servers reported so far */
	size_t total; /* servers that start: the enabled ones */
	char shown[SL_LOG_STATUS_MAX]; /* the status line drawn last (a tty) */
};

static bool counts(const struct sl_upstream *u)
{
	return !u->cfg->disabled;
}

static bool settled(const struct sl_upstream *u)
{
	return !(u->state == SL_UP_STARTING && u->starts == 1) && u->state != SL_UP_IDLE;
}

static void progress(struct check *ck, bool last)
{
	struct sl_gateway *gw = ck->gw;
	const char *waiting = NULL;
	size_t done = 0;

	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		if (!counts(u))
			continue;
		if (!settled(u)) {
			waiting = waiting ? waiting : u->name;
			continue;
		}
		done++;
		if (!ck->tty && !ck->told[i]) {
			ck->told[i] = true;
			fprintf(stderr, "check: %zu/%zu %s: %s\n", ++ck->ntold, ck->total, u->name,
				sl_upstream_state_name(u->state));
		}
	}
	if (!ck->tty) {
		return;
	} else if (last || !waiting) {
		sl_log_status(NULL);
	} else {
		char line[SL_LOG_STATUS_MAX];
		snprintf(line, sizeof(line), "starting servers: %zu/%zu done, waiting for %s%s", done,
			 ck->total, waiting, ck->total - done > 1 ? " and others..." : "...");
		if (strcmp(line, ck->shown)) {
			memcpy(ck->shown, line, sizeof(line));
			sl_log_status(line);
		}
	}
}

static void on_progress(uv_timer_t *t)
{
	progress(t->data, false);
}

static void on_closed(uv_handle_t *h)
{
}

static void on_stopped(void *ctx)
{
	struct check *ck = ctx;
	sl_gateway_free(ck->gw);
	uv_close((uv_handle_t *)&ck->progress, on_closed);
}

/* One line under a server whose tools pinning holds back: how many, why,
 * and the commands that review and trust them. */
static void pinning_note(struct sl_pinning *pg, const struct sl_upstream *u,
			 const struct sl_config *cfg)
{
	struct sl_pin_review r;

	sl_pinning_review(pg, u, &r);
	if (r.changed + r.fresh == 0)
		return;
	printf("  pinning: %zu tools hidden (%zu changed since pinned, %zu new): review with "
	       "`sluice pins diff %s --config %s`, trust with `sluice pins approve %s --config %s`\n",
	       r.changed + r.fresh, r.changed, r.fresh, u->name, cfg->path, u->name, cfg->path);
}

/* The HTTP front end as configured: where, whether HTTPS, and who may
 * call (docs/internals/AUTH.md). Nothing when the config has no HTTP part. */
static void http_note(const struct sl_http_config *h)
{
	bool anyone = !h->bearer_token && !h->auth.ntokens && !h->auth.resource;

	if (!h->listen && anyone && !h->tls.cert_file)
		return;
	printf("http: %s, %s; who may call:", h->listen ? h->listen : "with --http",
	       h->tls.cert_file ? "HTTPS" : "plain HTTP");
	if (h->bearer_token)
		printf(" a shared bearer token;");
	if (h->auth.ntokens)
		printf(" %zu static token%s;", h->auth.ntokens, h->auth.ntokens == 1 ? "" : "s");
	if (h->auth.resource)
		printf(" OAuth access tokens for %s;", h->auth.resource);
	printf("%s\n", anyone ? " anyone (loopback only)" : "");
}

/* A profile as its sessions see it (docs/PROFILES.md): where, in which
 * mode, and its tools under their names there. */
static void profile_note(struct sl_gateway *gw, const struct sl_profile *p)
{
	struct sl_caller *who = sl_caller_new("none");
	struct sl_view v;
	size_t n = 0;

	sl_caller_set_profile(who, strcmp(p->name, "default") ? p->name : NULL);
	sl_view_of(gw, who, &v);
	for (size_t i = 0; i < gw->catalog.tools.n; i++)
		n += sl_view_local(&v, &gw->catalog.tools.v[i]) != NULL;
	printf("\nprofile %s (%s%s), %s mode: %zu tools%s\n", p->name,
	       strcmp(p->name, "default") ? "/mcp/" : "/mcp and stdio",
	       strcmp(p->name, "default") ? p->name : "", sl_exposure_name(v.exposure), n,
	       v.exposure == SL_EXPOSE_PASSTHROUGH || v.exposure == SL_EXPOSE_HYBRID ? ":" : "");
	for (size_t i = 0; i < gw->catalog.tools.n; i++) {
		const char *name = sl_view_exposed(&v, &gw->catalog.tools.v[i]);
		if (name && (v.exposure == SL_EXPOSE_PASSTHROUGH || v.exposure == SL_EXPOSE_HYBRID))
			printf("  %s\n", name);
	}
	sl_caller_unref(who);
}

static void on_settled(void *ctx)
{
	struct check *ck = ctx;
	struct sl_gateway *gw = ck->gw;
	const struct sl_config *cfg = gw->gen->cfg;
	struct sl_pinning *pg = sl_gen_state(gw->gen, &sl_stage_pinning);
	size_t held = 0;

	/* The servers still starting at the deadline are listed as such. */
	uv_timer_stop(&ck->progress);
	if (ck->total)
		progress(ck, true);
	printf("%-24s %-10s %-11s %6s %9s %9s %7s\n", "SERVER", "STATUS", "PROTOCOL", "TOOLS",
	       "RESOURCES", "TEMPLATES", "PROMPTS");
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		printf("%-24s %-10s %-11s %6zu %9zu %9zu %7zu\n", u->name,
		       sl_upstream_state_name(u->state),
		       u->protocol_version ? u->protocol_version : "-", u->tools.n, u->resources.n,
		       u->templates.n, u->prompts.n);
		if (u->error)
			printf("  %s: %s\n", u->state == SL_UP_READY && !u->scope_refused ? "note" : "error",
			       u->error);
		if (u->oauth) {
			char buf[300];
			const char *d = sl_oauth_client_describe(u->oauth, buf, sizeof(buf));
			/* A server that never asked for a token has nothing to say. */
			if (strcmp(d, "not logged in"))
				printf("  oauth: %s; its login is kept in %s\n", d,
				       sl_oauth_client_path(u->oauth));
		}
		/* A list refused for a scope: up, but not all there until a login. */
		if ((u->state != SL_UP_READY || u->scope_refused) && !u->cfg->disabled)
			ck->rc = 1;
		pinning_note(pg, u, cfg);
	}
	/* Pinning applies as it would when serving: a tool it holds back is
	 * not exposed, and is listed as hidden with the reason. */
	for (size_t i = 0; i < gw->catalog.tools.n; i++)
		held += sl_pinning_hold(pg, gw->catalog.tools.v[i].up, gw->catalog.tools.v[i].def) !=
			SL_PIN_SHOWN;
	printf("\n%zu tools exposed in %s mode", gw->catalog.tools.n - held,
	       sl_exposure_name(cfg->exposure));
	if (held)
		printf(" (%zu more hidden by pinning)", held);
	if (cfg->exposure == SL_EXPOSE_PASSTHROUGH || cfg->exposure == SL_EXPOSE_HYBRID) {
		printf(":\n");
		for (size_t i = 0; i < gw->catalog.tools.n; i++) {
			const struct sl_entry *e = &gw->catalog.tools.v[i];
			enum sl_pin_hold h = sl_pinning_hold(pg, e->up, e->def);
			printf("  %s%s\n", e->exposed, h == SL_PIN_HELD_CHANGED ?
			       "  (hidden by pinning: changed since pinned)" : h == SL_PIN_HELD_NEW ?
			       "  (hidden by pinning: new, not approved)" : "");
		}
	} else if (cfg->exposure == SL_EXPOSE_CODE) {
		printf(" behind search_tools, describe_tools and execute_code\n");
	} else {
		printf(" behind search_tools, describe_tools, list_servers, list_tools and invoke_tool\n");
	}
	for (size_t i = 0; i < cfg->nprofiles; i++)
		profile_note(gw, &cfg->profiles[i]);
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
	http_note(&cfg->http);
	fflush(stdout);
	ck.gw = sl_gateway_new(loop, gen);
	for (size_t i = 0; i < ck.gw->nups; i++)
		ck.total += counts(ck.gw->ups[i]);
	ck.tty = isatty(STDERR_FILENO);
	ck.told = sl_alloc((ck.gw->nups ? ck.gw->nups : 1) * sizeof(*ck.told));
	uv_timer_init(loop, &ck.progress);
	ck.progress.data = &ck;
	if (ck.total) {
		if (!ck.tty)
			fprintf(stderr, "check: starting %zu server%s\n", ck.total, ck.total == 1 ? "" : "s");
		uv_timer_start(&ck.progress, on_progress, 0, PROGRESS_MS);
	}
	sl_gateway_start(ck.gw, NULL);
	sl_gateway_when_settled(ck.gw, on_settled, &ck);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
	free(ck.told);
	return ck.rc;
}

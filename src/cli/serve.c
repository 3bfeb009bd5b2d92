/*
 * sluice serve: the gateway on stdio, or on HTTP (--http or
 * sluice.http.listen), where sessions come and go and only a signal ends
 * the gateway. The client ending its input ends the
 * gateway once the requests it already sent are answered, or at once if it
 * also stopped reading our output; SIGINT or SIGTERM end it at once
 * (in-flight calls and programs are cancelled). Either way every
 * upstream is stopped (stdin closed, then SIGTERM, then SIGKILL) and reaped.
 *
 * SIGHUP reloads the config file in process: it is loaded and the next
 * generation built from it (every stage's init on its section, sharing the
 * state of unchanged sections); building it is the validation, so a broken
 * file is refused, with a log line saying why, before anything here
 * changes. A valid one goes to sl_gateway_reload (see gateway.h for what
 * changes and when); calls in flight finish on the generation they hold.
 * On HTTPS, the certificate and key are read again too, before anything
 * changes, and new handshakes take them (sl_http_tls_swap); a pair that
 * does not load refuses the reload like a broken file.
 */
#include "cli/cli.h"
#include "shared/fleet.h"
#include "shared/redis.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "gateway/session.h"
#include "pipeline/call.h"
#include "transport/http.h"
#include "transport/stdio.h"
#include "transport/tls.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_POLL_MS 10

struct serve {
	uv_loop_t *loop;
	struct sl_gateway *gw;
	struct sl_stdio *stdio;      /* one of these two */
	struct sl_http *http;
	uv_signal_t sigint, sigterm, sighup;
	uv_timer_t drain;
	bool stopping;
	const struct sl_cli_opts *opts;
	const char *path;           /* the config file, read again on SIGHUP */
};

static void on_gateway_stopped(void *ctx)
{
	struct serve *sv = ctx;
	uv_close((uv_handle_t *)&sv->sigint, NULL);
	uv_close((uv_handle_t *)&sv->sigterm, NULL);
	uv_close((uv_handle_t *)&sv->sighup, NULL);
	uv_close((uv_handle_t *)&sv->drain, NULL);
	if (sv->stdio)
		sl_stdio_free(sv->stdio);
	else
		sl_http_free(sv->http);
	sl_gateway_free(sv->gw);
}

static void on_start_failed(void *ctx)
{
	struct serve *sv = ctx;
	sl_gateway_free(sv->gw);
}

static void shut_down(struct serve *sv)
{
	if (sv->stopping)
		return;
	sv->stopping = true;
	uv_timer_stop(&sv->drain);
	/* A replica that stops cleanly leaves the fleet (sent before the loop
	 * ends); one that dies shows as gone. */
	sl_fleet_leave(sv->gw->fleet);
	/* Every request in flight gets its answer (an error saying so) before
	 * its transport closes: a client must not wait for its own timeout. */
	sl_session_shutdown_all(sv->gw);
	if (sv->stdio)
		sl_stdio_close(sv->stdio);
	else
		sl_http_stop(sv->http);
	sl_gateway_stop(sv->gw, on_gateway_stopped, sv);
}

/* True once nobody reads our stdout any more (the client is gone, not
 * just done writing). */
static bool output_gone(void)
{
	struct pollfd p = { .fd = 1, .events = 0 };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP | POLLNVAL));
}

static void on_drain(uv_timer_t *t)
{
	struct serve *sv = t->data;
	/* A client that closed only its end of our stdin still reads the
	 * answers to what it sent; one that closed both gets none, and its
	 * work (programs included) is cancelled at once. */
	if (sl_session_idle(sl_stdio_session(sv->stdio)) || output_gone())
		shut_down(sv);
}

static void on_input_end(void *ctx)
{
	struct serve *sv = ctx;
	sl_log(SL_LOG_DEBUG, "the client closed its input");
	sl_session_input_end(sl_stdio_session(sv->stdio));
	uv_timer_start(&sv->drain, on_drain, 0, DRAIN_POLL_MS);
}

static void on_signal(uv_signal_t *h, int sig)
{
	struct serve *sv = h->data;
	sl_log(SL_LOG_INFO, "signal %d: shutting down", sig);
	shut_down(sv);
}

/* ---- reload on SIGHUP ------------------------------------------------- */

static void on_sighup(uv_signal_t *h, int sig)
{
	struct serve *sv = h->data;
	struct sl_config *cfg;
	struct sl_gen *next = NULL;
	struct sl_tls *tls = NULL;
	struct sl_err err;
	int rc;

	if (sv->stopping)
		return;
	sl_log(SL_LOG_INFO, "SIGHUP: reloading %s", sv->path);
	if (sl_cli_load(sv->path, sv->opts, &cfg, &err) < 0) {
		sl_log(SL_LOG_ERROR, "config reload refused, the current config stays: %s", err.msg);
		return;
	}
	for (size_t i = 0; i < cfg->nwarnings; i++)
		sl_log(SL_LOG_WARN, "%s", cfg->warnings[i]);
	/* The certificate is read again even when its paths did not change:
	 * a renewed one on disk is the common case. */
	rc = sl_gen_new(cfg, sv->gw->gen, sl_stages, sl_nstages, &next, &err);
	if (rc == SL_OK && sv->http)
		rc = sl_http_tls_load(sv->http, cfg, &tls, &err);
	if (rc == SL_OK)
		rc = sl_gateway_reload(sv->gw, next, &err);
	if (rc == SL_OK && sv->http)
		sl_http_tls_swap(sv->http, cfg, tls);
	else if (tls)
		sl_tls_unref(tls);
	if (next)
		sl_gen_unref(next);
	sl_config_unref(cfg);
	if (rc < 0)
		sl_log(SL_LOG_ERROR, "config reload refused, the current config stays: %s", err.msg);
}

int sl_cli_serve(struct sl_gen *gen, const char *http, const struct sl_cli_opts *opts)
{
	const struct sl_config *cfg = gen->cfg;
	struct serve sv = { 0 };
	struct sl_err err;

	sv.loop = uv_default_loop();
	sv.opts = opts;
	sv.path = cfg->path;
	if (!http)
		http = cfg->http.listen;
	sv.gw = sl_gateway_new(sv.loop, gen);
	/* Many clients: capabilities are declared upstream per what sluice
	 * relays, and questions go only to the session that can answer. */
	sv.gw->shared = http != NULL;
	/* Replicas: state shared through Redis (docs/internals/REPLICAS.md). */
	if (cfg->redis.on) {
		sl_gateway_set_redis(sv.gw, sl_redis_new(sv.loop, &cfg->redis));
		if (!gen->key_shared)
			sl_log(SL_LOG_WARN, "shared state: sluice.shared.redis without "
			       "sluice.shared.secret: seals (requestState, confirmations, task ids) "
			       "and sessions are per replica; a client must stay on the replica "
			       "that served it");
	}
	if (http) {
		if (sl_http_start(sv.loop, sv.gw, cfg, http, &sv.http, &err) < 0) {
			fprintf(stderr, "sluice: %s\n", err.msg);
			sl_gateway_stop(sv.gw, on_start_failed, &sv);
			uv_run(sv.loop, UV_RUN_DEFAULT);
			uv_loop_close(sv.loop);
			return 2;
		}
	} else {
		sv.stdio = sl_stdio_start(sv.loop, sv.gw, cfg->max_request_bytes, on_input_end, &sv);
	}
	/* Replicas: this one heartbeats into Redis, once it serves. */
	if (sv.gw->redis) {
		char where[300];
		struct sl_fleet *f;
		if (sv.http)
			sl_http_address(sv.http, where, sizeof(where));
		f = sl_fleet_start(sv.gw->loop, sv.gw->redis, sv.gw->gen->cfg->replica_id,
				   sv.http ? where : NULL, sl_gateway_fleet_load, sv.gw);
		sl_gateway_set_fleet(sv.gw, f);
	}
	uv_signal_init(sv.loop, &sv.sigint);
	uv_signal_init(sv.loop, &sv.sigterm);
	uv_signal_init(sv.loop, &sv.sighup);
	uv_timer_init(sv.loop, &sv.drain);
	sv.sigint.data = sv.sigterm.data = sv.sighup.data = sv.drain.data = &sv;
	uv_signal_start(&sv.sigint, on_signal, SIGINT);
	uv_signal_start(&sv.sigterm, on_signal, SIGTERM);
	uv_signal_start(&sv.sighup, on_sighup, SIGHUP);
	sl_log(SL_LOG_INFO, "sluice %s serving %zu servers on %s (%s mode)", SL_VERSION,
	       cfg->nservers, http ? "HTTP" : "stdio", sl_exposure_name(cfg->exposure));
	uv_run(sv.loop, UV_RUN_DEFAULT);
	uv_loop_close(sv.loop);
	return 0;
}

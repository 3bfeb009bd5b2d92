/*
 * sluice serve: the gateway on stdio, or on HTTP (--http or
 * sluice.http.listen), where sessions come and go and only a signal ends
 * the gateway. The client ending its input ends the
 * gateway once the requests it already sent are answered, or at once if it
 * also stopped reading our output; SIGINT or SIGTERM end it at once
 * (in-flight calls and programs are cancelled). Either way every
 * upstream is stopped (stdin closed, then SIGTERM, then SIGKILL) and reaped.
 */
#include "cli/cli.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "transport/http.h"
#include "transport/stdio.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#define DRAIN_POLL_MS 10

struct serve {
	uv_loop_t *loop;
	struct sl_gateway *gw;
	struct sl_stdio *stdio;      /* one of these two */
	struct sl_http *http;
	uv_signal_t sigint, sigterm;
	uv_timer_t drain;
	bool stopping;
};

static void on_gateway_stopped(void *ctx)
{
	struct serve *sv = ctx;
	uv_close((uv_handle_t *)&sv->sigint, NULL);
	uv_close((uv_handle_t *)&sv->sigterm, NULL);
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

int sl_cli_serve(const struct sl_config *cfg, const char *http)
{
	struct serve sv = { 0 };
	struct sl_err err;

	sv.loop = uv_default_loop();
	if (!http)
		http = cfg->http.listen;
	sv.gw = sl_gateway_new(sv.loop, cfg);
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
	uv_signal_init(sv.loop, &sv.sigint);
	uv_signal_init(sv.loop, &sv.sigterm);
	uv_timer_init(sv.loop, &sv.drain);
	sv.sigint.data = sv.sigterm.data = sv.drain.data = &sv;
	uv_signal_start(&sv.sigint, on_signal, SIGINT);
	uv_signal_start(&sv.sigterm, on_signal, SIGTERM);
	sl_log(SL_LOG_INFO, "sluice %s serving %zu servers on %s (%s mode)", SL_VERSION,
	       cfg->nservers, http ? "HTTP" : "stdio", sl_exposure_name(cfg->exposure));
	uv_run(sv.loop, UV_RUN_DEFAULT);
	uv_loop_close(sv.loop);
	return 0;
}

/*
 * sluice serve: the gateway on stdio, or on HTTP (--http or
 * sluice.http.listen), where sessions come and go and only a signal ends
 * the gateway. The client ending its input ends the
 * gateway once the requests it already sent are answered, or at once if it
 * also stopped reading our output; SIGINT or SIGTERM end it at once
 * (in-flight calls and programs are cancelled). Either way every
 * upstream is stopped (stdin closed, then SIGTERM, then SIGKILL) and reaped.
 *
 * SIGHUP reloads the config file: a child process (`sluice __validate`,
 * this binary) loads it and runs every stage's init on it, so a broken
 * file is refused, with a log line saying why, before anything here
 * changes; the loop keeps serving meanwhile. A valid one goes to
 * sl_gateway_reload (see gateway.h for what changes and when).
 */
#include "cli/cli.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "transport/http.h"
#include "transport/stdio.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRAIN_POLL_MS 10
#define VALIDATE_OUT_MAX 2048 /* the tail of the validator's output that is kept */
#define VALIDATE_TIMEOUT_MS 30000

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
	/* The reload in progress: a validator process and its output. */
	struct {
		bool running, again;    /* again: a SIGHUP came meanwhile */
		uv_process_t proc;
		uv_pipe_t out;
		uv_timer_t deadline;
		int open;               /* handles not yet closed */
		int64_t status;
		int signal;
		char text[VALIDATE_OUT_MAX];
		size_t len;
	} rl;
};

static void reload(struct serve *sv);

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
	if (sv->rl.running)
		uv_process_kill(&sv->rl.proc, SIGKILL);
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

static void on_rl_closed(uv_handle_t *h)
{
	struct serve *sv = h->data;
	struct sl_config *cfg;
	struct sl_err err;
	char *nl, *why;

	if (--sv->rl.open > 0)
		return;
	sv->rl.running = false;
	if (sv->stopping)
		return;
	if (sv->rl.status < 0) {
		/* The check could not start: reload() said so. */
	} else if (sv->rl.status != 0 || sv->rl.signal) {
		/* The validator's last line is "sluice: <why>". */
		sv->rl.text[sv->rl.len] = '\0';
		while (sv->rl.len && sv->rl.text[sv->rl.len - 1] == '\n')
			sv->rl.text[--sv->rl.len] = '\0';
		nl = strrchr(sv->rl.text, '\n');
		why = nl ? nl + 1 : sv->rl.text;
		if (strncmp(why, "sluice: ", 8) == 0)
			why += 8;
		sl_log(SL_LOG_ERROR, "config reload refused, the current config stays: %s",
		       sv->rl.signal ? "the check of the new config did not finish" :
		       *why ? why : "the new config is invalid");
	} else if (sl_cli_load(sv->path, sv->opts, &cfg, &err) < 0) {
		/* Changed again since the check. */
		sl_log(SL_LOG_ERROR, "config reload refused, the current config stays: %s", err.msg);
	} else {
		for (size_t i = 0; i < cfg->nwarnings; i++)
			sl_log(SL_LOG_WARN, "%s", cfg->warnings[i]);
		if (sl_gateway_reload(sv->gw, cfg, &err) < 0)
			sl_log(SL_LOG_ERROR, "config reload refused, the current config stays: %s",
			       err.msg);
	}
	if (sv->rl.again) {
		sv->rl.again = false;
		reload(sv);
	}
}

static void close_rl(struct serve *sv, uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, on_rl_closed);
}

static void on_rl_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct serve *sv = h->data;
	size_t half = sv->rl.len / 2;

	/* The reason is the last line: when full, keep the newer half. */
	if (sv->rl.len == sizeof(sv->rl.text) - 1) {
		memmove(sv->rl.text, sv->rl.text + half, sv->rl.len - half);
		sv->rl.len -= half;
	}
	*buf = uv_buf_init(sv->rl.text + sv->rl.len, sizeof(sv->rl.text) - 1 - sv->rl.len);
}

static void on_rl_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct serve *sv = st->data;
	if (n > 0)
		sv->rl.len += (size_t)n;
	else if (n < 0)
		close_rl(sv, (uv_handle_t *)st);
}

static void on_rl_exit(uv_process_t *p, int64_t status, int sig)
{
	struct serve *sv = p->data;
	sv->rl.status = status;
	sv->rl.signal = sig;
	uv_timer_stop(&sv->rl.deadline);
	close_rl(sv, (uv_handle_t *)&sv->rl.deadline);
	close_rl(sv, (uv_handle_t *)p);
}

static void on_rl_deadline(uv_timer_t *t)
{
	struct serve *sv = t->data;
	uv_process_kill(&sv->rl.proc, SIGKILL);
}

static void reload(struct serve *sv)
{
	char exe[] = "/proc/self/exe";
	char *args[9];
	int n = 0, rc;
	uv_stdio_container_t io[3];
	uv_process_options_t o = { 0 };

	if (sv->stopping)
		return;
	if (sv->rl.running) {
		sv->rl.again = true;
		return;
	}
	sl_log(SL_LOG_INFO, "SIGHUP: reloading %s", sv->path);
	args[n++] = exe;
	args[n++] = "__validate";
	args[n++] = "--config";
	args[n++] = (char *)sv->path;
	if (sv->opts && sv->opts->exposure) {
		args[n++] = "--exposure";
		args[n++] = (char *)sv->opts->exposure;
	}
	if (sv->opts && sv->opts->log_level) {
		args[n++] = "--log-level";
		args[n++] = (char *)sv->opts->log_level;
	}
	args[n] = NULL;
	sv->rl.len = 0;
	sv->rl.status = 0;
	sv->rl.signal = 0;
	uv_pipe_init(sv->loop, &sv->rl.out, 0);
	uv_timer_init(sv->loop, &sv->rl.deadline);
	sv->rl.out.data = sv->rl.proc.data = sv->rl.deadline.data = sv;
	io[0].flags = UV_IGNORE;
	io[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
	io[1].data.stream = (uv_stream_t *)&sv->rl.out;
	io[2].flags = UV_IGNORE; /* __validate writes its messages to stdout */
	o.file = exe;
	o.args = args;
	o.stdio = io;
	o.stdio_count = 3;
	o.exit_cb = on_rl_exit;
	rc = uv_spawn(sv->loop, &sv->rl.proc, &o);
	sv->rl.running = true;
	sv->rl.open = 3;
	if (rc < 0) {
		sl_log(SL_LOG_ERROR, "config reload refused, the current config stays: "
		       "cannot start the check of the new config: %s", uv_strerror(rc));
		sv->rl.status = -1;
		/* On Unix the process handle is initialised even when the spawn
		 * fails: it is closed like the others. */
		uv_close((uv_handle_t *)&sv->rl.proc, on_rl_closed);
		uv_close((uv_handle_t *)&sv->rl.out, on_rl_closed);
		uv_close((uv_handle_t *)&sv->rl.deadline, on_rl_closed);
		return;
	}
	uv_timer_start(&sv->rl.deadline, on_rl_deadline, VALIDATE_TIMEOUT_MS, 0);
	uv_read_start((uv_stream_t *)&sv->rl.out, on_rl_alloc, on_rl_read);
}

static void on_sighup(uv_signal_t *h, int sig)
{
	reload(h->data);
}

int sl_cli_serve(const struct sl_config *cfg, const char *http, const struct sl_cli_opts *opts)
{
	struct serve sv = { 0 };
	struct sl_err err;

	sv.loop = uv_default_loop();
	sv.opts = opts;
	sv.path = cfg->path;
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

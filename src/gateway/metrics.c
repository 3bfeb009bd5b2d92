/*
 * What GET /metrics answers (gateway.h, sl_gateway_metrics): the
 * Prometheus text format 0.0.4, read from the objects that own each
 * number: the gateway (upstreams, requests, generation), the sandbox
 * (boundaries, programs), the front end (its sessions and memory budget,
 * handed in), and the process's counters (pipeline/metrics.h). No number
 * is kept here; docs/METRICS.md lists every family.
 */
#include "gateway/gateway.h"
#include "pipeline/metrics.h"
#include "sandbox/kernel.h"
#include "sandbox/sandbox.h"
#include "upstream/upstream.h"

#include <string.h>

#define PUT(b, ...) ((void)!sl_buf_printf((b), __VA_ARGS__))

static void family(struct sl_buf *b, const char *name, const char *type, const char *help)
{
	PUT(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{server="<u's name>"<more>} */
static void server_sample(struct sl_buf *b, const char *name, const struct sl_upstream *u)
{
	PUT(b, "%s{", name);
	sl_metrics_label(b, "server", u->name, strlen(u->name));
}

static void upstreams(struct sl_gateway *gw, struct sl_buf *b)
{
	family(b, "sluice_upstream_state", "gauge",
	       "1 for the state each upstream server is in, 0 for the others.");
	for (size_t i = 0; i < gw->nups; i++)
		for (int s = SL_UP_IDLE; s <= SL_UP_NEEDS_LOGIN; s++) {
			char state[32];
			snprintf(state, sizeof(state), "%s", sl_upstream_state_name(s));
			/* "needs login" is a label value: snake_case. */
			for (char *p = state; *p; p++)
				if (*p == ' ')
					*p = '_';
			server_sample(b, "sluice_upstream_state", gw->ups[i]);
			PUT(b, ",state=\"%s\"} %d\n", state, gw->ups[i]->state == (enum sl_upstream_state)s);
		}
	family(b, "sluice_upstream_restarts_total", "counter",
	       "Times an upstream server was started again after its first start.");
	for (size_t i = 0; i < gw->nups; i++) {
		server_sample(b, "sluice_upstream_restarts_total", gw->ups[i]);
		PUT(b, "} %u\n", gw->ups[i]->starts ? gw->ups[i]->starts - 1 : 0);
	}
	family(b, "sluice_upstream_tools", "gauge", "Tools each upstream server lists.");
	for (size_t i = 0; i < gw->nups; i++) {
		server_sample(b, "sluice_upstream_tools", gw->ups[i]);
		PUT(b, "} %zu\n", gw->ups[i]->tools.n);
	}
}

static void sandbox(struct sl_gateway *gw, struct sl_buf *b)
{
	unsigned have, admitted, queued;

	if (!gw->sandbox)
		return;
	have = sl_sandbox_boundaries(gw->sandbox);
	sl_sandbox_load(gw->sandbox, &admitted, &queued);
	family(b, "sluice_sandbox_boundary", "gauge",
	       "1 for each kernel boundary in force around code-mode programs, 0 if missing "
	       "(as `sluice doctor` reports).");
	for (unsigned bit = 1; bit < SL_B_ALL; bit <<= 1)
		PUT(b, "sluice_sandbox_boundary{boundary=\"%s\"} %d\n", sl_boundary_name(bit),
		    (have & bit) != 0);
	family(b, "sluice_programs_running", "gauge",
	       "Code-mode programs admitted (running or waiting for their worker).");
	PUT(b, "sluice_programs_running %u\n", admitted);
	family(b, "sluice_programs_queued", "gauge", "Code-mode programs queued for a slot.");
	PUT(b, "sluice_programs_queued %u\n", queued);
}

static void front(struct sl_gateway *gw, const struct sl_front_stats *f, struct sl_buf *b)
{
	family(b, "sluice_sessions", "gauge", "Client sessions open, by transport.");
	PUT(b, "sluice_sessions{transport=\"streamable_http\"} %u\n", f->sessions);
	PUT(b, "sluice_sessions{transport=\"sse\"} %u\n", f->sse_sessions);
	family(b, "sluice_stateless_requests", "gauge",
	       "MCP 2026-07-28 requests in flight (each a session of its own), listens aside.");
	PUT(b, "sluice_stateless_requests %u\n", f->stateless);
	family(b, "sluice_listens", "gauge", "MCP 2026-07-28 subscriptions/listen streams open.");
	PUT(b, "sluice_listens %u\n", f->listens);
	family(b, "sluice_http_connections", "gauge", "HTTP connections open.");
	PUT(b, "sluice_http_connections %u\n", f->connections);
	family(b, "sluice_requests_in_flight", "gauge",
	       "Client requests being answered, all sessions (sluice.limits.maxRequestsInFlight).");
	PUT(b, "sluice_requests_in_flight %u\n", gw->requests);
	family(b, "sluice_buffered_bytes", "gauge",
	       "Bytes the HTTP transport holds for peers (sluice.limits.maxBufferedBytes's account).");
	PUT(b, "sluice_buffered_bytes %zu\n", f->buffered);
	family(b, "sluice_buffered_limit_bytes", "gauge", "sluice.limits.maxBufferedBytes.");
	PUT(b, "sluice_buffered_limit_bytes %zu\n", f->buffered_limit);
}

char *sl_gateway_metrics(struct sl_gateway *gw, const struct sl_front_stats *f, size_t *len)
{
	struct sl_buf b;

	sl_buf_init(&b, SIZE_MAX);
	family(&b, "sluice_build_info", "gauge", "Always 1: the running sluice's version and commit.");
	PUT(&b, "sluice_build_info{version=\"%s\",commit=\"%s\"} 1\n", SL_VERSION, sl_build_commit);
	family(&b, "process_start_time_seconds", "gauge",
	       "When sluice started, in seconds since the Unix epoch.");
	PUT(&b, "process_start_time_seconds %.3f\n", gw->gen->metrics->start_time);
	family(&b, "sluice_config_generation", "gauge",
	       "The configuration in force: 1 at start, one more per reload taken.");
	PUT(&b, "sluice_config_generation %llu\n", (unsigned long long)gw->gen->number);
	upstreams(gw, &b);
	sandbox(gw, &b);
	front(gw, f, &b);
	sl_metrics_render(gw->gen->metrics, &b);
	return sl_buf_take(&b, len);
}

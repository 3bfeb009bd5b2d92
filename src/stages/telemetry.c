/*
 * Telemetry: OTLP/HTTP JSON export of spans and metrics (see telemetry.h).
 *
 * Spans are serialised when a call or program ends and appended to one
 * capped buffer; a repeating timer (intervalMs) wraps what is queued into
 * an ExportTraceServiceRequest and, if counters moved, an
 * ExportMetricsServiceRequest, and POSTs both through a fetcher
 * (event/fetch.h): libcurl's multi interface on the loop, as every HTTP
 * request of sluice's is, so curl never blocks the loop and nothing polls.
 * The timer and the fetcher are unreferenced, so telemetry never keeps
 * sluice alive; its fini sends what is left, running the loop a little
 * longer (at most timeoutMs).
 *
 * The metrics are the process's counters (pipeline/metrics.h), which this
 * stage's finish and output hooks count into whether or not it exports
 * (GET /metrics renders the same counts); the export reads them.
 *
 * Ids need no state: a program's trace id is a per-process random prefix
 * plus the program id, and a call's parent span id is derived from its
 * program id, so a child span can be emitted before its parent.
 *
 * W3C trace context (SEP-414): a request whose _meta carries a valid
 * traceparent continues that trace. Its call's span (or its program's
 * root span) takes the client's trace id and has the client's span as its
 * parent; a program's calls stay children of the program's span. The
 * request hook gives the call its span (c->span) before dispatch, so the
 * upstream's request names sluice's span as its parent in the same trace.
 */
#include "stages/telemetry.h"
#include "config/conf.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/log.h"
#include "auth/caller.h"
#include "pipeline/metrics.h"

#include "event/fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <uv.h>

#define MAX_INFLIGHT 4
#define MAX_ANSWER 65536           /* a collector's answer, read and ignored */

/* The stage's state: none without an endpoint. */
struct sl_telemetry {
	char *traces_url, *metrics_url;
	char *service;
	uint64_t interval_ms, timeout_ms;
	uint8_t seed[16];
	struct sl_buf spans;       /* span objects, comma separated */
	size_t nspans;
	uint64_t dropped;          /* spans lost to the queue cap or a failed export */
	bool warned;
	struct sl_fetcher *fetcher;
	uv_timer_t tick;           /* every intervalMs; at exit, the deadline */
	bool timer;
	/* The counters exported (a reference, taken from the first call or
	 * program seen: the same registry for every generation), and how far
	 * they had moved at the last export. */
	struct sl_metrics *metrics;
	uint64_t start_ns;
	uint64_t exported;
};

/* ---- ids and times ---------------------------------------------------------- */

static void be64(uint64_t v, uint8_t *out)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		out[i] = (uint8_t)v;
}

/* Programs use the first half of the seed, lone calls the second. */
static void trace_bytes(const struct sl_telemetry *T, bool program, uint64_t id, uint8_t b[16])
{
	memcpy(b, T->seed + (program ? 0 : 8), 8);
	be64(id, b + 8);
}

static void trace_id(const struct sl_telemetry *T, bool program, uint64_t id, char out[33])
{
	uint8_t b[16];
	trace_bytes(T, program, id, b);
	sl_hex(b, 16, out);
}

void sl_telemetry_trace_id(const struct sl_telemetry *T, uint64_t program_id, char out[33])
{
	trace_id(T, true, program_id, out);
}

/* Span ids are unique within a trace: calls have the top bit clear. */
void sl_telemetry_program_span_id(uint64_t program_id, char out[17])
{
	uint8_t b[8];
	be64(program_id | (1ull << 63), b);
	sl_hex(b, 8, out);
}

void sl_telemetry_call_span_id(uint64_t call_id, char out[17])
{
	uint8_t b[8];
	be64(call_id & ~(1ull << 63), b);
	sl_hex(b, 8, out);
}

/* The trace call c's span belongs to: the client's when its request
 * carried one, else sluice's own (its program's, or its own). */
static void call_trace_bytes(const struct sl_telemetry *T, const struct sl_call *c, uint8_t b[16])
{
	bool code = c->origin == SL_ORIGIN_CODE;

	if (c->trace.parent.valid)
		memcpy(b, c->trace.parent.trace_id, 16);
	else
		trace_bytes(T, code, code ? c->parent : c->id, b);
}

/* The trace and parent of call c's span (call_trace_bytes); the parent is
 * the program's span for a program's call, else the client's span, else
 * none (parent[0] == '\0'). */
static void call_trace(const struct sl_telemetry *T, const struct sl_call *c, char trace[33],
		       char parent[17])
{
	uint8_t b[16];

	call_trace_bytes(T, c, b);
	sl_hex(b, 16, trace);
	parent[0] = '\0';
	if (c->origin == SL_ORIGIN_CODE)
		sl_telemetry_program_span_id(c->parent, parent);
	else if (c->trace.parent.valid)
		sl_hex(c->trace.parent.span_id, 8, parent);
}

/* Before dispatch: the call's span, which the upstream's request names as
 * its parent (pipeline/call.c). Sampled unless the client's trace says
 * otherwise: every span is exported. */
static enum sl_stage_rc telemetry_request(void *state, struct sl_call *c)
{
	struct sl_telemetry *T = state;

	if (!T)
		return SL_STAGE_DECLINED;
	call_trace_bytes(T, c, c->span.trace_id);
	be64(c->id & ~(1ull << 63), c->span.span_id);
	/* W3C: sampled (01) and random (02) are the flags defined; a vendor
	 * sets the others to zero in what it sends. */
	c->span.flags = c->trace.parent.valid ? c->trace.parent.flags & 0x03 : 0x01;
	c->span.valid = true;
	return SL_STAGE_NEXT;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* OTLP JSON writes 64-bit integers as decimal strings. */
static void add_u64s(yyjson_mut_doc *d, yyjson_mut_val *o, const char *key, uint64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
	yyjson_mut_obj_add_strcpy(d, o, key, s);
}

/* ---- attributes --------------------------------------------------------------- */

static yyjson_mut_val *attr(yyjson_mut_doc *d, yyjson_mut_val *arr, const char *key)
{
	yyjson_mut_val *a = yyjson_mut_arr_add_obj(d, arr);
	yyjson_mut_val *v;
	yyjson_mut_obj_add_str(d, a, "key", key);
	v = yyjson_mut_obj_add_obj(d, a, "value");
	return v;
}

static void attr_str(yyjson_mut_doc *d, yyjson_mut_val *arr, const char *key, const char *s)
{
	yyjson_mut_obj_add_strcpy(d, attr(d, arr, key), "stringValue", s);
}

static void attr_int(yyjson_mut_doc *d, yyjson_mut_val *arr, const char *key, uint64_t n)
{
	add_u64s(d, attr(d, arr, key), "intValue", n);
}

static void attr_bool(yyjson_mut_doc *d, yyjson_mut_val *arr, const char *key, bool b)
{
	yyjson_mut_obj_add_bool(d, attr(d, arr, key), "boolValue", b);
}

/* Who the span is for (OpenTelemetry's enduser.id), never a token. */
static void attr_caller(yyjson_mut_doc *d, yyjson_mut_val *arr, const struct sl_caller *who)
{
	if (who && who->subject)
		attr_str(d, arr, "enduser.id", who->subject);
	if (who && who->client_id)
		attr_str(d, arr, "sluice.client.id", who->client_id);
	if (who && who->profile)
		attr_str(d, arr, "sluice.profile", who->profile);
}

/* ---- spans --------------------------------------------------------------------- */

static void queue_span(struct sl_telemetry *T, yyjson_mut_doc *d)
{
	size_t len;
	char *s = yyjson_mut_write(d, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &len);
	yyjson_mut_doc_free(d);
	if (!s)
		sl_oom();
	if ((T->spans.len && sl_buf_append(&T->spans, ",", 1) < 0) || sl_buf_append(&T->spans, s, len) < 0)
		T->dropped++;
	else
		T->nspans++;
	free(s);
}

static yyjson_mut_val *span_start(yyjson_mut_doc *d, const char *trace, const char *span,
				  const char *parent, const char *name, int kind, uint64_t start_ns,
				  uint64_t end_ns)
{
	yyjson_mut_val *o = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_strcpy(d, o, "traceId", trace);
	yyjson_mut_obj_add_strcpy(d, o, "spanId", span);
	yyjson_mut_obj_add_strcpy(d, o, "parentSpanId", parent ? parent : "");
	yyjson_mut_obj_add_strcpy(d, o, "name", name);
	yyjson_mut_obj_add_int(d, o, "kind", kind);
	add_u64s(d, o, "startTimeUnixNano", start_ns);
	add_u64s(d, o, "endTimeUnixNano", end_ns);
	return o;
}

static void span_status(yyjson_mut_doc *d, yyjson_mut_val *o, bool ok, const char *msg)
{
	yyjson_mut_val *st = yyjson_mut_obj_add_obj(d, o, "status");
	yyjson_mut_obj_add_int(d, st, "code", ok ? 1 : 2); /* STATUS_CODE_OK, _ERROR */
	if (!ok && msg)
		yyjson_mut_obj_add_strcpy(d, st, "message", msg);
}

static size_t result_size(struct sl_call *c, bool *is_error)
{
	yyjson_doc *tmp = NULL;
	yyjson_val *v = NULL;
	size_t n = 0;
	char *s;
	*is_error = false;
	if (c->outcome == SL_OUTCOME_OK) {
		v = sl_call_result_view(c, &tmp);
		*is_error = yyjson_is_true(yyjson_obj_get(v, "isError"));
	}
	if (v && (s = yyjson_val_write(v, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &n)))
		free(s);
	yyjson_doc_free(tmp);
	return n;
}

static void telemetry_finish(void *state, struct sl_call *c)
{
	struct sl_telemetry *T = state;
	uint64_t now = real_ns(), mono = sl_now_us();
	uint64_t end = now - (mono - c->finished_us) * 1000, start = end - (c->finished_us - c->started_us) * 1000;
	char trace[33], span[17], parent[17], *name;
	yyjson_mut_doc *d;
	yyjson_mut_val *o, *attrs;
	bool is_error;
	size_t out, in = 0;
	char *a;

	/* Counted with or without an exporter. */
	sl_metrics_call(c->gen->metrics, c);
	if (!T)
		return;
	if (!T->metrics)
		T->metrics = sl_metrics_ref(c->gen->metrics);

	/* The span. */
	d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	call_trace(T, c, trace, parent);
	sl_telemetry_call_span_id(c->id, span);
	name = sl_printf("tools/call %s.%s", c->up ? c->up->name : "", c->tool);
	o = span_start(d, trace, span, parent[0] ? parent : NULL, name, 3 /* CLIENT */, start, end);
	free(name);
	out = result_size(c, &is_error);
	if ((a = yyjson_mut_val_write(c->args, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &in)))
		free(a);
	attrs = yyjson_mut_obj_add_arr(d, o, "attributes");
	attr_str(d, attrs, "sluice.server", c->up ? c->up->name : "");
	attr_str(d, attrs, "sluice.tool", c->tool);
	attr_str(d, attrs, "sluice.origin", sl_origin_name(c->origin));
	attr_str(d, attrs, "sluice.outcome", sl_outcome_name(c->outcome));
	attr_int(d, attrs, "sluice.call.id", c->id);
	if (c->origin == SL_ORIGIN_CODE)
		attr_int(d, attrs, "sluice.program.id", c->parent);
	if (c->session_id)
		attr_int(d, attrs, "sluice.session.id", c->session_id);
	attr_caller(d, attrs, c->who);
	attr_bool(d, attrs, "sluice.cache_hit", c->cache_hit);
	attr_bool(d, attrs, "sluice.is_error", is_error);
	attr_int(d, attrs, "sluice.bytes_in", in);
	attr_int(d, attrs, "sluice.bytes_out", out);
	/* The outcome's name, never c->why: a message may quote arguments. */
	span_status(d, o, c->outcome == SL_OUTCOME_OK && !is_error, sl_outcome_name(c->outcome));
	queue_span(T, d);
}

/* One finished program: the root span of its trace (the program's calls
 * are its children) and the program counter. */
static void telemetry_output(void *state, struct sl_output *out)
{
	struct sl_telemetry *T = state;
	const char *outcome = out->outcome ? out->outcome : "error";
	char trace[33], span[17], parent[17];
	uint64_t end = real_ns(), start = end - (uint64_t)(out->duration_ms * 1e6);
	bool continued = out->trace && out->trace->valid;
	yyjson_mut_doc *d;
	yyjson_mut_val *o, *attrs;

	sl_metrics_program(out->metrics, out);
	if (!T)
		return;
	if (!T->metrics && out->metrics)
		T->metrics = sl_metrics_ref(out->metrics);
	d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	/* The client's trace, as the program's calls have it (call_trace). */
	if (continued) {
		sl_hex(out->trace->trace_id, 16, trace);
		sl_hex(out->trace->span_id, 8, parent);
	} else
		sl_telemetry_trace_id(T, out->program, trace);
	sl_telemetry_program_span_id(out->program, span);
	o = span_start(d, trace, span, continued ? parent : NULL, "execute_code", 1 /* INTERNAL */,
		       start, end);
	attrs = yyjson_mut_obj_add_arr(d, o, "attributes");
	attr_int(d, attrs, "sluice.program.id", out->program);
	if (out->session_id)
		attr_int(d, attrs, "sluice.session.id", out->session_id);
	attr_caller(d, attrs, out->who);
	attr_str(d, attrs, "sluice.outcome", outcome);
	attr_int(d, attrs, "sluice.program.calls", out->calls);
	attr_int(d, attrs, "sluice.program.output_bytes", out->output_bytes);
	span_status(d, o, strcmp(outcome, "ok") == 0, outcome);
	queue_span(T, d);
}

/* ---- export bodies --------------------------------------------------------------- */

static yyjson_mut_val *resource(struct sl_telemetry *T, yyjson_mut_doc *d, yyjson_mut_val *parent)
{
	yyjson_mut_val *r = yyjson_mut_obj_add_obj(d, parent, "resource");
	yyjson_mut_val *attrs = yyjson_mut_obj_add_arr(d, r, "attributes");
	attr_str(d, attrs, "service.name", T->service);
	attr_str(d, attrs, "service.version", SL_VERSION);
	return r;
}

static yyjson_mut_val *scope(yyjson_mut_doc *d, yyjson_mut_val *parent)
{
	yyjson_mut_val *s = yyjson_mut_obj_add_obj(d, parent, "scope");
	yyjson_mut_obj_add_str(d, s, "name", "sluice");
	yyjson_mut_obj_add_str(d, s, "version", SL_VERSION);
	return s;
}

/* {"resourceSpans":[{"resource":..,"scopeSpans":[{"scope":..,"spans":[ <queued> ]}]}]} */
static char *traces_body(struct sl_telemetry *T)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root = yyjson_mut_obj(d), *rs, *ss;
	char *head, *body;
	size_t hl;

	yyjson_mut_doc_set_root(d, root);
	rs = yyjson_mut_arr_add_obj(d, yyjson_mut_obj_add_arr(d, root, "resourceSpans"));
	resource(T, d, rs);
	ss = yyjson_mut_arr_add_obj(d, yyjson_mut_obj_add_arr(d, rs, "scopeSpans"));
	scope(d, ss);
	yyjson_mut_obj_add_arr(d, ss, "spans");
	head = yyjson_mut_write(d, 0, &hl);
	yyjson_mut_doc_free(d);
	if (!head)
		sl_oom();
	/* head ends in "[]}]}]}": splice the queued spans between the brackets. */
	body = sl_alloc(hl + T->spans.len + 1);
	memcpy(body, head, hl - 6);
	memcpy(body + hl - 6, T->spans.data, T->spans.len);
	memcpy(body + hl - 6 + T->spans.len, head + hl - 6, 6);
	body[hl + T->spans.len] = '\0';
	free(head);
	return body;
}

static yyjson_mut_val *point(struct sl_telemetry *T, yyjson_mut_doc *d, yyjson_mut_val *points, uint64_t now)
{
	yyjson_mut_val *p = yyjson_mut_arr_add_obj(d, points);
	add_u64s(d, p, "startTimeUnixNano", T->start_ns);
	add_u64s(d, p, "timeUnixNano", now);
	return p;
}

static yyjson_mut_val *metric(yyjson_mut_doc *d, yyjson_mut_val *metrics, const char *name,
			      const char *unit, const char *desc, const char *kind, bool monotonic)
{
	yyjson_mut_val *m = yyjson_mut_arr_add_obj(d, metrics), *data;
	yyjson_mut_obj_add_str(d, m, "name", name);
	yyjson_mut_obj_add_str(d, m, "unit", unit);
	yyjson_mut_obj_add_str(d, m, "description", desc);
	data = yyjson_mut_obj_add_obj(d, m, kind);
	yyjson_mut_obj_add_int(d, data, "aggregationTemporality", 2); /* CUMULATIVE */
	if (monotonic)
		yyjson_mut_obj_add_bool(d, data, "isMonotonic", true);
	return yyjson_mut_obj_add_arr(d, data, "dataPoints");
}

static void attr_call(yyjson_mut_doc *d, yyjson_mut_val *p, const struct sl_metrics_pair *pr)
{
	yyjson_mut_val *attrs = yyjson_mut_obj_add_arr(d, p, "attributes");
	attr_str(d, attrs, "sluice.server", pr->server);
	attr_str(d, attrs, "sluice.tool", pr->tool);
}

static void histogram(struct sl_telemetry *T, yyjson_mut_doc *d, yyjson_mut_val *pts, uint64_t now,
		      const char *server, const struct sl_metrics_hist *h)
{
	yyjson_mut_val *p, *bc, *eb;
	uint64_t n = 0;

	for (int b = 0; b <= SL_METRICS_NBOUNDS; b++)
		n += h->n[b];
	if (!n)
		return;
	p = point(T, d, pts, now);
	if (server)
		attr_str(d, yyjson_mut_obj_add_arr(d, p, "attributes"), "sluice.server", server);
	add_u64s(d, p, "count", n);
	yyjson_mut_obj_add_real(d, p, "sum", h->sum);
	bc = yyjson_mut_obj_add_arr(d, p, "bucketCounts");
	eb = yyjson_mut_obj_add_arr(d, p, "explicitBounds");
	for (int b = 0; b <= SL_METRICS_NBOUNDS; b++) {
		char num[24];
		snprintf(num, sizeof(num), "%llu", (unsigned long long)h->n[b]);
		yyjson_mut_arr_add_strcpy(d, bc, num);
		if (b < SL_METRICS_NBOUNDS)
			yyjson_mut_arr_add_real(d, eb, sl_metrics_bounds[b]);
	}
}

static char *metrics_body(struct sl_telemetry *T)
{
	const struct sl_metrics *M = T->metrics;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root = yyjson_mut_obj(d), *rm, *sm, *metrics, *pts, *p, *attrs;
	uint64_t now = real_ns();
	char *s;

	yyjson_mut_doc_set_root(d, root);
	rm = yyjson_mut_arr_add_obj(d, yyjson_mut_obj_add_arr(d, root, "resourceMetrics"));
	resource(T, d, rm);
	sm = yyjson_mut_arr_add_obj(d, yyjson_mut_obj_add_arr(d, rm, "scopeMetrics"));
	scope(d, sm);
	metrics = yyjson_mut_obj_add_arr(d, sm, "metrics");

	pts = metric(d, metrics, "sluice.calls", "{call}",
		     "Tool calls by server, tool, origin and outcome", "sum", true);
	for (size_t i = 0; i < M->npairs; i++)
		for (int o = 0; o < SL_METRICS_NORIGIN; o++)
			for (int k = 0; k < SL_METRICS_NOUTCOME; k++) {
				if (!M->pairs[i].calls[o][k])
					continue;
				p = point(T, d, pts, now);
				attr_call(d, p, &M->pairs[i]);
				attrs = yyjson_mut_obj_get(p, "attributes");
				attr_str(d, attrs, "sluice.origin", sl_origin_name((enum sl_origin)o));
				attr_str(d, attrs, "sluice.outcome", sl_outcome_name((enum sl_outcome)k));
				add_u64s(d, p, "asInt", M->pairs[i].calls[o][k]);
			}
	pts = metric(d, metrics, "sluice.cache.hits", "{call}", "Tool calls answered by the cache",
		     "sum", true);
	add_u64s(d, point(T, d, pts, now), "asInt", M->cache_hits);
	pts = metric(d, metrics, "sluice.cache.misses", "{call}",
		     "Tool calls the cache looked up and did not have", "sum", true);
	add_u64s(d, point(T, d, pts, now), "asInt", M->cache_misses);
	pts = metric(d, metrics, "sluice.programs", "{program}", "execute_code programs by outcome",
		     "sum", true);
	for (size_t k = 0; k < SL_METRICS_NPROGRAM; k++) {
		if (!M->programs[k])
			continue;
		p = point(T, d, pts, now);
		attrs = yyjson_mut_obj_add_arr(d, p, "attributes");
		attr_str(d, attrs, "sluice.outcome", sl_metrics_program_outcomes[k]);
		add_u64s(d, p, "asInt", M->programs[k]);
	}
	pts = metric(d, metrics, "sluice.call.duration", "s",
		     "Tool call duration per server, stages included", "histogram", false);
	for (size_t i = 0; i < M->nservers; i++)
		histogram(T, d, pts, now, M->servers[i].server, &M->servers[i].latency);
	pts = metric(d, metrics, "sluice.program.duration", "s", "execute_code program wall time",
		     "histogram", false);
	histogram(T, d, pts, now, NULL, &M->program_time);
	s = yyjson_mut_write(d, 0, NULL);
	yyjson_mut_doc_free(d);
	if (!s)
		sl_oom();
	return s;
}

/* ---- transfers ------------------------------------------------------------------- */

static void on_exported(void *arg, const struct sl_fetch_result *res)
{
	struct sl_telemetry *T = arg;

	if (res->error || res->status < 200 || res->status > 299) {
		if (!T->warned)
			sl_log(SL_LOG_WARN, "telemetry: export failed: %s",
			       res->error ? res->error : "the collector answered with an error status");
		T->warned = true;
	} else if (T->warned) {
		sl_log(SL_LOG_INFO, "telemetry: exports work again");
		T->warned = false;
	}
}

/* Takes body. */
static void post(struct sl_telemetry *T, const char *url, char *body)
{
	struct sl_fetch_req q = {
		.url = url, .json = body, .max_bytes = MAX_ANSWER, .timeout_ms = T->timeout_ms,
	};

	if (sl_fetch_pending(T->fetcher) >= MAX_INFLIGHT)
		/* The collector is slow or gone: drop rather than pile up. */
		T->dropped++;
	else
		sl_fetch_start(T->fetcher, &q, on_exported, T);
	free(body);
}

static void flush(struct sl_telemetry *T)
{
	char *body;
	if (T->nspans) {
		body = traces_body(T);
		sl_buf_reset(&T->spans);
		T->nspans = 0;
		post(T, T->traces_url, body);
	}
	if (T->metrics && T->metrics->moved != T->exported) {
		T->exported = T->metrics->moved;
		body = metrics_body(T);
		post(T, T->metrics_url, body);
	}
}

static void on_tick(uv_timer_t *t)
{
	flush(t->data);
}

static void on_deadline(uv_timer_t *t)
{
}

/* At exit: sends what is queued and runs the loop until the exports end or
 * timeoutMs passes. The tick, now the deadline, is referenced: it keeps the
 * loop running while the fetcher, unreferenced, is waited for. */
static void drain(struct sl_telemetry *T)
{
	flush(T);
	uv_timer_stop(&T->tick);
	if (!sl_fetch_pending(T->fetcher))
		return;
	uv_ref((uv_handle_t *)&T->tick);
	uv_timer_start(&T->tick, on_deadline, T->timeout_ms, 0);
	while (sl_fetch_pending(T->fetcher) && uv_is_active((uv_handle_t *)&T->tick))
		uv_run(T->tick.loop, UV_RUN_ONCE);
}

/* ---- config ------------------------------------------------------------------------ */

static void telemetry_fini(void *state)
{
	struct sl_telemetry *T = state;
	if (T->timer) {
		drain(T);
		/* Whatever did not finish is abandoned. */
		sl_fetcher_free(T->fetcher);
		uv_close((uv_handle_t *)&T->tick, NULL);
		uv_run(T->tick.loop, UV_RUN_NOWAIT);
	}
	sl_buf_dispose(&T->spans);
	sl_metrics_unref(T->metrics);
	free(T->traces_url);
	free(T->metrics_url);
	free(T->service);
	free(T);
}

/* The settings of sluice.telemetry, read before the state exists (none
 * without an endpoint). */
struct telemetry_conf {
	char *endpoint, *service;
	uint64_t interval_ms, timeout_ms, max_queue;
};

int sl_telemetry_parse_endpoint(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
				void *target)
{
	const char *u = yyjson_get_str(v);
	char **field = sl_conf_field(target, k);

	if (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
		return sl_conf_bad(cx, k);
	free(*field);
	*field = sl_strdup(u);
	return SL_OK;
}

#define TC(field) SL_CONF_AT(struct telemetry_conf, field)
static const struct sl_conf_key telemetry_keys[] = {
	{ "endpoint", SL_CONF_CUSTOM, TC(endpoint), .parse = sl_telemetry_parse_endpoint,
	  .shape = "an http:// or https:// URL (the OTLP/HTTP base, e.g. http://127.0.0.1:4318)",
	  .doc = "Set, spans and metrics are POSTed to `<endpoint>/v1/traces` and "
		 "`<endpoint>/v1/metrics`." },
	{ "intervalMs", SL_CONF_UINT, TC(interval_ms), .min = 10, .max = 600000, .dflt = 1000,
	  .doc = "How often queued spans (and metrics, if they moved) are sent." },
	{ "timeoutMs", SL_CONF_UINT, TC(timeout_ms), .min = 10, .max = 600000, .dflt = 5000,
	  .doc = "Per export request; also how long sluice waits at exit to send what is left." },
	{ "maxQueueBytes", SL_CONF_UINT, TC(max_queue), .min = 4096, .max = 1ull << 30,
	  .dflt = 4u << 20,
	  .doc = "Cap on spans waiting for the next export; past it spans are dropped." },
	{ "serviceName", SL_CONF_STRING, TC(service), .min = 1, .dflt_doc = "`\"sluice\"`",
	  .doc = "The `service.name` resource attribute." },
};
#undef TC

static const struct sl_conf_section telemetry_conf = {
	"sluice.telemetry",
	"OpenTelemetry export (OTLP/HTTP JSON) of a span per call and program and of metrics; off "
	"unless `endpoint` is set (docs/stages/telemetry.md). A change takes effect at the next "
	"start.",
	telemetry_keys, SL_COUNT(telemetry_keys), SL_CONF_STRICT, NULL,
};

/* The exporter of tc (its strings taken): its fetcher made, its timer started. */
static int exporter_start(struct telemetry_conf *tc, struct sl_telemetry **out,
			  struct sl_err *err)
{
	struct sl_telemetry *T = sl_alloc(sizeof(*T));
	size_t n = strlen(tc->endpoint);

	T->service = tc->service ? tc->service : sl_strdup("sluice");
	T->interval_ms = tc->interval_ms;
	T->timeout_ms = tc->timeout_ms;
	while (n > 0 && tc->endpoint[n - 1] == '/')
		n--;
	T->traces_url = sl_printf("%.*s/v1/traces", (int)n, tc->endpoint);
	T->metrics_url = sl_printf("%.*s/v1/metrics", (int)n, tc->endpoint);
	free(tc->endpoint);
	sl_buf_init(&T->spans, (size_t)tc->max_queue);
	if (sl_fetcher_new(uv_default_loop(), "sluice.telemetry", &T->fetcher, err) < 0) {
		telemetry_fini(T);
		return SL_ERR_INVALID;
	}
	sl_fetcher_unref(T->fetcher);
	if (getrandom(T->seed, sizeof(T->seed), 0) != (ssize_t)sizeof(T->seed)) {
		uint64_t x = sl_hash64(&T, sizeof(T), real_ns());
		memcpy(T->seed, &x, 8);
		x = sl_hash64(&x, 8, sl_now_us());
		memcpy(T->seed + 8, &x, 8);
	}
	T->start_ns = real_ns();
	uv_timer_init(uv_default_loop(), &T->tick);
	T->tick.data = T;
	uv_unref((uv_handle_t *)&T->tick);
	uv_timer_start(&T->tick, on_tick, T->interval_ms, T->interval_ms);
	T->timer = true;
	*out = T;
	/* The endpoint without its trailing slashes: traces_url's first n bytes. */
	sl_log(SL_LOG_INFO, "telemetry: OTLP/HTTP JSON to %.*s every %llu ms", (int)n,
	       T->traces_url, (unsigned long long)T->interval_ms);
	return SL_OK;
}

static int telemetry_init(const struct sl_config *cfg, const struct sl_services *svc,
			  yyjson_val *section, void **state, struct sl_err *err)
{
	struct telemetry_conf tc = { 0 };
	struct sl_telemetry *T;
	int rc = sl_conf_load(&telemetry_conf, section, &tc, err);

	/* A section without an endpoint exports nothing. */
	if (rc < 0 || !tc.endpoint) {
		free(tc.endpoint);
		free(tc.service);
		return rc;
	}
	if ((rc = exporter_start(&tc, &T, err)) == SL_OK)
		*state = T;
	return rc;
}

const struct sl_stage sl_stage_telemetry = {
	.name = "telemetry",
	.conf = &telemetry_conf,
	.init = telemetry_init,
	.fini = telemetry_fini,
	.request = telemetry_request,
	.finish = telemetry_finish,
	.output = telemetry_output,
	/* Its fini drains the exporter by running the loop. */
	.restart_only = true,
};

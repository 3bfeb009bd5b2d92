/*
 * Audit records as OpenTelemetry logs (audit_sink.h): OTLP/HTTP JSON
 * ExportLogsServiceRequests POSTed to <endpoint>/v1/logs, each record's
 * JSON line, unchanged, as a log record's string body.
 *
 * The telemetry stage's discipline and client: records are serialised as
 * log records when they are made and queued; a repeating timer (intervalMs)
 * wraps the oldest (at most maxBatchRecords) into one request through a
 * fetcher (event/fetch.h, libcurl's multi interface on the loop). Unlike
 * spans, a batch leaves the queue only when the collector answered 2xx:
 * one request at a time, so records arrive in order, and a failed batch is
 * sent again after a backoff (at-least-once: a collector that stored a
 * batch but whose answer was lost gets it twice).
 */
#include "stages/audit_sink.h"
#include "stages/telemetry.h"
#include "core/buf.h"
#include "core/log.h"
#include "event/fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#define MAX_ANSWER 65536           /* a collector's answer, read and ignored */
#define BACKOFF_MAX_MS 30000

struct audit_otlp {
	char *url, *service;
	uint64_t interval_ms, timeout_ms, batch;
	struct audit_queue q;
	struct sl_fetcher *fetcher;
	size_t inflight;           /* records of the batch in flight; 0: none */
	uint64_t retry_at;         /* sl_now_ms() before which no batch is tried */
	uint64_t backoff_ms;
	bool warned;
	uv_timer_t tick;           /* every intervalMs; at exit, the deadline */
};

/* ---- config ------------------------------------------------------------------------- */

#define OC(field) SL_CONF_AT(struct audit_otlp_conf, field)
static const struct sl_conf_key otlp_keys[] = {
	{ "endpoint", SL_CONF_CUSTOM, OC(endpoint), .parse = sl_telemetry_parse_endpoint,
	  .shape = "an http:// or https:// URL (the OTLP/HTTP base, e.g. http://127.0.0.1:4318)",
	  .doc = "Set, every record also goes as an OpenTelemetry log record (its JSON the "
		 "body) to `<endpoint>/v1/logs`." },
	{ "intervalMs", SL_CONF_UINT, OC(interval_ms), .min = 10, .max = 600000, .dflt = 1000,
	  .doc = "How often queued records are sent." },
	{ "timeoutMs", SL_CONF_UINT, OC(timeout_ms), .min = 10, .max = 600000, .dflt = 5000,
	  .doc = "Per request; also how long sluice waits at exit to send what is queued." },
	{ "maxBatchRecords", SL_CONF_UINT, OC(batch), .min = 1, .max = 100000, .dflt = 1000,
	  .doc = "Records in one request, at most." },
	{ "maxQueueRecords", SL_CONF_UINT, OC(max_records), .min = 1, .max = 1000000,
	  .dflt = 10000,
	  .doc = "Records waiting for the collector; past it (or past maxQueueBytes) a record is "
		 "not queued and counts as dropped: the file has it." },
	{ "maxQueueBytes", SL_CONF_UINT, OC(max_bytes), .min = 4096, .max = 1ull << 30,
	  .dflt = 16u << 20, .doc = "Bytes of the log records waiting for the collector." },
	{ "serviceName", SL_CONF_STRING, OC(service), .min = 1, .dflt_doc = "`\"sluice\"`",
	  .doc = "The `service.name` resource attribute." },
};
#undef OC

const struct sl_conf_section audit_otlp_section = {
	"sluice.audit.otlp",
	"A copy of every audit record as an OpenTelemetry log (OTLP/HTTP JSON; "
	"docs/stages/audit.md, \"To a collector\"); off unless `endpoint` is set.",
	otlp_keys, SL_COUNT(otlp_keys), SL_CONF_STRICT, NULL,
};

void audit_otlp_conf_dispose(struct audit_otlp_conf *c)
{
	free(c->endpoint);
	free(c->service);
	*c = (struct audit_otlp_conf){ 0 };
}

/* ---- records ------------------------------------------------------------------------ */

static void add_u64s(yyjson_mut_doc *d, yyjson_mut_val *o, const char *key, uint64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%llu", (unsigned long long)v);
	yyjson_mut_obj_add_strcpy(d, o, key, s);
}

static void send_batch(struct audit_otlp *O);

void audit_otlp_put(struct audit_otlp *O, struct sl_metrics *m, const char *type,
		    const struct timespec *ts, const char *line, size_t len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o, *attrs, *a;
	size_t n;
	char *s;

	if (!d)
		sl_oom();
	o = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, o);
	add_u64s(d, o, "timeUnixNano", (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec);
	add_u64s(d, o, "observedTimeUnixNano",
		 (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec);
	yyjson_mut_obj_add_int(d, o, "severityNumber", 9); /* INFO */
	yyjson_mut_obj_add_str(d, o, "severityText", "INFO");
	/* The record as the file has it, without its newline. */
	yyjson_mut_obj_add_strncpy(d, yyjson_mut_obj_add_obj(d, o, "body"), "stringValue", line,
				   len && line[len - 1] == '\n' ? len - 1 : len);
	attrs = yyjson_mut_obj_add_arr(d, o, "attributes");
	a = yyjson_mut_arr_add_obj(d, attrs);
	yyjson_mut_obj_add_str(d, a, "key", "sluice.audit.type");
	yyjson_mut_obj_add_str(d, yyjson_mut_obj_add_obj(d, a, "value"), "stringValue", type);
	s = yyjson_mut_write(d, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &n);
	yyjson_mut_doc_free(d);
	if (!s)
		sl_oom();
	(void)audit_queue_put(&O->q, m, s, n);
	free(s);
}

/* {"resourceLogs":[{"resource":..,"scopeLogs":[{"scope":..,"logRecords":[ <n records> ]}]}]} */
static char *logs_body(struct audit_otlp *O, size_t n)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root = yyjson_mut_obj(d), *rl, *r, *attrs, *a, *sl, *sc;
	struct sl_list *it;
	size_t hl, i = 0, total = 0;
	char *head, *body, *p;

	yyjson_mut_doc_set_root(d, root);
	rl = yyjson_mut_arr_add_obj(d, yyjson_mut_obj_add_arr(d, root, "resourceLogs"));
	r = yyjson_mut_obj_add_obj(d, rl, "resource");
	attrs = yyjson_mut_obj_add_arr(d, r, "attributes");
	a = yyjson_mut_arr_add_obj(d, attrs);
	yyjson_mut_obj_add_str(d, a, "key", "service.name");
	yyjson_mut_obj_add_str(d, yyjson_mut_obj_add_obj(d, a, "value"), "stringValue", O->service);
	a = yyjson_mut_arr_add_obj(d, attrs);
	yyjson_mut_obj_add_str(d, a, "key", "service.version");
	yyjson_mut_obj_add_str(d, yyjson_mut_obj_add_obj(d, a, "value"), "stringValue", SL_VERSION);
	sl = yyjson_mut_arr_add_obj(d, yyjson_mut_obj_add_arr(d, rl, "scopeLogs"));
	sc = yyjson_mut_obj_add_obj(d, sl, "scope");
	yyjson_mut_obj_add_str(d, sc, "name", "sluice.audit");
	yyjson_mut_obj_add_str(d, sc, "version", SL_VERSION);
	yyjson_mut_obj_add_arr(d, sl, "logRecords");
	head = yyjson_mut_write(d, 0, &hl);
	yyjson_mut_doc_free(d);
	if (!head)
		sl_oom();
	sl_list_each(it, &O->q.recs) {
		if (i++ == n)
			break;
		total += sl_list_entry(it, struct audit_rec, link)->len + 1;
	}
	/* head ends in "[]}]}]}": the records go between the brackets. */
	p = body = sl_alloc(hl + total + 1);
	memcpy(p, head, hl - 6);
	p += hl - 6;
	i = 0;
	sl_list_each(it, &O->q.recs) {
		struct audit_rec *rec = sl_list_entry(it, struct audit_rec, link);
		if (i == n)
			break;
		if (i++)
			*p++ = ',';
		memcpy(p, rec->data, rec->len);
		p += rec->len;
	}
	memcpy(p, head + hl - 6, 6);
	p[6] = '\0';
	free(head);
	return body;
}

static void on_sent(void *arg, const struct sl_fetch_result *res)
{
	struct audit_otlp *O = arg;
	size_t n = O->inflight;

	O->inflight = 0;
	if (res->error || res->status < 200 || res->status > 299) {
		if (!O->warned)
			sl_log(SL_LOG_WARN, "audit: OTLP %s: %s; records wait in the queue (at most %zu)",
			       O->url, res->error ? res->error : "the collector answered with an error status",
			       O->q.max_n);
		O->warned = true;
		O->retry_at = sl_now_ms() + O->backoff_ms;
		O->backoff_ms = O->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : O->backoff_ms * 2;
		return;
	}
	if (O->warned)
		sl_log(SL_LOG_INFO, "audit: OTLP %s: the collector takes records again", O->url);
	O->warned = false;
	O->backoff_ms = O->interval_ms;
	while (n--)
		audit_queue_take(&O->q, true);
	/* More than a batch was waiting: the next goes now. */
	if (O->q.n >= O->batch)
		send_batch(O);
}

static void send_batch(struct audit_otlp *O)
{
	size_t n = O->q.n < O->batch ? O->q.n : (size_t)O->batch;
	char *body;
	struct sl_fetch_req q = { .url = O->url, .max_bytes = MAX_ANSWER, .timeout_ms = O->timeout_ms };

	if (!n || O->inflight)
		return;
	body = logs_body(O, n);
	q.json = body;
	O->inflight = n;
	sl_fetch_start(O->fetcher, &q, on_sent, O);
	free(body);
}

static void on_tick(uv_timer_t *t)
{
	struct audit_otlp *O = t->data;
	if (sl_now_ms() >= O->retry_at)
		send_batch(O);
}

/* ---- lifetime ----------------------------------------------------------------------- */

int audit_otlp_new(struct audit_otlp_conf *c, struct audit_otlp **out, struct sl_err *err)
{
	struct audit_otlp *O = sl_alloc(sizeof(*O));
	size_t n = strlen(c->endpoint);

	while (n > 0 && c->endpoint[n - 1] == '/')
		n--;
	if (sl_fetcher_new(uv_default_loop(), "sluice.audit.otlp", &O->fetcher, err) < 0) {
		free(O);
		audit_otlp_conf_dispose(c);
		return SL_ERR_INVALID;
	}
	sl_fetcher_unref(O->fetcher);
	O->url = sl_printf("%.*s/v1/logs", (int)n, c->endpoint);
	O->service = c->service ? c->service : sl_strdup("sluice");
	c->service = NULL;
	O->interval_ms = c->interval_ms;
	O->timeout_ms = c->timeout_ms;
	O->batch = c->batch;
	O->backoff_ms = c->interval_ms;
	audit_queue_init(&O->q, SL_METRICS_OTLP, (size_t)c->max_records, (size_t)c->max_bytes);
	audit_otlp_conf_dispose(c);
	uv_timer_init(uv_default_loop(), &O->tick);
	O->tick.data = O;
	uv_unref((uv_handle_t *)&O->tick);
	uv_timer_start(&O->tick, on_tick, O->interval_ms, O->interval_ms);
	sl_log(SL_LOG_INFO, "audit: a copy of every record to OTLP %s", O->url);
	*out = O;
	return SL_OK;
}

static void on_deadline(uv_timer_t *t)
{
}

static void on_closed(uv_handle_t *h)
{
	free(h->data);
}

void audit_otlp_free(struct audit_otlp *O)
{
	if (!O)
		return;
	/* At exit: batches go until the queue is empty, one fails, or
	 * timeoutMs passes (the tick, now the deadline, referenced). */
	uv_timer_stop(&O->tick);
	if (O->q.n) {
		uv_ref((uv_handle_t *)&O->tick);
		uv_timer_start(&O->tick, on_deadline, O->timeout_ms, 0);
		O->retry_at = 0;
		send_batch(O);
		while (O->inflight && uv_is_active((uv_handle_t *)&O->tick)) {
			uv_run(O->tick.loop, UV_RUN_ONCE);
			if (!O->inflight && O->q.n && !O->warned)
				send_batch(O);
		}
		if (O->q.n)
			sl_log(SL_LOG_WARN, "audit: OTLP %s: %zu records not sent at exit (the audit "
			       "file has them)", O->url, O->q.n);
	}
	sl_fetcher_free(O->fetcher);
	audit_queue_dispose(&O->q);
	free(O->url);
	free(O->service);
	O->tick.data = O;
	uv_close((uv_handle_t *)&O->tick, on_closed);
	uv_run(uv_default_loop(), UV_RUN_NOWAIT);
}

/*
 * Telemetry: OpenTelemetry spans and metrics, exported as OTLP over HTTP
 * with JSON bodies (POST <endpoint>/v1/traces and /v1/metrics), batched on
 * a timer of the default loop through libcurl's multi interface, so the
 * loop never waits for the collector. No payloads: names, ids, times,
 * outcomes and sizes only.
 *
 *   sluice.telemetry: {"endpoint": "http://127.0.0.1:4318", "intervalMs": 1000}
 *
 * A program is a trace: its execute_code span is the root and each tool
 * call it makes is a child span. A call outside a program is a trace of one
 * span. What is still queued at exit is sent before sluice ends (bounded
 * by timeoutMs).
 */
#ifndef SL_STAGES_TELEMETRY_H
#define SL_STAGES_TELEMETRY_H

#include "config/conf.h"
#include "pipeline/call.h"

/* The stage's state (none without an endpoint). A program's span and
 * counter come from the output hook (struct sl_output). */
struct sl_telemetry;

/* The ids the spans use, as lowercase hex (for tests): a program's trace
 * (32 digits, from t's random seed) and span (16), a call's span (16). */
void sl_telemetry_trace_id(const struct sl_telemetry *t, uint64_t program_id, char out[33]);
void sl_telemetry_program_span_id(uint64_t program_id, char out[17]);
void sl_telemetry_call_span_id(uint64_t call_id, char out[17]);
/* The config parser of an OTLP/HTTP base URL (http:// or https://), into a
 * char * field; the audit stage's OTLP logs sink uses it too. */
int sl_telemetry_parse_endpoint(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
				void *target) SL_MUST_USE;

#endif

/*
 * Audit: runs at the end of every call (allowed, denied, failed or
 * cancelled) and records what happened. For now a log line at debug level;
 * the JSON-lines audit file and telemetry build on this hook.
 */
#include "pipeline/call.h"
#include "core/log.h"

static void audit_finish(struct sl_call *c)
{
	if (!sl_log_enabled(SL_LOG_DEBUG))
		return;
	sl_log(SL_LOG_DEBUG, "call %llu %s.%s origin=%s outcome=%s %.3f ms%s%s",
	       (unsigned long long)c->id, c->up->name, c->tool, sl_origin_name(c->origin),
	       sl_outcome_name(c->outcome), (double)(c->finished_us - c->started_us) / 1000.0,
	       c->why ? ": " : "", c->why ? c->why : "");
}

const struct sl_stage sl_stage_audit = {
	.name = "audit",
	.finish = audit_finish,
};

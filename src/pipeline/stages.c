/*
 * The one place where the order of the pipeline's stages is written.
 * A stage is one file under src/stages/ exporting a struct sl_stage.
 * Request hooks run top to bottom before dispatch, response hooks top to
 * bottom after it, and finish hooks for every call at the end.
 */
#include "pipeline/call.h"
#include "core/log.h"

#include <stdio.h>
#include <string.h>

extern const struct sl_stage sl_stage_policy;
extern const struct sl_stage sl_stage_pinning;
extern const struct sl_stage sl_stage_redaction;
extern const struct sl_stage sl_stage_cache;
extern const struct sl_stage sl_stage_governor;
extern const struct sl_stage sl_stage_guard;
extern const struct sl_stage sl_stage_discovery;
extern const struct sl_stage sl_stage_telemetry;
extern const struct sl_stage sl_stage_audit;

const struct sl_stage *const sl_stages[] = {
	&sl_stage_policy,
	&sl_stage_pinning,
	&sl_stage_redaction,
	&sl_stage_cache,
	&sl_stage_guard,     /* before the governor: it scores the whole result */
	&sl_stage_governor,
	&sl_stage_discovery, /* finish only: samples result types (src/discovery/infer.c) */
	&sl_stage_telemetry,
	&sl_stage_audit,
};

const size_t sl_nstages = SL_COUNT(sl_stages);

bool sl_stages_section(const char *name)
{
	for (size_t i = 0; i < sl_nstages; i++)
		if (strcmp(sl_stages[i]->name, name) == 0)
			return true;
	return false;
}

int sl_stages_init(const struct sl_config *cfg, struct sl_err *err)
{
	for (size_t i = 0; i < sl_nstages; i++) {
		const struct sl_stage *st = sl_stages[i];
		yyjson_val *section = cfg->sluice ? yyjson_obj_get(cfg->sluice, st->name) : NULL;
		if (st->init && st->init(cfg, section, err) < 0)
			return SL_ERR_INVALID;
	}
	return SL_OK;
}

static yyjson_val *section_of(const struct sl_config *cfg, const char *name)
{
	return cfg->sluice ? yyjson_obj_get(cfg->sluice, name) : NULL;
}

static bool section_differs(const struct sl_stage *st, const struct sl_config *old,
			    const struct sl_config *cfg)
{
	yyjson_val *was = section_of(old, st->name), *now = section_of(cfg, st->name);
	return st->init && (was || now) && !(was && now && yyjson_equals(was, now));
}

size_t sl_stages_changed(const struct sl_config *old, const struct sl_config *cfg)
{
	size_t n = 0;
	for (size_t i = 0; i < sl_nstages; i++)
		n += section_differs(sl_stages[i], old, cfg);
	return n;
}

int sl_stages_reload(const struct sl_config *old, const struct sl_config *cfg,
		     size_t *changed, char *skipped, size_t skipped_size, struct sl_err *err)
{
	int rc = SL_OK;
	size_t n = 0, used = 0;

	if (skipped_size)
		*skipped = '\0';
	for (size_t i = 0; i < sl_nstages; i++) {
		const struct sl_stage *st = sl_stages[i];
		yyjson_val *was = section_of(old, st->name), *now = section_of(cfg, st->name);
		struct sl_err e;

		if (!section_differs(st, old, cfg))
			continue;
		if (st->restart_only) {
			if (used < skipped_size)
				used += (size_t)snprintf(skipped + used, skipped_size - used, "%s%s",
							 used ? ", " : "", st->name);
			continue;
		}
		if (st->shutdown)
			st->shutdown();
		if (st->init(cfg, now, &e) == SL_OK) {
			n++;
			continue;
		}
		/* The old section was valid when it was loaded: put it back. */
		if (rc == SL_OK)
			sl_err_set(err, "sluice.%s: %s", st->name, e.msg);
		rc = SL_ERR_INVALID;
		if (st->shutdown)
			st->shutdown();
		if (st->init(old, was, &e) < 0)
			sl_log(SL_LOG_ERROR, "sluice.%s: its old settings failed too, the stage is off: %s",
			       st->name, e.msg);
	}
	if (changed)
		*changed = n;
	return rc;
}

void sl_stages_shutdown(void)
{
	for (size_t i = sl_nstages; i-- > 0;)
		if (sl_stages[i]->shutdown)
			sl_stages[i]->shutdown();
}

bool sl_stages_visible(const struct sl_upstream *up, yyjson_val *tool)
{
	for (size_t i = 0; i < sl_nstages; i++)
		if (sl_stages[i]->visible && !sl_stages[i]->visible(up, tool))
			return false;
	return true;
}

/*
 * The one place where the order of the pipeline's stages is written.
 * A stage is one file under src/stages/ exporting a struct sl_stage.
 * Request hooks run top to bottom before dispatch, response hooks top to
 * bottom after it, and finish hooks for every call at the end.
 */
#include "pipeline/call.h"

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

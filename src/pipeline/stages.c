/*
 * The one place where the order of the pipeline's stages is written.
 * A stage is one file under src/stages/ exporting a struct sl_stage.
 * Request hooks run top to bottom before dispatch, response hooks top to
 * bottom after it, and finish hooks for every call at the end.
 */
#include "pipeline/call.h"
#include <stdlib.h>
#include <string.h>


const struct sl_stage *const sl_stages[] = {
	&sl_stage_policy,
	&sl_stage_quota,     /* after policy: a denied or unconfirmed call costs nothing */
	&sl_stage_pinning,
	&sl_stage_redaction,
	&sl_stage_tokenize,  /* request: placeholders restored before the cache keys the call */
	&sl_stage_cache,
	&sl_stage_tokenize_result, /* response: after the cache stored the real result, before
				    * the guard, governor and audit see it */
	&sl_stage_guard,     /* before the governor: it scores the whole result */
	&sl_stage_governor,
	&sl_stage_discovery, /* finish only: samples result types (src/discovery/infer.c) */
	&sl_stage_telemetry,
	&sl_stage_audit,
};

const size_t sl_nstages = SL_COUNT(sl_stages);

bool sl_stages_visible_but(const struct sl_gen *g, const struct sl_caller *who,
			   const struct sl_upstream *up, yyjson_val *tool,
			   const struct sl_stage *skip)
{
	for (size_t i = 0; i < g->nstages; i++)
		if (g->stages[i] != skip && g->stages[i]->visible &&
		    !g->stages[i]->visible(sl_gen_state_at(g, i), who, up, tool))
			return false;
	return true;
}

bool sl_stages_visible(const struct sl_gen *g, const struct sl_caller *who,
		       const struct sl_upstream *up, yyjson_val *tool)
{
	return sl_stages_visible_but(g, who, up, tool, NULL);
}

void sl_stages_present(const struct sl_gen *g, yyjson_mut_doc *d, yyjson_mut_val *tool)
{
	for (size_t i = 0; i < g->nstages; i++)
		if (g->stages[i]->present)
			g->stages[i]->present(sl_gen_state_at(g, i), d, tool);
}

void sl_stages_output(const struct sl_gen *g, struct sl_output *o)
{
	o->metrics = g->metrics;
	for (size_t i = 0; i < g->nstages; i++)
		if (g->stages[i]->output)
			g->stages[i]->output(sl_gen_state_at(g, i), o);
}

void sl_output_rewrite(struct sl_output *o, bool failed, char *text, size_t len, const char *what)
{
	if (!failed && !text)
		return;
	free(o->text);
	if (failed) {
		free(text);
		o->text = sl_printf("error: the program's answer could not be scanned for %s and was "
				    "withheld", what);
		o->text_len = strlen(o->text);
		o->is_error = true;
	} else {
		o->text = text;
		o->text_len = len;
	}
}

void sl_output_dispose(struct sl_output *o)
{
	free(o->text);
	free(o->warning);
	o->text = o->warning = NULL;
	o->text_len = 0;
}

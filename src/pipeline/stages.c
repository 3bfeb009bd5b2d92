/*
 * The one place where the order of the pipeline's stages is written.
 * A stage is one file under src/stages/ exporting a struct sl_stage.
 * Request hooks run top to bottom before dispatch, response hooks top to
 * bottom after it, and finish hooks for every call at the end.
 */
#include "pipeline/call.h"

extern const struct sl_stage sl_stage_audit;

const struct sl_stage *const sl_stages[] = {
	&sl_stage_audit,
};

const size_t sl_nstages = SL_COUNT(sl_stages);

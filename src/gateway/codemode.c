/* execute_code: definition and result; see codemode.h. */
#include "gateway/codemode.h"
#include "core/buf.h"
#include "gateway/session.h"
#include "pipeline/call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

yyjson_mut_val *sl_codemode_definition(struct sl_gateway *gw, yyjson_mut_doc *d)
{
	const struct sl_code_limits *l = &gw->cfg->code;
	yyjson_mut_val *t = yyjson_mut_obj(d), *schema, *props, *p, *req, *ann;
	struct sl_buf b;
	char *desc;

	sl_buf_init(&b, 1u << 16);
	/* Every client session carries this text: kept under 150 tokens (o200k_base) with a few
	 * servers, and it says only what a model cannot find out with search_tools. */
	(void)!sl_buf_appends(&b, "Run JavaScript (an async function body). "
			      "`await tools.<server>.<tool>(args)` returns the tool's structured result "
			      "(or its text, parsed if JSON) or throws. Return only what the answer "
			      "needs: filter and join in code, not in context. Servers:");
	for (size_t i = 0; i < gw->nups; i++) {
		char ident[SL_SERVER_NAME_MAX + 2];
		sl_code_ident(gw->ups[i]->name, ident);
		(void)!sl_buf_printf(&b, "%s %s", i ? "," : "", ident);
	}
	(void)!sl_buf_printf(&b, ". Find tools and their TypeScript signatures with search_tools. "
			     "Limits: %g s, %u calls, %zu KiB output; console.log is returned too.",
			     (double)l->timeout_ms / 1000.0, l->max_calls, l->max_output >> 10);
	desc = sl_buf_take(&b, NULL);

	yyjson_mut_obj_add_str(d, t, "name", SL_EXECUTE_CODE);
	yyjson_mut_obj_add_strcpy(d, t, "description", desc);
	free(desc);
	schema = yyjson_mut_obj(d);
	props = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, schema, "type", "object");
	p = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, p, "type", "string");
	yyjson_mut_obj_add_val(d, props, "code", p);
	yyjson_mut_obj_add_val(d, schema, "properties", props);
	req = yyjson_mut_arr(d);
	yyjson_mut_arr_add_str(d, req, "code");
	yyjson_mut_obj_add_val(d, schema, "required", req);
	yyjson_mut_obj_add_val(d, t, "inputSchema", schema);
	/* It runs code that can call any tool: careful clients ask first. */
	ann = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, ann, "destructiveHint", true);
	yyjson_mut_obj_add_bool(d, ann, "openWorldHint", true);
	yyjson_mut_obj_add_val(d, t, "annotations", ann);
	return t;
}

void sl_codemode_output(struct sl_gen *gen, const struct sl_program_result *r, uint64_t program,
			struct sl_session *s, struct sl_output *o)
{
	const char *cons = *r->console ? "\n\n[console]\n" : "";
	const char *cut = r->console_cut ? "\n[console output cut at its limit]" : "";

	memset(o, 0, sizeof(*o));
	o->program = program;
	o->session = s;
	o->session_id = s ? s->id : 0;
	o->outcome = r->cancelled ? "cancelled" : r->ok ? "ok" : r->kind;
	o->calls = r->calls;
	o->duration_ms = r->duration_ms;
	o->output_bytes = r->ok ? strlen(r->text) : 0;
	o->is_error = !r->ok;
	if (!r->cancelled)
		o->text = r->ok ? sl_printf("%s%s%s%s", r->text, cons, r->console, cut) :
			  sl_printf("%s: %s%s%s%s", r->kind, r->text, cons, r->console, cut);
	/* The answer passes the stage table as a tool result does: redaction,
	 * guard, governor, telemetry and audit (docs/internals/PIPELINE.md). */
	sl_stages_output(gen, o);
}

yyjson_mut_val *sl_codemode_result(const struct sl_output *o, yyjson_mut_doc *d)
{
	yyjson_mut_val *res = yyjson_mut_obj(d), *content = yyjson_mut_arr(d), *t;

	if (o->warning) {
		t = yyjson_mut_obj(d);
		yyjson_mut_obj_add_str(d, t, "type", "text");
		yyjson_mut_obj_add_strcpy(d, t, "text", o->warning);
		yyjson_mut_arr_append(content, t);
	}
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, t, "type", "text");
	yyjson_mut_obj_add_strcpy(d, t, "text", o->text ? o->text : "");
	yyjson_mut_arr_append(content, t);
	yyjson_mut_obj_add_val(d, res, "content", content);
	if (o->is_error)
		yyjson_mut_obj_add_bool(d, res, "isError", true);
	return res;
}

int sl_codemode_check(const struct sl_config *c, struct sl_err *err)
{
	for (size_t i = 0; i < c->nservers; i++)
		for (size_t j = 0; j < i; j++) {
			char a[SL_SERVER_NAME_MAX + 2], b[SL_SERVER_NAME_MAX + 2];
			sl_code_ident(c->servers[i].name, a);
			sl_code_ident(c->servers[j].name, b);
			if (strcmp(a, b) == 0) {
				sl_err_set(err, "%s: servers '%s' and '%s' would both be tools.%s in code "
					   "mode: rename one", c->path, c->servers[j].name,
					   c->servers[i].name, a);
				return SL_ERR_INVALID;
			}
		}
	return SL_OK;
}

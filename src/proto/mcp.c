/* MCP version handling, and what older session-era versions lack. */
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Newest first. 2024-11-05 is the era of SDK 1.0.x peers and HTTP+SSE. */
static const char *legacy[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

/* The versions that introduced what older peers lack (MCP schema.ts of
 * each version). */
#define V0326 "2025-03-26" /* audio, tool annotations, completions, progress message */
#define V0618 "2025-06-18" /* title, outputSchema, structuredContent, resource_link, elicitation */
#define V1125 "2025-11-25" /* icons, tool execution, tasks */

bool sl_mcp_legacy_version(const char *v)
{
	for (size_t i = 0; i < SL_COUNT(legacy); i++)
		if (strcmp(v, legacy[i]) == 0)
			return true;
	return false;
}

yyjson_mut_val *sl_mcp_versions(yyjson_mut_doc *d)
{
	yyjson_mut_val *a = yyjson_mut_arr(d);
	yyjson_mut_arr_add_str(d, a, SL_MCP_MODERN);
	for (size_t i = 0; i < SL_COUNT(legacy); i++)
		yyjson_mut_arr_add_str(d, a, legacy[i]);
	return a;
}

const char *sl_mcp_versions_text(void)
{
	static char text[128];

	if (!text[0]) {
		size_t n = (size_t)snprintf(text, sizeof(text), "%s", SL_MCP_MODERN);
		for (size_t i = 0; i < SL_COUNT(legacy) && n < sizeof(text); i++)
			n += (size_t)snprintf(text + n, sizeof(text) - n, ", %s", legacy[i]);
	}
	return text;
}

/* True when v is a session-era version older than since. */
static bool lacks(const char *v, const char *since)
{
	return v && sl_mcp_legacy_version(v) && strcmp(v, since) < 0;
}

bool sl_mcp_has_method(const char *v, const char *method)
{
	static const struct { const char *method, *since; } methods[] = {
		{ SL_MCP_ELICIT, V0618 },
	};
	for (size_t i = 0; i < SL_COUNT(methods); i++)
		if (!strcmp(method, methods[i].method))
			return !lacks(v, methods[i].since);
	return true;
}

struct drop {
	const char *key, *since;
};

static void drop_keys(yyjson_mut_val *o, const char *v, const struct drop *t, size_t n)
{
	if (!yyjson_mut_is_obj(o))
		return;
	for (size_t i = 0; i < n; i++)
		if (lacks(v, t[i].since))
			yyjson_mut_obj_remove_key(o, t[i].key);
}

#define DROP(o, v, t) drop_keys((o), (v), (t), SL_COUNT(t))

static const struct drop client_caps[] = { { "elicitation", V0618 }, { "tasks", V1125 } };
static const struct drop server_caps[] = { { "completions", V0326 }, { "tasks", V1125 } };
static const struct drop impl_fields[] = { { "title", V0618 }, { "icons", V1125 },
					   { "websiteUrl", V1125 }, { "description", V1125 } };
static const struct drop tool_fields[] = { { "title", V0618 }, { "outputSchema", V0618 },
					   { "annotations", V0326 }, { "icons", V1125 },
					   { "execution", V1125 } };
/* resources, resource templates, prompts, prompt arguments */
static const struct drop meta_fields[] = { { "title", V0618 }, { "icons", V1125 } };

yyjson_doc *sl_mcp_era_caps(yyjson_val *caps, const char *v)
{
	yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root = yyjson_is_obj(caps) ? yyjson_val_mut_copy(m, caps) : yyjson_mut_obj(m);
	yyjson_doc *out;

	yyjson_mut_doc_set_root(m, root);
	DROP(root, v, client_caps);
	out = yyjson_mut_doc_imut_copy(m, NULL);
	yyjson_mut_doc_free(m);
	if (!out)
		sl_oom();
	return out;
}

/* Turns block b into a text block saying what it was. */
static void to_text(yyjson_mut_doc *d, yyjson_mut_val *b, const char *text)
{
	yyjson_mut_obj_clear(b);
	yyjson_mut_obj_add_str(d, b, "type", "text");
	yyjson_mut_obj_add_strcpy(d, b, "text", text);
}

static const char *str_or(yyjson_mut_val *o, const char *key, const char *dflt)
{
	const char *s = yyjson_mut_get_str(yyjson_mut_obj_get(o, key));
	return s ? s : dflt;
}

/* One content block (a tool result's, a prompt message's, a sampling
 * message's). Audio (2025-03-26) and resource links (2025-06-18) become
 * text blocks that say what was left out, so the model still learns of it. */
static void map_block(yyjson_mut_doc *d, yyjson_mut_val *b, const char *v)
{
	const char *type = yyjson_mut_get_str(yyjson_mut_obj_get(b, "type"));
	char text[1024];

	if (!type)
		return;
	if (!strcmp(type, "audio") && lacks(v, V0326)) {
		size_t n = yyjson_mut_get_len(yyjson_mut_obj_get(b, "data")), bytes = n / 4 * 3;
		const char *data = yyjson_mut_get_str(yyjson_mut_obj_get(b, "data"));
		/* base64: every 4 characters are 3 bytes, less the padding */
		if (data && n >= 2 && data[n - 1] == '=')
			bytes -= data[n - 2] == '=' ? 2 : 1;
		snprintf(text, sizeof(text), "[audio: %.200s, %zu bytes omitted]",
			 str_or(b, "mimeType", "unknown type"), bytes);
		to_text(d, b, text);
	} else if (!strcmp(type, "resource_link") && lacks(v, V0618)) {
		const char *desc = str_or(b, "description", NULL);
		snprintf(text, sizeof(text), "[resource link: %.200s <%.600s>%s%.150s]",
			 str_or(b, "name", "unnamed"), str_or(b, "uri", ""), desc ? ": " : "",
			 desc ? desc : "");
		to_text(d, b, text);
	}
}

static void map_blocks(yyjson_mut_doc *d, yyjson_mut_val *arr, const char *v)
{
	yyjson_mut_val *b;
	size_t i, n;

	yyjson_mut_arr_foreach(arr, i, n, b)
		map_block(d, b, v);
}

/* Each entry of the array at key, with fields t dropped. */
static void drop_in_each(yyjson_mut_val *o, const char *key, const char *v, const struct drop *t,
			 size_t nt)
{
	yyjson_mut_val *arr = yyjson_mut_obj_get(o, key), *e;
	size_t i, n;

	yyjson_mut_arr_foreach(arr, i, n, e)
		drop_keys(e, v, t, nt);
}

/* messages[].content: one block, or (sampling, 2025-11-25) an array. */
static void map_messages(yyjson_mut_doc *d, yyjson_mut_val *msgs, const char *v)
{
	yyjson_mut_val *m, *c;
	size_t i, n;

	yyjson_mut_arr_foreach(msgs, i, n, m) {
		c = yyjson_mut_obj_get(m, "content");
		if (yyjson_mut_is_arr(c))
			map_blocks(d, c, v);
		else if (yyjson_mut_is_obj(c))
			map_block(d, c, v);
	}
}

/* A result, recognised by its members: each kind of result has its own. */
static void map_result(yyjson_mut_doc *d, yyjson_mut_val *r, const char *v)
{
	yyjson_mut_val *content = yyjson_mut_obj_get(r, "content"), *sc, *p, *e;
	size_t i, n;

	/* tools/call (content[]), sampling/createMessage (content) */
	if (yyjson_mut_is_arr(content))
		map_blocks(d, content, v);
	else if (yyjson_mut_is_obj(content))
		map_block(d, content, v);
	sc = yyjson_mut_obj_get(r, "structuredContent");
	if (sc && lacks(v, V0618)) {
		/* MCP 2025-06-18 tools: a tool returning structured content
		 * SHOULD also return it serialized in a text block; when it did
		 * not, the older client gets that block instead. */
		if (!yyjson_mut_is_arr(content) || yyjson_mut_arr_size(content) == 0) {
			size_t len;
			char *json = sl_json_write_mut_val(sc, &len);
			yyjson_mut_val *b = yyjson_mut_obj(d);
			while (len && json[len - 1] == '\n')
				len--;
			yyjson_mut_obj_add_str(d, b, "type", "text");
			yyjson_mut_obj_add_val(d, b, "text", yyjson_mut_strncpy(d, json, len));
			free(json);
			yyjson_mut_obj_remove_key(r, "content");
			content = yyjson_mut_arr(d);
			yyjson_mut_arr_append(content, b);
			yyjson_mut_obj_add_val(d, r, "content", content);
		}
		yyjson_mut_obj_remove_key(r, "structuredContent");
	}
	drop_in_each(r, "tools", v, tool_fields, SL_COUNT(tool_fields));
	drop_in_each(r, "resources", v, meta_fields, SL_COUNT(meta_fields));
	drop_in_each(r, "resourceTemplates", v, meta_fields, SL_COUNT(meta_fields));
	p = yyjson_mut_obj_get(r, "prompts");
	yyjson_mut_arr_foreach(p, i, n, e) {
		DROP(e, v, meta_fields);
		drop_in_each(e, "arguments", v, meta_fields, SL_COUNT(meta_fields));
	}
	map_messages(d, yyjson_mut_obj_get(r, "messages"), v);
	/* initialize */
	if (yyjson_mut_obj_get(r, "protocolVersion")) {
		DROP(yyjson_mut_obj_get(r, "capabilities"), v, server_caps);
		DROP(yyjson_mut_obj_get(r, "serverInfo"), v, impl_fields);
	}
}

void sl_mcp_era_map(yyjson_mut_doc *d, yyjson_mut_val *msg, const char *v)
{
	static const struct drop progress[] = { { "message", V0326 } };
	yyjson_mut_val *x;
	const char *method;

	if (!lacks(v, SL_MCP_LATEST_LEGACY) || !yyjson_mut_is_obj(msg))
		return;
	if ((x = yyjson_mut_obj_get(msg, "result")) && yyjson_mut_is_obj(x)) {
		map_result(d, x, v);
		return;
	}
	method = yyjson_mut_get_str(yyjson_mut_obj_get(msg, "method"));
	x = yyjson_mut_obj_get(msg, "params");
	if (!method || !yyjson_mut_is_obj(x))
		return;
	if (!strcmp(method, SL_MCP_PROGRESS))
		DROP(x, v, progress);
	else if (!strcmp(method, "sampling/createMessage"))
		map_messages(d, yyjson_mut_obj_get(x, "messages"), v);
}

yyjson_mut_val *sl_mcp_yes_no_schema(yyjson_mut_doc *d, const char *key, const char *title)
{
	yyjson_mut_val *schema = yyjson_mut_obj(d), *props = yyjson_mut_obj(d);
	yyjson_mut_val *prop = yyjson_mut_obj(d), *req = yyjson_mut_arr(d);

	yyjson_mut_obj_add_str(d, prop, "type", "boolean");
	yyjson_mut_obj_add_str(d, prop, "title", title);
	yyjson_mut_obj_add_bool(d, prop, "default", false);
	yyjson_mut_obj_add_val(d, props, key, prop);
	yyjson_mut_arr_add_str(d, req, key);
	yyjson_mut_obj_add_str(d, schema, "type", "object");
	yyjson_mut_obj_add_val(d, schema, "properties", props);
	yyjson_mut_obj_add_val(d, schema, "required", req);
	return schema;
}

const char *sl_mcp_tool_ui_uri(yyjson_val *tool)
{
	yyjson_val *meta = sl_json_obj(tool, "_meta");
	const char *uri = sl_json_str(sl_json_obj(meta, "ui"), "resourceUri");
	return uri ? uri : sl_json_str(meta, SL_MCP_UI_LEGACY_KEY);
}

/* Whether tool's _meta.ui.visibility is an array, and whether it names who. */
static bool visibility(yyjson_val *tool, const char *who, bool *named)
{
	yyjson_val *v = yyjson_obj_get(sl_json_obj(sl_json_obj(tool, "_meta"), "ui"), "visibility");
	yyjson_val *it;
	size_t i, n;

	*named = false;
	if (!yyjson_is_arr(v))
		return false;
	yyjson_arr_foreach(v, i, n, it)
		*named = *named || (yyjson_is_str(it) && strcmp(yyjson_get_str(it), who) == 0);
	return true;
}

bool sl_mcp_tool_app_only(yyjson_val *tool)
{
	bool model;
	return visibility(tool, "model", &model) && !model;
}

bool sl_mcp_tool_app_callable(yyjson_val *tool)
{
	bool app;
	return !visibility(tool, "app", &app) || app;
}

/* Router mode: a handful of gateway tools instead of every definition. */
#include "gateway/router.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEARCH_DEFAULT_K 5
#define SEARCH_MAX_K 20

static const char defs_json[] =
	"[{\"name\":\"search_tools\",\"description\":\"Find tools of the connected MCP servers by "
	"keywords. Returns the best matches with their input schemas.\",\"inputSchema\":{\"type\":"
	"\"object\",\"properties\":{\"query\":{\"type\":\"string\",\"description\":\"What the tool "
	"should do, in a few words\"},\"k\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20,"
	"\"description\":\"How many results (default 5)\"}},\"required\":[\"query\"]},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"list_servers\",\"description\":\"List the connected MCP servers with their "
	"status and tool counts.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"list_tools\",\"description\":\"List the tools of one server with their "
	"descriptions and input schemas.\",\"inputSchema\":{\"type\":\"object\",\"properties\":"
	"{\"server\":{\"type\":\"string\",\"description\":\"Server name from list_servers\"}},"
	"\"required\":[\"server\"]},\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"invoke_tool\",\"description\":\"Call a tool of a server with arguments that "
	"match its input schema.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"server\":"
	"{\"type\":\"string\"},\"tool\":{\"type\":\"string\"},\"arguments\":{\"type\":\"object\"}},"
	"\"required\":[\"server\",\"tool\"]}}]";

enum { T_SEARCH, T_SERVERS, T_TOOLS, T_INVOKE, T_N };

static yyjson_doc *defs;

static yyjson_val *def(int i)
{
	if (!defs) {
		defs = yyjson_read(defs_json, sizeof(defs_json) - 1, 0);
		if (!defs)
			sl_oom();
	}
	return yyjson_arr_get(yyjson_doc_get_root(defs), (size_t)i);
}

static bool available(struct sl_gateway *gw, int i)
{
	switch (gw->cfg->exposure) {
	case SL_EXPOSE_ROUTER: return true;
	case SL_EXPOSE_HYBRID:
	case SL_EXPOSE_CODE: return i == T_SEARCH;
	default: return false;
	}
}

void sl_router_list(struct sl_gateway *gw, yyjson_mut_doc *d, yyjson_mut_val *arr)
{
	for (int i = 0; i < T_N; i++)
		if (available(gw, i))
			yyjson_mut_arr_append(arr, yyjson_val_mut_copy(d, def(i)));
}

static int which(const char *name)
{
	for (int i = 0; i < T_N; i++)
		if (strcmp(name, sl_json_str(def(i), "name")) == 0)
			return i;
	return -1;
}

bool sl_router_handles(struct sl_gateway *gw, const char *name)
{
	int i = which(name);
	return i >= 0 && available(gw, i);
}

/* Answers m with one text block holding the JSON of v. */
static void reply_json(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_mut_doc *d,
		       yyjson_mut_val *v, bool is_error)
{
	yyjson_mut_val *r = yyjson_mut_obj(d), *content = yyjson_mut_arr(d), *t = yyjson_mut_obj(d);
	size_t len;
	char *text = yyjson_mut_is_str(v) ? sl_strdup(yyjson_mut_get_str(v)) :
		     sl_json_write_mut_val(v, &len);
	yyjson_mut_obj_add_str(d, t, "type", "text");
	yyjson_mut_obj_add_strcpy(d, t, "text", text);
	free(text);
	yyjson_mut_arr_append(content, t);
	yyjson_mut_obj_add_val(d, r, "content", content);
	if (is_error)
		yyjson_mut_obj_add_bool(d, r, "isError", true);
	sl_session_reply(s, m, modern, d, r);
}

static void reply_text(struct sl_session *s, struct sl_msg *m, bool modern, const char *text,
		       bool is_error)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	reply_json(s, m, modern, d, yyjson_mut_strcpy(d, text), is_error);
}

static yyjson_mut_val *tool_summary(yyjson_mut_doc *d, const struct sl_entry *e, bool schema)
{
	yyjson_mut_val *o = yyjson_mut_obj(d);
	const char *desc = sl_json_str(e->def, "description");
	yyjson_mut_obj_add_strcpy(d, o, "server", e->up->name);
	yyjson_mut_obj_add_strcpy(d, o, "tool", e->name);
	if (desc)
		yyjson_mut_obj_add_strcpy(d, o, "description", desc);
	if (schema)
		yyjson_mut_obj_add_val(d, o, "inputSchema",
				       yyjson_val_mut_copy(d, yyjson_obj_get(e->def, "inputSchema")));
	return o;
}

/* Case-insensitive substring test. */
static bool contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; hay && *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return true;
	return false;
}

static int score(const struct sl_entry *e, char **terms, size_t nterms)
{
	int sc = 0;
	for (size_t i = 0; i < nterms; i++) {
		if (contains(e->name, terms[i]))
			sc += 3;
		if (contains(e->up->name, terms[i]))
			sc += 1;
		if (contains(sl_json_str(e->def, "description"), terms[i]))
			sc += 1;
	}
	return sc;
}

static void search(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	struct sl_catalog *cat = &s->gw->catalog;
	const char *q = sl_json_str(args, "query");
	int64_t k = SEARCH_DEFAULT_K;
	char *copy, *tok, *save, *terms[32];
	size_t nterms = 0;
	int *scores;
	yyjson_mut_doc *d;
	yyjson_mut_val *arr;

	if (!q) {
		reply_text(s, m, modern, "search_tools needs a query string", true);
		return;
	}
	if (sl_json_int(args, "k", &k) && (k < 1 || k > SEARCH_MAX_K))
		k = k < 1 ? 1 : SEARCH_MAX_K;
	copy = sl_strdup(q);
	for (tok = strtok_r(copy, " \t\n,.;:/_-", &save); tok && nterms < SL_COUNT(terms);
	     tok = strtok_r(NULL, " \t\n,.;:/_-", &save))
		if (strlen(tok) > 1)
			terms[nterms++] = tok;
	scores = sl_alloc((cat->tools.n + 1) * sizeof(int));
	for (size_t i = 0; i < cat->tools.n; i++)
		scores[i] = sl_stages_visible(cat->tools.v[i].up, cat->tools.v[i].def) ?
			    score(&cat->tools.v[i], terms, nterms) : 0;
	d = yyjson_mut_doc_new(NULL);
	arr = yyjson_mut_arr(d);
	for (int64_t got = 0; got < k; got++) {
		size_t best = SIZE_MAX;
		for (size_t i = 0; i < cat->tools.n; i++)
			if (scores[i] > 0 && (best == SIZE_MAX || scores[i] > scores[best]))
				best = i;
		if (best == SIZE_MAX)
			break;
		scores[best] = 0;
		yyjson_mut_arr_append(arr, tool_summary(d, &cat->tools.v[best], true));
	}
	free(scores);
	free(copy);
	if (yyjson_mut_arr_size(arr) == 0) {
		yyjson_mut_doc_free(d);
		reply_text(s, m, modern, "no tools match; list_servers and list_tools show them all", false);
		return;
	}
	reply_json(s, m, modern, d, arr, false);
}

static void list_servers(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *arr = yyjson_mut_arr(d);

	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		yyjson_mut_val *o = yyjson_mut_obj(d);
		yyjson_mut_obj_add_strcpy(d, o, "name", u->name);
		yyjson_mut_obj_add_str(d, o, "status", sl_upstream_state_name(u->state));
		yyjson_mut_obj_add_uint(d, o, "tools", u->tools.n);
		yyjson_mut_obj_add_uint(d, o, "resources", u->resources.n);
		yyjson_mut_obj_add_uint(d, o, "prompts", u->prompts.n);
		if (u->protocol_version)
			yyjson_mut_obj_add_strcpy(d, o, "protocolVersion", u->protocol_version);
		if (u->error)
			yyjson_mut_obj_add_strcpy(d, o, "error", u->error);
		yyjson_mut_arr_append(arr, o);
	}
	reply_json(s, m, modern, d, arr, false);
}

static void list_tools(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	struct sl_catalog *cat = &s->gw->catalog;
	const char *server = sl_json_str(args, "server");
	struct sl_upstream *u = server ? sl_gateway_upstream(s->gw, server) : NULL;
	yyjson_mut_doc *d;
	yyjson_mut_val *arr;
	char msg[300];

	if (!u) {
		snprintf(msg, sizeof(msg), "unknown server '%.100s': list_servers shows the servers",
			 server ? server : "");
		reply_text(s, m, modern, msg, true);
		return;
	}
	d = yyjson_mut_doc_new(NULL);
	arr = yyjson_mut_arr(d);
	for (size_t i = 0; i < cat->tools.n; i++)
		if (cat->tools.v[i].up == u && sl_stages_visible(u, cat->tools.v[i].def))
			yyjson_mut_arr_append(arr, tool_summary(d, &cat->tools.v[i], true));
	reply_json(s, m, modern, d, arr, false);
}

static void invoke(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	const char *server = sl_json_str(args, "server"), *tool = sl_json_str(args, "tool");
	yyjson_val *targs = yyjson_obj_get(args, "arguments");
	const struct sl_entry *e;
	char msg[400];

	if (!server || !tool) {
		reply_text(s, m, modern, "invoke_tool needs server and tool", true);
		return;
	}
	if (targs && !yyjson_is_obj(targs)) {
		reply_text(s, m, modern, "invoke_tool: arguments must be an object", true);
		return;
	}
	if (!sl_gateway_upstream(s->gw, server)) {
		snprintf(msg, sizeof(msg), "unknown server '%.100s': list_servers shows the servers", server);
		reply_text(s, m, modern, msg, true);
		return;
	}
	e = sl_catalog_find(&s->gw->catalog, server, tool);
	if (!e) {
		snprintf(msg, sizeof(msg), "server '%.100s' has no tool '%.100s': list_tools shows its tools",
			 server, tool);
		reply_text(s, m, modern, msg, true);
		return;
	}
	sl_session_start_call(s, m, modern, SL_ORIGIN_ROUTER, e->up, e->name, targs);
}

void sl_router_call(struct sl_session *s, struct sl_msg *m, bool modern, const char *name,
		    yyjson_val *args)
{
	yyjson_val *empty = NULL;
	yyjson_doc *ed = NULL;

	if (!args) {
		ed = yyjson_read("{}", 2, 0);
		empty = yyjson_doc_get_root(ed);
		args = empty;
	}
	switch (which(name)) {
	case T_SEARCH: search(s, m, modern, args); break;
	case T_SERVERS: list_servers(s, m, modern); break;
	case T_TOOLS: list_tools(s, m, modern, args); break;
	case T_INVOKE: invoke(s, m, modern, args); break;
	default: break;
	}
	yyjson_doc_free(ed);
}

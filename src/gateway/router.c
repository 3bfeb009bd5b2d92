/* Router mode: a handful of gateway tools instead of every definition. */
#include "gateway/router.h"
#include "core/buf.h"
#include "discovery/discovery.h"
#include "gateway/codemode.h"
#include "gateway/kept.h"
#include "stages/results.h"
#include "gateway/session_int.h"
#include "gateway/skills.h"
#include "gateway/view.h"
#include "sandbox/sandbox.h"
#include "stages/governor.h"
#include "pipeline/call.h"
#include "proto/mcp.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEARCH_DEFAULT_K 5
#define SEARCH_MAX_K 20

static const char defs_json[] =
	/* Every code-mode and router session carries these definitions: each
	 * says once what a model needs, its details are in the answers and
	 * error texts (the code-mode list is held under 600 tokens, chars/4:
	 * tests/e2e/coderuntime.test.mjs). */
	"[{\"name\":\"search_tools\",\"description\":\"Find tools by what they do, one line "
	"each as a program calls it: tools.<server>.<tool>(args). detail full adds their types.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"query\":"
	"{\"type\":\"string\"},\"k\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20},"
	"\"server\":{\"type\":\"string\"},"
	"\"detail\":{\"enum\":[\"signature\",\"full\"]}},"
	"\"required\":[\"query\"]},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"describe_tools\",\"description\":\"A server's tools as one TypeScript "
	".d.ts module: argument and result types, documented.\",\"inputSchema\":{\"type\":"
	"\"object\",\"properties\":{\"server\":{\"type\":\"string\"},\"tools\":{\"type\":"
	"\"array\",\"items\":{\"type\":\"string\"}}},\"required\":[\"server\"]},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"list_servers\",\"description\":\"List the connected MCP servers with their "
	"status and tool counts.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
	"\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"list_tools\",\"description\":\"List the tools of one server with their "
	"descriptions and input schemas.\",\"inputSchema\":{\"type\":\"object\",\"properties\":"
	"{\"server\":{\"type\":\"string\",\"description\":\"Server name from list_servers\"}},"
	"\"required\":[\"server\"]},\"annotations\":{\"readOnlyHint\":true,\"openWorldHint\":false}},"
	"{\"name\":\"invoke_tool\",\"description\":\"Call a tool of a server with arguments that "
	"match its input schema. fields keeps only those fields of each result object.\",\"inputSchema\":"
	"{\"type\":\"object\",\"properties\":{\"server\":"
	"{\"type\":\"string\"},\"tool\":{\"type\":\"string\"},\"arguments\":{\"type\":\"object\"},"
	"\"fields\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":"
	"\"Field names to keep, dotted for nested ones\"}},"
	"\"required\":[\"server\",\"tool\"]}},"
	"{\"name\":\"read_result\",\"description\":\"Read more of a shortened result: from "
	"offset, lines or array items matching grep, or a jsonpath.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"result_id\":{\"type\":"
	"\"string\"},\"offset\":{\"type\":\"integer\",\"minimum\":0},\"limit_tokens\":"
	"{\"type\":\"integer\",\"minimum\":1},\"grep\":{\"type\":\"string\"},\"jsonpath\":"
	"{\"type\":\"string\"}},\"required\":[\"result_id\"]},\"annotations\":"
	"{\"readOnlyHint\":true,\"openWorldHint\":false}}]";

enum { T_SEARCH, T_DESCRIBE, T_SERVERS, T_TOOLS, T_INVOKE, T_READ, T_N };

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

static bool available(const struct sl_view *v, int i)
{
	if (i == T_READ)
		return sl_governor_enabled(sl_gen_state(v->gw->gen, &sl_stage_governor));
	switch (v->exposure) {
	case SL_EXPOSE_ROUTER: return true;
	case SL_EXPOSE_HYBRID: return i == T_SEARCH;
	case SL_EXPOSE_CODE: return i == T_SEARCH || i == T_DESCRIBE;
	default: return false;
	}
}

void sl_router_list(const struct sl_view *v, yyjson_mut_doc *d, yyjson_mut_val *arr)
{
	for (int i = 0; i < T_N; i++)
		if (available(v, i))
			yyjson_mut_arr_append(arr, yyjson_val_mut_copy(d, def(i)));
}

static int which(const char *name)
{
	for (int i = 0; i < T_N; i++)
		if (strcmp(name, sl_json_str(def(i), "name")) == 0)
			return i;
	return -1;
}

bool sl_router_reserved(const char *name)
{
	return which(name) >= 0 || strcmp(name, SL_EXECUTE_CODE) == 0;
}

bool sl_router_handles(const struct sl_view *v, const char *name)
{
	int i = which(name);
	return i >= 0 && available(v, i);
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

static yyjson_mut_val *tool_summary(const struct sl_gen *g, yyjson_mut_doc *d,
				     const struct sl_entry *e, const char *name, bool schema)
{
	yyjson_mut_val *o = yyjson_mut_obj(d);
	const char *desc = sl_json_str(e->def, "description");
	yyjson_mut_obj_add_strcpy(d, o, "server", e->up->name);
	yyjson_mut_obj_add_strcpy(d, o, "tool", name);
	if (desc)
		yyjson_mut_obj_add_strcpy(d, o, "description", desc);
	if (schema)
		yyjson_mut_obj_add_val(d, o, "inputSchema",
				       yyjson_val_mut_copy(d, yyjson_obj_get(e->def, "inputSchema")));
	sl_stages_present(g, d, o);
	return o;
}

static const char *view_local(const void *ctx, const struct sl_entry *e)
{
	return sl_view_local(ctx, e);
}

static struct sl_upstream *view_server(const void *ctx, const char *name)
{
	return sl_codemode_server(ctx, name);
}

static bool view_shows(const void *ctx, const struct sl_upstream *u)
{
	return sl_view_server(ctx, u);
}

/* What discovery sees of the catalog: v's (borrowed for the answer). */
static void discovery_view(const struct sl_view *v, struct sl_discovery_view *dv)
{
	*dv = (struct sl_discovery_view){ .cat = &v->gw->catalog, .cache = v->gw->discovery,
					  .gen = v->gw->gen, .who = v->who, .local = view_local,
					  .server = view_server, .shows = view_shows,
					  .renames = v->profile && v->profile->nrename > 0, .ctx = v };
}

static void search(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	const char *q = sl_json_str(args, "query"), *server = sl_json_str(args, "server");
	const char *detail = sl_json_str(args, "detail");
	yyjson_val *sv = yyjson_obj_get(args, "server"), *dv = yyjson_obj_get(args, "detail");
	int64_t k = SEARCH_DEFAULT_K;
	char *text, *msg = NULL, *skills;
	struct sl_view v;

	if (!q || (sv && !server) || (dv && (!detail || (strcmp(detail, "signature") != 0 &&
							 strcmp(detail, "full") != 0)))) {
		reply_text(s, m, modern, "search_tools needs a query string; server is a server name "
			   "and detail \"signature\" or \"full\"", true);
		return;
	}
	if (sl_json_int(args, "k", &k) && (k < 1 || k > SEARCH_MAX_K))
		k = k < 1 ? 1 : SEARCH_MAX_K;
	sl_view_of(s->gw, m->who, &v);
	if (v.code && server && strcmp(server, SL_SKILLS_SERVER) == 0) {
		text = sl_skills_search(&v, q, (size_t)k);
		if (!text)
			text = sl_strdup("no skills match");
	} else {
		struct sl_discovery_view of;
		discovery_view(&v, &of);
		text = sl_discovery_search(&of, q, (size_t)k, server,
					   detail && strcmp(detail, "full") == 0 ? SL_DETAIL_FULL :
					   SL_DETAIL_SIGNATURE, &msg);
		/* Saved skills rank apart, after the servers' tools. */
		if (text && v.code && !server && (skills = sl_skills_search(&v, q, (size_t)k))) {
			char *both = strncmp(text, "no tools match", 14) == 0 ? sl_strdup(skills) :
				     sl_printf("%s%s", text, skills);
			free(text);
			free(skills);
			text = both;
		}
	}
	/* No hit: point at what this exposure mode offers. */
	if (text && strcmp(text, "no tools match") == 0) {
		free(text);
		text = sl_strdup(v.code ? "no tools match; try a broader query, or describe_tools with "
				 "a server name to see all its tools" :
				 "no tools match; list_servers and list_tools show them all");
	}
	reply_text(s, m, modern, text ? text : msg, !text);
	free(text);
	free(msg);
}

static void describe(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	const char *server = sl_json_str(args, "server"), **names = NULL;
	yyjson_val *tools = yyjson_obj_get(args, "tools"), *t;
	size_t i, n = 0;
	char *text, *msg = NULL;
	struct sl_view v;
	bool ok = server && (!tools || (yyjson_is_arr(tools) && yyjson_arr_size(tools) <= 1000));

	yyjson_arr_foreach(tools, i, n, t)
		ok = ok && yyjson_is_str(t);
	if (!ok) {
		reply_text(s, m, modern, "describe_tools needs a server name and, optionally, tools: "
			   "a list of tool names", true);
		return;
	}
	n = yyjson_arr_size(tools);
	names = sl_alloc((n + 1) * sizeof(*names));
	yyjson_arr_foreach(tools, i, n, t)
		names[i] = yyjson_get_str(t);
	sl_view_of(s->gw, m->who, &v);
	if (v.code && strcmp(server, SL_SKILLS_SERVER) == 0) {
		text = sl_skills_describe(&v, names, n, &msg);
	} else {
		struct sl_discovery_view of;
		discovery_view(&v, &of);
		text = sl_discovery_describe(&of, server, names, n, &msg);
	}
	reply_text(s, m, modern, text ? text : msg, !text);
	free(text);
	free(msg);
	free(names);
}

static void list_servers(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *arr = yyjson_mut_arr(d);
	struct sl_discovery_view dv;
	struct sl_view v;

	sl_view_of(gw, m->who, &v);
	discovery_view(&v, &dv);
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		const struct sl_entry *e;
		yyjson_mut_val *o;
		size_t ntools = 0, at = 0;
		if (!sl_view_server(&v, u))
			continue;
		/* The tools list_tools shows this session: in its profile, and
		 * not hidden from its caller; not the server's count. */
		while ((e = sl_discovery_next(&dv, u, &at)))
			ntools += sl_view_local(&v, e) && sl_stages_visible(gw->gen, m->who, u, e->def);
		o = yyjson_mut_obj(d);
		yyjson_mut_obj_add_strcpy(d, o, "name", u->name);
		yyjson_mut_obj_add_str(d, o, "status", sl_upstream_state_name(u->state));
		yyjson_mut_obj_add_uint(d, o, "tools", ntools);
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
	const char *server = sl_json_str(args, "server");
	struct sl_upstream *u = server ? sl_gateway_upstream(s->gw, server) : NULL;
	const struct sl_entry *e;
	struct sl_discovery_view dv;
	yyjson_mut_doc *d;
	yyjson_mut_val *arr;
	struct sl_view v;
	size_t at = 0;
	char msg[300];

	sl_view_of(s->gw, m->who, &v);
	if (u && !sl_view_server(&v, u))
		u = NULL; /* not this profile's: unknown here */
	if (!u) {
		snprintf(msg, sizeof(msg), "unknown server '%.100s': list_servers shows the servers",
			 server ? server : "");
		reply_text(s, m, modern, msg, true);
		return;
	}
	d = yyjson_mut_doc_new(NULL);
	arr = yyjson_mut_arr(d);
	/* The server's own tools (the discovery index knows them by server),
	 * not a scan of the catalog. */
	discovery_view(&v, &dv);
	while ((e = sl_discovery_next(&dv, u, &at))) {
		const char *name = sl_view_local(&v, e);
		if (name && sl_stages_visible(s->gw->gen, m->who, u, e->def))
			yyjson_mut_arr_append(arr, tool_summary(s->gw->gen, d, e, name, true));
	}
	reply_json(s, m, modern, d, arr, false);
}

static void invoke(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	const char *server = sl_json_str(args, "server"), *tool = sl_json_str(args, "tool");
	yyjson_val *targs = yyjson_obj_get(args, "arguments"), *fields = yyjson_obj_get(args, "fields");
	const struct sl_entry *e, *own;
	struct sl_upstream *u;
	struct sl_view v;
	char msg[400];

	if (!server || !tool) {
		reply_text(s, m, modern, "invoke_tool needs server and tool", true);
		return;
	}
	if (fields) {
		yyjson_val *f;
		size_t i, n;
		bool ok = yyjson_is_arr(fields) && yyjson_arr_size(fields) <= 64;
		yyjson_arr_foreach(fields, i, n, f)
			ok = ok && yyjson_is_str(f) && yyjson_get_len(f) > 0;
		if (!ok) {
			reply_text(s, m, modern, "invoke_tool: fields must be a list of up to 64 field names "
				   "(dotted for nested ones, like \"user.login\")", true);
			return;
		}
	}
	if (targs && !yyjson_is_obj(targs)) {
		reply_text(s, m, modern, "invoke_tool: arguments must be an object", true);
		return;
	}
	/* Raw names, or the identifiers search_tools' lines show (git_hub,
	 * get_sum), resolved the way programs resolve them, in the session's
	 * profile: a server or tool outside it is unknown here. */
	sl_view_of(s->gw, m->who, &v);
	if (!(u = sl_codemode_server(&v, server))) {
		snprintf(msg, sizeof(msg), "unknown server '%.100s': list_servers shows the servers", server);
		reply_text(s, m, modern, msg, true);
		return;
	}
	e = sl_codemode_tool(&v, u, tool, msg, sizeof(msg));
	own = sl_catalog_find(&s->gw->catalog, u->name, tool);
	/* An MCP Apps View's own tool is in the catalog, and not the model's. */
	if (!e && sl_view_admits(&v, u->name, tool) && !(own && sl_mcp_tool_app_only(own->def))) {
		/* Not in the catalog: the pipeline's policy stage refreshes the
		 * server's list once and refuses what it still does not advertise. */
		sl_session_start_call(s, m, modern, SL_ORIGIN_ROUTER, u, tool, targs, fields);
		return;
	}
	if (!e) {
		reply_text(s, m, modern, msg, true);
		return;
	}
	sl_session_start_call(s, m, modern, SL_ORIGIN_ROUTER, e->up, e->name, targs, fields);
}

/* ---- read_result -------------------------------------------------------- */

/* Applies a JSON path subset ($, .key, ['key'], [n], [*], .*) to root.
 * Returns a JSON array of the values found (in d), or NULL with msg set. */
static yyjson_mut_val *jsonpath(yyjson_mut_doc *d, yyjson_val *root, const char *path,
				char *msg, size_t mn)
{
	yyjson_val **cur = sl_alloc(sizeof(*cur)), **next;
	size_t ncur = 1, nnext, cap;
	const char *p = path;
	yyjson_mut_val *out;

	cur[0] = root;
	if (*p == '$')
		p++;
	while (*p) {
		char key[256];
		size_t kl = 0;
		long idx = -1;
		bool all = false;

		if (p[0] == '.' && p[1] == '*') {
			all = true;
			p += 2;
		} else if (*p == '.') {
			p++;
			while (*p && *p != '.' && *p != '[' && kl < sizeof(key) - 1)
				key[kl++] = *p++;
			if (kl == 0) /* "..": recursive descent is not supported */
				goto bad;
		} else if (p[0] == '[' && p[1] == '*' && p[2] == ']') {
			all = true;
			p += 3;
		} else if (p[0] == '[' && (p[1] == '\'' || p[1] == '"')) {
			char q = p[1];
			p += 2;
			while (*p && *p != q && kl < sizeof(key) - 1)
				key[kl++] = *p++;
			if (p[0] != q || p[1] != ']')
				goto bad;
			p += 2;
		} else if (*p == '[') {
			char *end;
			idx = strtol(p + 1, &end, 10);
			if (*end != ']' || end == p + 1)
				goto bad;
			p = end + 1;
		} else {
			goto bad;
		}
		key[kl] = '\0';
		cap = 16;
		next = sl_alloc(cap * sizeof(*next));
		nnext = 0;
		for (size_t i = 0; i < ncur; i++) {
			yyjson_val *v = cur[i], *it, *k;
			size_t j, n;
			if (all && yyjson_is_arr(v)) {
				yyjson_arr_foreach(v, j, n, it) {
					if (nnext == cap)
						next = sl_realloc(next, (cap *= 2) * sizeof(*next));
					next[nnext++] = it;
				}
			} else if (all && yyjson_is_obj(v)) {
				yyjson_obj_foreach(v, j, n, k, it) {
					if (nnext == cap)
						next = sl_realloc(next, (cap *= 2) * sizeof(*next));
					next[nnext++] = it;
				}
			} else {
				it = idx >= 0 ? yyjson_arr_get(v, (size_t)idx) :
				     (kl ? yyjson_obj_get(v, key) : NULL);
				if (!it)
					continue;
				if (nnext == cap)
					next = sl_realloc(next, (cap *= 2) * sizeof(*next));
				next[nnext++] = it;
			}
		}
		free(cur);
		cur = next;
		ncur = nnext;
	}
	out = yyjson_mut_arr(d);
	for (size_t i = 0; i < ncur; i++)
		yyjson_mut_arr_append(out, yyjson_val_mut_copy(d, cur[i]));
	free(cur);
	return out;
bad:
	free(cur);
	snprintf(msg, mn, "cannot read the JSON path at \"%.40s\" (supported: $, .key, ['key'], [n], [*], .*)", p);
	return NULL;
}

static bool has_ci(const char *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; k && i + k <= n; i++)
		if (strncasecmp(hay + i, needle, k) == 0)
			return true;
	return false;
}

/* Keeps the items of a JSON array, or the lines of text, containing grep. */
static char *filter(const char *text, size_t len, const char *grep, size_t *olen)
{
	yyjson_doc *j = sl_json_read(text, len, SL_JSON_READ_FLAGS, NULL);
	struct sl_buf b;

	if (j && yyjson_is_arr(yyjson_doc_get_root(j))) {
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		yyjson_mut_val *arr = yyjson_mut_arr(d);
		yyjson_val *it;
		size_t i, n;
		char *s;
		yyjson_arr_foreach(yyjson_doc_get_root(j), i, n, it) {
			size_t il;
			char *is = sl_json_write_val(it, &il);
			if (has_ci(is, il, grep))
				yyjson_mut_arr_append(arr, yyjson_val_mut_copy(d, it));
			free(is);
		}
		s = sl_json_write_mut_val(arr, olen);
		yyjson_mut_doc_free(d);
		yyjson_doc_free(j);
		return s;
	}
	yyjson_doc_free(j);
	sl_buf_init(&b, len + 1);
	for (const char *l = text, *end = text + len; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		size_t ll = nl ? (size_t)(nl - l) : (size_t)(end - l);
		if (has_ci(l, ll, grep) && (sl_buf_append(&b, l, ll) < 0 || sl_buf_append(&b, "\n", 1) < 0))
			break;
		l += ll + 1;
	}
	return sl_buf_take(&b, olen);
}

/* Answers a read_result request from the whole result (text, len). */
static void read_page(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args,
		      const char *id, const char *stored, size_t len)
{
	const char *grep = sl_json_str(args, "grep"), *path = sl_json_str(args, "jsonpath");
	const struct sl_governor *gov = sl_gen_state(s->gw->gen, &sl_stage_governor);
	int64_t offset = 0, limit = (int64_t)sl_governor_max_tokens(gov);
	size_t from, to;
	char *view = NULL, *page, msg[300];

	if ((sl_json_int(args, "offset", &offset) && offset < 0) ||
	    (sl_json_int(args, "limit_tokens", &limit) && limit < 1)) {
		reply_text(s, m, modern, "read_result: offset must be >= 0 and limit_tokens >= 1", true);
		return;
	}
	if (path) {
		yyjson_doc *j = sl_json_read(stored, len, SL_JSON_READ_FLAGS, NULL);
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		yyjson_mut_val *found = j ? jsonpath(d, yyjson_doc_get_root(j), path, msg, sizeof(msg)) : NULL;
		if (!j)
			snprintf(msg, sizeof(msg), "result '%s' is not JSON: use offset or grep", id);
		if (found)
			view = sl_json_write_mut_val(found, &len);
		yyjson_mut_doc_free(d);
		yyjson_doc_free(j);
		if (!view) {
			reply_text(s, m, modern, msg, true);
			return;
		}
	} else {
		view = sl_strndup(stored, len);
	}
	if (grep) {
		char *f = filter(view, len, grep, &len);
		free(view);
		view = f;
	}
	from = (size_t)offset < len ? (size_t)offset : len;
	to = from + (size_t)limit * 4 < len ? from + (size_t)limit * 4 : len;
	while (from < len && ((unsigned char)view[from] & 0xC0) == 0x80)
		from++;
	while (to < len && ((unsigned char)view[to] & 0xC0) == 0x80)
		to++;
	if (to < len)
		page = sl_printf("%.*s\n[sluice: characters %zu-%zu of %zu; continue with offset %zu]",
				 (int)(to - from), view + from, from, to, len, to);
	else
		page = sl_strndup(view + from, to - from);
	reply_text(s, m, modern, page, false);
	free(page);
	free(view);
}

/* The request is in flight as a pending (kind LOOKUP) for as long as the
 * shared store takes, so its session stays and a cancel reaches it; found
 * here (or not at all), it is answered at once, the same way. */
static void on_found(void *ctx, const char *text, size_t len, const char *why)
{
	struct sl_pending *p = ctx;
	yyjson_val *args = sl_json_obj(p->msg.params, "arguments");
	yyjson_doc *ed = NULL;

	if (!args) {
		ed = yyjson_read("{}", 2, 0);
		args = yyjson_doc_get_root(ed);
	}
	if (text)
		read_page(p->s, &p->msg, p->modern, args, sl_json_str(args, "result_id"), text, len);
	else
		reply_text(p->s, &p->msg, p->modern, why, true);
	yyjson_doc_free(ed);
	p->u.lookup = NULL;
	sl_pending_free(p);
}

static void read_result(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	const struct sl_governor *gov = sl_gen_state(s->gw->gen, &sl_stage_governor);
	const char *id = sl_json_str(args, "result_id");
	char idc[SL_KEPT_ID_SIZE + 8];
	struct sl_pending *p;
	struct sl_kept_wait *w;

	/* args lives in m's document, which the pending takes (not moves). */
	snprintf(idc, sizeof(idc), "%s", id ? id : "");
	p = sl_pending_new(s, m, modern, SL_PENDING_LOOKUP);
	w = sl_kept_get(gov, s, id ? idc : NULL, on_found, p);
	if (w) /* else p is answered and gone */
		p->u.lookup = w;
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
	case T_DESCRIBE: describe(s, m, modern, args); break;
	case T_SERVERS: list_servers(s, m, modern); break;
	case T_TOOLS: list_tools(s, m, modern, args); break;
	case T_INVOKE: invoke(s, m, modern, args); break;
	case T_READ: read_result(s, m, modern, args); break;
	default: break;
	}
	yyjson_doc_free(ed);
}

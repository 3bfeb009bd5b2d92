/*
 * catalog.c: main, the stdio loop, JSON-RPC framing and MCP dispatch.
 *
 * Input arrives on stdin as one JSON-RPC message per line (MCP 2025-11-25
 * transports: stdio, messages are delimited by newlines and must not contain
 * embedded newlines).  A line is capped at CAT_MAX_LINE; a longer one is
 * answered with -32700 and skipped up to its newline.  Output is written to
 * stdout synchronously, one message per line; nothing else goes to stdout
 * except what the garbage tool writes on purpose.  Logs go to stderr.
 *
 * Requests are answered from the loop: most at once, while slow, progress
 * and ask_user take the request over as a struct cat_call and answer from a
 * timer or from the client's reply, so a slow call never holds up a quick one.
 *
 * When stdin closes, calls waiting on the client are dropped, calls waiting
 * on a timer still answer, and the process exits 0 once the loop is empty.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"

#define PROTOCOL_LATEST "2025-11-25"

static const char *const protocol_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26",
};

const char *const cat_levels[] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};
const size_t cat_levels_count = sizeof(cat_levels) / sizeof(cat_levels[0]);

static const struct cat_backend *const backends[] = {
	&cat_github, &cat_jira, &cat_slack, &cat_postgres, &cat_generated,
};

/* ---- small helpers ------------------------------------------------------ */

static void die(const char *what)
{
	fprintf(stderr, "catalog: %s\n", what);
	abort();
}

void *cat_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

char *cat_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = cat_xmalloc(n);
	memcpy(p, s, n);
	return p;
}

static yyjson_mut_doc *doc_new(void)
{
	yyjson_mut_doc *doc = yyjson_mut_doc_new(NULL);
	if (!doc)
		die("out of memory");
	return doc;
}

/* The raw JSON text of a value (an id, a progress token), owned by caller. */
static char *raw_json(yyjson_val *v)
{
	char *s = yyjson_val_write(v, 0, NULL);
	if (!s)
		die("out of memory");
	return s;
}

/* ---- output ------------------------------------------------------------- */

void cat_write_raw(struct cat_server *srv, const char *s, size_t n)
{
	while (n > 0 && !srv->out_dead) {
		ssize_t w = write(STDOUT_FILENO, s, n);
		if (w >= 0) {
			s += w;
			n -= (size_t)w;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			/* stdout may share a non-blocking description with stdin. */
			struct pollfd pfd = { .fd = STDOUT_FILENO, .events = POLLOUT };
			(void)poll(&pfd, 1, -1);
			continue;
		}
		fprintf(stderr, "catalog: stdout: %s; discarding output\n",
			strerror(errno));
		srv->out_dead = true;
	}
}

void cat_send_doc(struct cat_server *srv, yyjson_mut_doc *doc)
{
	size_t len = 0;
	char *s = yyjson_mut_write(doc, YYJSON_WRITE_NEWLINE_AT_END, &len);
	if (!s)
		die("cannot serialise a message");
	cat_write_raw(srv, s, len);
	free(s);
}

static yyjson_mut_val *envelope(yyjson_mut_doc *doc)
{
	yyjson_mut_val *msg = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, msg, "jsonrpc", "2.0");
	yyjson_mut_doc_set_root(doc, msg);
	return msg;
}

void cat_send_result(struct cat_server *srv, const char *id,
		     yyjson_mut_doc *doc, yyjson_mut_val *result)
{
	yyjson_mut_val *msg = envelope(doc);
	yyjson_mut_obj_add_val(doc, msg, "id", yyjson_mut_rawcpy(doc, id));
	yyjson_mut_obj_add_val(doc, msg, "result", result);
	cat_send_doc(srv, doc);
}

void cat_send_notification(struct cat_server *srv, const char *method,
			   yyjson_mut_doc *doc, yyjson_mut_val *params)
{
	yyjson_mut_val *msg = envelope(doc);
	yyjson_mut_obj_add_str(doc, msg, "method", method);
	if (params)
		yyjson_mut_obj_add_val(doc, msg, "params", params);
	cat_send_doc(srv, doc);
}

/* JSON-RPC errors are made here and nowhere else.  id NULL: id null. */
static void send_error(struct cat_server *srv, const char *id, int code,
		       const char *message, yyjson_mut_val *data,
		       yyjson_mut_doc *doc)
{
	yyjson_mut_doc *own = doc ? NULL : doc_new();
	if (own)
		doc = own;
	yyjson_mut_val *msg = envelope(doc);
	yyjson_mut_obj_add_val(doc, msg, "id",
			       id ? yyjson_mut_rawcpy(doc, id) : yyjson_mut_null(doc));
	yyjson_mut_val *err = yyjson_mut_obj_add_obj(doc, msg, "error");
	yyjson_mut_obj_add_int(doc, err, "code", code);
	yyjson_mut_obj_add_strcpy(doc, err, "message", message);
	if (data)
		yyjson_mut_obj_add_val(doc, err, "data", data);
	cat_send_doc(srv, doc);
	yyjson_mut_doc_free(own);
}

/* ---- tools ---------------------------------------------------------------- */

/* Schemas are written with single quotes to keep the tables readable. */
static yyjson_doc *load_schema(const char *name, const char *text)
{
	char *s = cat_strdup(text);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	yyjson_read_err rerr;
	yyjson_doc *doc = yyjson_read_opts(s, strlen(s),
					   YYJSON_READ_ALLOW_TRAILING_COMMAS,
					   NULL, &rerr);
	if (!doc || !yyjson_is_obj(yyjson_doc_get_root(doc))) {
		fprintf(stderr, "catalog: tool %s: bad schema at %zu: %s\n", name,
			rerr.pos, rerr.msg ? rerr.msg : "not an object");
		abort();
	}
	free(s);
	return doc;
}

const struct cat_tool_rt *cat_find_tool(const struct cat_server *srv,
					const char *name)
{
	for (size_t i = 0; i < srv->ntools; i++) {
		const struct cat_tool_rt *t = srv->tools[i];
		if (strcmp(t->name ? t->name : t->def->name, name) == 0)
			return t;
	}
	return NULL;
}

/* Adds a tool; name overrides def->name (a dynamic tool).  -1 when full. */
int cat_add_tool(struct cat_server *srv, const struct cat_tool *def,
		 const char *name)
{
	if (srv->ntools >= CAT_MAX_TOOLS)
		return -1;
	if (srv->ntools == srv->tools_cap) {
		srv->tools_cap = srv->tools_cap ? srv->tools_cap * 2 : 64;
		srv->tools = realloc(srv->tools, srv->tools_cap * sizeof(*srv->tools));
		if (!srv->tools)
			die("out of memory");
	}
	/* Entries are allocated one by one: a handler's rq->tool stays valid
	 * while add_tool grows the table. */
	struct cat_tool_rt *t = cat_xmalloc(sizeof(*t));
	srv->tools[srv->ntools++] = t;
	t->def = def;
	t->name = name ? cat_strdup(name) : NULL;
	t->input = load_schema(def->name, def->input_schema);
	t->output = def->output_schema ? load_schema(def->name, def->output_schema)
				       : NULL;
	return 0;
}

void cat_fail(struct cat_req *rq, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	rq->err = yyjson_mut_strcpy(rq->doc, buf);
}

static yyjson_mut_val *text_content(yyjson_mut_doc *doc, yyjson_mut_val *text)
{
	yyjson_mut_val *content = yyjson_mut_arr(doc);
	yyjson_mut_val *block = yyjson_mut_arr_add_obj(doc, content);
	yyjson_mut_obj_add_str(doc, block, "type", "text");
	yyjson_mut_obj_add_val(doc, block, "text", text);
	return content;
}

/* MCP 2025-11-25 tools: a tool failure is a result with isError true; with
 * an outputSchema, structuredContent carries the data and, for clients that
 * only read content, a text block carries the same JSON. */
yyjson_mut_val *cat_tool_result(struct cat_req *rq)
{
	yyjson_mut_doc *doc = rq->doc;
	yyjson_mut_val *res = yyjson_mut_obj(doc);
	if (rq->err) {
		yyjson_mut_obj_add_val(doc, res, "content", text_content(doc, rq->err));
		yyjson_mut_obj_add_bool(doc, res, "isError", true);
		return res;
	}
	yyjson_mut_val *text = rq->text;
	if (!text && rq->data) {
		size_t len = 0;
		char *s = yyjson_mut_val_write(rq->data, 0, &len);
		if (!s)
			die("cannot serialise a tool result");
		text = yyjson_mut_strncpy(doc, s, len);
		free(s);
	}
	if (!text)
		text = yyjson_mut_str(doc, "");
	yyjson_mut_obj_add_val(doc, res, "content", text_content(doc, text));
	if (rq->data && rq->tool->output && yyjson_mut_is_obj(rq->data))
		yyjson_mut_obj_add_val(doc, res, "structuredContent", rq->data);
	return res;
}

static bool type_ok(const char *type, yyjson_val *v)
{
	if (!strcmp(type, "object"))  return yyjson_is_obj(v);
	if (!strcmp(type, "array"))   return yyjson_is_arr(v);
	if (!strcmp(type, "string"))  return yyjson_is_str(v);
	if (!strcmp(type, "boolean")) return yyjson_is_bool(v);
	if (!strcmp(type, "null"))    return yyjson_is_null(v);
	if (!strcmp(type, "number"))  return yyjson_is_num(v);
	if (!strcmp(type, "integer")) {
		if (yyjson_is_int(v))
			return true;
		if (!yyjson_is_real(v))
			return false;
		double d = yyjson_get_real(v);
		return d == (double)(int64_t)d;
	}
	return true;  /* a type this validator does not know: let it pass */
}

/* A JSON Schema subset: type, enum, required, properties, items, minimum,
 * maximum.  Enough to catch a missing argument or a wrong type. */
static bool validate(yyjson_val *schema, yyjson_val *v, const char *path,
		     char *msg, size_t cap, int depth)
{
	if (!yyjson_is_obj(schema) || depth > 32)
		return true;
	const char *where = *path ? path : "arguments";
	yyjson_val *type = yyjson_obj_get(schema, "type");
	if (yyjson_is_str(type) && !type_ok(yyjson_get_str(type), v)) {
		snprintf(msg, cap, "%s: expected %s", where, yyjson_get_str(type));
		return false;
	}
	if (yyjson_is_arr(type)) {
		bool any = false;
		size_t i, n;
		yyjson_val *t;
		yyjson_arr_foreach(type, i, n, t)
			if (yyjson_is_str(t) && type_ok(yyjson_get_str(t), v))
				any = true;
		if (!any) {
			snprintf(msg, cap, "%s: wrong type", where);
			return false;
		}
	}
	yyjson_val *en = yyjson_obj_get(schema, "enum");
	if (yyjson_is_arr(en)) {
		bool any = false;
		size_t i, n;
		yyjson_val *e;
		yyjson_arr_foreach(en, i, n, e)
			if (yyjson_equals(e, v))
				any = true;
		if (!any) {
			char *allowed = raw_json(en);
			snprintf(msg, cap, "%s: must be one of %s", where, allowed);
			free(allowed);
			return false;
		}
	}
	if (yyjson_is_num(v)) {
		yyjson_val *min = yyjson_obj_get(schema, "minimum");
		yyjson_val *max = yyjson_obj_get(schema, "maximum");
		if (yyjson_is_num(min) && yyjson_get_num(v) < yyjson_get_num(min)) {
			snprintf(msg, cap, "%s: must be >= %g", where, yyjson_get_num(min));
			return false;
		}
		if (yyjson_is_num(max) && yyjson_get_num(v) > yyjson_get_num(max)) {
			snprintf(msg, cap, "%s: must be <= %g", where, yyjson_get_num(max));
			return false;
		}
	}
	char sub[256];
	if (yyjson_is_obj(v)) {
		yyjson_val *req = yyjson_obj_get(schema, "required");
		size_t i, n;
		yyjson_val *k;
		yyjson_arr_foreach(req, i, n, k) {
			if (yyjson_is_str(k) && !yyjson_obj_get(v, yyjson_get_str(k))) {
				snprintf(msg, cap, "%s%s%s: required", path, *path ? "." : "",
					 yyjson_get_str(k));
				return false;
			}
		}
		yyjson_val *props = yyjson_obj_get(schema, "properties");
		yyjson_val *pv;
		yyjson_obj_foreach(props, i, n, k, pv) {
			yyjson_val *child = yyjson_obj_get(v, yyjson_get_str(k));
			if (!child)
				continue;
			snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "",
				 yyjson_get_str(k));
			if (!validate(pv, child, sub, msg, cap, depth + 1))
				return false;
		}
	}
	if (yyjson_is_arr(v)) {
		yyjson_val *items = yyjson_obj_get(schema, "items");
		size_t i, n;
		yyjson_val *e;
		yyjson_arr_foreach(v, i, n, e) {
			snprintf(sub, sizeof(sub), "%s[%zu]", *path ? path : "arguments", i);
			if (!validate(items, e, sub, msg, cap, depth + 1))
				return false;
		}
	}
	return true;
}

/* ---- arguments ---------------------------------------------------------- */

const char *cat_arg_str(const struct cat_req *rq, const char *key,
			const char *dflt)
{
	const char *s = yyjson_get_str(yyjson_obj_get(rq->args, key));
	return s ? s : dflt;
}

int64_t cat_arg_int(const struct cat_req *rq, const char *key, int64_t dflt)
{
	yyjson_val *v = yyjson_obj_get(rq->args, key);
	if (yyjson_is_int(v))
		return yyjson_get_sint(v);
	if (yyjson_is_real(v))
		return (int64_t)yyjson_get_real(v);
	return dflt;
}

bool cat_arg_bool(const struct cat_req *rq, const char *key, bool dflt)
{
	yyjson_val *v = yyjson_obj_get(rq->args, key);
	return yyjson_is_bool(v) ? yyjson_get_bool(v) : dflt;
}

/* ---- calls that answer later ------------------------------------------- */

static void on_call_timer(uv_timer_t *t)
{
	struct cat_call *call = t->data;
	call->on_timer(call);
}

struct cat_call *cat_call_new(struct cat_req *rq, cat_call_fn *on_timer)
{
	struct cat_call *call = cat_xmalloc(sizeof(*call));
	memset(call, 0, sizeof(*call));
	call->srv = rq->srv;
	call->id = cat_strdup(rq->id);
	yyjson_val *meta = yyjson_obj_get(rq->params, "_meta");
	yyjson_val *token = yyjson_obj_get(meta, "progressToken");
	if (yyjson_is_str(token) || yyjson_is_num(token))
		call->token = raw_json(token);
	call->on_timer = on_timer;
	uv_timer_init(rq->srv->loop, &call->timer);
	call->timer.data = call;
	call->next = rq->srv->calls;
	rq->srv->calls = call;
	return call;
}

int cat_call_start_timer(struct cat_call *call, uint64_t ms)
{
	return uv_timer_start(&call->timer, on_call_timer, ms, 0);
}

static void on_call_closed(uv_handle_t *h)
{
	struct cat_call *call = h->data;
	free(call->id);
	free(call->token);
	free(call->out_id);
	free(call);
}

void cat_call_drop(struct cat_call *call)
{
	struct cat_call **pp = &call->srv->calls;
	while (*pp && *pp != call)
		pp = &(*pp)->next;
	if (*pp)
		*pp = call->next;
	uv_timer_stop(&call->timer);
	/* Freed from the loop, never inside the timer's own callback. */
	uv_close((uv_handle_t *)&call->timer, on_call_closed);
}

void cat_call_finish(struct cat_call *call, yyjson_mut_doc *doc,
		     yyjson_mut_val *result)
{
	cat_send_result(call->srv, call->id, doc, result);
	cat_call_drop(call);
}

static struct cat_call *find_call(struct cat_server *srv, const char *id,
				  bool outgoing)
{
	for (struct cat_call *c = srv->calls; c; c = c->next) {
		const char *cid = outgoing ? c->out_id : c->id;
		if (cid && strcmp(cid, id) == 0)
			return c;
	}
	return NULL;
}

/* ---- methods -------------------------------------------------------------- */

typedef int method_fn(struct cat_server *srv, yyjson_val *params,
		      yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg,
		      size_t cap);

static int m_initialize(struct cat_server *srv, yyjson_val *params,
			yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg,
			size_t cap)
{
	/* MCP 2025-11-25 lifecycle: echo the client's version if supported,
	 * else answer the latest one we speak. */
	const char *version = PROTOCOL_LATEST;
	const char *asked = yyjson_get_str(yyjson_obj_get(params, "protocolVersion"));
	for (size_t i = 0; asked && i < sizeof(protocol_versions) / sizeof(*protocol_versions); i++)
		if (!strcmp(asked, protocol_versions[i]))
			version = protocol_versions[i];
	yyjson_val *caps = yyjson_obj_get(params, "capabilities");
	yyjson_val *elicit = yyjson_obj_get(caps, "elicitation");
	srv->client_elicitation = elicit && !yyjson_is_null(elicit);

	yyjson_mut_val *res = yyjson_mut_obj(doc);
	yyjson_mut_obj_add_str(doc, res, "protocolVersion", version);
	yyjson_mut_val *c = yyjson_mut_obj_add_obj(doc, res, "capabilities");
	yyjson_mut_val *tools = yyjson_mut_obj_add_obj(doc, c, "tools");
	yyjson_mut_obj_add_bool(doc, tools, "listChanged", true);
	yyjson_mut_obj_add_obj(doc, c, "resources");
	yyjson_mut_obj_add_obj(doc, c, "prompts");
	yyjson_mut_obj_add_obj(doc, c, "completions");
	yyjson_mut_obj_add_obj(doc, c, "logging");
	yyjson_mut_val *info = yyjson_mut_obj_add_obj(doc, res, "serverInfo");
	yyjson_mut_obj_add_str(doc, info, "name", srv->name);
	yyjson_mut_obj_add_str(doc, info, "title", srv->backend->title);
	yyjson_mut_obj_add_str(doc, info, "version", "1.0.0");
	char text[256];
	snprintf(text, sizeof(text),
		 "A fake %s back end for sluice tests: deterministic data, plus the "
		 "test tools echo, slow, fail, crash, huge, progress, ask_user, "
		 "add_tool, log, stderr and garbage.", srv->backend->name);
	yyjson_mut_obj_add_strcpy(doc, res, "instructions", text);
	*out = res;
	return 0;
}

static int m_ping(struct cat_server *srv, yyjson_val *params,
		  yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg, size_t cap)
{
	*out = yyjson_mut_obj(doc);
	return 0;
}

static int m_set_level(struct cat_server *srv, yyjson_val *params,
		       yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg,
		       size_t cap)
{
	const char *level = yyjson_get_str(yyjson_obj_get(params, "level"));
	for (size_t i = 0; level && i < cat_levels_count; i++) {
		if (!strcmp(level, cat_levels[i])) {
			srv->log_level = (int)i;
			*out = yyjson_mut_obj(doc);
			return 0;
		}
	}
	snprintf(msg, cap, "Invalid params: unknown log level");
	return -32602;
}

static int m_tools_list(struct cat_server *srv, yyjson_val *params,
			yyjson_mut_doc *doc, yyjson_mut_val **out, char *msg,
			size_t cap)
{
	size_t start = 0, end = srv->ntools;
	yyjson_val *cursor = yyjson_obj_get(params, "cursor");
	if (cursor && !yyjson_is_null(cursor)) {
		const char *s = yyjson_get_str(cursor);
		char *e = NULL;
		unsigned long long v = s ? strtoull(s, &e, 10) : 0;
		if (!s || !*s || *e || v > srv->ntools) {
			snprintf(msg, cap, "Invalid params: bad cursor");
			return -32602;
		}
		start = (size_t)v;
	}
	if (srv->page_size && end - start > srv->page_size)
		end = start + srv->page_size;

	yyjson_mut_val *res = yyjson_mut_obj(doc);
	yyjson_mut_val *list = yyjson_mut_obj_add_arr(doc, res, "tools");
	for (size_t i = start; i < end; i++) {
		const struct cat_tool_rt *t = srv->tools[i];
		yyjson_mut_val *o = yyjson_mut_arr_add_obj(doc, list);
		yyjson_mut_obj_add_str(doc, o, "name", t->name ? t->name : t->def->name);
		if (t->def->title && !t->name)
			yyjson_mut_obj_add_str(doc, o, "title", t->def->title);
		yyjson_mut_obj_add_str(doc, o, "description", t->def->description);
		yyjson_mut_obj_add_val(doc, o, "inputSchema",
				       yyjson_val_mut_copy(doc, yyjson_doc_get_root(t->input)));
		if (t->output)
			yyjson_mut_obj_add_val(doc, o, "outputSchema",
					       yyjson_val_mut_copy(doc, yyjson_doc_get_root(t->output)));
		yyjson_mut_val *a = yyjson_mut_obj_add_obj(doc, o, "annotations");
		unsigned h = t->def->hints;
		yyjson_mut_obj_add_bool(doc, a, "readOnlyHint", h & CAT_RO);
		yyjson_mut_obj_add_bool(doc, a, "destructiveHint", h & CAT_DESTRUCTIVE);
		yyjson_mut_obj_add_bool(doc, a, "idempotentHint", h & CAT_IDEMPOTENT);
		yyjson_mut_obj_add_bool(doc, a, "openWorldHint", h & CAT_OPEN_WORLD);
	}
	if (end < srv->ntools) {
		char next[32];
		snprintf(next, sizeof(next), "%zu", end);
		yyjson_mut_obj_add_strcpy(doc, res, "nextCursor", next);
	}
	*out = res;
	return 0;
}

static const struct method {
	const char *name;
	method_fn *fn;
} methods[] = {
	{ "initialize",               m_initialize },
	{ "ping",                     m_ping },
	{ "logging/setLevel",         m_set_level },
	{ "tools/list",               m_tools_list },
	{ "resources/list",           cat_resources_list },
	{ "resources/templates/list", cat_templates_list },
	{ "resources/read",           cat_resources_read },
	{ "prompts/list",             cat_prompts_list },
	{ "prompts/get",              cat_prompts_get },
	{ "completion/complete",      cat_complete },
};

/* tools/call needs the request id (a call may answer later), so it is not
 * in the method table. */
static void tools_call(struct cat_server *srv, const char *id,
		       yyjson_val *params, yyjson_mut_doc *doc)
{
	const char *name = yyjson_get_str(yyjson_obj_get(params, "name"));
	if (!name) {
		send_error(srv, id, -32602, "Invalid params: name is required", NULL, doc);
		return;
	}
	const struct cat_tool_rt *tool = cat_find_tool(srv, name);
	if (!tool) {
		char m[300];
		snprintf(m, sizeof(m), "Unknown tool: %.200s", name);
		send_error(srv, id, -32602, m, NULL, doc);
		return;
	}
	struct cat_req rq = {
		.srv = srv, .tool = tool, .id = id, .params = params, .doc = doc,
	};
	rq.args = yyjson_obj_get(params, "arguments");
	if (!rq.args || yyjson_is_null(rq.args))
		rq.args = yyjson_doc_get_root(srv->empty);
	char why[512];
	if (!yyjson_is_obj(rq.args)) {
		cat_fail(&rq, "Invalid arguments for tool %s: arguments must be an object",
			 name);
	} else if (!validate(yyjson_doc_get_root(tool->input), rq.args, "", why,
			     sizeof(why), 0)) {
		cat_fail(&rq, "Invalid arguments for tool %s: %s", name, why);
	} else if (tool->def->fn(&rq) == CAT_AGAIN) {
		return;
	}
	cat_send_result(srv, id, doc, cat_tool_result(&rq));
	if (rq.list_changed) {
		yyjson_mut_doc *n = doc_new();
		cat_send_notification(srv, "notifications/tools/list_changed", n, NULL);
		yyjson_mut_doc_free(n);
	}
}

static void on_request(struct cat_server *srv, const char *id,
		       const char *method, yyjson_val *params)
{
	yyjson_mut_doc *doc = doc_new();
	if (!strcmp(method, "tools/call")) {
		tools_call(srv, id, params, doc);
		goto out;
	}
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (strcmp(method, methods[i].name))
			continue;
		char msg[512] = "";
		yyjson_mut_val *res = NULL;
		int code = methods[i].fn(srv, params, doc, &res, msg, sizeof(msg));
		if (code)
			send_error(srv, id, code, msg, NULL, doc);
		else
			cat_send_result(srv, id, doc, res);
		goto out;
	}
	char msg[300];
	snprintf(msg, sizeof(msg), "Method not found: %.200s", method);
	send_error(srv, id, -32601, msg, NULL, doc);
out:
	yyjson_mut_doc_free(doc);
}

static void on_notification(struct cat_server *srv, const char *method,
			    yyjson_val *params)
{
	if (!strcmp(method, "notifications/cancelled")) {
		/* MCP 2025-11-25 cancellation: stop, and send no response. */
		yyjson_val *rid = yyjson_obj_get(params, "requestId");
		if (!yyjson_is_str(rid) && !yyjson_is_num(rid))
			return;
		char *raw = raw_json(rid);
		struct cat_call *call = find_call(srv, raw, false);
		free(raw);
		if (call) {
			fprintf(stderr, "catalog: cancelled request %s\n", call->id);
			cat_call_drop(call);
		}
	}
	/* notifications/initialized and anything else: nothing to do. */
}

static void on_response(struct cat_server *srv, yyjson_val *msg)
{
	char *raw = raw_json(yyjson_obj_get(msg, "id"));
	struct cat_call *call = find_call(srv, raw, true);
	if (call && call->on_reply)
		call->on_reply(call, msg);
	else
		fprintf(stderr, "catalog: response to unknown request %s\n", raw);
	free(raw);
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

static void on_line(struct cat_server *srv, const char *line, size_t len)
{
	if (blank(line, len))
		return;
	yyjson_doc *in = yyjson_read(line, len, 0);
	if (!in) {
		send_error(srv, NULL, -32700, "Parse error", NULL, NULL);
		return;
	}
	yyjson_val *msg = yyjson_doc_get_root(in);
	yyjson_val *id = yyjson_obj_get(msg, "id");
	yyjson_val *method = yyjson_obj_get(msg, "method");
	bool id_ok = yyjson_is_str(id) || yyjson_is_int(id);
	char *raw = NULL;
	if (!yyjson_is_obj(msg)) {
		/* Batches are not part of MCP since 2025-06-18. */
		send_error(srv, NULL, -32600, "Invalid Request", NULL, NULL);
	} else if (yyjson_is_str(method) && !id) {
		on_notification(srv, yyjson_get_str(method), yyjson_obj_get(msg, "params"));
	} else if (yyjson_is_str(method) && id_ok) {
		raw = raw_json(id);
		on_request(srv, raw, yyjson_get_str(method), yyjson_obj_get(msg, "params"));
	} else if (!method && id_ok && (yyjson_obj_get(msg, "result") ||
					yyjson_obj_get(msg, "error"))) {
		on_response(srv, msg);
	} else {
		if (id_ok)
			raw = raw_json(id);
		send_error(srv, raw, -32600, "Invalid Request", NULL, NULL);
	}
	free(raw);
	yyjson_doc_free(in);
}

/* ---- input ---------------------------------------------------------------- */

static void line_append(struct cat_server *srv, const char *p, size_t n)
{
	if (srv->line_len + n > srv->line_cap) {
		size_t cap = srv->line_cap ? srv->line_cap : 4096;
		while (cap < srv->line_len + n)
			cap *= 2;
		srv->line = realloc(srv->line, cap);
		if (!srv->line)
			die("out of memory");
		srv->line_cap = cap;
	}
	memcpy(srv->line + srv->line_len, p, n);
	srv->line_len += n;
}

static void feed(struct cat_server *srv, const char *p, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;
		if (srv->discarding) {
			if (nl)
				srv->discarding = false;
		} else if (srv->line_len + take > CAT_MAX_LINE) {
			send_error(srv, NULL, -32700,
				   "Parse error: message exceeds 16 MiB", NULL, NULL);
			srv->line_len = 0;
			srv->discarding = !nl;
		} else if (nl && srv->line_len == 0) {
			on_line(srv, p, take);
		} else {
			line_append(srv, p, take);
			if (nl) {
				on_line(srv, srv->line, srv->line_len);
				srv->line_len = 0;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
		n -= take + 1;
	}
	/* Give back the memory of a large message once it is handled. */
	if (srv->line_len == 0 && srv->line_cap > 1024 * 1024) {
		free(srv->line);
		srv->line = NULL;
		srv->line_cap = 0;
	}
}

static void on_eof(struct cat_server *srv)
{
	if (srv->eof)
		return;
	srv->eof = true;
	if (srv->line_len && !srv->discarding)
		on_line(srv, srv->line, srv->line_len);
	srv->line_len = 0;
	if (srv->in_is_stream)
		uv_close((uv_handle_t *)&srv->in, NULL);
	/* Nobody will answer our requests any more. */
	struct cat_call *c = srv->calls, *next;
	for (; c; c = next) {
		next = c->next;
		if (c->waits_on_client)
			cat_call_drop(c);
	}
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
	struct cat_server *srv = h->data;
	*buf = uv_buf_init(srv->rbuf, sizeof(srv->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct cat_server *srv = s->data;
	if (nread > 0)
		feed(srv, buf->base, (size_t)nread);
	else if (nread < 0) {
		if (nread != UV_EOF)
			fprintf(stderr, "catalog: stdin: %s\n", uv_strerror((int)nread));
		on_eof(srv);
	}
}

static void read_file_next(struct cat_server *srv);

static void on_fs_read(uv_fs_t *req)
{
	struct cat_server *srv = req->data;
	ssize_t n = req->result;
	uv_fs_req_cleanup(req);
	if (n > 0) {
		feed(srv, srv->rbuf, (size_t)n);
		read_file_next(srv);
	} else {
		on_eof(srv);
	}
}

static void read_file_next(struct cat_server *srv)
{
	uv_buf_t buf = uv_buf_init(srv->rbuf, sizeof(srv->rbuf));
	srv->in_req.data = srv;
	if (uv_fs_read(srv->loop, &srv->in_req, STDIN_FILENO, &buf, 1, -1,
		       on_fs_read) < 0)
		on_eof(srv);
}

static int start_input(struct cat_server *srv)
{
	int rc;
	uv_handle_type type = uv_guess_handle(STDIN_FILENO);
	if (type == UV_TTY) {
		rc = uv_tty_init(srv->loop, &srv->in.tty, STDIN_FILENO, 1);
	} else if (type == UV_NAMED_PIPE || type == UV_TCP) {
		rc = uv_pipe_init(srv->loop, &srv->in.pipe, 0);
		if (rc == 0)
			rc = uv_pipe_open(&srv->in.pipe, STDIN_FILENO);
	} else {
		/* A regular file or /dev/null: read it through the thread pool. */
		srv->in_is_file = true;
		read_file_next(srv);
		return 0;
	}
	if (rc < 0)
		return rc;
	srv->in_is_stream = true;
	((uv_handle_t *)&srv->in)->data = srv;
	return uv_read_start((uv_stream_t *)&srv->in, on_alloc, on_read);
}

/* ---- main ----------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: catalog --backend github|jira|slack|postgres|generated "
		   "[--large-results] [--name NAME] [--tools N]\n"
		   "  An MCP test server on stdio with deterministic fake data.\n"
		   "  --tools N adds N generated tools (at most %d).\n"
		   "  CATALOG_PAGE_SIZE=n pages tools/list n tools at a time.\n", CAT_MAX_GENERATED);
}

int main(int argc, char **argv)
{
	static struct cat_server srv;
	const char *backend = NULL;
	size_t generated = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			backend = argv[++i];
		else if (!strcmp(argv[i], "--name") && i + 1 < argc)
			srv.name = argv[++i];
		else if (!strcmp(argv[i], "--tools") && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 0 || v > CAT_MAX_GENERATED) {
				usage(stderr);
				return 2;
			}
			generated = (size_t)v;
		} else if (!strcmp(argv[i], "--large-results"))
			srv.large = true;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}
	for (size_t i = 0; backend && i < sizeof(backends) / sizeof(*backends); i++)
		if (!strcmp(backend, backends[i]->name))
			srv.backend = backends[i];
	if (!srv.backend) {
		usage(stderr);
		return 2;
	}
	char default_name[64];
	if (!srv.name) {
		snprintf(default_name, sizeof(default_name), "catalog-%s", srv.backend->name);
		srv.name = default_name;
	}
	const char *ps = getenv("CATALOG_PAGE_SIZE");
	if (ps && atoi(ps) > 0)
		srv.page_size = (size_t)atoi(ps);

	signal(SIGPIPE, SIG_IGN);
	srv.loop = uv_default_loop();
	srv.empty = yyjson_read("{}", 2, 0);
	for (size_t i = 0; i < srv.backend->ntools; i++)
		(void)cat_add_tool(&srv, &srv.backend->tools[i], NULL);
	for (size_t i = 0; srv.backend != &cat_generated && i < cat_test_tools_count; i++)
		(void)cat_add_tool(&srv, &cat_test_tools[i], NULL);
	if (cat_generate_tools(&srv, generated) < 0)
		die("too many tools");

	rc = start_input(&srv);
	if (rc < 0) {
		fprintf(stderr, "catalog: stdin: %s\n", uv_strerror(rc));
		rc = 1;
		goto out;
	}
	uv_run(srv.loop, UV_RUN_DEFAULT);
	rc = 0;
out:
	for (size_t i = 0; i < srv.ntools; i++) {
		free(srv.tools[i]->name);
		yyjson_doc_free(srv.tools[i]->input);
		yyjson_doc_free(srv.tools[i]->output);
		free(srv.tools[i]);
	}
	free(srv.tools);
	cat_generated_free();
	free(srv.line);
	yyjson_doc_free(srv.empty);
	uv_loop_close(srv.loop);
	return rc;
}

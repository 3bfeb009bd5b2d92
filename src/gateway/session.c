/*
 * MCP methods for one client session, in both eras.
 *
 * Session era (2025-11-25, 2025-06-18, 2025-03-26): initialize fixes the
 * version and the client's capabilities for the connection.
 * 2026-07-28: no initialize; every request carries its version and the
 * client's capabilities in params._meta, every result has resultType, and
 * list results carry ttlMs and cacheScope.
 */
#include "gateway/session.h"
#include "gateway/codemode.h"
#include "gateway/results.h"
#include "gateway/router.h"
#include "stages/audit.h"
#include "stages/telemetry.h"
#include "stages/governor.h"
#include "stages/pinning.h"
#include "core/buf.h"
#include "core/log.h"
#include "pipeline/call.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A client request the session is working on. */
struct pending {
	struct sl_session *s;
	struct sl_msg msg;       /* the request; owns the id */
	bool modern;
	struct sl_call *call;    /* tools/call through the pipeline */
	struct sl_ureq *ureq;    /* other requests forwarded to an upstream */
	struct sl_program *program; /* execute_code */
	uint64_t progress_us;    /* when the last progress notification went out */
	uv_timer_t *defer;       /* the answer waits a moment after a progress */
	unsigned steps;          /* execute_code: tool calls finished, for progress */
	struct sl_upstream *up;
	char key[80];
	bool router;             /* answer upstream errors as isError results */
};

/* A server-to-client request relayed to our client. */
/* A request of ours to the client: relayed for an upstream, or the
 * gateway's own (an elicitation a stage asked for). */
struct relay {
	struct sl_upstream *up;
	unsigned gen;
	yyjson_doc *id_doc;      /* the upstream's id */
	sl_elicit_fn cb;         /* the gateway's own: who wants the answer */
	void *ctx;
};

struct sl_deferred {
	struct sl_deferred *next;
	char *line;
	size_t len;
};

static void handle_request(struct sl_session *s, struct sl_msg *m);
static void on_defer_closed(uv_handle_t *h);

/* ---- sending ------------------------------------------------------------ */

static void reply(struct sl_session *s, struct sl_msg *m, bool modern, bool cacheable,
		  yyjson_mut_doc *d, yyjson_mut_val *result);

void sl_session_send_doc(struct sl_session *s, yyjson_mut_doc *d)
{
	size_t len;
	char *line;
	if (s->closing)
		return;
	line = sl_json_write_line(d, &len);
	s->io->send(s->io_ctx, line, len);
}

void sl_session_error(struct sl_session *s, yyjson_val *id, int code, const char *msg)
{
	size_t len;
	char *line;
	if (s->closing)
		return;
	line = sl_rpc_error_line(id, code, msg, &len);
	s->io->send(s->io_ctx, line, len);
}

static void send_error_data(struct sl_session *s, yyjson_val *id, int code, const char *msg,
			    yyjson_mut_doc *d, yyjson_mut_val *data)
{
	yyjson_mut_val *o, *err;
	yyjson_mut_doc *r = sl_rpc_response_new(id, &o);
	err = yyjson_mut_obj(r);
	yyjson_mut_obj_add_int(r, err, "code", code);
	yyjson_mut_obj_add_strcpy(r, err, "message", msg);
	yyjson_mut_obj_add_val(r, err, "data", yyjson_mut_val_mut_copy(r, data));
	yyjson_mut_obj_add_val(r, o, "error", err);
	sl_session_send_doc(s, r);
	yyjson_mut_doc_free(r);
}

/* Completes a result for the request's era: resultType always in
 * 2026-07-28, ttlMs and cacheScope on cacheable (list) results. */
static void seal(yyjson_mut_doc *d, yyjson_mut_val *result, bool modern, bool cacheable)
{
	if (!modern)
		return;
	/* An input_required result (MCP 2026-07-28 MRTR) keeps its type. */
	if (strcmp(yyjson_mut_get_str(yyjson_mut_obj_get(result, "resultType")) ?
		   yyjson_mut_get_str(yyjson_mut_obj_get(result, "resultType")) : "", "input_required") == 0)
		return;
	yyjson_mut_obj_remove_key(result, "resultType");
	yyjson_mut_obj_add_str(d, result, "resultType", "complete");
	if (cacheable) {
		/* The catalog changes as upstreams come and go: clients must not
		 * cache it past a list_changed, and it may differ per principal. */
		yyjson_mut_obj_add_int(d, result, "ttlMs", 0);
		yyjson_mut_obj_add_str(d, result, "cacheScope", "private");
	}
}

void sl_session_reply(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_mut_doc *d,
		      yyjson_mut_val *result)
{
	reply(s, m, modern, false, d, result);
}

/* Sends {"result": result} for m and frees d. */
static void reply(struct sl_session *s, struct sl_msg *m, bool modern, bool cacheable,
		  yyjson_mut_doc *d, yyjson_mut_val *result)
{
	yyjson_mut_val *o = yyjson_mut_obj(d);
	seal(d, result, modern, cacheable);
	yyjson_mut_obj_add_str(d, o, "jsonrpc", "2.0");
	yyjson_mut_obj_add_val(d, o, "id", yyjson_val_mut_copy(d, m->id));
	yyjson_mut_obj_add_val(d, o, "result", result);
	yyjson_mut_doc_set_root(d, o);
	sl_session_send_doc(s, d);
	yyjson_mut_doc_free(d);
}

static yyjson_mut_doc *new_doc(yyjson_mut_val **obj)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	*obj = yyjson_mut_obj(d);
	return d;
}

/* An isError tool result with one text block. */
static yyjson_mut_val *error_result(yyjson_mut_doc *d, const char *text)
{
	yyjson_mut_val *r = yyjson_mut_obj(d), *content = yyjson_mut_arr(d), *t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, t, "type", "text");
	yyjson_mut_obj_add_strcpy(d, t, "text", text);
	yyjson_mut_arr_append(content, t);
	yyjson_mut_obj_add_val(d, r, "content", content);
	yyjson_mut_obj_add_bool(d, r, "isError", true);
	return r;
}

/* ---- lifecycle ---------------------------------------------------------- */

struct sl_session *sl_session_new(struct sl_gateway *gw, const struct sl_session_io *io, void *ctx)
{
	static uint64_t next_id = 1;
	struct sl_session *s = sl_alloc(sizeof(*s));
	s->id = next_id++;
	s->gw = gw;
	s->io = io;
	s->io_ctx = ctx;
	s->next_out_id = 1;
	sl_map_init(&s->calls);
	sl_map_init(&s->relays);
	sl_map_init(&s->subs);
	s->deferred_tail = &s->deferred;
	sl_gateway_add_session(gw, s);
	return s;
}

static void pending_free(struct pending *p)
{
	sl_map_del(&p->s->calls, p->key);
	sl_call_free(p->call);
	sl_msg_dispose(&p->msg);
	free(p);
}

bool sl_session_idle(const struct sl_session *s)
{
	return s->calls.live == 0 && !s->deferred;
}

void sl_session_close(struct sl_session *s)
{
	if (s->closing)
		return;
	s->closing = true;
	/* Cancel what is in flight: upstreams hear notifications/cancelled. */
	for (size_t i = 0; i < s->calls.cap; i++) {
		struct sl_map_slot *slot = &s->calls.slots[i];
		struct pending *p;
		if (!slot->value)
			continue;
		p = slot->value;
		if (p->defer) {
			/* Its answer was waiting to go out: nobody will read it. */
			uv_timer_stop(p->defer);
			uv_close((uv_handle_t *)p->defer, on_defer_closed);
			p->defer = NULL;
			pending_free(p);
		} else if (p->call) {
			sl_call_cancel(p->call, "the client disconnected");
		} else if (p->program) {
			sl_program_cancel(p->program);
		} else if (p->ureq) {
			sl_upstream_cancel(p->up, p->ureq, "the client disconnected");
			pending_free(p);
		}
	}
	/* Stages waiting for the human's answer hear that none will come. */
	sl_session_input_end(s);
	sl_gateway_remove_session(s->gw, s);
}

void sl_session_input_end(struct sl_session *s)
{
	/* A client that closed its input can answer no elicitation: the
	 * stages waiting for one hear now that none will come. */
	for (size_t i = 0; i < s->relays.cap; i++) {
		struct relay *r = s->relays.slots[i].value;
		if (r && r->cb) {
			sl_elicit_fn cb = r->cb;
			r->cb = NULL;
			cb(r->ctx, NULL, NULL);
		}
	}
}

void sl_session_free(struct sl_session *s)
{
	for (size_t i = 0; i < s->relays.cap; i++) {
		struct relay *r = s->relays.slots[i].value;
		if (r) {
			yyjson_doc_free(r->id_doc);
			free(r);
		}
	}
	sl_map_dispose(&s->relays);
	sl_map_dispose(&s->subs);
	sl_map_dispose(&s->calls);
	while (s->deferred) {
		struct sl_deferred *d = s->deferred;
		s->deferred = d->next;
		free(d->line);
		free(d);
	}
	sl_results_free(s->results);
	yyjson_doc_free(s->caps_doc);
	free(s);
}

/* ---- ids ------------------------------------------------------------------ */

static void id_key(yyjson_val *id, char *out, size_t n)
{
	if (yyjson_is_str(id)) {
		const char *v = yyjson_get_str(id);
		size_t len = yyjson_get_len(id);
		if (len < n - 20)
			snprintf(out, n, "s:%s", v);
		else
			snprintf(out, n, "h:%016llx:%zu", (unsigned long long)sl_hash64(v, len, 0), len);
	} else {
		snprintf(out, n, "n:%lld", (long long)yyjson_get_sint(id));
	}
}

/* ---- era ------------------------------------------------------------------ */

static yyjson_val *meta_of(struct sl_msg *m)
{
	return m->params ? sl_json_obj(m->params, "_meta") : NULL;
}

/* Decides the era of a request. Returns false after answering an error. */
static bool request_era(struct sl_session *s, struct sl_msg *m, bool *modern)
{
	yyjson_val *meta = meta_of(m);
	const char *v = meta ? sl_json_str(meta, SL_MCP_META_VERSION) : NULL;
	char msg[256];

	*modern = false;
	if (v) {
		if (strcmp(v, SL_MCP_MODERN) != 0) {
			/* MCP 2026-07-28: unsupported version -> -32022 with the list. */
			yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
			yyjson_mut_val *data = yyjson_mut_obj(d);
			yyjson_mut_obj_add_val(d, data, "supported", sl_mcp_versions(d));
			yyjson_mut_obj_add_strcpy(d, data, "requested", v);
			snprintf(msg, sizeof(msg), "Unsupported protocol version: %s", v);
			send_error_data(s, m->id, SL_MCP_UNSUPPORTED_VERSION, msg, d, data);
			yyjson_mut_doc_free(d);
			return false;
		}
		if (!sl_json_obj(meta, SL_MCP_META_CAPS)) {
			sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
				   "Invalid params: _meta[\"" SL_MCP_META_CAPS "\"] is required in 2026-07-28");
			return false;
		}
		*modern = true;
		if (s->era == SL_ERA_NONE)
			s->era = SL_ERA_MODERN;
		return true;
	}
	if (s->era == SL_ERA_LEGACY || strcmp(m->method, "initialize") == 0 ||
	    strcmp(m->method, "ping") == 0)
		return true;
	sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
		   "Invalid params: missing _meta[\"" SL_MCP_META_VERSION "\"]: send initialize first "
		   "(2025 protocol versions) or the 2026-07-28 _meta fields with every request");
	return false;
}

static yyjson_val *client_caps(struct sl_session *s, struct sl_msg *m, bool modern)
{
	return modern ? sl_json_obj(meta_of(m), SL_MCP_META_CAPS) : s->caps;
}

/* ---- initialize and discover --------------------------------------------- */

static yyjson_mut_val *server_caps(yyjson_mut_doc *d)
{
	yyjson_mut_val *c = yyjson_mut_obj(d), *t;
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, t, "listChanged", true);
	yyjson_mut_obj_add_val(d, c, "tools", t);
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, t, "subscribe", true);
	yyjson_mut_obj_add_bool(d, t, "listChanged", true);
	yyjson_mut_obj_add_val(d, c, "resources", t);
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, t, "listChanged", true);
	yyjson_mut_obj_add_val(d, c, "prompts", t);
	yyjson_mut_obj_add_val(d, c, "completions", yyjson_mut_obj(d));
	yyjson_mut_obj_add_val(d, c, "logging", yyjson_mut_obj(d));
	return c;
}

static yyjson_mut_val *server_info(yyjson_mut_doc *d)
{
	yyjson_mut_val *i = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, i, "name", "sluice");
	yyjson_mut_obj_add_str(d, i, "version", SL_VERSION);
	return i;
}

static char *instructions(struct sl_gateway *gw)
{
	struct sl_buf b;
	sl_buf_init(&b, 1u << 16);
	if (sl_buf_appends(&b, "sluice gateway over MCP servers:") < 0)
		return sl_buf_take(&b, NULL);
	for (size_t i = 0; i < gw->nups; i++)
		if (sl_buf_printf(&b, "%s %s", i ? "," : "", gw->ups[i]->name) < 0)
			break;
	switch (gw->cfg->exposure) {
	case SL_EXPOSE_PASSTHROUGH:
	case SL_EXPOSE_HYBRID:
		(void)!sl_buf_appends(&b, ". Tools are named <server>__<tool>");
		for (size_t i = 0, k = 0; i < gw->nups; i++)
			if (gw->ups[i]->cfg->unprefixed &&
			    sl_buf_printf(&b, "%s%s", k++ ? ", " : ", except those of ", gw->ups[i]->name) < 0)
				break;
		(void)!sl_buf_appends(&b, ".");
		break;
	case SL_EXPOSE_ROUTER:
		(void)!sl_buf_appends(&b, ". Find tools with search_tools or list_tools, call them with invoke_tool.");
		break;
	case SL_EXPOSE_CODE:
		(void)!sl_buf_appends(&b, ". Find tools and their TypeScript signatures with search_tools (describe_tools: "
					 "a whole server), call them from a program with execute_code.");
		break;
	}
	return sl_buf_take(&b, NULL);
}

static void do_initialize(struct sl_session *s, struct sl_msg *m)
{
	const char *v = m->params ? sl_json_str(m->params, "protocolVersion") : NULL;
	yyjson_mut_val *r;
	yyjson_mut_doc *d;
	char *ins;

	if (s->era == SL_ERA_LEGACY) {
		sl_session_error(s, m->id, SL_RPC_INVALID_REQUEST, "Invalid Request: already initialized");
		return;
	}
	if (!v || !sl_json_obj(m->params, "capabilities")) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
			   "Invalid params: initialize needs protocolVersion and capabilities");
		return;
	}
	/* MCP 2025-11-25 lifecycle: echo a supported version, else our latest. */
	snprintf(s->version, sizeof(s->version), "%s",
		 sl_mcp_legacy_version(v) ? v : SL_MCP_LATEST_LEGACY);
	s->era = SL_ERA_LEGACY;
	s->caps_doc = m->doc;
	m->doc = NULL;
	s->caps = sl_json_obj(m->params, "capabilities");
	sl_gateway_start(s->gw, s->caps);

	d = new_doc(&r);
	yyjson_mut_obj_add_strcpy(d, r, "protocolVersion", s->version);
	yyjson_mut_obj_add_val(d, r, "capabilities", server_caps(d));
	yyjson_mut_obj_add_val(d, r, "serverInfo", server_info(d));
	ins = instructions(s->gw);
	yyjson_mut_obj_add_strcpy(d, r, "instructions", ins);
	free(ins);
	/* m->doc moved to caps_doc but m->id points into it: still valid. */
	reply(s, m, false, false, d, r);
}

static void do_discover(struct sl_session *s, struct sl_msg *m, bool modern)
{
	yyjson_mut_val *r, *meta;
	yyjson_mut_doc *d = new_doc(&r);
	char *ins;

	sl_gateway_start(s->gw, client_caps(s, m, modern));
	yyjson_mut_obj_add_val(d, r, "supportedVersions", sl_mcp_versions(d));
	yyjson_mut_obj_add_val(d, r, "capabilities", server_caps(d));
	ins = instructions(s->gw);
	yyjson_mut_obj_add_strcpy(d, r, "instructions", ins);
	free(ins);
	meta = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, meta, SL_MCP_META_SERVER, server_info(d));
	yyjson_mut_obj_add_val(d, r, "_meta", meta);
	reply(s, m, true, true, d, r);
}

/* ---- tools ---------------------------------------------------------------- */

static void do_tools_list(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_val *r, *arr = NULL;
	yyjson_mut_doc *d = new_doc(&r);

	arr = yyjson_mut_arr(d);
	if (gw->cfg->exposure != SL_EXPOSE_ROUTER && gw->cfg->exposure != SL_EXPOSE_CODE) {
		for (size_t i = 0; i < gw->catalog.tools.n; i++) {
			const struct sl_entry *e = &gw->catalog.tools.v[i];
			yyjson_mut_val *t;
			if (!sl_stages_visible(e->up, e->def))
				continue;
			t = yyjson_val_mut_copy(d, e->def);
			sl_pinning_clean(d, t);
			yyjson_mut_obj_remove_key(t, "name");
			yyjson_mut_obj_add_strcpy(d, t, "name", e->exposed);
			yyjson_mut_arr_append(arr, t);
		}
	}
	sl_router_list(gw, d, arr);
	if (gw->cfg->code_enabled)
		yyjson_mut_arr_append(arr, sl_codemode_definition(gw, d));
	yyjson_mut_obj_add_val(d, r, "tools", arr);
	reply(s, m, modern, true, d, r);
}

/* Replaces obj.uri with the gateway's namespaced form of it. */
static void namespace_uri(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *obj,
			  const struct sl_upstream *u)
{
	const char *uri = yyjson_mut_get_str(yyjson_mut_obj_get(obj, "uri"));
	char *ns;
	if (!uri)
		return;
	ns = sl_catalog_expose_uri(&s->gw->catalog, u, uri);
	yyjson_mut_obj_remove_key(obj, "uri");
	yyjson_mut_obj_add_strcpy(d, obj, "uri", ns);
	free(ns);
}

/* Content blocks that point at resources (resource_link, embedded
 * resource) get namespaced URIs, so the client can read them back through
 * the gateway. */
static void namespace_block(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *b,
			    const struct sl_upstream *u)
{
	const char *type = yyjson_mut_get_str(yyjson_mut_obj_get(b, "type"));
	if (!type)
		return;
	if (strcmp(type, "resource_link") == 0)
		namespace_uri(s, d, b, u);
	else if (strcmp(type, "resource") == 0 && yyjson_mut_is_obj(yyjson_mut_obj_get(b, "resource")))
		namespace_uri(s, d, yyjson_mut_obj_get(b, "resource"), u);
}

static void answer_call(struct sl_session *s, struct pending *p, struct sl_call *c)
{
	yyjson_mut_val *r;
	yyjson_mut_doc *d = new_doc(&r);
	char text[1024];

	switch (c->outcome) {
	case SL_OUTCOME_OK:
		yyjson_mut_doc_free(d);
		d = yyjson_mut_doc_new(NULL);
		r = sl_call_result_copy(c, d);
		if (!yyjson_mut_is_obj(r)) {
			r = error_result(d, "the server's result was not an object");
		} else {
			yyjson_mut_val *it;
			size_t i, n;
			yyjson_mut_arr_foreach(yyjson_mut_obj_get(r, "content"), i, n, it)
				namespace_block(s, d, it, c->up);
		}
		break;
	case SL_OUTCOME_RPC_ERROR:
		if (!p->router) {
			/* Passthrough: the server's own JSON-RPC error, as it sent it. */
			yyjson_mut_val *o;
			yyjson_mut_doc_free(d);
			d = sl_rpc_response_new(p->msg.id, &o);
			yyjson_mut_obj_add_val(d, o, "error", yyjson_val_mut_copy(d, c->rpc_error));
			sl_session_send_doc(s, d);
			yyjson_mut_doc_free(d);
			return;
		}
		snprintf(text, sizeof(text), "server '%s' answered with error %lld: %s", c->up->name,
			 (long long)yyjson_get_sint(yyjson_obj_get(c->rpc_error, "code")),
			 sl_json_str(c->rpc_error, "message") ? sl_json_str(c->rpc_error, "message") : "");
		r = error_result(d, text);
		break;
	case SL_OUTCOME_INPUT_REQUIRED:
		r = yyjson_mut_val_mut_copy(d, c->input_required);
		break;
	case SL_OUTCOME_CANCELLED:
		/* MCP: a cancelled request gets no answer. */
		yyjson_mut_doc_free(d);
		return;
	default:
		r = error_result(d, c->why ? c->why : "the call failed");
		break;
	}
	reply(s, &p->msg, p->modern, false, d, r);
}

static void on_defer_closed(uv_handle_t *h)
{
	free(h);
}

static void on_defer(uv_timer_t *t)
{
	struct pending *p = t->data;
	struct sl_session *s = p->s;
	uv_close((uv_handle_t *)t, on_defer_closed);
	p->defer = NULL;
	if (!s->closing)
		answer_call(s, p, p->call);
	pending_free(p);
}

/* Progress must reach the client before the answer it belongs to, and
 * real clients (SDK 1.x) lose a progress notification that arrives in the
 * same read as its answer: after a recent one, the answer waits a moment. */
#define PROGRESS_GAP_US 5000

static void on_call_done(void *ctx, struct sl_call *c)
{
	struct pending *p = ctx;
	struct sl_session *s = p->s;
	if (!s->closing && p->progress_us && sl_now_us() - p->progress_us < PROGRESS_GAP_US) {
		p->defer = sl_alloc(sizeof(*p->defer));
		uv_timer_init(s->gw->loop, p->defer);
		p->defer->data = p;
		uv_timer_start(p->defer, on_defer, PROGRESS_GAP_US / 1000, 0);
		return;
	}
	if (!s->closing)
		answer_call(s, p, c);
	pending_free(p);
	if (s->closing && s->calls.live == 0)
		sl_log(SL_LOG_DEBUG, "session: every call has ended");
}

static void on_call_progress(void *ctx, struct sl_call *c, yyjson_val *params)
{
	struct pending *p = ctx;
	yyjson_val *meta = meta_of(&p->msg);
	yyjson_val *token = meta ? yyjson_obj_get(meta, "progressToken") : NULL;
	yyjson_mut_val *np;
	yyjson_mut_doc *d;

	if (!token || p->s->closing)
		return;
	/* MCP 2025-11-25 progress: the client's own token, the server's values. */
	d = sl_rpc_request_new("notifications/progress", -1, &np);
	yyjson_mut_obj_add_val(d, np, "progressToken", yyjson_val_mut_copy(d, token));
	yyjson_mut_obj_add_val(d, np, "progress",
			       yyjson_val_mut_copy(d, yyjson_obj_get(params, "progress")));
	if (yyjson_obj_get(params, "total"))
		yyjson_mut_obj_add_val(d, np, "total", yyjson_val_mut_copy(d, yyjson_obj_get(params, "total")));
	if (sl_json_str(params, "message"))
		yyjson_mut_obj_add_strcpy(d, np, "message", sl_json_str(params, "message"));
	sl_session_send_doc(p->s, d);
	yyjson_mut_doc_free(d);
	p->progress_us = sl_now_us();
}

static struct pending *pending_new(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct pending *p = sl_alloc(sizeof(*p));
	p->s = s;
	p->msg = *m;
	memset(m, 0, sizeof(*m));
	p->modern = modern;
	id_key(p->msg.id, p->key, sizeof(p->key));
	sl_map_put(&s->calls, p->key, p);
	return p;
}

/* Starts a pipeline call for (up, tool) with args (copied). Takes m. */
void sl_session_start_call(struct sl_session *s, struct sl_msg *m, bool modern,
			   enum sl_origin origin, struct sl_upstream *up, const char *tool,
			   yyjson_val *args, yyjson_val *fields)
{
	struct pending *p;
	yyjson_mut_doc *ad = yyjson_mut_doc_new(NULL);
	yyjson_val *meta = meta_of(m);
	uint64_t timeout = up->cfg->timeout_ms ? up->cfg->timeout_ms : s->gw->cfg->call_timeout_ms;

	yyjson_mut_doc_set_root(ad, args ? yyjson_val_mut_copy(ad, args) : yyjson_mut_obj(ad));
	p = pending_new(s, m, modern);
	p->up = up;
	p->router = origin == SL_ORIGIN_ROUTER;
	p->call = sl_call_new(origin, up, tool, ad, timeout, on_call_done,
			      meta && yyjson_obj_get(meta, "progressToken") ? on_call_progress : NULL, p);
	p->call->session = s;
	if (fields)
		p->call->fields = yyjson_val_mut_copy(p->call->doc, fields);
	if (modern) {
		/* MCP 2026-07-28 MRTR: questions go back as input_required results
		 * when this request's capabilities allow elicitation. */
		yyjson_val *caps = client_caps(s, &p->msg, true), *params = p->msg.params;
		const char *state = params ? sl_json_str(params, "requestState") : NULL;
		yyjson_val *responses = params ? sl_json_obj(params, "inputResponses") : NULL;
		p->call->mrtr = caps && yyjson_obj_get(caps, "elicitation") != NULL;
		if (state)
			p->call->request_state = sl_strdup(state);
		if (responses)
			p->call->input_responses = yyjson_val_mut_copy(p->call->doc, responses);
	}
	sl_call_run(p->call);
}

static void on_program_done(void *ctx, struct sl_program *prog)
{
	struct pending *p = ctx;
	struct sl_session *s = p->s;
	const struct sl_program_result *r = sl_program_result(prog);

	sl_audit_program(sl_program_id(prog), s->id, r->cancelled ? "cancelled" : r->ok ? "ok" : r->kind,
			 r->calls, r->duration_ms, r->ok ? strlen(r->text) : 0);
	sl_telemetry_program(sl_program_id(prog), s->id, r->cancelled ? "cancelled" : r->ok ? "ok" : r->kind,
			     r->calls, r->duration_ms, r->ok ? strlen(r->text) : 0);
	if (!s->closing && !r->cancelled) {
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		yyjson_mut_val *res = sl_codemode_result(r, d);
		/* The final output enters the context: the governor applies. */
		/* The answer is the last block (a guard warning may precede it). */
		yyjson_mut_val *blk = yyjson_mut_arr_get_last(yyjson_mut_obj_get(res, "content"));
		const char *text = yyjson_mut_get_str(yyjson_mut_obj_get(blk, "text"));
		char *cut = text ? sl_governor_output(s, text, strlen(text)) : NULL;
		if (cut) {
			yyjson_mut_obj_remove_key(blk, "text");
			yyjson_mut_obj_add_strcpy(d, blk, "text", cut);
			free(cut);
		}
		reply(s, &p->msg, p->modern, false, d, res);
	}
	sl_program_free(prog);
	p->program = NULL;
	pending_free(p);
}

/* MCP progress for execute_code: one notification per finished tool call. */
static void on_program_step(void *ctx, struct sl_program *prog, const char *server, const char *tool)
{
	struct pending *p = ctx;
	yyjson_val *meta = meta_of(&p->msg);
	yyjson_val *token = meta ? yyjson_obj_get(meta, "progressToken") : NULL;
	yyjson_mut_val *np;
	yyjson_mut_doc *d;
	char *msg;

	p->steps++;
	if (!token || p->s->closing)
		return;
	d = sl_rpc_request_new("notifications/progress", -1, &np);
	yyjson_mut_obj_add_val(d, np, "progressToken", yyjson_val_mut_copy(d, token));
	yyjson_mut_obj_add_uint(d, np, "progress", p->steps);
	msg = sl_printf("%s.%s finished", server, tool);
	yyjson_mut_obj_add_strcpy(d, np, "message", msg);
	free(msg);
	sl_session_send_doc(p->s, d);
	yyjson_mut_doc_free(d);
}

static void do_execute(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	struct sl_gateway *gw = s->gw;
	yyjson_val *code = args ? yyjson_obj_get(args, "code") : NULL;
	const char *lang = args ? sl_json_str(args, "language") : NULL;
	struct pending *p;
	char msg[600];

	if (!yyjson_is_str(code)) {
		snprintf(msg, sizeof(msg), "execute_code needs a code string");
	} else if (lang && strcmp(lang, "js") != 0 && strcmp(lang, "javascript") != 0) {
		snprintf(msg, sizeof(msg), "execute_code runs JavaScript only (language \"js\")");
	} else if (yyjson_get_len(code) > gw->cfg->code.max_source) {
		snprintf(msg, sizeof(msg), "the program is %zu bytes, over the limit of %zu",
			 yyjson_get_len(code), gw->cfg->code.max_source);
	} else if (!gw->sandbox) {
		snprintf(msg, sizeof(msg), "code mode is unavailable: %s", gw->code_error);
	} else {
		p = pending_new(s, m, modern);
		p->program = sl_codemode_run(gw, s, yyjson_get_str(p->msg.params ?
			yyjson_obj_get(sl_json_obj(p->msg.params, "arguments"), "code") : NULL),
			yyjson_get_len(yyjson_obj_get(sl_json_obj(p->msg.params, "arguments"), "code")),
			on_program_done, on_program_step, p);
		return;
	}
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	reply(s, m, modern, false, d, error_result(d, msg));
}

static void do_tools_call(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *name = m->params ? sl_json_str(m->params, "name") : NULL;
	yyjson_val *args = m->params ? yyjson_obj_get(m->params, "arguments") : NULL;
	const struct sl_entry *e;
	char msg[300];

	if (!name) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: tools/call needs a name");
		return;
	}
	if (args && !yyjson_is_obj(args)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: arguments must be an object");
		return;
	}
	if (sl_router_handles(s->gw, name)) {
		sl_router_call(s, m, modern, name, args);
		return;
	}
	if (s->gw->cfg->code_enabled && strcmp(name, SL_EXECUTE_CODE) == 0) {
		do_execute(s, m, modern, args);
		return;
	}
	e = s->gw->cfg->exposure == SL_EXPOSE_PASSTHROUGH || s->gw->cfg->exposure == SL_EXPOSE_HYBRID ?
	    sl_catalog_tool(&s->gw->catalog, name) : NULL;
	if (!e) {
		snprintf(msg, sizeof(msg), "Unknown tool: %.200s", name);
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
		return;
	}
	sl_session_start_call(s, m, modern, SL_ORIGIN_DIRECT, e->up, e->name, args, NULL);
}

/* ---- resources, prompts, completion: routed to their server --------------- */

static void on_forward_reply(void *ctx, struct sl_reply *r)
{
	struct pending *p = ctx;
	struct sl_session *s = p->s;
	yyjson_mut_val *o, *res;
	yyjson_mut_doc *d;
	const char *method = p->msg.method;

	p->ureq = NULL;
	if (s->closing) {
		pending_free(p);
		return;
	}
	if (r->kind == SL_REPLY_FAILED) {
		sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, r->why);
		pending_free(p);
		return;
	}
	d = sl_rpc_response_new(p->msg.id, &o);
	if (r->kind == SL_REPLY_ERROR) {
		yyjson_mut_obj_add_val(d, o, "error", yyjson_val_mut_copy(d, r->msg->error));
	} else {
		res = yyjson_val_mut_copy(d, r->msg->result);
		if (!yyjson_mut_is_obj(res))
			res = yyjson_mut_obj(d);
		/* Results name the upstream's URIs: namespace them. */
		yyjson_mut_val *it;
		size_t i, n;
		if (strcmp(method, "resources/read") == 0)
			yyjson_mut_arr_foreach(yyjson_mut_obj_get(res, "contents"), i, n, it)
				namespace_uri(s, d, it, p->up);
		if (strcmp(method, "prompts/get") == 0)
			yyjson_mut_arr_foreach(yyjson_mut_obj_get(res, "messages"), i, n, it)
				namespace_block(s, d, yyjson_mut_obj_get(it, "content"), p->up);
		seal(d, res, p->modern, strcmp(method, "resources/read") == 0);
		yyjson_mut_obj_add_val(d, o, "result", res);
	}
	sl_session_send_doc(s, d);
	yyjson_mut_doc_free(d);
	pending_free(p);
}

/* Sends m's params upstream to u, with field `key` replaced by `value`.
 * Takes m. */
static void forward(struct sl_session *s, struct sl_msg *m, bool modern, struct sl_upstream *u,
		    const char *path_a, const char *path_b, const char *value)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *params = yyjson_val_mut_copy(d, m->params), *target = params;
	struct sl_err err;
	struct pending *p;

	/* The upstream speaks the session era: drop 2026-07-28 _meta fields. */
	yyjson_mut_obj_remove_key(params, "_meta");
	if (path_b)
		target = yyjson_mut_obj_get(params, path_a);
	yyjson_mut_obj_remove_key(target, path_b ? path_b : path_a);
	yyjson_mut_obj_add_strcpy(d, target, path_b ? path_b : path_a, value);
	p = pending_new(s, m, modern);
	p->up = u;
	p->ureq = sl_upstream_request(u, p->msg.method, d, params,
				      u->cfg->timeout_ms ? u->cfg->timeout_ms : s->gw->cfg->call_timeout_ms,
				      on_forward_reply, NULL, p, &err);
	yyjson_mut_doc_free(d);
	if (!p->ureq) {
		sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, err.msg);
		pending_free(p);
	}
}

static void do_resources_list(struct sl_session *s, struct sl_msg *m, bool modern, bool templates)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_val *r, *arr;
	yyjson_mut_doc *d = new_doc(&r);
	const char *field = templates ? "uriTemplate" : "uri";

	arr = yyjson_mut_arr(d);
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		struct sl_item_list *l = templates ? &u->templates : &u->resources;
		for (size_t j = 0; j < l->n; j++) {
			yyjson_mut_val *it = yyjson_val_mut_copy(d, l->items[j]);
			const char *uri = sl_json_str(l->items[j], field);
			char *ns;
			if (!uri)
				continue;
			ns = sl_catalog_expose_uri(&gw->catalog, u, uri);
			yyjson_mut_obj_remove_key(it, field);
			yyjson_mut_obj_add_strcpy(d, it, field, ns);
			free(ns);
			yyjson_mut_arr_append(arr, it);
		}
	}
	yyjson_mut_obj_add_val(d, r, templates ? "resourceTemplates" : "resources", arr);
	reply(s, m, modern, true, d, r);
}

static struct sl_upstream *upstream_of_uri(struct sl_session *s, const char *uri, const char **orig)
{
	return uri ? sl_catalog_uri_owner(&s->gw->catalog, uri, orig) : NULL;
}

static void do_resources_read(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *uri = m->params ? sl_json_str(m->params, "uri") : NULL, *orig;
	struct sl_upstream *u = upstream_of_uri(s, uri, &orig);
	if (!u) {
		/* 2026-07-28 retired -32002 for "not found" in favour of -32602. */
		sl_session_error(s, m->id, modern ? SL_RPC_INVALID_PARAMS : SL_RPC_RESOURCE_NOT_FOUND,
			   "Resource not found: the URI does not name a server of this gateway");
		return;
	}
	forward(s, m, modern, u, "uri", NULL, orig);
}

/* A session's subscriptions, a bounded set: the client's input. */
#define MAX_SUBSCRIPTIONS 1024

static bool subscribed_elsewhere(struct sl_session *s, const char *uri)
{
	for (struct sl_session *o = s->gw->sessions; o; o = o->next)
		if (o != s && !o->closing && sl_map_get(&o->subs, uri))
			return true;
	return false;
}

/* resources/subscribe and unsubscribe go to the resource's server; each
 * session gets updates only for what it subscribed to, and a server hears
 * an unsubscribe only when no session still wants the resource. */
static void do_subscribe(struct sl_session *s, struct sl_msg *m, bool modern, bool on)
{
	const char *uri = m->params ? sl_json_str(m->params, "uri") : NULL, *orig;
	struct sl_upstream *u = upstream_of_uri(s, uri, &orig);
	yyjson_val *rc;
	yyjson_mut_val *r;
	char msg[300];

	if (!uri) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: uri is required");
		return;
	}
	if (!u) {
		sl_session_error(s, m->id, SL_RPC_RESOURCE_NOT_FOUND,
				 "Resource not found: the URI does not name a server of this gateway");
		return;
	}
	rc = u->capabilities ? sl_json_obj(u->capabilities, "resources") : NULL;
	if (!rc || !yyjson_is_true(yyjson_obj_get(rc, "subscribe"))) {
		snprintf(msg, sizeof(msg), "Method not found: server '%.64s' offers no resource subscriptions",
			 u->name);
		sl_session_error(s, m->id, SL_RPC_METHOD_NOT_FOUND, msg);
		return;
	}
	if (on) {
		if (!sl_map_get(&s->subs, uri) && s->subs.live >= MAX_SUBSCRIPTIONS) {
			sl_session_error(s, m->id, SL_RPC_INVALID_REQUEST,
					 "Invalid Request: too many resource subscriptions in this session");
			return;
		}
		sl_map_put(&s->subs, uri, s);
	} else {
		sl_map_del(&s->subs, uri);
		if (subscribed_elsewhere(s, uri)) {
			yyjson_mut_doc *d = new_doc(&r);
			reply(s, m, modern, false, d, r);
			return;
		}
	}
	forward(s, m, modern, u, "uri", NULL, orig);
}

static void do_prompts_list(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_val *r, *arr;
	yyjson_mut_doc *d = new_doc(&r);

	arr = yyjson_mut_arr(d);
	for (size_t i = 0; i < gw->catalog.prompts.n; i++) {
		const struct sl_entry *e = &gw->catalog.prompts.v[i];
		yyjson_mut_val *t = yyjson_val_mut_copy(d, e->def);
		yyjson_mut_obj_remove_key(t, "name");
		yyjson_mut_obj_add_strcpy(d, t, "name", e->exposed);
		yyjson_mut_arr_append(arr, t);
	}
	yyjson_mut_obj_add_val(d, r, "prompts", arr);
	reply(s, m, modern, true, d, r);
}

static void do_prompts_get(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *name = m->params ? sl_json_str(m->params, "name") : NULL;
	const struct sl_entry *e = name ? sl_catalog_prompt(&s->gw->catalog, name) : NULL;
	if (!e) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: unknown prompt");
		return;
	}
	forward(s, m, modern, e->up, "name", NULL, e->name);
}

static void do_complete(struct sl_session *s, struct sl_msg *m, bool modern)
{
	yyjson_val *ref = m->params ? sl_json_obj(m->params, "ref") : NULL;
	const char *type = ref ? sl_json_str(ref, "type") : NULL;
	const struct sl_entry *e;
	struct sl_upstream *u;
	const char *orig;

	if (type && strcmp(type, "ref/prompt") == 0 && sl_json_str(ref, "name") &&
	    (e = sl_catalog_prompt(&s->gw->catalog, sl_json_str(ref, "name")))) {
		forward(s, m, modern, e->up, "ref", "name", e->name);
		return;
	}
	if (type && strcmp(type, "ref/resource") == 0 &&
	    (u = upstream_of_uri(s, sl_json_str(ref, "uri"), &orig))) {
		forward(s, m, modern, u, "ref", "uri", orig);
		return;
	}
	sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
		   "Invalid params: ref must name a prompt or resource of this gateway");
}

static void do_set_level(struct sl_session *s, struct sl_msg *m)
{
	const char *level = m->params ? sl_json_str(m->params, "level") : NULL;
	yyjson_mut_val *r;

	if (!level) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: level is required");
		return;
	}
	/* Pass the level on to every server that logs; their answers do not
	 * change ours. */
	for (size_t i = 0; i < s->gw->nups; i++) {
		struct sl_upstream *u = s->gw->ups[i];
		if (u->state == SL_UP_READY && sl_upstream_has_cap(u, "logging")) {
			yyjson_mut_doc *fd = yyjson_mut_doc_new(NULL);
			yyjson_mut_val *params = yyjson_mut_obj(fd);
			struct sl_err err;
			yyjson_mut_obj_add_strcpy(fd, params, "level", level);
			if (!sl_upstream_request(u, "logging/setLevel", fd, params,
						 s->gw->cfg->call_timeout_ms, NULL, NULL, NULL, &err))
				sl_log(SL_LOG_DEBUG, "%s", err.msg);
			yyjson_mut_doc_free(fd);
		}
	}
	yyjson_mut_doc *d = new_doc(&r);
	reply(s, m, false, false, d, r);
}

/* ---- dispatch of client messages ------------------------------------------ */

static void defer(struct sl_session *s, const char *line, size_t len);

static bool needs_upstreams(const char *method)
{
	return strcmp(method, "initialize") != 0 && strcmp(method, "ping") != 0 &&
	       strcmp(method, "server/discover") != 0;
}

static void handle_request(struct sl_session *s, struct sl_msg *m)
{
	bool modern;
	yyjson_mut_val *r;
	const char *meth = m->method;

	if (!request_era(s, m, &modern))
		return;
	if (strcmp(meth, "initialize") == 0) {
		if (modern) {
			sl_session_error(s, m->id, SL_RPC_METHOD_NOT_FOUND,
				   "Method not found: 2026-07-28 has no initialize");
			return;
		}
		do_initialize(s, m);
	} else if (strcmp(meth, "ping") == 0) {
		yyjson_mut_doc *d = new_doc(&r);
		reply(s, m, modern, false, d, r);
	} else if (strcmp(meth, "server/discover") == 0) {
		do_discover(s, m, modern);
	} else if (strcmp(meth, "tools/list") == 0) {
		do_tools_list(s, m, modern);
	} else if (strcmp(meth, "tools/call") == 0) {
		do_tools_call(s, m, modern);
	} else if (strcmp(meth, "resources/list") == 0) {
		do_resources_list(s, m, modern, false);
	} else if (strcmp(meth, "resources/templates/list") == 0) {
		do_resources_list(s, m, modern, true);
	} else if (strcmp(meth, "resources/read") == 0) {
		do_resources_read(s, m, modern);
	} else if (strcmp(meth, "resources/subscribe") == 0 && !modern) {
		do_subscribe(s, m, modern, true);
	} else if (strcmp(meth, "resources/unsubscribe") == 0 && !modern) {
		do_subscribe(s, m, modern, false);
	} else if (strcmp(meth, "prompts/list") == 0) {
		do_prompts_list(s, m, modern);
	} else if (strcmp(meth, "prompts/get") == 0) {
		do_prompts_get(s, m, modern);
	} else if (strcmp(meth, "completion/complete") == 0) {
		do_complete(s, m, modern);
	} else if (strcmp(meth, "logging/setLevel") == 0 && !modern) {
		do_set_level(s, m);
	} else {
		char msg[200];
		snprintf(msg, sizeof(msg), "Method not found: %.100s", meth);
		sl_session_error(s, m->id, SL_RPC_METHOD_NOT_FOUND, msg);
	}
}

static void handle_notification(struct sl_session *s, struct sl_msg *m)
{
	if (strcmp(m->method, "notifications/initialized") == 0) {
		s->initialized = true;
	} else if (strcmp(m->method, "notifications/cancelled") == 0) {
		yyjson_val *id = m->params ? yyjson_obj_get(m->params, "requestId") : NULL;
		char key[80];
		struct pending *p;
		if (!id || !(yyjson_is_str(id) || yyjson_is_int(id)))
			return;
		id_key(id, key, sizeof(key));
		p = sl_map_get(&s->calls, key);
		if (!p)
			return; /* already answered: MCP says ignore */
		if (p->call) {
			sl_call_cancel(p->call, sl_json_str(m->params, "reason") ?
					sl_json_str(m->params, "reason") : "cancelled by the client");
		} else if (p->program) {
			sl_program_cancel(p->program);
		} else if (p->ureq) {
			sl_upstream_cancel(p->up, p->ureq, "cancelled by the client");
			pending_free(p);
		}
	} else if (strcmp(m->method, "notifications/roots/list_changed") == 0) {
		for (size_t i = 0; i < s->gw->nups; i++) {
			struct sl_upstream *u = s->gw->ups[i];
			/* Upstreams that asked for roots will ask again. */
			if (u->state == SL_UP_READY)
				sl_upstream_notify(u, m->method);
		}
	}
}

static void handle_response(struct sl_session *s, struct sl_msg *m)
{
	char key[80];
	struct relay *r;

	id_key(m->id, key, sizeof(key));
	r = sl_map_del(&s->relays, key);
	if (!r)
		return;
	if (r->cb) {
		const char *action = m->result ? sl_json_str(m->result, "action") : NULL;
		r->cb(r->ctx, action, m->result ? sl_json_obj(m->result, "content") : NULL);
	} else if (r->up) { /* not one of ours whose answer was given up on */
		sl_upstream_respond(r->up, r->gen, yyjson_doc_get_root(r->id_doc), m->result, m->error);
	}
	yyjson_doc_free(r->id_doc);
	free(r);
}

bool sl_session_can_elicit(const struct sl_session *s)
{
	return s && !s->closing && s->era == SL_ERA_LEGACY && s->caps &&
	       yyjson_obj_get(s->caps, "elicitation") != NULL;
}

bool sl_session_elicit(struct sl_session *s, const char *message, yyjson_mut_doc *d,
		       yyjson_mut_val *schema, sl_elicit_fn cb, void *ctx)
{
	struct relay *r;
	yyjson_mut_val *o, *params;
	yyjson_mut_doc *req;
	char id[32], key[80];

	if (!sl_session_can_elicit(s))
		return false;
	r = sl_alloc(sizeof(*r));
	r->cb = cb;
	r->ctx = ctx;
	snprintf(id, sizeof(id), "sluice-%lld", (long long)s->next_out_id++);
	req = yyjson_mut_doc_new(NULL);
	o = yyjson_mut_obj(req);
	yyjson_mut_doc_set_root(req, o);
	yyjson_mut_obj_add_str(req, o, "jsonrpc", "2.0");
	yyjson_mut_obj_add_strcpy(req, o, "id", id);
	yyjson_mut_obj_add_str(req, o, "method", "elicitation/create");
	params = yyjson_mut_obj(req);
	/* MCP 2025-11-25 elicitation: a message and a flat requested schema. */
	yyjson_mut_obj_add_strcpy(req, params, "message", message);
	yyjson_mut_obj_add_val(req, params, "requestedSchema", yyjson_mut_val_mut_copy(req, schema));
	yyjson_mut_obj_add_val(req, o, "params", params);
	snprintf(key, sizeof(key), "s:%s", id);
	sl_map_put(&s->relays, key, r);
	sl_session_send_doc(s, req);
	yyjson_mut_doc_free(req);
	(void)d;
	return true;
}

static void process(struct sl_session *s, const char *line, size_t len)
{
	struct sl_msg m;
	struct sl_err err;
	int code;

	if (sl_msg_parse(&m, line, len, &code, &err) < 0) {
		sl_session_error(s, m.id, code, err.msg);
		sl_msg_dispose(&m);
		return;
	}
	switch (m.kind) {
	case SL_MSG_REQUEST:
		/* Until every upstream has had its first handshake, requests that
		 * need the catalog wait (bounded by startupTimeoutMs). */
		if (needs_upstreams(m.method) && !s->gw->settled &&
		    (s->era != SL_ERA_NONE ||
		     (s->gw->started && meta_of(&m) && sl_json_str(meta_of(&m), SL_MCP_META_VERSION)))) {
			/* A fresh session's 2026-07-28 request (over HTTP, every
			 * request has a fresh session) waits like any other. */
			defer(s, line, len);
			break;
		}
		if (needs_upstreams(m.method) && !s->gw->started) {
			bool modern;
			/* A 2026-07-28 client's first request starts the upstreams. */
			if (request_era(s, &m, &modern) && modern) {
				sl_gateway_start(s->gw, client_caps(s, &m, true));
				defer(s, line, len);
			}
			break;
		}
		handle_request(s, &m);
		break;
	case SL_MSG_NOTIFICATION:
		handle_notification(s, &m);
		break;
	case SL_MSG_RESPONSE:
		handle_response(s, &m);
		break;
	}
	sl_msg_dispose(&m);
}

static void on_settled(void *ctx)
{
	struct sl_session *s = ctx;
	while (s->deferred && !s->closing) {
		struct sl_deferred *d = s->deferred;
		s->deferred = d->next;
		if (!s->deferred)
			s->deferred_tail = &s->deferred;
		process(s, d->line, d->len);
		free(d->line);
		free(d);
	}
}

static void defer(struct sl_session *s, const char *line, size_t len)
{
	struct sl_deferred *d = sl_alloc(sizeof(*d));
	bool first = s->deferred == NULL;
	d->line = sl_strndup(line, len);
	d->len = len;
	*s->deferred_tail = d;
	s->deferred_tail = &d->next;
	if (first)
		sl_gateway_when_settled(s->gw, on_settled, s);
}

void sl_session_input(struct sl_session *s, const char *line, size_t len)
{
	if (s->closing)
		return;
	/* Keep order: once something waits, everything after it waits too. */
	if (s->deferred) {
		defer(s, line, len);
		return;
	}
	process(s, line, len);
}

void sl_session_oversize(struct sl_session *s, const char *head, size_t hl, const char *tail,
			 size_t tl, size_t total, size_t max)
{
	char msg[200];
	yyjson_doc *id = sl_rpc_find_id(head, hl, tail, tl);
	snprintf(msg, sizeof(msg),
		 "Invalid Request: message of %zu bytes exceeds the limit of %zu (sluice.maxRequestBytes)",
		 total, max);
	sl_session_error(s, id ? yyjson_doc_get_root(id) : NULL, SL_RPC_INVALID_REQUEST, msg);
	yyjson_doc_free(id);
}

/* ---- from the gateway -------------------------------------------------------- */

void sl_session_list_changed(struct sl_session *s, const char *what)
{
	char method[64];
	yyjson_mut_val *params;
	yyjson_mut_doc *d;

	/* 2026-07-28 clients have no stream to hear it on (their lists carry
	 * ttlMs 0); the gateway decides whether the router's list changed. */
	if (s->era != SL_ERA_LEGACY)
		return;
	snprintf(method, sizeof(method), "notifications/%s/list_changed", what);
	d = sl_rpc_request_new(method, -1, &params);
	yyjson_mut_obj_remove_key(yyjson_mut_doc_get_root(d), "params");
	sl_session_send_doc(s, d);
	yyjson_mut_doc_free(d);
}

void sl_session_notify(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m)
{
	yyjson_mut_val *params;
	yyjson_mut_doc *d;

	if (s->era != SL_ERA_LEGACY || !m->params)
		return;
	if (strcmp(m->method, "notifications/message") == 0) {
		const char *logger = sl_json_str(m->params, "logger");
		char *name = logger ? sl_printf("%s/%s", u->name, logger) : sl_strdup(u->name);
		d = sl_rpc_request_new(m->method, -1, &params);
		params = yyjson_val_mut_copy(d, m->params);
		yyjson_mut_obj_remove_key(params, "logger");
		yyjson_mut_obj_add_strcpy(d, params, "logger", name);
		free(name);
	} else if (strcmp(m->method, "notifications/resources/updated") == 0 &&
		   sl_json_str(m->params, "uri")) {
		char *uri = sl_catalog_expose_uri(&s->gw->catalog, u, sl_json_str(m->params, "uri"));
		if (!sl_map_get(&s->subs, uri)) {
			free(uri);
			return; /* MCP 2025-11-25 resources: updates go to subscribers */
		}
		d = sl_rpc_request_new(m->method, -1, &params);
		params = yyjson_val_mut_copy(d, m->params);
		yyjson_mut_obj_remove_key(params, "uri");
		yyjson_mut_obj_add_strcpy(d, params, "uri", uri);
		free(uri);
	} else {
		return;
	}
	yyjson_mut_obj_remove_key(yyjson_mut_doc_get_root(d), "params");
	yyjson_mut_obj_add_val(d, yyjson_mut_doc_get_root(d), "params", params);
	sl_session_send_doc(s, d);
	yyjson_mut_doc_free(d);
}

static bool waits_on(const void *value, const void *ctx)
{
	const struct pending *p = value;
	/* A program may call any server. */
	return p->up == ctx || p->program;
}

bool sl_session_waits_on(const struct sl_session *s, const struct sl_upstream *u)
{
	return !s->closing && sl_map_find(&s->calls, waits_on, u) != NULL;
}

bool sl_session_relay(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m)
{
	static const struct { const char *method, *cap; } need[] = {
		{ "elicitation/create", "elicitation" },
		{ "sampling/createMessage", "sampling" },
		{ "roots/list", "roots" },
	};
	struct relay *r;
	yyjson_mut_val *o, *params;
	yyjson_mut_doc *d;
	char id[32], key[80];
	bool ok = false;

	if (s->closing || s->era != SL_ERA_LEGACY || !s->caps)
		return false;
	for (size_t i = 0; i < SL_COUNT(need); i++)
		if (strcmp(m->method, need[i].method) == 0)
			ok = yyjson_obj_get(s->caps, need[i].cap) != NULL;
	if (!ok)
		return false;
	r = sl_alloc(sizeof(*r));
	r->up = u;
	r->gen = sl_upstream_generation(u);
	{
		yyjson_mut_doc *idd = yyjson_mut_doc_new(NULL);
		yyjson_mut_doc_set_root(idd, yyjson_val_mut_copy(idd, m->id));
		r->id_doc = yyjson_mut_doc_imut_copy(idd, NULL);
		yyjson_mut_doc_free(idd);
	}
	/* Our own id space towards the client: strings no client would reuse. */
	snprintf(id, sizeof(id), "sluice-%lld", (long long)s->next_out_id++);
	d = yyjson_mut_doc_new(NULL);
	o = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_str(d, o, "jsonrpc", "2.0");
	yyjson_mut_obj_add_strcpy(d, o, "id", id);
	yyjson_mut_obj_add_strcpy(d, o, "method", m->method);
	params = m->params ? yyjson_val_mut_copy(d, m->params) : yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, o, "params", params);
	snprintf(key, sizeof(key), "s:%s", id);
	sl_map_put(&s->relays, key, r);
	sl_session_send_doc(s, d);
	yyjson_mut_doc_free(d);
	return true;
}

/*
 * Resources, prompts and completion: the lists come from the merged
 * catalog; reads, prompts/get, completion and subscriptions are forwarded
 * to the server that owns the URI or name, under its own name, and its
 * answer comes back with the gateway's names.
 */
#include "gateway/session_int.h"
#include "gateway/view.h"
#include "core/log.h"
#include "proto/mcp.h"
#include "proto/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Replaces obj.uri with the gateway's namespaced form of it. */
static void namespace_key(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *obj,
			  const char *key, const struct sl_upstream *u);

static void namespace_uri(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *obj,
			  const struct sl_upstream *u)
{
	namespace_key(s, d, obj, "uri", u);
}

/* Content blocks that point at resources (resource_link, embedded
 * resource) get namespaced URIs, so the client can read them back through
 * the gateway. */
void sl_forward_namespace_block(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *b,
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

/* obj[key], a URI string of u's, becomes the gateway's form of it. */
static void namespace_key(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *obj,
			  const char *key, const struct sl_upstream *u)
{
	const char *uri = yyjson_mut_get_str(yyjson_mut_obj_get(obj, key));
	char *ns;
	if (!uri)
		return;
	ns = sl_catalog_expose_uri(&s->gw->catalog, u, uri);
	yyjson_mut_obj_remove_key(obj, key);
	yyjson_mut_obj_add_strcpy(d, obj, key, ns);
	free(ns);
}

void sl_forward_namespace_tool(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *tool,
			       const struct sl_upstream *u)
{
	yyjson_mut_val *meta = yyjson_mut_obj_get(tool, "_meta");

	/* MCP Apps (SEP-1865 resource discovery): the host reads the View
	 * the tool names with resources/read, so it names it as resources/list
	 * does; both spellings, as the ext-apps server SDK writes both. */
	if (!yyjson_mut_is_obj(meta))
		return;
	if (yyjson_mut_is_obj(yyjson_mut_obj_get(meta, "ui")))
		namespace_key(s, d, yyjson_mut_obj_get(meta, "ui"), "resourceUri", u);
	namespace_key(s, d, meta, SL_MCP_UI_LEGACY_KEY, u);
}

/* The guard's warning with an answer, first where the model reads it: a
 * text entry before a resource's contents (MCP 2025-11-25 resources: text
 * contents carry a uri), a user message before a prompt's messages. An MCP
 * Apps View is no model's reading but its host's, which renders the first
 * contents: the warning goes after it. */
static void mark_answer(yyjson_mut_doc *d, yyjson_mut_val *res, const char *method,
			const char *warning)
{
	bool read = strcmp(method, "resources/read") == 0;
	yyjson_mut_val *arr = yyjson_mut_obj_get(res, read ? "contents" : "messages");
	yyjson_mut_val *first = yyjson_mut_arr_get_first(arr), *e = yyjson_mut_obj(d), *t;

	if (!yyjson_mut_is_arr(arr)) {
		arr = yyjson_mut_arr(d);
		yyjson_mut_obj_remove_key(res, read ? "contents" : "messages");
		yyjson_mut_obj_add_val(d, res, read ? "contents" : "messages", arr);
	}
	if (read) {
		yyjson_mut_val *uri = yyjson_mut_obj_get(first, "uri");
		yyjson_mut_obj_add_val(d, e, "uri", yyjson_mut_is_str(uri) ?
				       yyjson_mut_val_mut_copy(d, uri) : yyjson_mut_str(d, ""));
		yyjson_mut_obj_add_str(d, e, "mimeType", "text/plain");
		yyjson_mut_obj_add_strcpy(d, e, "text", warning);
		if (yyjson_mut_equals_str(yyjson_mut_obj_get(first, "mimeType"), SL_MCP_UI_MIME)) {
			yyjson_mut_arr_append(arr, e);
			return;
		}
	} else {
		yyjson_mut_obj_add_str(d, e, "role", "user");
		t = yyjson_mut_obj(d);
		yyjson_mut_obj_add_str(d, t, "type", "text");
		yyjson_mut_obj_add_strcpy(d, t, "text", warning);
		yyjson_mut_obj_add_val(d, e, "content", t);
	}
	yyjson_mut_arr_prepend(arr, e);
}

/* SEP-2164: a resources/read that finds nothing (-32002, or -32602 from
 * 2026-07-28 on) names the URI asked for in its error's data, as the
 * client spelled it. A server's error that has no data gets it here. */
static void not_found_uri(yyjson_mut_doc *d, yyjson_mut_val *err, const char *uri)
{
	yyjson_mut_val *code = yyjson_mut_obj_get(err, "code"), *data;
	int64_t c = yyjson_mut_is_int(code) ? yyjson_mut_get_sint(code) : 0;

	if (!uri || (c != SL_RPC_RESOURCE_NOT_FOUND && c != SL_RPC_INVALID_PARAMS) ||
	    yyjson_mut_obj_get(err, "data"))
		return;
	data = yyjson_mut_obj(d);
	yyjson_mut_obj_add_strcpy(d, data, "uri", uri);
	yyjson_mut_obj_add_val(d, err, "data", data);
}

void sl_forward_reply(void *ctx, struct sl_reply *r)
{
	struct sl_pending *p = ctx;
	struct sl_session *s = p->s;
	yyjson_mut_val *o, *res;
	yyjson_mut_doc *d;
	const char *method = p->msg.method;
	struct sl_peer peer;
	char key[80];

	p->u.ureq = NULL;
	if (s->closing) {
		sl_pending_free(p);
		return;
	}
	if (r->kind == SL_REPLY_FAILED) {
		sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, r->why);
		sl_pending_free(p);
		return;
	}
	sl_session_client_key(s, key);
	d = sl_rpc_response_new(p->msg.id, &o);
	if (r->kind == SL_REPLY_ERROR) {
		sl_peer_init(&peer, SL_PEER_ERROR, method, p->up, d,
			     yyjson_val_mut_copy(d, r->msg->error));
		peer.can_mark = true;
		peer.client_key = key;
		sl_stages_peer(s->gw->gen, &peer);
		sl_peer_error_apply(&peer);
		if (yyjson_mut_is_obj(peer.val) && strcmp(method, "resources/read") == 0)
			not_found_uri(d, peer.val, p->msg.params ? sl_json_str(p->msg.params, "uri") : NULL);
		yyjson_mut_obj_add_val(d, o, "error", peer.val);
	} else {
		res = yyjson_val_mut_copy(d, r->msg->result);
		if (!yyjson_mut_is_obj(res))
			res = yyjson_mut_obj(d);
		sl_peer_init(&peer, SL_PEER_ANSWER, method, p->up, d, res);
		/* A completion's values go into the person's input: they have
		 * no room for a warning. */
		peer.can_mark = strcmp(method, "completion/complete") != 0;
		peer.client_key = key;
		sl_stages_peer(s->gw->gen, &peer);
		if (peer.withheld) {
			sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, peer.withheld);
			goto out;
		}
		/* Results name the upstream's URIs: namespace them. */
		yyjson_mut_val *it;
		size_t i, n;
		if (strcmp(method, "resources/read") == 0)
			yyjson_mut_arr_foreach(yyjson_mut_obj_get(res, "contents"), i, n, it)
				namespace_uri(s, d, it, p->up);
		if (strcmp(method, "prompts/get") == 0)
			yyjson_mut_arr_foreach(yyjson_mut_obj_get(res, "messages"), i, n, it)
				sl_forward_namespace_block(s, d, yyjson_mut_obj_get(it, "content"), p->up);
		if (peer.warning)
			mark_answer(d, res, method, peer.warning);
		sl_session_seal(d, res, p->modern, strcmp(method, "resources/read") == 0);
		yyjson_mut_obj_add_val(d, o, "result", res);
	}
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = p->msg.id,
					      .error = r->kind == SL_REPLY_ERROR }, d);
out:
	sl_peer_dispose(&peer);
	yyjson_mut_doc_free(d);
	sl_pending_free(p);
}

/* Sends m's params upstream to u, with field path_a (or path_a.path_b)
 * replaced by value. Takes m. */
static void forward(struct sl_session *s, struct sl_msg *m, bool modern, struct sl_upstream *u,
		    const char *path_a, const char *path_b, const char *value)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *params = yyjson_val_mut_copy(d, m->params), *target = params;
	struct sl_err err;
	struct sl_pending *p;
	struct sl_peer peer;
	struct sl_trace_ctx trace;

	/* The upstream speaks the session era: drop 2026-07-28 _meta fields. */
	yyjson_mut_obj_remove_key(params, "_meta");
	/* A prompt's arguments, a completion's: the client's text, redacted
	 * before the server gets it, as a tool call's arguments are. */
	sl_peer_init(&peer, SL_PEER_UPSTREAM, m->method, u, d, params);
	sl_stages_peer(s->gw->gen, &peer);
	if (peer.withheld) {
		sl_session_error(s, m->id, SL_RPC_INTERNAL_ERROR, peer.withheld);
		sl_peer_dispose(&peer);
		yyjson_mut_doc_free(d);
		return;
	}
	sl_peer_dispose(&peer);
	if (path_b)
		target = yyjson_mut_obj_get(params, path_a);
	yyjson_mut_obj_remove_key(target, path_b ? path_b : path_a);
	yyjson_mut_obj_add_strcpy(d, target, path_b ? path_b : path_a, value);
	/* SEP-414: the client's trace context goes on, as it came (sluice
	 * makes spans of tool calls only). */
	sl_trace_ctx_from_meta(&trace, sl_json_obj(m->params, "_meta"));
	if (sl_trace_ctx_any(&trace, NULL)) {
		yyjson_mut_val *meta = yyjson_mut_obj(d);
		sl_trace_ctx_to_meta(&trace, NULL, d, meta);
		yyjson_mut_obj_add_val(d, params, "_meta", meta);
	}
	sl_trace_ctx_dispose(&trace);
	p = sl_pending_new(s, m, modern, SL_PENDING_FORWARD);
	sl_pending_forward(p, u, d, params, sl_forward_reply, &err);
	yyjson_mut_doc_free(d);
	if (!p->u.ureq) {
		sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, err.msg);
		sl_pending_free(p);
	}
}

static void resources_list(struct sl_session *s, struct sl_msg *m, bool modern, bool templates)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_val *r, *arr;
	yyjson_mut_doc *d = sl_session_doc(&r);
	const char *field = templates ? "uriTemplate" : "uri";
	struct sl_view v;

	sl_view_of(gw, m->who, &v);
	arr = yyjson_mut_arr(d);
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		struct sl_item_list *l = templates ? &u->templates : &u->resources;
		if (!sl_view_server(&v, u))
			continue;
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
	sl_session_answer(s, m, modern, true, d, r);
}

void sl_forward_resources_list(struct sl_session *s, struct sl_msg *m, bool modern)
{
	resources_list(s, m, modern, false);
}

void sl_forward_templates_list(struct sl_session *s, struct sl_msg *m, bool modern)
{
	resources_list(s, m, modern, true);
}

/* The server a URI names, if who's profile shows it (who: the request's
 * caller, or for what no request asks the session's latest), and in *orig
 * (the caller frees it; NULL with no server) the URI the server knows. */
static struct sl_upstream *upstream_of_uri(struct sl_session *s, const struct sl_caller *who,
					   const char *uri, char **orig)
{
	struct sl_upstream *u = uri ? sl_catalog_uri_owner(&s->gw->catalog, uri, orig) : NULL;
	struct sl_view v;

	sl_view_of(s->gw, who, &v);
	if (u && sl_view_server(&v, u))
		return u;
	if (u)
		free(*orig);
	*orig = NULL;
	return NULL;
}

/* A prompt of the catalog, if the profile of m's caller shows its server. */
static const struct sl_entry *prompt_of(struct sl_session *s, const struct sl_msg *m,
					const char *name)
{
	const struct sl_entry *e = name ? sl_catalog_prompt(&s->gw->catalog, name) : NULL;
	struct sl_view v;

	sl_view_of(s->gw, m->who, &v);
	return e && sl_view_server(&v, e->up) ? e : NULL;
}

void sl_forward_resources_read(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *uri = m->params ? sl_json_str(m->params, "uri") : NULL;
	struct sl_upstream *u;
	char *orig;

	/* MCP 2026-07-28 MRTR: the retry of a request a server asked for. */
	if (modern && sl_park_resume(s, m))
		return;
	u = upstream_of_uri(s, m->who, uri, &orig);
	if (!u) {
		yyjson_mut_val *o;
		yyjson_mut_doc *d = sl_rpc_response_new(m->id, &o);
		/* 2026-07-28 retired -32002 for "not found" in favour of -32602. */
		sl_rpc_add_error(d, o, modern ? SL_RPC_INVALID_PARAMS : SL_RPC_RESOURCE_NOT_FOUND,
				 "Resource not found: the URI does not name a server of this gateway", NULL);
		not_found_uri(d, yyjson_mut_obj_get(o, "error"), uri);
		sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = m->id, .error = true }, d);
		yyjson_mut_doc_free(d);
		return;
	}
	forward(s, m, modern, u, "uri", NULL, orig);
	free(orig);
}

/* A session's subscriptions, a bounded set: the client's input. */
#define MAX_SUBSCRIPTIONS 1024

static bool subscribed_elsewhere(struct sl_session *s, const char *uri)
{
	struct sl_list *n;

	sl_list_each(n, &s->gw->sessions) {
		struct sl_session *o = sl_list_entry(n, struct sl_session, link);
		if (o != s && !o->closing && sl_map_get(&o->subs, uri))
			return true;
	}
	/* A 2026-07-28 listen (listen.c) watches it too. */
	sl_list_each(n, &s->gw->sessions) {
		struct sl_session *o = sl_list_entry(n, struct sl_session, link);
		if (!o->closing && sl_listen_wants(o, uri))
			return true;
	}
	return false;
}

/* resources/subscribe and unsubscribe go to the resource's server; each
 * session gets updates only for what it subscribed to, and a server hears
 * an unsubscribe only when no session still wants the resource. */
static void subscribe(struct sl_session *s, struct sl_msg *m, bool modern, bool on)
{
	const char *uri = m->params ? sl_json_str(m->params, "uri") : NULL;
	char *orig;
	struct sl_upstream *u = upstream_of_uri(s, m->who, uri, &orig);
	yyjson_val *rc;
	yyjson_mut_val *r;
	char msg[300];

	if (!uri) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: uri is required");
		goto out;
	}
	if (!u) {
		sl_session_error(s, m->id, SL_RPC_RESOURCE_NOT_FOUND,
				 "Resource not found: the URI does not name a server of this gateway");
		goto out;
	}
	rc = u->capabilities ? sl_json_obj(u->capabilities, "resources") : NULL;
	if (!rc || !yyjson_is_true(yyjson_obj_get(rc, "subscribe"))) {
		snprintf(msg, sizeof(msg), "Method not found: server '%.64s' offers no resource subscriptions",
			 u->name);
		sl_session_error(s, m->id, SL_RPC_METHOD_NOT_FOUND, msg);
		goto out;
	}
	if (on) {
		if (!sl_map_get(&s->subs, uri) && s->subs.live >= MAX_SUBSCRIPTIONS) {
			sl_session_error(s, m->id, SL_RPC_INVALID_REQUEST,
					 "Invalid Request: too many resource subscriptions in this session");
			goto out;
		}
		sl_map_put(&s->subs, uri, s);
		sl_session_changed(s);
	} else {
		sl_map_del(&s->subs, uri);
		sl_session_changed(s);
		if (subscribed_elsewhere(s, uri)) {
			yyjson_mut_doc *d = sl_session_doc(&r);
			sl_session_answer(s, m, modern, false, d, r);
			goto out;
		}
	}
	forward(s, m, modern, u, "uri", NULL, orig);
out:
	free(orig);
}

void sl_forward_subscribe(struct sl_session *s, struct sl_msg *m, bool modern)
{
	subscribe(s, m, modern, true);
}

void sl_forward_unsubscribe(struct sl_session *s, struct sl_msg *m, bool modern)
{
	subscribe(s, m, modern, false);
}

static void on_resubscribed(void *ctx, struct sl_reply *r)
{
	struct sl_upstream *u = ctx;
	if (r->kind != SL_REPLY_RESULT)
		sl_log(SL_LOG_INFO, "server '%s' refused an adopted session's resource subscription: "
		       "%s", u->name, r->kind == SL_REPLY_FAILED ? r->why :
		       sl_json_str(r->msg->error, "message") ? sl_json_str(r->msg->error, "message") :
		       "an error");
}

void sl_forward_resubscribe(struct sl_session *s, const char *uri)
{
	char *orig;
	struct sl_upstream *u = upstream_of_uri(s, s->caller, uri, &orig);
	yyjson_mut_doc *d;
	yyjson_mut_val *params;
	struct sl_err err;

	if (!u || u->state != SL_UP_READY) {
		sl_log(SL_LOG_INFO, "an adopted session's subscription to %s is not renewed: no "
		       "ready server of this replica serves it", uri);
		free(orig);
		return;
	}
	if (u->modern) {
		sl_upstream_watch(u, orig, true);
		free(orig);
		return;
	}
	d = yyjson_mut_doc_new(NULL);
	params = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, params);
	yyjson_mut_obj_add_strcpy(d, params, "uri", orig);
	if (!sl_upstream_request(u, "resources/subscribe", d, params, s->gw->gen->cfg->call_timeout_ms,
				 on_resubscribed, NULL, u, &err))
		sl_log(SL_LOG_INFO, "an adopted session's subscription to %s: %s", uri, err.msg);
	yyjson_mut_doc_free(d);
	free(orig);
}

void sl_forward_prompts_list(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_val *r, *arr;
	yyjson_mut_doc *d = sl_session_doc(&r);
	struct sl_view v;

	sl_view_of(gw, m->who, &v);
	arr = yyjson_mut_arr(d);
	for (size_t i = 0; i < gw->catalog.prompts.n; i++) {
		const struct sl_entry *e = &gw->catalog.prompts.v[i];
		yyjson_mut_val *t;
		if (!sl_view_server(&v, e->up))
			continue;
		t = yyjson_val_mut_copy(d, e->def);
		yyjson_mut_obj_remove_key(t, "name");
		yyjson_mut_obj_add_strcpy(d, t, "name", e->exposed);
		yyjson_mut_arr_append(arr, t);
	}
	yyjson_mut_obj_add_val(d, r, "prompts", arr);
	sl_session_answer(s, m, modern, true, d, r);
}

void sl_forward_prompts_get(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *name = m->params ? sl_json_str(m->params, "name") : NULL;
	const struct sl_entry *e;

	if (modern && sl_park_resume(s, m))
		return;
	e = prompt_of(s, m, name);
	if (!e) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: unknown prompt");
		return;
	}
	forward(s, m, modern, e->up, "name", NULL, e->name);
}

void sl_forward_complete(struct sl_session *s, struct sl_msg *m, bool modern)
{
	yyjson_val *ref = m->params ? sl_json_obj(m->params, "ref") : NULL;
	const char *type = ref ? sl_json_str(ref, "type") : NULL;
	const struct sl_entry *e;
	struct sl_upstream *u;
	char *orig;

	if (modern && sl_park_resume(s, m))
		return;
	if (type && strcmp(type, "ref/prompt") == 0 && sl_json_str(ref, "name") &&
	    (e = prompt_of(s, m, sl_json_str(ref, "name")))) {
		forward(s, m, modern, e->up, "ref", "name", e->name);
		return;
	}
	if (type && strcmp(type, "ref/resource") == 0 &&
	    (u = upstream_of_uri(s, m->who, sl_json_str(ref, "uri"), &orig))) {
		forward(s, m, modern, u, "ref", "uri", orig);
		free(orig);
		return;
	}
	sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
		   "Invalid params: ref must name a prompt or resource of this gateway");
}

/*
 * subscriptions/listen for 2026-07-28 clients (MCP 2026-07-28
 * basic/patterns/subscriptions): a long-lived request whose stream carries
 * first notifications/subscriptions/acknowledged, then the change
 * notifications the client opted in to, each tagged with the listen
 * request's id in _meta["io.modelcontextprotocol/subscriptionId"].
 *
 * A listen lives in its session (s->listens) until the client cancels it
 * (notifications/cancelled on stdio, closing the stream over HTTP: the
 * session ends), the session closes, or the gateway shuts down (a graceful
 * completion response, sl_session_end_listens). The transport routes every
 * message of a listen by struct sl_out's sub: over HTTP to the POST that
 * opened it, on stdio to stdout like everything else.
 *
 * Catalog changes come through sl_session_list_changed, once per session
 * and change, so once per listen that opted in. Resource URIs are watched
 * on their owning server while at least one listen (or session-era
 * subscription) of any session wants them: resources/subscribe on a
 * session-era server, the upstream's own listen on a 2026-07-28 one
 * (sl_upstream_watch).
 *
 * Bounds (sluice.limits): maxListens in all, maxListensPerSession per
 * session (per credential over HTTP, in the transport), maxListenUris per
 * listen; the request itself is at most maxRequestBytes.
 */
#include "gateway/session_int.h"
#include "gateway/view.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LISTEN_TOOLS 1u
#define LISTEN_PROMPTS 2u
#define LISTEN_RESOURCES 4u

struct listen_uri {
	char *uri;                 /* as the client names it (the gateway's form) */
	struct sl_upstream *up;    /* its owner; upstreams live as long as the gateway */
	char *orig;                /* as the owner names it */
};

struct sl_listen {
	struct sl_list link;       /* in its session's listens */
	yyjson_doc *id_doc;        /* a copy of the request's id: the subscription id */
	char key[80];              /* sl_session_id_key of it */
	unsigned what;             /* LISTEN_* */
	struct listen_uri *uris;
	size_t nuris;
};

static yyjson_val *listen_id(const struct sl_listen *l)
{
	return yyjson_doc_get_root(l->id_doc);
}

/* {subscriptionId: l's id}, in d. */
static yyjson_mut_val *tag_meta(yyjson_mut_doc *d, const struct sl_listen *l)
{
	yyjson_mut_val *meta = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, meta, SL_MCP_META_SUBSCRIPTION, yyjson_val_mut_copy(d, listen_id(l)));
	return meta;
}

/* params with _meta[subscriptionId] = l's id, in d. */
static yyjson_mut_val *tagged_params(yyjson_mut_doc *d, const struct sl_listen *l)
{
	yyjson_mut_val *params = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, params, "_meta", tag_meta(d, l));
	return params;
}

static void send_tagged(struct sl_session *s, const struct sl_listen *l, yyjson_mut_doc *d)
{
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_NOTIFICATION, .sub = listen_id(l) }, d);
	yyjson_mut_doc_free(d);
}

/* ---- watching URIs on their servers ------------------------------------ */

static bool listen_has(const struct sl_listen *l, const struct sl_upstream *u, const char *orig)
{
	for (size_t i = 0; i < l->nuris; i++)
		if (l->uris[i].up == u && !strcmp(l->uris[i].orig, orig))
			return true;
	return false;
}

/* Whether a listen other than skip (of any live session), or a session-era
 * subscription, still wants u's resource orig, under the gateway name uri. */
static bool wanted(struct sl_gateway *gw, const struct sl_listen *skip, struct sl_upstream *u,
		   const char *orig, const char *uri)
{
	struct sl_list *on;

	sl_list_each(on, &gw->sessions) {
		struct sl_session *o = sl_list_entry(on, struct sl_session, link);
		struct sl_list *n;
		if (o->closing)
			continue;
		if (sl_map_get(&o->subs, uri))
			return true;
		sl_list_each(n, &o->listens) {
			const struct sl_listen *l = sl_list_entry(n, struct sl_listen, link);
			if (l != skip && listen_has(l, u, orig))
				return true;
		}
	}
	return false;
}

static void on_watch_reply(void *ctx, struct sl_reply *r)
{
	struct sl_upstream *u = ctx;
	if (r->kind != SL_REPLY_RESULT)
		sl_log(SL_LOG_INFO, "server '%s' refused a resource subscription for a listen: %s",
		       u->name, r->kind == SL_REPLY_FAILED ? r->why :
		       sl_json_str(r->msg->error, "message") ? sl_json_str(r->msg->error, "message") :
		       "an error");
}

/* Starts or stops watching u's resource orig: the first listener
 * subscribes, the last one gone unsubscribes. */
static void watch(struct sl_gateway *gw, struct sl_upstream *u, const char *orig, bool on)
{
	yyjson_mut_doc *d;
	yyjson_mut_val *params;
	struct sl_err err;

	if (u->modern) {
		sl_upstream_watch(u, orig, on);
		return;
	}
	d = yyjson_mut_doc_new(NULL);
	params = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, params);
	yyjson_mut_obj_add_strcpy(d, params, "uri", orig);
	if (!sl_upstream_request(u, on ? "resources/subscribe" : "resources/unsubscribe", d, params,
				 gw->gen->cfg->call_timeout_ms, on_watch_reply, NULL, u, &err))
		sl_log(SL_LOG_INFO, "a listen's resource subscription: %s", err.msg);
	yyjson_mut_doc_free(d);
}

/* ---- a listen's life ---------------------------------------------------- */

/* Takes l out of its session and off the gateway's count; stops watching
 * what nobody else wants; frees it. Sends nothing. */
static void listen_drop(struct sl_session *s, struct sl_listen *l)
{
	sl_list_remove(&l->link);
	s->nlistens--;
	s->gw->listens--;
	for (size_t i = 0; i < l->nuris; i++) {
		struct listen_uri *x = &l->uris[i];
		if (!wanted(s->gw, l, x->up, x->orig, x->uri))
			watch(s->gw, x->up, x->orig, false);
		free(x->uri);
		free(x->orig);
	}
	free(l->uris);
	yyjson_doc_free(l->id_doc);
	free(l);
}

static struct sl_listen *listen_find(struct sl_session *s, const char *key)
{
	struct sl_list *n;

	sl_list_each(n, &s->listens) {
		struct sl_listen *l = sl_list_entry(n, struct sl_listen, link);
		if (!strcmp(l->key, key))
			return l;
	}
	return NULL;
}

static bool flag(yyjson_val *filter, const char *name)
{
	return yyjson_is_true(yyjson_obj_get(filter, name));
}

/* The resourceSubscriptions the gateway can honor: URIs that name a
 * server offering resource subscriptions. The others are left out of the
 * acknowledgement (MCP 2026-07-28: the subset the server agreed to honor). */
static void take_uris(struct sl_session *s, const struct sl_msg *m, struct sl_listen *l,
		      yyjson_val *arr)
{
	yyjson_val *v;
	size_t i, n;
	struct sl_view view;

	sl_view_of(s->gw, m->who, &view);
	l->uris = sl_alloc((yyjson_arr_size(arr) + 1) * sizeof(*l->uris));
	yyjson_arr_foreach(arr, i, n, v) {
		const char *uri = yyjson_get_str(v);
		char *orig = NULL;
		struct sl_upstream *u = sl_catalog_uri_owner(&s->gw->catalog, uri, &orig);
		/* A server outside the session's profile has no resources here. */
		if (u && !sl_view_server(&view, u))
			u = NULL;
		yyjson_val *rc = u && u->capabilities ? sl_json_obj(u->capabilities, "resources") : NULL;
		bool dup = false;
		for (size_t k = 0; rc && k < l->nuris; k++)
			dup |= !strcmp(l->uris[k].uri, uri);
		if (!rc || !yyjson_is_true(yyjson_obj_get(rc, "subscribe")) || dup) {
			free(orig);
			continue;
		}
		l->uris[l->nuris].uri = sl_strdup(uri);
		l->uris[l->nuris].up = u;
		l->uris[l->nuris].orig = orig;
		l->nuris++;
	}
}

void sl_listen_open(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const struct sl_limits *lim = &s->gw->gen->cfg->limits;
	yyjson_val *filter = m->params ? yyjson_obj_get(m->params, "notifications") : NULL;
	yyjson_val *uris = yyjson_obj_get(filter, "resourceSubscriptions"), *v;
	yyjson_mut_val *params, *honored, *arr;
	yyjson_mut_doc *d;
	struct sl_listen *l;
	char key[80], msg[200], *idj;
	size_t i, n;

	if (!yyjson_is_obj(filter)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
				 "Invalid params: subscriptions/listen needs a notifications object");
		return;
	}
	if (uris && !yyjson_is_arr(uris)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
				 "Invalid params: notifications.resourceSubscriptions must be an array of URIs");
		return;
	}
	yyjson_arr_foreach(uris, i, n, v)
		if (!yyjson_is_str(v)) {
			sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
					 "Invalid params: notifications.resourceSubscriptions must be an array of URIs");
			return;
		}
	if (yyjson_arr_size(uris) > lim->max_listen_uris) {
		snprintf(msg, sizeof(msg), "Invalid params: %zu resourceSubscriptions, over the limit of "
			 "%u (sluice.limits.maxListenUris)", yyjson_arr_size(uris), lim->max_listen_uris);
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
		return;
	}
	if (s->gw->listens >= lim->max_listens) {
		snprintf(msg, sizeof(msg), "Server busy: %u listens are open, the limit "
			 "(sluice.limits.maxListens); try again later", s->gw->listens);
		sl_session_error(s, m->id, SL_RPC_SERVER_ERROR, msg);
		return;
	}
	if (s->nlistens >= lim->max_listens_per_session) {
		snprintf(msg, sizeof(msg), "Too many listens: %u are open in this session, the limit "
			 "(sluice.limits.maxListensPerSession)", s->nlistens);
		sl_session_error(s, m->id, SL_RPC_SERVER_ERROR, msg);
		return;
	}
	sl_session_id_key(m->id, key, sizeof(key));
	if (listen_find(s, key) || sl_map_get(&s->calls, key)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_REQUEST,
				 "Invalid Request: a request with this id is still open");
		return;
	}

	l = sl_alloc(sizeof(*l));
	idj = yyjson_val_write(m->id, 0, NULL);
	if (!idj || !(l->id_doc = yyjson_read(idj, strlen(idj), 0)))
		sl_oom();
	free(idj);
	memcpy(l->key, key, sizeof(key));
	l->what = (flag(filter, "toolsListChanged") ? LISTEN_TOOLS : 0) |
		  (flag(filter, "promptsListChanged") ? LISTEN_PROMPTS : 0) |
		  (flag(filter, "resourcesListChanged") ? LISTEN_RESOURCES : 0);
	take_uris(s, m, l, uris);

	/* MCP 2026-07-28: the acknowledgement first, with what is honored:
	 * the gateway declares listChanged for all three lists. */
	d = yyjson_mut_doc_new(NULL);
	params = tagged_params(d, l);
	honored = yyjson_mut_obj(d);
	if (l->what & LISTEN_TOOLS)
		yyjson_mut_obj_add_bool(d, honored, "toolsListChanged", true);
	if (l->what & LISTEN_PROMPTS)
		yyjson_mut_obj_add_bool(d, honored, "promptsListChanged", true);
	if (l->what & LISTEN_RESOURCES)
		yyjson_mut_obj_add_bool(d, honored, "resourcesListChanged", true);
	if (l->nuris) {
		arr = yyjson_mut_arr(d);
		for (size_t k = 0; k < l->nuris; k++)
			yyjson_mut_arr_add_strcpy(d, arr, l->uris[k].uri);
		yyjson_mut_obj_add_val(d, honored, "resourceSubscriptions", arr);
	}
	yyjson_mut_obj_add_val(d, params, "notifications", honored);
	yyjson_mut_obj_add_val(d, sl_rpc_envelope(d, NULL, SL_MCP_SUBSCRIPTIONS_ACK), "params", params);

	sl_list_push_front(&s->listens, &l->link);
	s->nlistens++;
	s->gw->listens++;
	send_tagged(s, l, d);
	/* Watch after it is registered: a session-era subscription of the
	 * same URI elsewhere makes no second subscribe needed, but one more
	 * is harmless; a 2026-07-28 server's listen is reopened once. */
	for (size_t k = 0; k < l->nuris; k++) {
		bool first = true;
		struct sl_list *on;
		sl_list_each(on, &s->gw->sessions) {
			struct sl_session *o = sl_list_entry(on, struct sl_session, link);
			struct sl_list *ln;
			sl_list_each(ln, &o->listens) {
				const struct sl_listen *x = sl_list_entry(ln, struct sl_listen, link);
				if (x != l && !o->closing && listen_has(x, l->uris[k].up, l->uris[k].orig)) {
					first = false;
					break;
				}
			}
			if (!first)
				break;
		}
		if (first)
			watch(s->gw, l->uris[k].up, l->uris[k].orig, true);
	}
	/* Nothing to deliver: end it at once, gracefully (as the SDK does). */
	if (!l->what && !l->nuris)
		sl_listen_end(s, l);
}

/* ---- ending ------------------------------------------------------------- */

void sl_listen_end(struct sl_session *s, struct sl_listen *l)
{
	yyjson_mut_val *o, *r;
	yyjson_mut_doc *d = sl_rpc_response_new(listen_id(l), &o);

	/* MCP 2026-07-28 subscriptions, graceful closure: a completion result
	 * carrying the subscription id, then the stream closes. */
	r = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, r, "resultType", "complete");
	yyjson_mut_obj_add_val(d, r, "_meta", tag_meta(d, l));
	yyjson_mut_obj_add_val(d, o, "result", r);
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = listen_id(l), .sub = listen_id(l) }, d);
	yyjson_mut_doc_free(d);
	listen_drop(s, l);
}

void sl_session_end_listens(struct sl_session *s)
{
	struct sl_list *n;

	while ((n = sl_list_first(&s->listens)))
		sl_listen_end(s, sl_list_entry(n, struct sl_listen, link));
}

bool sl_listen_cancel(struct sl_session *s, const char *key)
{
	struct sl_listen *l = listen_find(s, key);
	if (!l)
		return false;
	listen_drop(s, l); /* MCP cancellation: no answer */
	return true;
}

void sl_listen_close_all(struct sl_session *s)
{
	struct sl_list *n;

	while ((n = sl_list_first(&s->listens)))
		listen_drop(s, sl_list_entry(n, struct sl_listen, link));
}

bool sl_listen_wants(const struct sl_session *s, const char *uri)
{
	const struct sl_list *n;

	sl_list_each(n, &s->listens) {
		const struct sl_listen *l = sl_list_entry(n, const struct sl_listen, link);
		for (size_t i = 0; i < l->nuris; i++)
			if (!strcmp(l->uris[i].uri, uri))
				return true;
	}
	return false;
}

/* ---- delivering --------------------------------------------------------- */

void sl_listen_list_changed(struct sl_session *s, const char *what)
{
	unsigned bit = !strcmp(what, "tools") ? LISTEN_TOOLS :
		       !strcmp(what, "prompts") ? LISTEN_PROMPTS : LISTEN_RESOURCES;
	char method[64];

	struct sl_list *n;

	snprintf(method, sizeof(method), "notifications/%s/list_changed", what);
	sl_list_each(n, &s->listens) {
		struct sl_listen *l = sl_list_entry(n, struct sl_listen, link);
		yyjson_mut_doc *d;
		if (!(l->what & bit))
			continue;
		d = yyjson_mut_doc_new(NULL);
		yyjson_mut_obj_add_val(d, sl_rpc_envelope(d, NULL, method), "params", tagged_params(d, l));
		send_tagged(s, l, d);
	}
}

void sl_listen_updated(struct sl_session *s, struct sl_upstream *u, yyjson_val *params,
		       const char *uri)
{
	struct sl_list *n;

	sl_list_each(n, &s->listens) {
		struct sl_listen *l = sl_list_entry(n, struct sl_listen, link);
		yyjson_mut_doc *d;
		yyjson_mut_val *p;
		bool match = false;
		for (size_t i = 0; i < l->nuris && !match; i++)
			match = l->uris[i].up == u && !strcmp(l->uris[i].uri, uri);
		if (!match)
			continue;
		d = yyjson_mut_doc_new(NULL);
		p = yyjson_val_mut_copy(d, params);
		/* The server's _meta names its subscription with the gateway,
		 * not the client's. */
		yyjson_mut_obj_remove_key(p, "_meta");
		yyjson_mut_obj_remove_key(p, "uri");
		yyjson_mut_obj_add_strcpy(d, p, "uri", uri);
		yyjson_mut_obj_add_val(d, p, "_meta", tag_meta(d, l));
		yyjson_mut_obj_add_val(d, sl_rpc_envelope(d, NULL, "notifications/resources/updated"),
				       "params", p);
		send_tagged(s, l, d);
	}
}

/*
 * A session's tools: tools/list, tools/call through the pipeline and
 * execute_code programs; and the in-flight client requests (struct
 * sl_pending) with the one function that cancels any of them.
 */
#include "gateway/session_int.h"
#include "auth/caller.h"
#include "gateway/codemode.h"
#include "gateway/replay.h"
#include "shared/once.h"
#include "gateway/kept.h"
#include "gateway/listing.h"
#include "gateway/router.h"
#include "gateway/skills.h"
#include "gateway/view.h"
#include "core/log.h"
#include "proto/mcp.h"
#include "stages/pinning.h"
#include "stages/quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- in-flight requests ------------------------------------------------- */

struct sl_pending *sl_pending_new(struct sl_session *s, struct sl_msg *m, bool modern,
				  enum sl_pending_kind kind)
{
	struct sl_pending *p = sl_alloc(sizeof(*p));
	p->s = s;
	p->kind = kind;
	p->msg = *m;
	memset(m, 0, sizeof(*m));
	p->who = p->msg.who = sl_caller_ref(p->msg.who);
	p->modern = modern;
	sl_session_id_key(p->msg.id, p->key, sizeof(p->key));
	sl_map_put(&s->calls, p->key, p);
	s->gw->requests++;
	return p;
}

void sl_pending_free(struct sl_pending *p)
{
	if (p->park)
		sl_park_end(p);
	sl_map_del(&p->s->calls, p->key);
	p->s->gw->requests--;
	sl_tasks_unreserve(p);
	free(p->task);
	free(p->task_up);
	free(p->task_tool);
	yyjson_doc_free(p->task_state);
	if (p->kind == SL_PENDING_CALL)
		sl_call_free(p->u.call.call);
	if (p->kind == SL_PENDING_PROGRAM)
		free(p->u.program.code);
	sl_msg_dispose(&p->msg);
	sl_caller_unref(p->who);
	free(p);
}

static void on_defer_closed(uv_handle_t *h)
{
	free(h);
}

static void stop_defer(struct sl_pending *p)
{
	uv_timer_stop(p->u.call.defer);
	uv_close((uv_handle_t *)p->u.call.defer, on_defer_closed);
	p->u.call.defer = NULL;
}

void sl_pending_cancel(struct sl_pending *p, const char *why)
{
	switch (p->kind) {
	case SL_PENDING_CALL:
		if (!p->u.call.call) {
			/* Its call is being handed to a park (park.c), which frees
			 * p once its answer is out. */
		} else if (!p->u.call.defer) {
			/* A task awaited for the client is cancelled on its server too. */
			if (p->await_task && p->task_up && !p->u.call.call->finished)
				sl_tasks_cancel_upstream(p->u.call.call->via ? p->u.call.call->via : p->up,
							 p->task_up, p->u.call.call->timeout_ms);
			/* The call ends cancelled; on_call_done frees p. */
			sl_call_cancel(p->u.call.call, why);
		} else if (p->s->closing) {
			/* Its answer was waiting to go out: nobody will read it. A
			 * client's cancel comes too late for it and changes nothing. */
			stop_defer(p);
			sl_pending_free(p);
		}
		break;
	case SL_PENDING_PROGRAM:
		if (p->u.program.claim) {
			/* Not started: its state's claim is dropped. */
			sl_once_cancel(p->u.program.claim);
			sl_replay_free(p->u.program.replay);
			sl_pending_free(p);
			break;
		}
		/* on_program_done frees p. */
		sl_program_cancel(p->u.program.program);
		break;
	case SL_PENDING_FORWARD:
		sl_upstream_cancel(p->u.ureq, why);
		sl_pending_free(p);
		break;
	case SL_PENDING_LOOKUP:
		/* Redis answers within commandTimeoutMs; nobody reads it now. */
		sl_kept_abandon(p->u.lookup);
		sl_pending_free(p);
		break;
	}
}

/* The capabilities through which s can answer a server's questions while
 * request m (NULL: a program's call) waits: a session-era client's from
 * its initialize; a 2026-07-28 client's from m itself, and only for its
 * own tools/call and the requests forwarded to one server (prompts/get,
 * resources/read, completion/complete: park.c), as sl_session_answers
 * decides: a program's calls and its other requests cannot carry
 * input_required to it. NULL: none. */
static yyjson_val *answerable_caps(struct sl_session *s, struct sl_msg *m)
{
	static const char *const own[] = { "tools/call", "prompts/get", "resources/read",
					    "completion/complete" };

	if (s->era == SL_ERA_LEGACY)
		return s->caps;
	for (size_t i = 0; m && i < SL_COUNT(own); i++)
		if (strcmp(m->method, own[i]) == 0)
			return sl_session_caps(s, m, true);
	return NULL;
}

/* c->caps (pipeline/call.h): what a 2026-07-28 server is told, in c->doc. */
static void set_call_caps(struct sl_session *s, struct sl_call *c, struct sl_msg *m)
{
	yyjson_val *caps = answerable_caps(s, m);
	c->caps = yyjson_is_obj(caps) ? yyjson_val_mut_copy(c->doc, caps) : yyjson_mut_obj(c->doc);
}

bool sl_pending_forward(struct sl_pending *p, struct sl_upstream *u, yyjson_mut_doc *d,
			yyjson_mut_val *params, sl_reply_fn cb, struct sl_err *err)
{
	struct sl_upstream *link = sl_upstream_for(u, p->who, err);
	yyjson_val *caps = answerable_caps(p->s, &p->msg);
	yyjson_mut_val *meta = yyjson_mut_obj(d);

	/* What a 2026-07-28 server may ask during it (upstream.h). */
	yyjson_mut_obj_remove_key(params, "_meta");
	yyjson_mut_obj_add_val(d, meta, SL_MCP_META_CAPS,
			       yyjson_is_obj(caps) ? yyjson_val_mut_copy(d, caps) : yyjson_mut_obj(d));
	yyjson_mut_obj_add_val(d, params, "_meta", meta);
	p->up = u;
	if (link) {
		char key[80];
		sl_session_client_key(p->s, key);
		sl_upstream_roots_before(link, key);
	}
	p->u.ureq = link ? sl_upstream_request(link, sl_session_method_name(p->msg.method), d, params,
					       u->cfg->timeout_ms ? u->cfg->timeout_ms :
					       p->s->gw->gen->cfg->call_timeout_ms, cb, NULL, p, err) :
			   NULL;
	return p->u.ureq != NULL;
}

static bool waits_on(const void *value, const void *ctx)
{
	const struct sl_pending *p = value;
	/* A program may call any server. */
	return p->up == ctx || p->kind == SL_PENDING_PROGRAM;
}

/* Sampling spends the user's model budget and elicitation the user's
 * attention: a server gets only so many of them (sluice.limits), counted
 * for the server whichever of its links asks. */
bool sl_pending_server_request(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m)
{
	const struct sl_limits *l = &s->gw->gen->cfg->limits;
	struct sl_pending *p;
	char why[300];

	if (strcmp(m->method, SL_MCP_ELICIT) != 0 && strcmp(m->method, "sampling/createMessage") != 0)
		return true;
	p = sl_map_find(&s->calls, waits_on, sl_upstream_server(u));
	if (p && p->asks >= l->server_requests_per_call) {
		snprintf(why, sizeof(why), "server '%s' asked %u sampling and elicitation requests "
			 "during one call, the limit (sluice.limits.serverRequestsPerCall)", u->name,
			 p->asks);
		if (!p->asks_logged)
			sl_log(SL_LOG_WARN, "%s: the rest of this call's are refused", why);
		p->asks_logged = true;
		sl_upstream_refuse(u, m->id, SL_RPC_SERVER_ERROR, why);
		return false;
	}
	if (!sl_rate_admit(&sl_upstream_server(u)->asks, 60000, l->server_requests_per_minute)) {
		snprintf(why, sizeof(why), "server '%s' asked %u sampling and elicitation requests "
			 "within a minute, the limit (sluice.limits.serverRequestsPerMinute)", u->name,
			 sl_upstream_server(u)->asks.n);
		if (sl_upstream_server(u)->asks.refused == 1)
			sl_log(SL_LOG_WARN, "%s: the rest of this minute's are refused", why);
		sl_upstream_refuse(u, m->id, SL_RPC_SERVER_ERROR, why);
		return false;
	}
	if (p)
		p->asks++;
	return true;
}

/* ---- tools/list ----------------------------------------------------------- */

/* With pinning's askOnChange, s's client (if it can elicit) is asked about
 * the held-back tools of each server of the listing caller's view only
 * (and, by pinning, only where it may see every held tool): the others
 * are not its to see, nor to trust for everyone. */
static void offer_pins(struct sl_gateway *gw, struct sl_session *s, const struct sl_caller *who)
{
	struct sl_pinning *pg = sl_gen_state(gw->gen, &sl_stage_pinning);
	struct sl_asker ask = sl_session_asker(s);
	struct sl_view v;

	if (!sl_pinning_asks(pg) || !sl_session_can_elicit(s))
		return;
	sl_view_of(gw, who, &v);
	for (size_t i = 0; i < gw->nups; i++)
		if (sl_view_server(&v, gw->ups[i]))
			sl_pinning_offer(pg, &ask, who, gw->ups[i]);
}

void sl_calls_tools_list(struct sl_session *s, struct sl_msg *m, bool modern)
{
	sl_listing_answer(s, m, modern);
	/* After the answer: a client asked about held-back tools has its list. */
	offer_pins(s->gw, s, m->who);
}

/* ---- pipeline calls --------------------------------------------------------- */

void sl_session_bind_call(struct sl_session *s, struct sl_call *c)
{
	c->session = s;
	c->session_id = s ? s->id : 0;
	sl_session_client_key(s, c->client_key);
	c->ask = s ? sl_session_asker(s) : (struct sl_asker){ 0 };
	if (s && !c->ureq)
		set_call_caps(s, c, NULL);
}

yyjson_mut_val *sl_calls_error_result(yyjson_mut_doc *d, const char *text)
{
	yyjson_mut_val *r = yyjson_mut_obj(d), *content = yyjson_mut_arr(d), *t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, t, "type", "text");
	yyjson_mut_obj_add_strcpy(d, t, "text", text);
	yyjson_mut_arr_append(content, t);
	yyjson_mut_obj_add_val(d, r, "content", content);
	yyjson_mut_obj_add_bool(d, r, "isError", true);
	return r;
}

/* The client takes URL-mode elicitations (MCP 2025-11-25): a session's
 * capabilities, or a 2026-07-28 request's own. */
static bool takes_url_elicitation(const struct sl_session *s, const struct sl_pending *p)
{
	yyjson_val *caps = s->era == SL_ERA_LEGACY ? s->caps :
			   sl_json_obj(sl_json_obj(p->msg.params, "_meta"), SL_MCP_META_CAPS);
	return sl_json_obj(sl_json_obj(caps, "elicitation"), "url") != NULL;
}

/* A call that failed for want of its caller's own login to a perUser
 * server (upstream/users.c): a client that takes URL-mode elicitations
 * gets URLElicitationRequiredError, whose URL it shows its person; the
 * elicitation id is the login's. False: not such a call. */
static bool answer_login(struct sl_session *s, struct sl_pending *p, struct sl_call *c)
{
	const char *url = c->via ? sl_upstream_login_url(c->via) : NULL;
	yyjson_mut_val *o, *data, *list, *el;
	yyjson_mut_doc *d;

	if (!url || !takes_url_elicitation(s, p))
		return false;
	d = sl_rpc_response_new(p->msg.id, &o);
	data = yyjson_mut_obj(d);
	list = yyjson_mut_arr(d);
	el = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, el, "mode", "url");
	yyjson_mut_obj_add_strcpy(d, el, "elicitationId", strrchr(url, '/') + 1);
	yyjson_mut_obj_add_strcpy(d, el, "url", url);
	yyjson_mut_obj_add_strcpy(d, el, "message", c->why ? c->why : "log in to continue");
	yyjson_mut_arr_append(list, el);
	yyjson_mut_obj_add_val(d, data, "elicitations", list);
	sl_rpc_add_error(d, o, SL_RPC_URL_ELICITATION, c->why ? c->why : "a login is needed", data);
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = p->msg.id,
					      .error = true }, d);
	yyjson_mut_doc_free(d);
	return true;
}

static void answer_call(struct sl_session *s, struct sl_pending *p, struct sl_call *c)
{
	yyjson_mut_val *r;
	yyjson_mut_doc *d = sl_session_doc(&r);
	char text[1024];

	if (p->task_state) {
		yyjson_mut_doc_free(d);
		sl_tasks_answer_state(s, p, c);
		return;
	}
	switch (c->outcome) {
	case SL_OUTCOME_DENIED:
		if (c->retry_after_s) {
			/* A rate limit is the client's business, not the model's
			 * (MCP: protocol errors): a JSON-RPC error it can act on. */
			yyjson_mut_val *o;
			yyjson_mut_doc_free(d);
			d = sl_rpc_response_new(p->msg.id, &o);
			sl_rpc_add_error(d, o, SL_RPC_RATE_LIMITED, c->why, c->limit);
			sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = p->msg.id,
							      .error = true,
							      .retry_after = c->retry_after_s }, d);
			yyjson_mut_doc_free(d);
			return;
		}
		r = sl_calls_error_result(d, c->why ? c->why : "the call failed");
		break;
	case SL_OUTCOME_OK:
		yyjson_mut_doc_free(d);
		d = yyjson_mut_doc_new(NULL);
		r = sl_call_result_copy(c, d);
		if (!yyjson_mut_is_obj(r)) {
			r = sl_calls_error_result(d, "the server's result was not an object");
		} else if (c->task_created) {
			r = sl_tasks_created(s, p, c, d, r);
		} else {
			if (c->task_fetch)
				sl_tasks_fetched(s, p, d, r);
			yyjson_mut_val *it;
			size_t i, n;
			yyjson_mut_arr_foreach(yyjson_mut_obj_get(r, "content"), i, n, it)
				sl_forward_namespace_block(s, d, it, c->up);
		}
		break;
	case SL_OUTCOME_RPC_ERROR:
		if (!p->u.call.router) {
			/* Passthrough: the server's own JSON-RPC error, as it sent it. */
			yyjson_mut_val *o;
			yyjson_mut_doc_free(d);
			d = sl_rpc_response_new(p->msg.id, &o);
			yyjson_mut_obj_add_val(d, o, "error", yyjson_val_mut_copy(d, c->rpc_error));
			sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = p->msg.id,
							      .error = true }, d);
			yyjson_mut_doc_free(d);
			return;
		}
		snprintf(text, sizeof(text), "server '%s' answered with error %lld: %s", c->up->name,
			 (long long)yyjson_get_sint(yyjson_obj_get(c->rpc_error, "code")),
			 sl_json_str(c->rpc_error, "message") ? sl_json_str(c->rpc_error, "message") : "");
		r = sl_calls_error_result(d, text);
		break;
	case SL_OUTCOME_INPUT_REQUIRED:
		r = yyjson_mut_val_mut_copy(d, c->input_required);
		break;
	case SL_OUTCOME_CANCELLED:
		/* MCP: a cancelled request gets no answer. */
		yyjson_mut_doc_free(d);
		return;
	default:
		if (answer_login(s, p, c)) {
			yyjson_mut_doc_free(d);
			return;
		}
		r = sl_calls_error_result(d, c->why ? c->why : "the call failed");
		break;
	}
	sl_session_answer(s, &p->msg, p->modern, false, d, r);
}

static void on_defer(uv_timer_t *t)
{
	struct sl_pending *p = t->data;
	struct sl_session *s = p->s;
	uv_close((uv_handle_t *)t, on_defer_closed);
	p->u.call.defer = NULL;
	if (!s->closing)
		answer_call(s, p, p->u.call.call);
	sl_pending_free(p);
}

/* Progress must reach the client before the answer it belongs to, and
 * real clients (SDK 1.x) lose a progress notification that arrives in the
 * same read as its answer: after a recent one, the answer waits a moment.
 * 5 ms was too short for a client on a busy 2-core machine (the last
 * progress was lost now and then, tests/e2e/remote.test.mjs); 20 ms costs
 * only calls that just reported progress, which are long ones. */
#define PROGRESS_GAP_US 20000

static void on_call_progress(void *ctx, struct sl_call *c, yyjson_val *params);
static void on_call_done(void *ctx, struct sl_call *c);

/* The task c made for a client that called a task-required tool plainly:
 * its result is fetched (tasks/result waits until the task ends) by a call
 * that skips the request half and passes the response half, and answers
 * the client's tools/call (docs/internals/TASKS.md). */
static void await_task(struct sl_pending *p, struct sl_call *c)
{
	yyjson_mut_doc *args = yyjson_mut_doc_new(NULL);
	struct sl_call *f;

	if (!args)
		sl_oom();
	yyjson_mut_doc_set_root(args, yyjson_mut_val_mut_copy(args, c->args));
	p->task_up = sl_strdup(sl_json_str(sl_json_obj(c->result, "task"), "taskId"));
	f = sl_call_new(c->gen, c->origin, c->up, c->tool, args, c->timeout_ms, on_call_done,
			c->progress ? on_call_progress : NULL, p);
	f->who = sl_caller_ref(c->who);
	sl_trace_ctx_copy(&f->trace, &c->trace);
	sl_session_bind_call(c->session, f);
	f->task_fetch = sl_strdup(p->task_up);
	if (c->fields)
		f->fields = yyjson_mut_val_mut_copy(f->doc, c->fields);
	p->u.call.call = f;
	sl_call_free(c);
	sl_call_run(f);
}

static void on_call_done(void *ctx, struct sl_call *c)
{
	struct sl_pending *p = ctx;
	struct sl_session *s = p->s;
	if (c->task_created && p->await_task && !s->closing) {
		await_task(p, c);
		return;
	}
	if (!s->closing && p->u.call.progress_us &&
	    sl_now_us() - p->u.call.progress_us < PROGRESS_GAP_US) {
		p->u.call.defer = sl_alloc(sizeof(*p->u.call.defer));
		uv_timer_init(s->gw->loop, p->u.call.defer);
		p->u.call.defer->data = p;
		uv_timer_start(p->u.call.defer, on_defer, PROGRESS_GAP_US / 1000, 0);
		return;
	}
	if (!s->closing)
		answer_call(s, p, c);
	sl_pending_free(p);
	if (s->closing && s->calls.live == 0)
		sl_log(SL_LOG_DEBUG, "session: every call has ended");
}

static yyjson_val *progress_token(struct sl_pending *p)
{
	yyjson_val *meta = sl_session_meta(&p->msg);
	return meta ? yyjson_obj_get(meta, "progressToken") : NULL;
}

/* A notifications/progress for p's token, its params in *np. */
static yyjson_mut_doc *progress_new(struct sl_pending *p, yyjson_mut_val **np)
{
	yyjson_mut_doc *d = sl_rpc_request_new(SL_MCP_PROGRESS, -1, np);
	yyjson_mut_obj_add_val(d, *np, "progressToken", yyjson_val_mut_copy(d, progress_token(p)));
	return d;
}

static void progress_send(struct sl_pending *p, yyjson_mut_doc *d)
{
	sl_session_send(p->s, &(struct sl_out){ .kind = SL_OUT_NOTIFICATION,
						 .token = progress_token(p) }, d);
	yyjson_mut_doc_free(d);
}

static void on_call_progress(void *ctx, struct sl_call *c, yyjson_val *params)
{
	struct sl_pending *p = ctx;
	yyjson_mut_val *np;
	yyjson_mut_doc *d;

	if (!progress_token(p) || p->s->closing)
		return;
	/* MCP 2025-11-25 progress: the client's own token, the server's values. */
	d = progress_new(p, &np);
	yyjson_mut_obj_add_val(d, np, "progress",
			       yyjson_val_mut_copy(d, yyjson_obj_get(params, "progress")));
	if (yyjson_obj_get(params, "total"))
		yyjson_mut_obj_add_val(d, np, "total", yyjson_val_mut_copy(d, yyjson_obj_get(params, "total")));
	if (sl_json_str(params, "message")) {
		/* The message is the server's text; a withheld one leaves the
		 * numbers. */
		yyjson_mut_val *text = yyjson_mut_obj(d);
		struct sl_peer peer;
		yyjson_mut_obj_add_strcpy(d, text, "message", sl_json_str(params, "message"));
		sl_peer_init(&peer, SL_PEER_NOTIFICATION, SL_MCP_PROGRESS, c->up, d, text);
		sl_stages_peer(c->gen, &peer);
		if (!peer.withheld)
			yyjson_mut_obj_add_val(d, np, "message",
					       yyjson_mut_val_mut_copy(d, yyjson_mut_obj_get(text, "message")));
		sl_peer_dispose(&peer);
	}
	progress_send(p, d);
	p->u.call.progress_us = sl_now_us();
}

void sl_pending_take_call(struct sl_pending *p, struct sl_call *c)
{
	yyjson_val *meta = sl_session_meta(&p->msg);

	p->u.call.call = c;
	c->done = on_call_done;
	c->ctx = p;
	sl_session_bind_call(p->s, c);
	c->progress = meta && yyjson_obj_get(meta, "progressToken") ? on_call_progress : NULL;
	if (c->finished)
		on_call_done(p, c);
}

struct sl_pending *sl_calls_prepare(struct sl_session *s, struct sl_msg *m, bool modern,
				    enum sl_origin origin, struct sl_upstream *up, const char *tool,
				    yyjson_val *args, yyjson_val *fields)
{
	struct sl_pending *p;
	struct sl_call *c;
	yyjson_mut_doc *ad = yyjson_mut_doc_new(NULL);
	yyjson_val *meta = sl_session_meta(m);
	uint64_t timeout = up->cfg->timeout_ms ? up->cfg->timeout_ms : s->gw->gen->cfg->call_timeout_ms;

	yyjson_mut_doc_set_root(ad, args ? yyjson_val_mut_copy(ad, args) : yyjson_mut_obj(ad));
	p = sl_pending_new(s, m, modern, SL_PENDING_CALL);
	p->up = up;
	p->u.call.router = origin == SL_ORIGIN_ROUTER;
	c = p->u.call.call = sl_call_new(s->gw->gen, origin, up, tool, ad, timeout, on_call_done,
					 meta && yyjson_obj_get(meta, "progressToken") ?
					 on_call_progress : NULL, p);
	c->who = sl_caller_ref(p->who);
	sl_trace_ctx_from_meta(&c->trace, meta);
	sl_session_bind_call(s, c);
	set_call_caps(s, c, &p->msg);
	if (fields)
		c->fields = yyjson_val_mut_copy(c->doc, fields);
	if (modern) {
		/* MCP 2026-07-28 MRTR: questions go back as input_required results
		 * when this request's capabilities allow elicitation. */
		yyjson_val *caps = sl_session_caps(s, &p->msg, true), *params = p->msg.params;
		const char *state = params ? sl_json_str(params, "requestState") : NULL;
		yyjson_val *responses = params ? sl_json_obj(params, "inputResponses") : NULL;
		c->mrtr = caps && yyjson_obj_get(caps, "elicitation") != NULL;
		if (state)
			c->request_state = sl_strdup(state);
		if (responses)
			c->input_responses = yyjson_val_mut_copy(c->doc, responses);
	}
	return p;
}

void sl_session_start_call(struct sl_session *s, struct sl_msg *m, bool modern,
			   enum sl_origin origin, struct sl_upstream *up, const char *tool,
			   yyjson_val *args, yyjson_val *fields)
{
	struct sl_pending *p = sl_calls_prepare(s, m, modern, origin, up, tool, args, fields);
	const char *support = sl_tasks_supported(up) ? sl_tasks_support(s->gw, up, tool) : NULL;

	/* MCP 2025-11-25 tasks: the server refuses a task-required tool called
	 * plainly (a 2026 client without the extension, invoke_tool, a client
	 * unaware of tasks): sluice makes the task and awaits it for them. */
	if (support && strcmp(support, "required") == 0) {
		p->await_task = true;
		p->u.call.call->task = yyjson_mut_obj(p->u.call.call->doc);
	}
	sl_call_run(p->u.call.call);
}

/* ---- programs ----------------------------------------------------------------- */

/* A replay run (replay.h) that ended to ask the client, or whose replay
 * failed: answers p so and returns true; else false (it ended by itself,
 * its calls in flight cancelled as usual, or its client cancelled it). */
static bool replay_answer(struct sl_pending *p, struct sl_program *prog, struct sl_gen *gen)
{
	struct sl_replay *rp = p->u.program.replay;
	struct sl_session *s = p->s;
	yyjson_mut_doc *d;
	yyjson_mut_val *r;
	struct sl_err err = { 0 };

	if (!sl_replay_ended(rp) && sl_program_result(prog)->cancelled)
		return false;
	if (sl_replay_failed(rp)) {
		d = yyjson_mut_doc_new(NULL);
		sl_session_answer(s, &p->msg, p->modern, false, d,
				  sl_calls_error_result(d, sl_replay_failed(rp)));
		return true;
	}
	if (!sl_replay_suspended(rp) || !sl_replay_ended(rp))
		return false;
	d = yyjson_mut_doc_new(NULL);
	r = sl_replay_answer(rp, gen->key, sizeof(gen->key), s->cred,
			     sl_seal_now() + SL_REPLAY_TTL_S, d, &err);
	sl_session_answer(s, &p->msg, p->modern, false, d, r ? r : sl_calls_error_result(d, err.msg));
	return true;
}

static void on_program_done(void *ctx, struct sl_program *prog, struct sl_gen *gen)
{
	struct sl_pending *p = ctx;
	struct sl_session *s = p->s;
	struct sl_output o;
	struct sl_trace_ctx trace;

	/* The answer passes the output hooks (redaction, guard, governor,
	 * telemetry, audit) of the program's generation, also when nobody will
	 * read it. */
	sl_trace_ctx_from_meta(&trace, sl_session_meta(&p->msg));
	sl_codemode_output(gen, sl_program_result(prog), sl_program_id(prog), s, p->who,
			   &trace.parent, &o);
	sl_trace_ctx_dispose(&trace);
	if (p->u.program.replay && *sl_replay_id(p->u.program.replay) &&
	    sl_program_result(prog)->kind && strcmp(sl_program_result(prog)->kind, "busy") == 0)
		/* Refused admission: nothing of it ran, and the retry may come
		 * again with the same state. */
		sl_once_release(gen->services->once, gen->services->redis, "code",
				sl_replay_id(p->u.program.replay));
	if (!s->closing && p->u.program.replay && replay_answer(p, prog, gen))
		; /* it ended to ask, or its replay failed */
	else if (!s->closing && o.text) {
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		sl_session_answer(s, &p->msg, p->modern, false, d, sl_codemode_result(&o, d));
	}
	sl_output_dispose(&o);
	sl_program_free(prog);
	p->u.program.program = NULL;
	sl_replay_free(p->u.program.replay);
	p->u.program.replay = NULL;
	sl_pending_free(p);
}

/* MCP progress for execute_code: one notification per finished tool call. */
static void on_program_step(void *ctx, struct sl_program *prog, const char *server, const char *tool)
{
	struct sl_pending *p = ctx;
	yyjson_mut_val *np;
	yyjson_mut_doc *d;
	char *msg;

	p->u.program.steps++;
	if (!progress_token(p) || p->s->closing)
		return;
	d = progress_new(p, &np);
	yyjson_mut_obj_add_uint(d, np, "progress", p->u.program.steps);
	msg = sl_printf("%s.%s finished", server, tool);
	yyjson_mut_obj_add_strcpy(d, np, "message", msg);
	free(msg);
	progress_send(p, d);
}

static void start_program(struct sl_pending *p, const char *code, size_t len)
{
	struct sl_trace_ctx trace;

	sl_trace_ctx_from_meta(&trace, sl_session_meta(&p->msg));
	p->u.program.program = sl_codemode_run_replay(p->s->gw, p->s, p->who, code, len,
						      p->u.program.replay, &trace, on_program_done,
						      on_program_step, p);
	sl_trace_ctx_dispose(&trace);
	sl_program_set_language(p->u.program.program, p->u.program.lang);
	sl_program_set_wrap(p->u.program.program, p->u.program.pre, p->u.program.post);
}

/* A retry's state used already, or not shown unused: p is answered so and
 * freed. */
static void refuse_replay(struct sl_pending *p, enum sl_once_verdict v, const char *why)
{
	char msg[400];

	if (v == SL_ONCE_USED)
		snprintf(msg, sizeof(msg), "Invalid params: requestState: already used (a retry "
			 "carries each requestState once; the program's approved calls are never "
			 "made twice); run the program again to be asked again");
	else
		snprintf(msg, sizeof(msg), "Invalid params: requestState: not used: %s; run the "
			 "program again to be asked again", why);
	sl_session_error(p->s, p->msg.id, SL_RPC_INVALID_PARAMS, msg);
	sl_replay_free(p->u.program.replay);
	p->u.program.replay = NULL;
	sl_pending_free(p);
}

static void on_replay_claimed(void *ctx, enum sl_once_verdict v, const char *why)
{
	struct sl_pending *p = ctx;

	p->u.program.claim = NULL;
	if (v == SL_ONCE_FIRST) {
		start_program(p, p->u.program.code, p->u.program.len);
		free(p->u.program.code);
		p->u.program.code = NULL;
	} else
		refuse_replay(p, v, why);
}

/* MCP 2026-07-28: a program whose request lets sluice ask (elicitation in
 * its capabilities) runs so that it can end to ask and be replayed
 * (replay.h); a retry's requestState is checked here, and marked used
 * (shared/once.h): sent again, it is refused, and nothing of the program
 * runs again. False when p was answered (a refused state) and freed, or
 * waits for the shared store (on_replay_claimed goes on). */
static bool replay_prepare(struct sl_pending *p, const char *code, size_t len)
{
	struct sl_session *s = p->s;
	const struct sl_services *svc = s->gw->gen->services;
	yyjson_val *caps = sl_session_caps(s, &p->msg, true), *params = p->msg.params;
	const char *state = params ? sl_json_str(params, "requestState") : NULL, *why = NULL;
	struct sl_err err = { 0 };
	unsigned long long expiry;
	enum sl_once_verdict v;

	/* A retry is replayed whatever it declares: running it afresh would
	 * make its recorded calls again. */
	if (!state && (!caps || !yyjson_obj_get(caps, "elicitation")))
		return true;
	if (!state) {
		p->u.program.replay = sl_replay_new(code, len);
		return true;
	}
	p->u.program.replay = sl_replay_open(s->gw->gen->key, sizeof(s->gw->gen->key), s->cred,
					     code, len, state, sl_json_obj(params, "inputResponses"),
					     &err);
	if (!p->u.program.replay) {
		char msg[sizeof(err.msg) + 40];
		snprintf(msg, sizeof(msg), "Invalid params: requestState: %s", err.msg);
		sl_session_error(s, p->msg.id, SL_RPC_INVALID_PARAMS, msg);
		sl_pending_free(p);
		return false;
	}
	expiry = sl_replay_expiry(p->u.program.replay);
	v = sl_once_claim(svc->once, svc->redis, "code", sl_replay_id(p->u.program.replay),
			  expiry > SL_REPLAY_TTL_S ? expiry - SL_REPLAY_TTL_S : 0, expiry,
			  on_replay_claimed, p, &p->u.program.claim, &why);
	if (v == SL_ONCE_FIRST)
		return true;
	if (v == SL_ONCE_WAIT) {
		p->u.program.code = sl_alloc(len + 1);
		memcpy(p->u.program.code, code, len);
		p->u.program.len = len;
	} else {
		refuse_replay(p, v, why);
	}
	return false;
}

void sl_calls_run_program(struct sl_session *s, struct sl_msg *m, bool modern, const char *code,
			  size_t len, const char *lang, size_t pre, size_t post)
{
	/* code may point into m's document, which p now owns; the program
	 * copies it. */
	struct sl_pending *p;
	const char *state = modern && m->params ? sl_json_str(m->params, "requestState") : NULL;
	char why[512];

	/* A program is a call for its caller's quotas (a retry of one that
	 * paused is the same program, counted once). */
	if (!state && !sl_quota_admit_program(sl_gen_state(s->gw->gen, &sl_stage_quota), m->who,
					      why, sizeof(why))) {
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		sl_session_answer(s, m, modern, false, d, sl_calls_error_result(d, why));
		return;
	}
	p = sl_pending_new(s, m, modern, SL_PENDING_PROGRAM);
	p->u.program.lang = lang;
	p->u.program.pre = pre;
	p->u.program.post = post;
	if (modern && !replay_prepare(p, code, len))
		return;
	start_program(p, code, len);
}

/* execute_code's language argument: "js" or "ts" (the long names too);
 * NULL for any other. */
static const char *code_language(const char *lang)
{
	if (!lang)
		return NULL;
	if (strcmp(lang, "js") == 0 || strcmp(lang, "javascript") == 0)
		return "js";
	if (strcmp(lang, "ts") == 0 || strcmp(lang, "typescript") == 0)
		return "ts";
	return NULL;
}

static void do_execute(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_val *args)
{
	struct sl_gateway *gw = s->gw;
	yyjson_val *code = args ? yyjson_obj_get(args, "code") : NULL;
	const char *lang = args ? sl_json_str(args, "language") : NULL;
	char msg[600];

	if (!yyjson_is_str(code)) {
		snprintf(msg, sizeof(msg), "execute_code needs a code string");
	} else if (lang && !code_language(lang)) {
		snprintf(msg, sizeof(msg), "execute_code runs language \"js\" (JavaScript) or \"ts\" "
			 "(TypeScript, its types stripped); omit language for either");
	} else if (yyjson_get_len(code) > gw->gen->cfg->code.max_source) {
		snprintf(msg, sizeof(msg), "the program is %zu bytes, over the limit of %zu",
			 yyjson_get_len(code), gw->gen->cfg->code.max_source);
	} else if (!gw->sandbox) {
		snprintf(msg, sizeof(msg), "code mode is unavailable: %s", gw->code_error);
	} else {
		sl_calls_run_program(s, m, modern, yyjson_get_str(code), yyjson_get_len(code),
				     code_language(lang), 0, 0);
		return;
	}
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	sl_session_answer(s, m, modern, false, d, sl_calls_error_result(d, msg));
}

/* The server of the session's view that a tool's name would be prefixed
 * with, when that server waits for a login (and so listed no tools, or its
 * tools/list was refused for a scope). */
static const struct sl_upstream *login_owner(struct sl_gateway *gw, struct sl_view *v,
					     const char *name)
{
	for (size_t i = 0; i < gw->nups; i++) {
		const struct sl_upstream *u = gw->ups[i];
		size_t n = strlen(u->name);
		if (sl_upstream_tools_await_login(u) && sl_view_server(v, u) &&
		    !strncmp(name, u->name, n) && !strncmp(name + n, "__", 2))
			return u;
	}
	return NULL;
}

void sl_calls_tools_call(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *name = m->params ? sl_json_str(m->params, "name") : NULL;
	yyjson_val *args = m->params ? yyjson_obj_get(m->params, "arguments") : NULL;
	const struct sl_entry *e;
	const struct sl_upstream *waiting;
	struct sl_view v;
	char msg[300];

	if (!name) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: tools/call needs a name");
		return;
	}
	if (args && !yyjson_is_obj(args)) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: arguments must be an object");
		return;
	}
	/* MCP 2026-07-28 MRTR: the retry of a call whose server asked. */
	if (modern && sl_park_resume(s, m))
		return;
	/* The session's profile decides which tools exist for it: one outside
	 * it is unknown, whatever its name. */
	sl_view_of(s->gw, m->who, &v);
	if (!v.gone && sl_router_handles(&v, name)) {
		sl_router_call(s, m, modern, name, args);
		return;
	}
	if (v.code && strcmp(name, SL_EXECUTE_CODE) == 0) {
		do_execute(s, m, modern, args);
		return;
	}
	if (sl_skills_handles(&v, name)) {
		sl_skills_call(s, m, modern, name, args);
		return;
	}
	e = v.exposure == SL_EXPOSE_PASSTHROUGH || v.exposure == SL_EXPOSE_HYBRID ?
	    sl_view_tool(&v, name) : NULL;
	/* An MCP Apps View calls its server's tools by their own names. */
	if (!e && (v.exposure == SL_EXPOSE_PASSTHROUGH || v.exposure == SL_EXPOSE_HYBRID))
		e = sl_view_app_tool(&v, name);
	if (!e && (waiting = login_owner(s->gw, &v, name))) {
		/* Its tools were never listed: say why, for the model and the person. */
		snprintf(msg, sizeof(msg), "Unknown tool: %.100s: server '%s' %s", name, waiting->name,
			 waiting->error);
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
		return;
	}
	if (!e) {
		snprintf(msg, sizeof(msg), "Unknown tool: %.200s", name);
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
		return;
	}
	if (!modern && yyjson_is_obj(yyjson_obj_get(m->params, "task"))) {
		sl_tasks_tools_call(s, m, modern, e->up, e->name, args);
		return;
	}
	if (modern && sl_tasks_supported(e->up) && sl_tasks_ext(s, m)) {
		const char *support = sl_tasks_support(s->gw, e->up, e->name);
		if (support && strcmp(support, "required") == 0) {
			sl_tasks_tools_call_modern(s, m, e->up, e->name, args);
			return;
		}
	}
	sl_session_start_call(s, m, modern, SL_ORIGIN_DIRECT, e->up, e->name, args, NULL);
}

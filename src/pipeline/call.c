/*
 * The pipeline engine: runs a call through the stage table, dispatch, and
 * the finish hooks, keeping its position so a stage can suspend it.
 */
#include "pipeline/call.h"
#include "auth/caller.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PH_REQUEST, PH_DISPATCH, PH_RESPONSE, PH_FINISH };

static uint64_t next_call_id = 1;

struct sl_call *sl_call_new(struct sl_gen *gen, enum sl_origin origin, struct sl_upstream *up,
			    const char *tool, yyjson_mut_doc *args_doc, uint64_t timeout_ms,
			    sl_call_done_fn done, sl_call_progress_fn progress, void *ctx)
{
	struct sl_call *c = sl_alloc(sizeof(*c) + gen->nstages * sizeof(c->stage_ctx[0]));
	c->id = next_call_id++;
	c->gen = sl_gen_ref(gen);
	c->origin = origin;
	c->up = up;
	c->tool = sl_strdup(tool);
	if (!args_doc) {
		args_doc = yyjson_mut_doc_new(NULL);
		if (!args_doc)
			sl_oom();
		yyjson_mut_doc_set_root(args_doc, yyjson_mut_obj(args_doc));
	}
	c->doc = args_doc;
	c->args = yyjson_mut_doc_get_root(args_doc);
	c->timeout_ms = timeout_ms;
	c->done = done;
	c->progress = progress;
	c->ctx = ctx;
	c->started_us = sl_now_us();
	return c;
}

void sl_call_free(struct sl_call *c)
{
	if (!c)
		return;
	sl_gen_unref(c->gen);
	sl_caller_unref(c->who);
	yyjson_mut_doc_free(c->doc);
	yyjson_doc_free(c->result_doc);
	free(c->why);
	free(c->tool);
	free(c->request_state);
	free(c->task_fetch);
	sl_trace_ctx_dispose(&c->trace);
	free(c);
}

yyjson_mut_val *sl_call_result_mut(struct sl_call *c)
{
	if (c->outcome != SL_OUTCOME_OK || !c->result)
		return NULL;
	if (!c->mresult)
		c->mresult = yyjson_val_mut_copy(c->doc, c->result);
	return c->mresult;
}

yyjson_mut_val *sl_call_result_copy(struct sl_call *c, yyjson_mut_doc *d)
{
	if (c->mresult)
		return yyjson_mut_val_mut_copy(d, c->mresult);
	return yyjson_val_mut_copy(d, c->result);
}

/* st's position in c's table, or c->gen->nstages. */
static size_t slot_of(const struct sl_call *c, const struct sl_stage *st)
{
	size_t i = 0;
	while (i < c->gen->nstages && c->gen->stages[i] != st)
		i++;
	return i;
}

void *sl_call_ctx(const struct sl_call *c, const struct sl_stage *st)
{
	size_t i = slot_of(c, st);
	return i < c->gen->nstages ? c->stage_ctx[i] : NULL;
}

void sl_call_set_ctx(struct sl_call *c, const struct sl_stage *st, void *ctx)
{
	size_t i = slot_of(c, st);
	if (i < c->gen->nstages)
		c->stage_ctx[i] = ctx;
}

bool sl_call_can_ask(const struct sl_call *c)
{
	return c->ask.can_elicit && c->ask.can_elicit(c->ask.ctx);
}

/* A question a stage puts to the call's person (a confirmation shows the
 * arguments, which a program's call holds real) passes the peer hooks as a
 * server's question does, in the map of the call's client: a value the
 * tokenize stage replaces reaches the client as its placeholder, a secret
 * is redacted. False when a hook withholds it. */
static bool filter_question(struct sl_call *c, yyjson_mut_doc *d, yyjson_mut_val *q)
{
	struct sl_peer p;
	bool ok;

	if (!q)
		return true;
	sl_peer_init(&p, SL_PEER_REQUEST, "elicitation/create", c->up, d, q);
	p.client_key = c->client_key;
	p.to_person = true;
	sl_stages_peer(c->gen, &p);
	ok = !p.withheld;
	if (!ok)
		sl_log(SL_LOG_WARN, "call %llu %s.%s: a question to its client was withheld: %s",
		       (unsigned long long)c->id, c->up->name, c->tool, p.withheld);
	sl_peer_dispose(&p);
	return ok;
}

bool sl_call_ask(struct sl_call *c, const char *message, yyjson_mut_doc *d, yyjson_mut_val *schema,
		 sl_answer_fn cb, void *arg)
{
	yyjson_mut_doc *qd;
	yyjson_mut_val *q;
	bool ok;

	if (!c->ask.elicit)
		return false;
	if (!(qd = yyjson_mut_doc_new(NULL)))
		sl_oom();
	q = yyjson_mut_obj(qd);
	yyjson_mut_obj_add_strcpy(qd, q, "message", message);
	ok = filter_question(c, qd, q) &&
	     c->ask.elicit(c->ask.ctx, yyjson_mut_get_str(yyjson_mut_obj_get(q, "message")) ?: "", d,
			   schema, cb, arg);
	yyjson_mut_doc_free(qd);
	return ok;
}

void sl_call_human_wait(struct sl_call *c, bool waiting)
{
	if (c->human)
		c->human(c->ctx, c, waiting);
}

yyjson_val *sl_call_result_view(struct sl_call *c, yyjson_doc **doc)
{
	*doc = NULL;
	if (!c->mresult)
		return c->result;
	*doc = yyjson_mut_val_imut_copy(c->mresult, NULL);
	if (!*doc)
		sl_oom();
	return yyjson_doc_get_root(*doc);
}

void sl_call_set_error(struct sl_call *c, enum sl_outcome o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(c->why);
	c->why = sl_vprintf(fmt, ap);
	va_end(ap);
	c->outcome = o;
}

/* ---- dispatch to the upstream ----------------------------------------- */

/* The server's JSON-RPC error passes the peer hooks before anyone sees it
 * (the client, a program, the audit): its text is the server's. */
static void filter_error(struct sl_call *c)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	struct sl_peer p;

	if (!d)
		sl_oom();
	sl_peer_init(&p, SL_PEER_ERROR, "tools/call", c->up, d, yyjson_val_mut_copy(d, c->rpc_error));
	p.can_mark = true;
	p.to_program = c->origin == SL_ORIGIN_CODE;
	p.client_key = c->client_key;
	sl_stages_peer(c->gen, &p);
	sl_peer_error_apply(&p);
	if (p.changed) {
		yyjson_doc_free(c->result_doc);
		c->result_doc = sl_peer_freeze(&p);
		c->rpc_error = yyjson_doc_get_root(c->result_doc);
	}
	sl_peer_dispose(&p);
	yyjson_mut_doc_free(d);
}

static void on_reply(void *ctx, struct sl_reply *r)
{
	struct sl_call *c = ctx;
	c->ureq = NULL;
	switch (r->kind) {
	case SL_REPLY_RESULT:
		c->outcome = SL_OUTCOME_OK;
		c->result_doc = r->msg->doc;
		r->msg->doc = NULL;
		c->result = r->msg->result;
		/* MCP 2025-11-25 tasks: a task-augmented request is answered with
		 * a CreateTaskResult (a server may also run it plainly). */
		c->task_created = c->task && yyjson_is_obj(sl_json_obj(c->result, "task")) &&
				  sl_json_str(sl_json_obj(c->result, "task"), "taskId");
		break;
	case SL_REPLY_ERROR:
		c->outcome = SL_OUTCOME_RPC_ERROR;
		c->result_doc = r->msg->doc;
		r->msg->doc = NULL;
		c->rpc_error = r->msg->error;
		filter_error(c);
		break;
	case SL_REPLY_FAILED:
		sl_call_set_error(c, SL_OUTCOME_FAILED, "%s", r->why);
		break;
	}
	sl_call_resume(c);
}

static void on_progress(void *ctx, yyjson_val *params)
{
	struct sl_call *c = ctx;
	if (c->progress && !c->finished)
		c->progress(c->ctx, c, params);
}

/* Returns true if the call is now waiting for the upstream. */
static bool dispatch(struct sl_call *c)
{
	struct sl_err err;
	yyjson_mut_val *params = yyjson_mut_obj(c->doc);
	const char *method = "tools/call";

	if (c->task_fetch) {
		method = "tasks/result";
		yyjson_mut_obj_add_strcpy(c->doc, params, "taskId", c->task_fetch);
	} else {
		yyjson_mut_obj_add_strcpy(c->doc, params, "name", c->tool);
		yyjson_mut_obj_add_val(c->doc, params, "arguments", c->args);
		if (c->task)
			yyjson_mut_obj_add_val(c->doc, params, "task", c->task);
	}
	if (c->caps || sl_trace_ctx_any(&c->trace, &c->span)) {
		yyjson_mut_val *meta = yyjson_mut_obj(c->doc);
		if (c->caps)
			yyjson_mut_obj_add_val(c->doc, meta, SL_MCP_META_CAPS,
					       yyjson_mut_val_mut_copy(c->doc, c->caps));
		/* SEP-414: the trace goes on through the upstream. */
		sl_trace_ctx_to_meta(&c->trace, &c->span, c->doc, meta);
		yyjson_mut_obj_add_val(c->doc, params, "_meta", meta);
	}
	c->via = sl_upstream_for(c->up, c->who, &err);
	if (c->via)
		sl_upstream_roots_before(c->via, c->client_key);
	c->ureq = c->via ? sl_upstream_request(c->via, method, c->doc, params, c->timeout_ms,
					       on_reply, c->progress ? on_progress : NULL, c, &err) :
			   NULL;
	if (!c->ureq) {
		sl_call_set_error(c, SL_OUTCOME_FAILED, "%s", err.msg);
		return false;
	}
	return true;
}

/* ---- the engine -------------------------------------------------------- */

static void advance(struct sl_call *c)
{
	const struct sl_gen *g = c->gen;

	for (;;) {
		const struct sl_stage *st;
		void *state;
		sl_stage_fn fn;
		enum sl_stage_rc rc;

		switch (c->phase) {
		case PH_DISPATCH:
			c->phase = PH_RESPONSE;
			c->pos = 0;
			if (c->outcome == SL_OUTCOME_PENDING && dispatch(c)) {
				c->suspended = true;
				return;
			}
			continue;
		case PH_FINISH:
			if (c->outcome == SL_OUTCOME_PENDING)
				sl_call_set_error(c, SL_OUTCOME_FAILED, "the call ended without an answer");
			c->finished_us = sl_now_us();
			for (size_t i = 0; i < g->nstages; i++)
				if (g->stages[i]->finish)
					g->stages[i]->finish(sl_gen_state_at(g, i), c);
			c->finished = true;
			c->done(c->ctx, c);
			return;
		case PH_RESPONSE:
			/* A CreateTaskResult holds no output to filter: the
			 * result passes the response half when it is fetched. */
			if (c->task_created) {
				c->phase = PH_FINISH;
				continue;
			}
			break;
		default:
			break;
		}
		if (c->pos >= g->nstages) {
			c->phase = c->phase == PH_REQUEST ? PH_DISPATCH : PH_FINISH;
			continue;
		}
		state = sl_gen_state_at(g, c->pos);
		st = g->stages[c->pos++];
		fn = c->phase == PH_REQUEST ? st->request : st->response;
		if (!fn)
			continue;
		rc = fn(state, c);
		switch (rc) {
		case SL_STAGE_NEXT:
		case SL_STAGE_DECLINED:
			break;
		case SL_STAGE_DONE:
			if (c->phase == PH_REQUEST && c->outcome == SL_OUTCOME_INPUT_REQUIRED &&
			    c->input_required &&
			    !filter_question(c, c->doc, yyjson_mut_obj_get(c->input_required,
									  "inputRequests"))) {
				c->input_required = NULL;
				sl_call_set_error(c, SL_OUTCOME_FAILED, "%s.%s needs its client's answer, "
						  "but the question could not be passed on (sluice's log "
						  "says why)", c->up->name, c->tool);
			}
			if (c->phase == PH_REQUEST) {
				c->phase = PH_RESPONSE;
				c->pos = 0;
			} else {
				c->phase = PH_FINISH;
			}
			break;
		case SL_STAGE_AGAIN:
			c->suspended = true;
			return;
		case SL_STAGE_ERROR:
			if (c->outcome == SL_OUTCOME_PENDING || c->outcome == SL_OUTCOME_OK) {
				/* c->why (if the stage set it) is freed by set_error: copy it. */
				char *why = c->why ? sl_strdup(c->why) : NULL;
				sl_call_set_error(c, SL_OUTCOME_FAILED, "stage %s failed%s%s", st->name,
						  why ? ": " : "", why ? why : "");
				free(why);
			}
			c->phase = PH_FINISH;
			break;
		}
	}
}

void sl_call_run(struct sl_call *c)
{
	if (c->task_fetch)
		c->phase = PH_DISPATCH;
	advance(c);
}

void sl_call_resume(struct sl_call *c)
{
	if (!c->suspended || c->finished)
		return;
	c->suspended = false;
	if (c->outcome == SL_OUTCOME_CANCELLED) {
		c->phase = PH_FINISH;
	} else if (c->phase == PH_REQUEST && c->outcome != SL_OUTCOME_PENDING) {
		/* The suspended stage answered the call (a deny after asking the
		 * human): as SL_STAGE_DONE, skip to the response half. */
		c->phase = PH_RESPONSE;
		c->pos = 0;
	}
	advance(c);
}

void sl_call_cancel(struct sl_call *c, const char *why)
{
	if (c->finished || c->outcome == SL_OUTCOME_CANCELLED)
		return;
	yyjson_doc_free(c->result_doc);
	c->result_doc = NULL;
	c->result = c->rpc_error = NULL;
	sl_call_set_error(c, SL_OUTCOME_CANCELLED, "%s", why);
	if (c->ureq) {
		/* MCP 2025-11-25 cancellation: tell the server, expect no answer. */
		sl_upstream_cancel(c->ureq, why);
		c->ureq = NULL;
		c->suspended = false;
		c->phase = PH_FINISH;
		advance(c);
	} else if (c->suspended && c->pos > 0) {
		/* A stage holds it suspended: tell it, and it resumes the call
		 * (which then finishes), now or later. */
		const struct sl_stage *st = c->gen->stages[c->pos - 1];
		if (st->cancel)
			st->cancel(sl_gen_state_at(c->gen, c->pos - 1), c);
	} else if (!c->suspended) {
		c->phase = PH_FINISH;
	}
}

const char *sl_origin_name(enum sl_origin o)
{
	static const char *n[] = { "direct", "router", "code" };
	return n[o];
}

const char *sl_outcome_name(enum sl_outcome o)
{
	static const char *n[] = { "pending", "ok", "rpc_error", "denied", "failed", "cancelled",
				   "input_required" };
	return n[o];
}

/*
 * Requests of ours to the client: a server's elicitation, sampling or
 * roots request relayed for it (the answer goes back to that server under
 * its own id), or the gateway's own elicitation (a stage asked the human).
 * Our ids towards the client are strings no client would reuse.
 */
#include "gateway/session_int.h"
#include "gateway/view.h"
#include "auth/caller.h"
#include "core/json.h"
#include "stages/pinning.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct relay {
	struct sl_upstream *up;  /* relayed for this server, or NULL */
	bool roots;              /* its roots/list (upstream/roots.c) */
	unsigned gen;
	yyjson_doc *id_doc;      /* the upstream's id */
	sl_answer_fn cb;         /* the gateway's own: who wants the answer */
	void *ctx;
};

/* A request of ours (r waits for its answer) in a new document; *o is its
 * envelope, for the caller's params. */
static yyjson_mut_doc *request_new(struct sl_session *s, struct relay *r, const char *method,
				   char *key, size_t n, yyjson_mut_val **o)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	char id[32];
	snprintf(id, sizeof(id), "sluice-%lld", (long long)s->next_out_id++);
	snprintf(key, n, "s:%s", id);
	*o = sl_rpc_envelope(d, yyjson_mut_strcpy(d, id), method);
	sl_map_put(&s->relays, key, r);
	return d;
}

static void request_send(struct sl_session *s, yyjson_mut_doc *d)
{
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_REQUEST }, d);
	yyjson_mut_doc_free(d);
}

bool sl_session_can_elicit(const struct sl_session *s)
{
	return s && !s->closing && s->era == SL_ERA_LEGACY && s->caps &&
	       yyjson_obj_get(s->caps, "elicitation") != NULL;
}

bool sl_session_elicit(struct sl_session *s, const char *message, yyjson_mut_doc *d,
		       yyjson_mut_val *schema, sl_answer_fn cb, void *ctx)
{
	struct relay *r;
	yyjson_mut_val *o, *params;
	yyjson_mut_doc *req;
	char key[80];

	if (!sl_session_can_elicit(s))
		return false;
	r = sl_alloc(sizeof(*r));
	r->cb = cb;
	r->ctx = ctx;
	req = request_new(s, r, SL_MCP_ELICIT, key, sizeof(key), &o);
	params = yyjson_mut_obj(req);
	/* MCP 2025-11-25 elicitation: a message and a flat requested schema. */
	yyjson_mut_obj_add_strcpy(req, params, "message", message);
	yyjson_mut_obj_add_val(req, params, "requestedSchema", yyjson_mut_val_mut_copy(req, schema));
	yyjson_mut_obj_add_val(req, o, "params", params);
	request_send(s, req);
	(void)d;
	return true;
}

static bool asker_can_elicit(void *ctx)
{
	return sl_session_can_elicit(ctx);
}

static bool asker_elicit(void *ctx, const char *message, yyjson_mut_doc *d, yyjson_mut_val *schema,
			 sl_answer_fn cb, void *arg)
{
	return sl_session_elicit(ctx, message, d, schema, cb, arg);
}

static bool asker_sees(void *ctx, const struct sl_caller *who, const struct sl_upstream *up,
		       yyjson_val *def)
{
	struct sl_session *s = ctx;
	const char *name = sl_json_str(def, "name");
	struct sl_view v;

	sl_view_of(s->gw, who, &v);
	return name && sl_view_admits(&v, up->name, name) &&
	       sl_stages_visible_but(s->gw->gen, who, up, def, &sl_stage_pinning);
}

struct sl_asker sl_session_asker(struct sl_session *s)
{
	return (struct sl_asker){ asker_can_elicit, asker_elicit, asker_sees, s };
}

bool sl_relay_allowed(yyjson_val *caps, struct sl_msg *m)
{
	static const struct { const char *method, *cap; } need[] = {
		{ SL_MCP_ELICIT, "elicitation" },
		{ "sampling/createMessage", "sampling" },
		{ "roots/list", "roots" },
	};
	yyjson_val *cap = NULL;
	const char *mode;

	for (size_t i = 0; caps && i < SL_COUNT(need); i++)
		if (strcmp(m->method, need[i].method) == 0)
			cap = yyjson_obj_get(caps, need[i].cap);
	if (!cap || strcmp(m->method, SL_MCP_ELICIT) != 0)
		return cap != NULL;
	/* MCP 2025-11-25 elicitation: an empty capability object means form
	 * mode only; a client that names modes takes those it names. */
	mode = m->params ? sl_json_str(m->params, "mode") : NULL;
	if (!mode)
		mode = "form";
	if (!yyjson_is_obj(cap) || yyjson_obj_size(cap) == 0)
		return strcmp(mode, "form") == 0;
	return yyjson_obj_get(cap, mode) != NULL;
}

struct answers_ctx {
	struct sl_upstream *u;
	const struct sl_ureq *asker;
};

/* A request of s's that u's question may be for. */
static bool asked_for(const void *value, const void *ctx)
{
	const struct sl_pending *p = value;
	const struct answers_ctx *a = ctx;

	if (a->asker) /* a 2026-07-28 server's input request names its request */
		return (p->kind == SL_PENDING_CALL && p->u.call.call &&
			p->u.call.call->ureq == a->asker) ||
		       (p->kind == SL_PENDING_FORWARD && p->u.ureq == a->asker);
	/* A program may call any server; a user link asks for its server. */
	return p->up == sl_upstream_server(a->u) || p->kind == SL_PENDING_PROGRAM;
}

static struct sl_pending *asked_pending(const struct sl_session *s, struct sl_upstream *u,
					const struct sl_ureq *asker)
{
	struct answers_ctx a = { u, asker };
	return s->closing ? NULL : sl_map_find(&s->calls, asked_for, &a);
}

enum sl_answerer sl_session_answers(const struct sl_session *s, struct sl_upstream *u,
				    struct sl_msg *m, const struct sl_ureq *asker,
				    const char **why)
{
	struct sl_pending *p;
	char key[65];

	/* A user link's questions are its user's alone. */
	if (u->user && (!sl_caller_user_key(s->caller, key) || strcmp(key, u->user)))
		return SL_ANSWER_NONE;
	if (!(p = asked_pending(s, u, asker)))
		return SL_ANSWER_NONE;
	if (s->era == SL_ERA_LEGACY) {
		if (sl_relay_allowed(s->caps, m))
			return SL_ANSWER_YES;
		*why = "the client that waits on it did not declare that capability";
		return SL_ANSWER_CANNOT;
	}
	/* MCP 2026-07-28 MRTR: only a request's own result can carry
	 * input_required, and a program's tool calls have none of their own. */
	if (p->kind == SL_PENDING_PROGRAM) {
		*why = "it was called from a program (execute_code), and a 2026-07-28 client is asked "
		       "only through its own tools/call's input_required result";
		return SL_ANSWER_CANNOT;
	}
	if (p->kind != SL_PENDING_CALL && p->kind != SL_PENDING_FORWARD) {
		*why = "the 2026-07-28 request that waits on it cannot carry input_required";
		return SL_ANSWER_CANNOT;
	}
	if (!sl_relay_allowed(sl_session_caps((struct sl_session *)s, &p->msg, true), m)) {
		*why = "the request that waits on it did not declare that capability";
		return SL_ANSWER_CANNOT;
	}
	return SL_ANSWER_YES;
}

bool sl_session_relay(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m,
		      const struct sl_ureq *asker)
{
	struct relay *r;
	yyjson_mut_val *o, *params;
	yyjson_mut_doc *d, *idd;
	char key[80];

	if (s->closing)
		return false;
	if (s->era == SL_ERA_MODERN) {
		struct sl_pending *p = asked_pending(s, u, asker);
		if (!p || (p->kind != SL_PENDING_CALL && p->kind != SL_PENDING_FORWARD))
			return false;
		sl_park_ask(p, u, m);
		return true;
	}
	if (s->era != SL_ERA_LEGACY || !sl_relay_allowed(s->caps, m))
		return false;
	if (!sl_pending_server_request(s, u, m))
		return true; /* over a bound of sluice.limits: u has its error */
	r = sl_alloc(sizeof(*r));
	r->up = u;
	r->roots = !strcmp(m->method, "roots/list");
	r->gen = sl_upstream_generation(u);
	idd = yyjson_mut_doc_new(NULL);
	yyjson_mut_doc_set_root(idd, yyjson_val_mut_copy(idd, m->id));
	r->id_doc = yyjson_mut_doc_imut_copy(idd, NULL);
	yyjson_mut_doc_free(idd);
	d = request_new(s, r, m->method, key, sizeof(key), &o);
	params = m->params ? yyjson_val_mut_copy(d, m->params) : yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, o, "params", params);
	request_send(s, d);
	return true;
}

/* The client's answer goes back to the server that asked, through the peer
 * hooks: a sampling result is the person's model writing, an elicitation
 * result what the person typed. An answer that cannot be passed on is
 * replaced by an error saying why. */
void sl_relay_answer(struct sl_session *s, struct sl_upstream *u, unsigned upgen, yyjson_val *id,
		     yyjson_val *result, yyjson_val *error)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_val *v = result ? result : error;
	yyjson_doc *frozen = NULL;
	struct sl_peer p;

	if (!d)
		sl_oom();
	sl_peer_init(&p, SL_PEER_UPSTREAM, result ? "result" : "error", u, d,
		     v ? yyjson_val_mut_copy(d, v) : NULL);
	if (v)
		sl_stages_peer(s->gw->gen, &p);
	if (p.withheld) {
		yyjson_mut_val *e = yyjson_mut_obj(d);
		yyjson_mut_obj_add_int(d, e, "code", SL_RPC_INTERNAL_ERROR);
		yyjson_mut_obj_add_strcpy(d, e, "message", p.withheld);
		p.val = e;
		frozen = sl_peer_freeze(&p);
		sl_upstream_respond(u, upgen, id, NULL, yyjson_doc_get_root(frozen));
	} else if (p.changed) {
		frozen = sl_peer_freeze(&p);
		sl_upstream_respond(u, upgen, id, result ? yyjson_doc_get_root(frozen) : NULL,
				    result ? NULL : yyjson_doc_get_root(frozen));
	} else {
		sl_upstream_respond(u, upgen, id, result, error);
	}
	/* Its roots (upstream/roots.c): a 2026-07-28 client's come through a
	 * parked call (park.c), a session's through its relay. */
	if (result && !p.withheld && yyjson_is_arr(yyjson_obj_get(result, "roots")) &&
	    upgen == sl_upstream_generation(u)) {
		char key[80];
		sl_session_client_key(s, key);
		sl_upstream_roots_given(u, key);
	}
	yyjson_doc_free(frozen);
	sl_peer_dispose(&p);
	yyjson_mut_doc_free(d);
}

void sl_relay_response(struct sl_session *s, struct sl_msg *m)
{
	char key[80];
	struct relay *r;

	sl_session_id_key(m->id, key, sizeof(key));
	r = sl_map_del(&s->relays, key);
	if (!r)
		return;
	if (r->cb) {
		const char *action = m->result ? sl_json_str(m->result, "action") : NULL;
		r->cb(r->ctx, action, m->result ? sl_json_obj(m->result, "content") : NULL);
	} else if (r->up) { /* not one of ours whose answer was given up on */
		sl_relay_answer(s, r->up, r->gen, yyjson_doc_get_root(r->id_doc), m->result, m->error);
		if (r->roots && m->error && r->gen == sl_upstream_generation(r->up))
			sl_upstream_roots_given(r->up, ""); /* none given: the next call says so */
	}
	yyjson_doc_free(r->id_doc);
	free(r);
}

static void answer_none(const char *key, void *value, void *ctx)
{
	struct relay *r = value;
	if (r->cb) {
		sl_answer_fn cb = r->cb;
		r->cb = NULL;
		cb(r->ctx, NULL, NULL);
	}
}

void sl_session_input_end(struct sl_session *s)
{
	/* A client that closed its input can answer no elicitation: the
	 * stages waiting for one hear now that none will come. */
	sl_map_each(&s->relays, answer_none, NULL);
}

static void relay_free(const char *key, void *value, void *ctx)
{
	struct relay *r = value;
	yyjson_doc_free(r->id_doc);
	free(r);
}

void sl_relay_dispose(struct sl_session *s)
{
	sl_map_each(&s->relays, relay_free, NULL);
	sl_map_dispose(&s->relays);
}

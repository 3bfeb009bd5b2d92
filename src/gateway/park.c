/*
 * Server requests for 2026-07-28 clients (MCP 2026-07-28 MRTR): a client
 * of that era takes no request from us; a question of a server (a legacy
 * server's elicitation/create, sampling/createMessage or roots/list, or a
 * 2026-07-28 server's input request, which upstream.c relays the same way)
 * becomes the answer to the client's tools/call:
 *
 *   {resultType: "input_required", inputRequests: {KEY: {method, params}},
 *    requestState}
 *
 * while the upstream call stays in flight, *parked* here, owned by a
 * struct sl_park in gw->parks. The client retries the tools/call with
 * inputResponses {KEY: result} and that requestState: the answers go to
 * the server (through the peer hooks, relay.c), and the retry's request
 * answers for the call from then on (a result, or the next round).
 *
 * The requestState is sealed (core/digest.h, the generation's key, as the
 * policy stage's confirmations): "sluice-park.ID.ROUND.EXPIRY.MAC" over the
 * park's id, the round, the client's credential and the tool's name. A
 * state is good once (the round moves on), for one client, until its
 * expiry (sluice.limits.parkTimeoutMs), after which the park is gone; a
 * retry goes on only if its own credential is allowed the tool.
 *
 * A request forwarded to a server (prompts/get, resources/read,
 * completion/complete) is parked the same way: its upstream request
 * (struct sl_ureq) is held here instead of a call, its answer bound to the
 * park (sl_upstream_rebind) while parked and to the retry's request after.
 * The state names the method too: a state is good for the request that
 * got it.
 *
 * Lifetime: a park is made by the first question of a call and lives
 * until the call's client request is freed while attached (the call ended,
 * or the client went away), or, parked, until the retry deadline (the
 * call is then cancelled) or the gateway stops.
 */
#include "gateway/session_int.h"
#include "core/digest.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PARK_PREFIX "sluice-park."
#define PARK_MAX_ASKS 16 /* questions in one input_required answer */

struct ask {
	char key[32];            /* its key in inputRequests */
	char theirs[32];         /* a 2026-07-28 server's own key for it, or "" */
	yyjson_doc *id;          /* the server's request id */
	unsigned upgen;          /* its process generation */
	yyjson_doc *req;         /* {method, params} as the client sees it */
};

struct sl_park {
	uint64_t id;
	char idkey[24];          /* its key in gw->parks */
	struct sl_gateway *gw;
	struct sl_upstream *up;
	struct sl_call *call;    /* owned here while parked (a tools/call) */
	struct sl_ureq *ureq;    /* owned here while parked (a forwarded request) */
	char *method;            /* the request's method */
	char *failed;            /* a forwarded request ended while parked: why */
	struct sl_pending *p;    /* the client request that answers for the call, or NULL */
	char cred[SL_SHA256_HEX];/* the client's (sl_session.cred) */
	char *name;              /* the tool as the client called it */
	unsigned round;          /* input_required answers given */
	unsigned keys;           /* keys handed out */
	bool parked;             /* waiting for the retry */
	bool done;               /* the call ended while parked */
	bool expired;            /* the retry deadline passed */
	struct ask asks[PARK_MAX_ASKS];
	size_t nasks;
	uv_timer_t *timer;       /* 0 ms: gather a round's questions; then the deadline */
};

static void on_timer_closed(uv_handle_t *h)
{
	free(h);
}

static void ask_dispose(struct ask *a)
{
	yyjson_doc_free(a->id);
	yyjson_doc_free(a->req);
	memset(a, 0, sizeof(*a));
}

/* The server's questions get an error: nobody will answer them. */
static void refuse_asks(struct sl_park *k, const char *why)
{
	for (size_t i = 0; i < k->nasks; i++) {
		if (sl_upstream_generation(k->up) == k->asks[i].upgen)
			sl_upstream_refuse(k->up, yyjson_doc_get_root(k->asks[i].id), SL_RPC_SERVER_ERROR,
					   why);
		ask_dispose(&k->asks[i]);
	}
	k->nasks = 0;
}

static void park_free(struct sl_park *k)
{
	refuse_asks(k, "the client's tool call ended before it answered");
	sl_map_del(&k->gw->parks, k->idkey);
	if (k->timer) {
		uv_timer_stop(k->timer);
		uv_close((uv_handle_t *)k->timer, on_timer_closed);
	}
	if (k->parked && k->call)
		sl_call_free(k->call);
	if (k->ureq)
		sl_upstream_cancel(k->ureq, "the client did not retry its request");
	free(k->name);
	free(k->method);
	free(k->failed);
	free(k);
}

/* A forwarded request ended while parked (its server failed or its
 * timeout passed): the retry hears why. */
static void on_parked_reply(void *ctx, struct sl_reply *r)
{
	struct sl_park *k = ctx;
	k->ureq = NULL;
	k->done = true;
	k->failed = r->kind == SL_REPLY_FAILED ? sl_strdup(r->why) :
		    sl_printf("server '%s' answered before its question was", k->up->name);
	if (k->expired)
		park_free(k);
}

/* What a request names (and its state is bound to): a tool's or prompt's
 * name, a resource's URI, a completion's reference. */
static const char *asked_name(const struct sl_msg *m)
{
	yyjson_val *ref = m->params ? sl_json_obj(m->params, "ref") : NULL;
	const char *v = m->params ? sl_json_str(m->params, "name") : NULL;

	if (!v && m->params)
		v = sl_json_str(m->params, "uri");
	if (!v && ref)
		v = sl_json_str(ref, "name") ? sl_json_str(ref, "name") : sl_json_str(ref, "uri");
	return v;
}

static void on_parked_done(void *ctx, struct sl_call *c)
{
	struct sl_park *k = ctx;
	k->done = true;
	if (k->expired)
		park_free(k);
	/* Else kept for the retry, which gets its outcome. */
}

static void on_deadline(uv_timer_t *t)
{
	struct sl_park *k = t->data;
	char why[200];

	snprintf(why, sizeof(why), "the client did not retry its tool call within %llu ms "
		 "(sluice.limits.parkTimeoutMs)", (unsigned long long)k->gw->gen->cfg->limits.park_timeout_ms);
	sl_log(SL_LOG_INFO, "server '%s': a parked call of %s is cancelled: %s", k->up->name, k->name,
	       why);
	refuse_asks(k, why);
	k->expired = true;
	if (k->done || !k->call)
		park_free(k); /* a forwarded request is cancelled there */
	else
		sl_call_cancel(k->call, why); /* on_parked_done frees k */
}

static char *what_of(uint64_t id, unsigned round, const char *cred, const char *method,
		     const char *name)
{
	/* A tools/call's state reads as before forwarded requests had any. */
	if (!strcmp(method, "tools/call"))
		return sl_printf("sluice-park\n%llx\n%u\n%s\n%s", (unsigned long long)id, round, cred,
				 name);
	return sl_printf("sluice-park\n%llx\n%u\n%s\n%s\n%s", (unsigned long long)id, round, cred,
			 method, name);
}

/* What a requestState of k for round stands for. */
static char *state_what(const struct sl_park *k, unsigned round)
{
	return what_of(k->id, round, k->cred, k->method, k->name);
}

/* A park's id is this process's instance (random, high 32 bits) and a
 * count: replicas sharing a sealing key never issue the same id, and a
 * state from another process is told apart from one of a call ended here. */
static uint32_t instance(void)
{
	static uint32_t mine;
	while (!mine)
		sl_random(&mine, sizeof(mine));
	return mine;
}

/* Why a requestState naming a park of another process (another replica,
 * or this one before a restart) cannot be answered here. */
static const char *elsewhere_why(struct sl_session *s, uint64_t id, unsigned round,
				 const char *method, const char *name, const char *sealed)
{
	struct sl_gen *gen = s->gw->gen;
	char *what;
	enum sl_seal_check chk;

	if (!gen->key_shared)
		return "it was issued by another sluice process (another replica, or this one "
		       "before a restart): the server's question waits in that process only; "
		       "call the tool again";
	what = what_of(id, round, s->cred, method, name ? name : "");
	chk = sl_seal_check(gen->key, sizeof(gen->key), sealed, what);
	free(what);
	if (chk == SL_SEAL_FORGED)
		return "forged or tampered with, or sealed by a sluice without this "
		       "sluice.shared.secret (its seal does not verify)";
	return "the question was asked on another replica: a parked call (a server's question "
	       "held while the client answers) lives in the one process that holds the "
	       "server's request, and this retry reached another one; call the tool again";
}

/* A round whose questions are all a 2026-07-28 server's own input
 * requests keeps the server's keys (one server, one call: they are
 * distinct), so a client sees what the server wrote; else, and whenever a
 * key is "confirm" (the policy stage's) or too long, they are sluice-N. */
static void keep_their_keys(struct sl_park *k)
{
	for (size_t i = 0; i < k->nasks; i++)
		if (!k->asks[i].theirs[0] || !strcmp(k->asks[i].theirs, "confirm"))
			return;
	for (size_t i = 0; i < k->nasks; i++)
		memcpy(k->asks[i].key, k->asks[i].theirs, sizeof(k->asks[i].key));
}

/* The round's questions are all in: p's tools/call is answered
 * input_required, and its call is parked until the retry. */
static void on_gather(uv_timer_t *t)
{
	struct sl_park *k = t->data;
	struct sl_pending *p = k->p;
	struct sl_session *s = p->s;
	struct sl_gateway *gw = k->gw;
	struct sl_call *c = p->kind == SL_PENDING_CALL ? p->u.call.call : NULL;
	yyjson_mut_val *r, *reqs;
	yyjson_mut_doc *d;
	unsigned long long expiry;
	char *sealed, *what, *state;

	uv_timer_stop(t);
	if (k->nasks == 0 || (c ? c->finished : !p->u.ureq))
		return; /* answered meanwhile: the outcome goes out as usual */
	keep_their_keys(k);
	d = sl_session_doc(&r);
	reqs = yyjson_mut_obj(d);
	for (size_t i = 0; i < k->nasks; i++)
		yyjson_mut_obj_add(reqs, yyjson_mut_strcpy(d, k->asks[i].key),
				       yyjson_val_mut_copy(d, yyjson_doc_get_root(k->asks[i].req)));
	expiry = sl_seal_now() + (gw->gen->cfg->limits.park_timeout_ms + 999) / 1000;
	what = state_what(k, k->round);
	sealed = sl_seal(gw->gen->key, sizeof(gw->gen->key), expiry, what);
	state = sl_printf(PARK_PREFIX "%llx.%u.%s", (unsigned long long)k->id, k->round, sealed);
	yyjson_mut_obj_add_str(d, r, "resultType", "input_required");
	yyjson_mut_obj_add_val(d, r, "inputRequests", reqs);
	yyjson_mut_obj_add_strcpy(d, r, "requestState", state);
	free(state);
	free(sealed);
	free(what);

	/* The call (or the forwarded request) leaves p for the park: nobody's
	 * progress, nobody's session (this one ends with its answer, over
	 * HTTP). */
	if (c) {
		c->done = on_parked_done;
		c->ctx = k;
		c->progress = NULL;
		sl_session_bind_call(NULL, c);
		k->call = c;
		p->u.call.call = NULL;
	} else {
		k->ureq = p->u.ureq;
		p->u.ureq = NULL;
		sl_upstream_rebind(k->ureq, on_parked_reply, k);
	}
	k->parked = true;
	k->p = NULL;
	k->round++;
	p->park = NULL;
	if (!s->closing)
		sl_session_answer(s, &p->msg, true, false, d, r);
	else
		yyjson_mut_doc_free(d);
	sl_pending_free(p);
	uv_timer_start(t, on_deadline, gw->gen->cfg->limits.park_timeout_ms, 0);
}

struct count_ctx {
	const char *cred;
	uint32_t n;
};

static void count_cred(const char *key, void *value, void *ctx)
{
	struct count_ctx *cc = ctx;
	cc->n += strcmp(((struct sl_park *)value)->cred, cc->cred) == 0;
}

/* Takes why. */
static void refuse(struct sl_upstream *u, struct sl_msg *m, char *why)
{
	sl_log(SL_LOG_WARN, "server '%s': %s %s", u->name, m->method, why);
	sl_upstream_refuse(u, m->id, SL_RPC_SERVER_ERROR, why);
	free(why);
}

void sl_park_ask(struct sl_pending *p, struct sl_upstream *u, struct sl_msg *m)
{
	struct sl_session *s = p->s;
	struct sl_gateway *gw = s->gw;
	const struct sl_limits *l = &gw->gen->cfg->limits;
	struct sl_park *k = p->park;
	struct ask *a;
	yyjson_mut_doc *d;
	yyjson_mut_val *o;
	const char *theirs;

	if (!k) {
		struct count_ctx cc = { s->cred, 0 };
		if (gw->parks.live >= l->max_parked) {
			refuse(u, m, sl_printf("is refused: %u tool calls of 2026-07-28 clients wait for "
					       "their answers already, the limit "
					       "(sluice.limits.maxParkedCalls)", l->max_parked));
			return;
		}
		sl_map_each(&gw->parks, count_cred, &cc);
		if (cc.n >= l->max_parked_per_client) {
			refuse(u, m, sl_printf("is refused: this client has %u tool calls waiting for its "
					       "answers already, the limit "
					       "(sluice.limits.maxParkedCallsPerClient)", cc.n));
			return;
		}
	}
	if (k && k->round >= l->max_input_rounds) {
		refuse(u, m, sl_printf("is refused: tool call %s was answered input_required %u times, "
				       "the limit (sluice.limits.maxInputRounds)", k->name, k->round));
		return;
	}
	if (k && k->nasks >= PARK_MAX_ASKS) {
		refuse(u, m, sl_printf("is refused: %d questions wait for one answer already",
				       PARK_MAX_ASKS));
		return;
	}
	if (!sl_pending_server_request(s, u, m))
		return; /* over serverRequestsPerCall or PerMinute: u has its error */
	if (!k) {
		const char *name = asked_name(&p->msg);
		k = sl_alloc(sizeof(*k));
		k->method = sl_strdup(p->msg.method);
		k->gw = gw;
		k->up = u;
		k->id = (uint64_t)instance() << 32 | (uint32_t)++gw->next_park;
		snprintf(k->idkey, sizeof(k->idkey), "%llx", (unsigned long long)k->id);
		memcpy(k->cred, s->cred, sizeof(k->cred));
		k->name = sl_strdup(name ? name : "");
		k->timer = sl_alloc(sizeof(*k->timer));
		uv_timer_init(gw->loop, k->timer);
		k->timer->data = k;
		sl_map_put(&gw->parks, k->idkey, k);
	}
	k->p = p;
	p->park = k;
	a = &k->asks[k->nasks++];
	/* Never "confirm", the policy stage's key. */
	snprintf(a->key, sizeof(a->key), "sluice-%u", ++k->keys);
	theirs = sl_upstream_input_key(u, m->id);
	if (theirs && strlen(theirs) < sizeof(a->theirs))
		memcpy(a->theirs, theirs, strlen(theirs) + 1);
	a->upgen = sl_upstream_generation(u);
	d = yyjson_mut_doc_new(NULL);
	yyjson_mut_doc_set_root(d, yyjson_val_mut_copy(d, m->id));
	a->id = yyjson_mut_doc_imut_copy(d, NULL);
	yyjson_mut_doc_free(d);
	d = yyjson_mut_doc_new(NULL);
	o = yyjson_mut_obj(d);
	yyjson_mut_obj_add_strcpy(d, o, "method", m->method);
	if (m->params)
		yyjson_mut_obj_add_val(d, o, "params", yyjson_val_mut_copy(d, m->params));
	yyjson_mut_doc_set_root(d, o);
	a->req = yyjson_mut_doc_imut_copy(d, NULL);
	yyjson_mut_doc_free(d);
	/* A 2026-07-28 server's several input requests arrive one after
	 * another in this turn of the loop: one answer carries them all. */
	if (!uv_is_active((uv_handle_t *)k->timer))
		uv_timer_start(k->timer, on_gather, 0, 0);
}

static void resume_error(struct sl_session *s, struct sl_msg *m, const char *why)
{
	char msg[400];
	snprintf(msg, sizeof(msg), "Invalid params: requestState: %s", why);
	sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
}

bool sl_park_resume(struct sl_session *s, struct sl_msg *m)
{
	struct sl_gateway *gw = s->gw;
	const char *state = m->params ? sl_json_str(m->params, "requestState") : NULL;
	const char *name = asked_name(m);
	yyjson_val *responses = sl_json_obj(m->params, "inputResponses");
	unsigned long long id, expiry;
	unsigned round;
	int used = 0;
	char idkey[24], *what;
	struct sl_park *k;
	struct sl_pending *p;
	struct sl_call *c;
	struct sl_ureq *ureq;
	struct sl_upstream *up;
	struct ask asks[PARK_MAX_ASKS];
	size_t nasks;
	enum sl_seal_check chk;
	const struct sl_entry *e;

	if (!state || strncmp(state, PARK_PREFIX, strlen(PARK_PREFIX)) != 0)
		return false;
	if (sscanf(state + strlen(PARK_PREFIX), "%llx.%u.%n", &id, &round, &used) != 2 || !used ||
	    sscanf(state + strlen(PARK_PREFIX) + used, "%llx.", &expiry) != 1) {
		resume_error(s, m, "malformed; it is not one sluice issued");
		return true;
	}
	snprintf(idkey, sizeof(idkey), "%llx", id);
	k = sl_map_get(&gw->parks, idkey);
	if (!k && id >> 32 != instance()) {
		resume_error(s, m, elsewhere_why(s, id, round, m->method, name,
						 state + strlen(PARK_PREFIX) + used));
		return true;
	}
	if (!k) {
		resume_error(s, m, expiry < sl_seal_now() ?
			     "expired (sluice.limits.parkTimeoutMs); call the tool again" :
			     "it names no parked call (the call ended, or the state was never "
			     "issued); call the tool again");
		return true;
	}
	what = state_what(k, round);
	chk = sl_seal_check(gw->gen->key, sizeof(gw->gen->key), state + strlen(PARK_PREFIX) + used,
			    what);
	free(what);
	if (chk == SL_SEAL_FORGED) {
		resume_error(s, m, "forged or tampered with (its seal does not verify)");
		return true;
	}
	if (chk == SL_SEAL_EXPIRED) {
		resume_error(s, m, "expired (sluice.limits.parkTimeoutMs); call the tool again");
		return true;
	}
	if (strcmp(k->cred, s->cred) != 0) {
		resume_error(s, m, "issued to another client");
		return true;
	}
	if (!k->parked || round + 1 != k->round) {
		resume_error(s, m, "already used (a retry carries each requestState once)");
		return true;
	}
	if (strcmp(m->method, k->method) != 0) {
		resume_error(s, m, "issued for another method; a retry sends the same request again");
		return true;
	}
	if (!name || strcmp(name, k->name) != 0) {
		resume_error(s, m, "issued for another tool, prompt or resource; a retry names the same one");
		return true;
	}
	/* The retry is decided with its own credential, never more rights
	 * than the latest token: one whose claims a stage now hides the tool
	 * from (a group removed, a down-scoped token of the same person) does
	 * not carry on the call; the park waits for a retry that may. */
	if (k->call && (e = sl_catalog_find(&gw->catalog, k->up->name, k->call->tool)) &&
	    !sl_stages_visible(gw->gen, m->who, k->up, e->def)) {
		resume_error(s, m, "this retry's credential is not allowed the tool (its claims "
			     "differ from those the call was started with)");
		return true;
	}
	for (size_t i = 0; i < k->nasks; i++) {
		yyjson_val *v = responses ? yyjson_obj_get(responses, k->asks[i].key) : NULL;
		if (!yyjson_is_obj(v)) {
			char why[200];
			snprintf(why, sizeof(why), "the retry's inputResponses has no answer (an object) "
				 "for '%s'", k->asks[i].key);
			resume_error(s, m, why);
			return true;
		}
	}

	/* Good: the retry answers for the call from now on. The questions
	 * leave k first: answering them may end the call, and k with it. */
	uv_timer_stop(k->timer);
	nasks = k->nasks;
	memcpy(asks, k->asks, nasks * sizeof(*asks));
	memset(k->asks, 0, sizeof(k->asks));
	k->nasks = 0;
	c = k->call;
	ureq = k->ureq;
	up = k->up;
	k->call = NULL;
	k->ureq = NULL;
	k->parked = false;
	p = sl_pending_new(s, m, true, strcmp(k->method, "tools/call") ? SL_PENDING_FORWARD :
			   SL_PENDING_CALL);
	p->up = k->up;
	p->park = k;
	k->p = p;
	responses = sl_json_obj(p->msg.params, "inputResponses"); /* p owns the document now */
	if (k->done) {
		/* The call ended while parked (its own timeout, the server's
		 * end): the questions are moot. */
		for (size_t i = 0; i < nasks; i++)
			ask_dispose(&asks[i]);
		if (p->kind == SL_PENDING_CALL) {
			sl_pending_take_call(p, c);
		} else {
			sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, k->failed);
			sl_pending_free(p);
		}
		return true;
	}
	if (p->kind == SL_PENDING_CALL) {
		sl_pending_take_call(p, c);
	} else {
		p->u.ureq = ureq;
		sl_upstream_rebind(ureq, sl_forward_reply, p);
	}
	for (size_t i = 0; i < nasks; i++) {
		yyjson_val *v = yyjson_obj_get(responses, asks[i].key);
		/* An error result is the client's refusal, passed on as one. */
		sl_relay_answer(s, up, asks[i].upgen, yyjson_doc_get_root(asks[i].id), v, NULL);
		ask_dispose(&asks[i]);
	}
	return true;
}

void sl_park_end(struct sl_pending *p)
{
	struct sl_park *k = p->park;
	p->park = NULL;
	k->p = NULL;
	park_free(k);
}

static void stop_one(const char *key, void *value, void *ctx)
{
	struct sl_park *k = value;
	if (!k->parked)
		return; /* its client request holds it, and ends with its session */
	refuse_asks(k, "sluice is stopping");
	k->expired = true;
	if (k->done || !k->call)
		park_free(k);
	else
		sl_call_cancel(k->call, "sluice is stopping");
}

void sl_park_stop_all(struct sl_gateway *gw)
{
	sl_map_each(&gw->parks, stop_one, NULL);
}

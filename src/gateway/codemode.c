/* execute_code: definition, host and result; see codemode.h. */
#include "gateway/codemode.h"
#include "core/buf.h"
#include "auth/caller.h"
#include "core/log.h"
#include "proto/mcp.h"
#include "discovery/discovery.h"
#include "gateway/replay.h"
#include "gateway/session.h"
#include "gateway/skills.h"
#include "gateway/view.h"
#include "pipeline/call.h"
#include "pipeline/gen.h"
#include "stages/audit.h"
#include "stages/policy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---------------------------------------------------------------------- */

struct sl_upstream *sl_codemode_server(const struct sl_view *v, const char *name)
{
	const struct sl_gateway *gw = v->gw;
	for (size_t i = 0; i < gw->nups; i++) {
		char ident[SL_SERVER_NAME_MAX + 2];
		if (!sl_view_server(v, gw->ups[i]))
			continue;
		if (strcmp(gw->ups[i]->name, name) == 0)
			return gw->ups[i];
		sl_code_ident(gw->ups[i]->name, ident);
		if (strcmp(ident, name) == 0)
			return gw->ups[i];
	}
	return NULL;
}

const struct sl_entry *sl_codemode_tool(const struct sl_view *v, struct sl_upstream *u,
					const char *name, char *msg, size_t n)
{
	const struct sl_catalog *c = &v->gw->catalog;
	const struct sl_policy *policy =
		sl_policy_current(v->gw->gen ? sl_gen_state(v->gw->gen, &sl_stage_policy) : NULL);
	const struct sl_entry *hit = sl_view_find(v, u, name), *hidden = NULL;
	char *near = NULL; /* the closest tool identifier, for "did you mean" */
	size_t near_d = SIZE_MAX;
	int hits = 0;

	/* MCP Apps: a tool only a View may call is not the model's
	 * (SEP-1865 visibility); the router and programs are. */
	if (hit && sl_mcp_tool_app_only(hit->def) && !sl_policy_hides(policy, v->who, u->name, hit->def)) {
		snprintf(msg, n, "'%s' of server '%s' is for its MCP App's View only "
			 "(_meta.ui.visibility [\"app\"]): the model cannot call it", hit->name, u->name);
		return NULL;
	}
	/* Only the policy hides here: a tool another stage holds back
	 * (pinning) is found, and its call is refused with the reason. */
	if (hit && !sl_policy_hides(policy, v->who, u->name, hit->def))
		return hit;
	hidden = hit;
	hit = NULL;
	for (size_t i = 0; i < c->tools.n; i++) {
		const struct sl_entry *e = &c->tools.v[i];
		const char *local = e->up == u ? sl_view_local(v, e) : NULL;
		char *ident;
		bool same;
		if (!local)
			continue;
		ident = sl_alloc(strlen(local) + 2);
		sl_code_ident(local, ident);
		same = strcmp(ident, name) == 0;
		if (!same && sl_discovery_distance(name, ident) < near_d &&
		    !sl_policy_hides(policy, v->who, u->name, e->def)) {
			near_d = sl_discovery_distance(name, ident);
			free(near);
			near = ident;
			continue;
		}
		free(ident);
		if (!same)
			continue;
		if (sl_policy_hides(policy, v->who, u->name, e->def)) {
			hidden = e;
			continue;
		}
		hit = e;
		hits++;
	}
	if (hits == 1) {
		free(near);
		return hit;
	}
	if (hits > 1) {
		snprintf(msg, n, "tools.%s.%s is ambiguous: more than one tool of '%s' has that "
			 "identifier; use tools[\"%s\"][\"raw-name\"]", u->name, name, u->name, u->name);
		free(near);
		return NULL;
	}
	if (hidden)
		sl_log(SL_LOG_DEBUG, "policy: %s.%s is denied to %s; answered as a tool the server "
		       "does not have", u->name, hidden->name, sl_caller_name(v->who));
	snprintf(msg, n, "server '%s' has no tool '%s'%s%s%s", u->name, name,
		 near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
	free(near);
	return NULL;
}

int sl_codemode_resolve(const struct sl_view *v, const char *server, const char *tool,
			struct sl_sandbox_tool *out, struct sl_err *err)
{
	struct sl_upstream *u = sl_codemode_server(v, server);
	const struct sl_entry *e;

	if (!u) {
		/* Refused before the pipeline: only the profile's servers exist. */
		sl_err_set(err, "unknown server '%.100s'", server);
		return SL_ERR_NOT_FOUND;
	}
	if (!(e = sl_codemode_tool(v, u, tool, err->msg, sizeof(err->msg))))
		return SL_ERR_NOT_FOUND;
	out->server = u;
	out->server_name = u->name;
	out->tool = e->name;
	return SL_OK;
}

/* ---- the host ---------------------------------------------------------------------- */

/* What one program's host needs, from sl_codemode_run until its done. */
struct run {
	struct sl_gateway *gw;
	struct sl_gen *gen;          /* a reference: the program's calls and answer use it */
	struct sl_session *s;
	struct sl_caller *who;       /* a reference: its execute_code request's caller */
	struct sl_trace_ctx trace;   /* that request's trace context: its calls carry it */
	sl_codemode_done_fn done;
	sl_program_step_fn step;
	void *ctx;
	/* A run that may end to ask a 2026-07-28 client (gateway/replay.h). */
	struct sl_replay *rp;        /* borrowed from the owner, or NULL; a skill run's is its
				      * caller's */
	char *path;                  /* a skill run's in the replay record (replay.h), or NULL */
	struct sl_program *prog;     /* once it made a call */
	unsigned live;               /* its pipeline calls in flight */
	uv_timer_t *end;             /* ends the program from the loop */
	unsigned depth;              /* 0: execute_code or a skill called directly; +1 per skill */
	bool skills;                 /* tools.skills is listed: there are skill files on the
				      * operator's shelf or who's */
};

/* A program's tool call: a pipeline call, and whom to tell. A tool whose
 * server requires a task is two calls: the creation, then the fetch of its
 * result (tasks/result waits until the task ends), awaited by the program
 * as one (docs/internals/TASKS.md). */
struct sl_sandbox_call {
	struct sl_call *c;
	struct sl_program *p;   /* NULL once the program cancelled the call */
	uint32_t id;
	char *task;             /* the server's task id, while its result is fetched */
	struct run *r;          /* while p is set */
	char ahash[SL_SHA256_HEX]; /* its arguments' (replay runs) */
	struct sl_program *skill; /* a skill's call: the program it runs */
	char *skill_name;
	/* For the skill run's audit line: who saved it, the calling program,
	 * its session and caller (a reference). */
	char *skill_owner;
	uint64_t parent, session_id;
	struct sl_caller *who;
	bool live;              /* a skill's call counted in r->live (replay runs) */
};

/* The host's handle for the namespace tools.skills: never an upstream. */
static char skills_ns;

/* The view the program's caller has now (a reload may change its
 * profile while it runs): the caller of its execute_code request, not
 * whoever opened the session; the whole catalog for a program of no
 * session. */
static void run_view(const struct run *r, struct sl_view *v)
{
	if (r->s)
		sl_view_of(r->gw, r->who, v);
	else
		sl_view_all(r->gw, v);
}

static const char *host_server(void *ctx, size_t i)
{
	struct run *r = ctx;
	struct sl_view v;
	run_view(r, &v);
	for (size_t j = 0; j < r->gw->nups; j++)
		if (sl_view_server(&v, r->gw->ups[j]) && i-- == 0)
			return r->gw->ups[j]->name;
	/* Last: the saved skills, when there are any (sl_codemode_check keeps
	 * the name free). */
	return i == 0 && r->skills ? SL_SKILLS_SERVER : NULL;
}

struct key {
	const char *raw;
	char *ident;
};

static int by_ident(const void *a, const void *b)
{
	return strcmp(((const struct key *)a)->ident, ((const struct key *)b)->ident);
}

/* Object.keys(tools.<server>): the tools of server that tools.<server>.x
 * resolves for the caller (sl_codemode_tool: what the policy denies is not
 * there), by identifier, or by raw name where two share one (programs are
 * refused the ambiguous identifier). Cheap enough for every program: no
 * definition is hashed (a tool pinning holds back is listed, and its call
 * refused with the reason, as when it is named). */
static void host_tools(void *ctx, const char *server, yyjson_mut_doc *d, yyjson_mut_val *keys)
{
	struct run *r = ctx;
	const struct sl_catalog *c = &r->gw->catalog;
	const struct sl_policy *policy =
		sl_policy_current(r->gw->gen ? sl_gen_state(r->gw->gen, &sl_stage_policy) : NULL);
	struct sl_upstream *u;
	struct key *k;
	size_t n = 0;
	struct sl_view v;

	run_view(r, &v);
	if (!(u = sl_codemode_server(&v, server)))
		return; /* tools.skills: its names are the skills' */
	k = sl_alloc((c->tools.n + 1) * sizeof(*k));
	for (size_t i = 0; i < c->tools.n; i++) {
		const struct sl_entry *e = &c->tools.v[i];
		const char *local = e->up == u ? sl_view_local(&v, e) : NULL;
		if (!local || sl_policy_hides(policy, v.who, u->name, e->def))
			continue;
		k[n].raw = local;
		k[n].ident = sl_alloc(strlen(local) + 2);
		sl_code_ident(local, k[n].ident);
		n++;
	}
	qsort(k, n, sizeof(*k), by_ident);
	for (size_t i = 0; i < n; i++) {
		bool twin = (i > 0 && strcmp(k[i - 1].ident, k[i].ident) == 0) ||
			    (i + 1 < n && strcmp(k[i + 1].ident, k[i].ident) == 0);
		yyjson_mut_arr_add_strcpy(d, keys, twin ? k[i].raw : k[i].ident);
	}
	for (size_t i = 0; i < n; i++)
		free(k[i].ident);
	free(k);
}

static int host_resolve(void *ctx, const char *server, const char *tool,
			struct sl_sandbox_tool *out, struct sl_err *err)
{
	struct run *r = ctx;
	struct sl_view v;
	if (strcmp(server, SL_SKILLS_SERVER) == 0) {
		struct sl_skill sk;
		int rc = sl_codemode_skill(r->gw, r->who, tool, &sk, err);
		if (rc < 0)
			return rc;
		sl_skill_dispose(&sk);
		out->server = &skills_ns;
		out->server_name = SL_SKILLS_SERVER;
		out->tool = tool;
		return SL_OK;
	}
	run_view(r, &v);
	return sl_codemode_resolve(&v, server, tool, out, err);
}

/* The text blocks of an isError result, with their NUL bytes. */
static char *error_text(yyjson_val *r, size_t *len)
{
	struct sl_buf b;
	yyjson_val *content = sl_json_arr(r, "content"), *blk;
	size_t i, n;

	sl_buf_init(&b, 64u << 10);
	yyjson_arr_foreach(content, i, n, blk) {
		yyjson_val *t = yyjson_obj_get(blk, "text");
		if (yyjson_is_str(t) && (sl_buf_appends(&b, b.len ? "\n" : "") < 0 ||
					 sl_buf_append(&b, yyjson_get_str(t), yyjson_get_len(t)) < 0))
			break;
	}
	if (b.len == 0)
		(void)!sl_buf_appends(&b, "the tool reported an error");
	return sl_buf_take(&b, len);
}

/* Tells the program what its call came to: the value it resolves to, or
 * the message it throws. */
static void report(struct sl_sandbox_call *h)
{
	struct sl_call *c = h->c;
	yyjson_mut_doc *d = NULL;
	yyjson_mut_val *value = NULL;
	char *err = NULL;
	size_t err_len = 0;

	switch (c->outcome) {
	case SL_OUTCOME_OK: {
		yyjson_doc *view_doc;
		yyjson_val *r = sl_call_result_view(c, &view_doc);
		if (sl_json_true(r, "isError")) {
			err = error_text(r, &err_len);
		} else {
			d = yyjson_mut_doc_new(NULL);
			value = sl_program_value(d, r);
		}
		yyjson_doc_free(view_doc);
		break;
	}
	case SL_OUTCOME_RPC_ERROR: {
		yyjson_val *m = yyjson_obj_get(c->rpc_error, "message");
		struct sl_buf b;
		sl_buf_init(&b, 64u << 10);
		(void)!sl_buf_printf(&b, "server '%s' answered with error %lld: ", c->up->name,
				     (long long)yyjson_get_sint(yyjson_obj_get(c->rpc_error, "code")));
		if (yyjson_is_str(m))
			(void)!sl_buf_append(&b, yyjson_get_str(m), yyjson_get_len(m));
		err = sl_buf_take(&b, &err_len);
		break;
	}
	default:
		err = sl_strdup(c->why ? c->why : "the call failed");
		err_len = strlen(err);
		break;
	}
	if (h->r->rp)
		sl_replay_record(h->r->rp, h->r->path, h->id, c->up->name, c->tool, h->ahash, value,
				 err, err_len);
	sl_program_call_done(h->p, h->id, d, value, err, err_len);
	free(err);
}

static void on_call_human(void *ctx, struct sl_call *c, bool waiting);

/* The task c created: its result is fetched by a call that skips the
 * request half (decided at creation) and passes the response half. */
static void fetch_task(struct sl_sandbox_call *h, struct sl_call *c)
{
	yyjson_mut_doc *args = yyjson_mut_doc_new(NULL);
	struct sl_call *f;

	if (!args)
		sl_oom();
	yyjson_mut_doc_set_root(args, yyjson_mut_val_mut_copy(args, c->args));
	h->task = sl_strdup(sl_json_str(sl_json_obj(c->result, "task"), "taskId"));
	f = sl_call_new(c->gen, SL_ORIGIN_CODE, c->up, c->tool, args, c->timeout_ms, c->done,
			NULL, h);
	f->parent = c->parent;
	f->who = sl_caller_ref(c->who);
	sl_trace_ctx_copy(&f->trace, &c->trace);
	sl_session_bind_call(c->session, f);
	f->human = on_call_human;
	f->task_fetch = sl_strdup(h->task);
	h->c = f;
	sl_call_run(f);
}

static void on_end(uv_timer_t *t);

/* A replay run ends once it is suspended (or failed) and its other calls
 * are back, from the loop (not inside a call's callback). */
static void maybe_end(struct run *r)
{
	if (!r->rp || r->live || r->end || !r->prog ||
	    !(sl_replay_suspended(r->rp) || sl_replay_failed(r->rp)))
		return;
	r->end = sl_alloc(sizeof(*r->end));
	uv_timer_init(r->gw->loop, r->end);
	r->end->data = r;
	uv_timer_start(r->end, on_end, 0, 0);
}

static void on_end_closed(uv_handle_t *h)
{
	free(h);
}

static void on_end(uv_timer_t *t)
{
	struct run *r = t->data;
	r->end = NULL;
	uv_close((uv_handle_t *)t, on_end_closed);
	sl_replay_set_ended(r->rp);
	sl_program_cancel(r->prog); /* done runs: the owner reads r->rp */
}

/* A call a stage answered input_required (it needs a person's answer): in a
 * replay run the program ends, recorded up to here, and the client is
 * asked; the call was not made. True when c was taken so. */
static bool suspend(struct sl_sandbox_call *h, struct sl_call *c)
{
	struct run *r = h->r;
	if (!r->rp || c->outcome != SL_OUTCOME_INPUT_REQUIRED || !c->input_required)
		return false;
	if (sl_replay_suspend(r->rp, r->path, h->id, c->up->name, c->tool, h->ahash,
			      c->input_required))
		sl_log(SL_LOG_DEBUG, "code: program %llu ends to ask the client about %s.%s",
		       (unsigned long long)sl_program_id(h->p), c->up->name, c->tool);
	/* Left unanswered: cancelled with the program (host_cancel frees h). */
	h->c = NULL;
	sl_call_free(c);
	r->live--;
	maybe_end(r);
	return true;
}

static void on_call_done(void *ctx, struct sl_call *c)
{
	struct sl_sandbox_call *h = ctx;
	if (h->p && suspend(h, c))
		return;
	if (h->p && !c->task_created)
		h->r->live--;
	if (c->task_created) {
		if (h->p) {
			fetch_task(h, c);
			sl_call_free(c);
			return;
		}
		/* The program ended as its task was made: nobody will fetch it. */
		sl_tasks_cancel_upstream(c->via, sl_json_str(sl_json_obj(c->result, "task"), "taskId"),
					 c->timeout_ms);
	}
	if (h->p) {
		struct run *r = h->r;
		report(h);
		maybe_end(r);
	}
	sl_call_free(c);
	free(h->task);
	free(h);
}

static void on_call_human(void *ctx, struct sl_call *c, bool waiting)
{
	struct sl_sandbox_call *h = ctx;
	if (h->p)
		sl_program_call_human(h->p, waiting);
}

static struct sl_program *start_run(struct sl_gateway *gw, struct sl_session *s,
				    struct sl_caller *who, const char *code, size_t len,
				    struct sl_replay *rp, const struct sl_trace_ctx *trace,
				    sl_codemode_done_fn done, sl_program_step_fn step, void *ctx,
				    unsigned depth, char *path);

/* A skill's program ended: what it returned (JSON text, see
 * sl_codemode_skill_code) is what the caller's await resolves to. */
/* A skill's answer to its caller; in a replay run it is recorded like a
 * tool call's, so a retry never runs the skill (and its side effects)
 * again. */
static void skill_answer(struct sl_sandbox_call *h, yyjson_mut_doc *d, yyjson_mut_val *value,
			 const char *err, size_t err_len)
{
	if (h->r && h->r->rp)
		sl_replay_record(h->r->rp, h->r->path, h->id, "skills", h->skill_name, h->ahash, value,
				 err, err_len);
	sl_program_call_done(h->p, h->id, d, value, err, err_len);
}

static void on_skill_done(void *ctx, struct sl_program *prog, struct sl_gen *gen)
{
	struct sl_sandbox_call *h = ctx;
	const struct sl_program_result *res = sl_program_result(prog);
	struct run *r = h->live ? h->r : NULL;
	/* It ended to ask (one of its calls needs a person's answer) or its
	 * replay failed: its caller ends too, and the call stays unanswered
	 * (and unrecorded: the retry runs the skill again). */
	bool ending = h->p && r && res->cancelled &&
		      (sl_replay_suspended(r->rp) || sl_replay_failed(r->rp));

	if (r)
		r->live--;
	/* Its own line, which its calls' "program" names (docs/stages/audit.md). */
	sl_audit_skill(gen, sl_program_id(prog), h->parent, h->session_id, h->who, h->skill_name,
		       h->skill_owner, res->cancelled ? "cancelled" : res->ok ? "ok" : res->kind,
		       res->calls, res->duration_ms, res->ok ? res->text_len : 0);
	if (ending) {
		/* The caller's end cancels the call: host_cancel frees h. */
		h->skill = NULL;
		h->live = false;
		free(h->skill_name);
		free(h->skill_owner);
		sl_caller_unref(h->who);
		h->skill_name = h->skill_owner = NULL;
		h->who = NULL;
		sl_program_free(prog);
		maybe_end(r);
		return;
	}
	if (h->p && res->ok) {
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		yyjson_doc *j = sl_json_read(res->text, res->text_len, SL_JSON_READ_FLAGS, NULL);
		yyjson_mut_val *value = j ? yyjson_val_mut_copy(d, yyjson_doc_get_root(j)) :
				       yyjson_mut_strncpy(d, res->text, res->text_len);
		yyjson_doc_free(j);
		skill_answer(h, d, value, NULL, 0);
	} else if (h->p) {
		struct sl_buf b;
		char *msg;
		size_t len;
		sl_buf_init(&b, 64u << 10);
		(void)!sl_buf_printf(&b, "skill '%s' failed: %s: ", h->skill_name,
				     res->kind ? res->kind : "error");
		(void)!sl_buf_append(&b, res->text, res->text_len);
		msg = sl_buf_take(&b, &len);
		skill_answer(h, NULL, NULL, msg, len);
		free(msg);
	}
	if (r && h->p)
		maybe_end(r);
	sl_program_free(prog);
	free(h->skill_name);
	free(h->skill_owner);
	sl_caller_unref(h->who);
	free(h);
}

/* The key a caller's programs share the code-mode slots under
 * (sl_caller_share_key); NULL without authentication. */
static const char *owner_of(const struct sl_caller *who, char key[SL_SHA256_HEX])
{
	return sl_caller_share_key(who, key) ? key : NULL;
}

/* tools.skills.<name>(args): the skill runs as a program of its own, in a
 * fresh worker, one level deeper; its tool calls pass the pipeline as any
 * program's do. */
static void skill_call(struct run *r, struct sl_sandbox_call *h, const char *name,
		       yyjson_mut_doc *args)
{
	struct sl_err err = { 0 };
	struct sl_skill sk;
	char *json, *code, key[SL_SHA256_HEX];
	size_t len, pre, post;

	h->skill_name = sl_strdup(name);
	if (r->depth >= SL_SKILL_DEPTH_MAX) {
		sl_err_set(&err, "skill '%s' was not run: skills may call skills %d levels deep at "
			   "most", name, SL_SKILL_DEPTH_MAX);
	} else if (!sl_sandbox_can_run(r->gw->sandbox, owner_of(r->who, key))) {
		/* Its caller holds a slot while it waits: queued behind the
		 * callers, it would wait for itself. */
		sl_err_set(&err, "skill '%s' was not run: every code-mode slot is taken, or every "
			   "one its caller may hold (codeMode.maxConcurrent, "
			   "maxConcurrentPerCaller), and a skill needs one of its own", name);
	} else if (sl_codemode_skill(r->gw, r->who, name, &sk, &err) == 0) {
		json = sl_json_write_mut_val(yyjson_mut_doc_get_root(args), &len);
		code = sl_codemode_skill_code(&sk, json, len, true, &len, &pre, &post);
		h->skill_owner = sk.owner ? sl_strdup(sk.owner) : NULL;
		h->parent = sl_program_id(h->p);
		h->session_id = r->s ? r->s->id : 0;
		h->who = sl_caller_ref(r->who);
		/* In a replay run, the skill's calls are part of the record
		 * (under its path), so that one needing a person's answer asks
		 * as the program's own calls do. */
		h->skill = start_run(r->gw, r->s, r->who, code, len, r->rp, &r->trace, on_skill_done,
				     NULL, h, r->depth + 1,
				     !r->rp ? NULL : r->path ? sl_printf("%s.%u", r->path, h->id) :
				     sl_printf("%u", h->id));
		sl_program_set_wrap(h->skill, pre, post);
		if (r->rp) {
			h->live = true;
			r->live++;
		}
		free(code);
		free(json);
		sl_skill_dispose(&sk);
		yyjson_mut_doc_free(args);
		return;
	}
	yyjson_mut_doc_free(args);
	skill_answer(h, NULL, NULL, err.msg, strlen(err.msg));
	free(h->skill_name);
	free(h);
}

static void host_call(void *ctx, struct sl_program *p, uint32_t id, const struct sl_sandbox_tool *t,
		      yyjson_mut_doc *args, struct sl_sandbox_call **handle)
{
	struct run *r = ctx;
	struct sl_upstream *u = t->server;
	struct sl_sandbox_call *h = sl_alloc(sizeof(*h));
	enum sl_replay_step step = SL_REPLAY_LIVE;

	h->p = p;
	h->id = id;
	h->r = r;
	r->prog = p;
	if (r->rp) {
		sl_replay_args_hash(yyjson_mut_doc_get_root(args), h->ahash);
		step = sl_replay_next(r->rp, r->path, id, t->server == &skills_ns ? "skills" : u->name,
				      t->tool, h->ahash);
	}
	if (t->server == &skills_ns && (step == SL_REPLAY_LIVE || step == SL_REPLAY_PENDING) &&
	    !(r->rp && sl_replay_suspended(r->rp))) {
		*handle = h;
		skill_call(r, h, t->tool, args);
		return;
	}
	if (step == SL_REPLAY_RECORDED) {
		yyjson_mut_doc *d;
		yyjson_mut_val *value;
		const char *err;
		size_t err_len = 0;
		free(h);
		*handle = NULL;
		yyjson_mut_doc_free(args);
		sl_replay_result(r->rp, r->path, id, &d, &value, &err, &err_len);
		sl_program_call_done(p, id, d, value, err, err_len);
		return;
	}
	if (step == SL_REPLAY_DIVERGED || (r->rp && sl_replay_suspended(r->rp))) {
		/* Not made: the program ends (it diverged), or it is ending to
		 * ask, and the retry makes this call again. */
		*handle = h;
		yyjson_mut_doc_free(args);
		maybe_end(r);
		return;
	}
	r->live++;
	h->c = sl_call_new(r->gen, SL_ORIGIN_CODE, u, t->tool, args,
			   u->cfg->timeout_ms ? u->cfg->timeout_ms : r->gen->cfg->call_timeout_ms,
			   on_call_done, NULL, h);
	h->c->parent = sl_program_id(p);
	h->c->who = sl_caller_ref(r->who);
	sl_trace_ctx_copy(&h->c->trace, &r->trace);
	sl_session_bind_call(r->s, h->c);
	h->c->human = on_call_human;
	if (r->rp) {
		/* Stages ask through input_required (MCP 2026-07-28 MRTR); the
		 * pending call carries the person's answers to its stage. */
		h->c->mrtr = true;
		if (step == SL_REPLAY_PENDING) {
			const char *inner = sl_replay_inner_state(r->rp);
			yyjson_val *answers = sl_replay_answers(r->rp);
			if (inner && *inner)
				h->c->request_state = sl_strdup(inner);
			if (answers)
				h->c->input_responses = yyjson_val_mut_copy(h->c->doc, answers);
		}
	}
	/* MCP 2025-11-25 tasks: a tool that requires one is called as a task
	 * and its result awaited; "optional" ones are called plainly. */
	if (sl_tasks_supported(u)) {
		const char *support = sl_tasks_support(r->gw, u, t->tool);
		if (support && strcmp(support, "required") == 0)
			h->c->task = yyjson_mut_obj(h->c->doc);
	}
	*handle = h;
	sl_call_run(h->c);
}

static void host_cancel(void *ctx, struct sl_sandbox_call *h)
{
	/* Its done callback (now, or once a stage holding it resumes) only
	 * frees it. A task being awaited is cancelled on its server too (the
	 * program's time ran out, or it ended). */
	h->p = NULL;
	if (h->skill) {
		/* Its done (now) frees h. */
		sl_program_cancel(h->skill);
		return;
	}
	if (!h->c) {
		free(h); /* a call never made (replay.h) */
		return;
	}
	h->r->live--;
	if (h->task && !h->c->finished)
		sl_tasks_cancel_upstream(h->c->via ? h->c->via : h->c->up, h->task, h->c->timeout_ms);
	sl_call_cancel(h->c, "the program ended");
}

static void on_run_done(void *ctx, struct sl_program *p)
{
	struct run r = *(struct run *)ctx;
	/* The sandbox is done with the host: its context goes first, as the
	 * owner may free the program (or more) in done. */
	if (r.end) {
		uv_timer_stop(r.end);
		uv_close((uv_handle_t *)r.end, on_end_closed);
	}
	free(ctx);
	free(r.path);
	r.done(r.ctx, p, r.gen);
	sl_gen_unref(r.gen);
	sl_caller_unref(r.who);
	sl_trace_ctx_dispose(&r.trace);
}

static void on_run_step(void *ctx, struct sl_program *p, const char *server, const char *tool)
{
	struct run *r = ctx;
	r->step(r->ctx, p, server, tool);
}

static struct sl_program *start_run(struct sl_gateway *gw, struct sl_session *s,
				    struct sl_caller *who, const char *code, size_t len,
				    struct sl_replay *rp, const struct sl_trace_ctx *trace,
				    sl_codemode_done_fn done, sl_program_step_fn step, void *ctx,
				    unsigned depth, char *path)
{
	struct run *r = sl_alloc(sizeof(*r));
	char key[SL_SHA256_HEX];
	struct sl_sandbox_host host = { r, host_server, host_resolve, host_call, host_cancel,
					owner_of(who, key), host_tools };
	struct sl_program *p;

	r->gw = gw;
	r->gen = sl_gen_ref(gw->gen);
	r->s = s;
	r->who = sl_caller_ref(who);
	if (trace)
		sl_trace_ctx_copy(&r->trace, trace);
	r->done = done;
	r->step = step;
	r->ctx = ctx;
	r->rp = rp;
	r->path = path;
	r->depth = depth;
	r->skills = sl_codemode_skills_exist(who);
	p = sl_program_start(gw->sandbox, &host, code, len, on_run_done,
			     step ? on_run_step : NULL, r);
	if (rp)
		sl_program_fix(p, sl_replay_seed(rp), sl_replay_clock(rp), sl_replay_recorded(rp));
	return p;
}

struct sl_program *sl_codemode_run_replay(struct sl_gateway *gw, struct sl_session *s,
					  struct sl_caller *who, const char *code, size_t len,
					  struct sl_replay *rp, const struct sl_trace_ctx *trace,
					  sl_codemode_done_fn done, sl_program_step_fn step,
					  void *ctx)
{
	return start_run(gw, s, who, code, len, rp, trace, done, step, ctx, 0, NULL);
}

struct sl_program *sl_codemode_run(struct sl_gateway *gw, struct sl_session *s, const char *code,
				   size_t len, sl_codemode_done_fn done, sl_program_step_fn step,
				   void *ctx)
{
	return sl_codemode_run_replay(gw, s, s ? s->caller : NULL, code, len, NULL, NULL, done,
				      step, ctx);
}

/* ---- execute_code ------------------------------------------------------------------- */

yyjson_mut_val *sl_codemode_definition(const struct sl_view *v, yyjson_mut_doc *d)
{
	const struct sl_gateway *gw = v->gw;
	const struct sl_code_limits *l = &gw->gen->cfg->code;
	size_t k = 0;
	yyjson_mut_val *t = yyjson_mut_obj(d), *schema, *props, *p, *req, *ann;
	struct sl_buf b;
	char *desc;

	sl_buf_init(&b, 1u << 16);
	/* Every client session carries this text: kept under 150 tokens (o200k_base) with a few
	 * servers, and it says only what a model cannot find out with search_tools. The
	 * language property is an enum without a type, and the text says "JS or TS": with
	 * four servers the whole definition is under 150 tokens; one line says what the runtime has
	 * (docs/internals/SANDBOX.md, "The runtime's APIs"). */
	(void)!sl_buf_appends(&b, "Run JS or TS (async function body). "
			      "`await tools.<server>.<tool>(args)` returns the tool's result "
			      "(structured, or text parsed if JSON) or throws. Return only what the "
			      "answer needs. Servers:");
	for (size_t i = 0; i < gw->nups; i++) {
		char ident[SL_SERVER_NAME_MAX + 2];
		if (!sl_view_server(v, gw->ups[i]))
			continue;
		sl_code_ident(gw->ups[i]->name, ident);
		(void)!sl_buf_printf(&b, "%s %s", k++ ? "," : "", ident);
	}
	/* The runtime's APIs in one line (docs/internals/SANDBOX.md). */
	(void)!sl_buf_printf(&b, ". Has setTimeout, URL, TextEncoder, atob, structuredClone, "
			     "crypto, en-US Intl. Limits: %g s, %u calls, %zu KiB out.",
			     (double)l->timeout_ms / 1000.0, l->max_calls, l->max_output >> 10);
	desc = sl_buf_take(&b, NULL);

	yyjson_mut_obj_add_str(d, t, "name", SL_EXECUTE_CODE);
	yyjson_mut_obj_add_strcpy(d, t, "description", desc);
	free(desc);
	schema = yyjson_mut_obj(d);
	props = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, schema, "type", "object");
	p = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, p, "type", "string");
	yyjson_mut_obj_add_val(d, props, "code", p);
	/* Optional: without it a program that is not JavaScript is tried as
	 * TypeScript (docs/internals/SANDBOX.md, "TypeScript"). */
	p = yyjson_mut_obj(d);
	{
		yyjson_mut_val *e = yyjson_mut_arr(d);
		yyjson_mut_arr_add_str(d, e, "js");
		yyjson_mut_arr_add_str(d, e, "ts");
		yyjson_mut_obj_add_val(d, p, "enum", e);
	}
	yyjson_mut_obj_add_val(d, props, "language", p);
	yyjson_mut_obj_add_val(d, schema, "properties", props);
	req = yyjson_mut_arr(d);
	yyjson_mut_arr_add_str(d, req, "code");
	yyjson_mut_obj_add_val(d, schema, "required", req);
	yyjson_mut_obj_add_val(d, t, "inputSchema", schema);
	/* It runs code that can call any tool: careful clients ask first. */
	ann = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, ann, "destructiveHint", true);
	yyjson_mut_obj_add_bool(d, ann, "openWorldHint", true);
	yyjson_mut_obj_add_val(d, t, "annotations", ann);
	return t;
}

void sl_codemode_output(struct sl_gen *gen, const struct sl_program_result *r, uint64_t program,
			struct sl_session *s, const struct sl_caller *who,
			const struct sl_trace *trace, struct sl_output *o)
{
	const char *cons = r->console_len ? "\n\n[console]\n" : "";
	const char *cut = r->console_cut ? "\n[console output cut at its limit]" : "";

	memset(o, 0, sizeof(*o));
	o->program = program;
	o->session = s;
	o->session_id = s ? s->id : 0;
	sl_session_client_key(s, o->client_key);
	o->who = who;
	o->trace = trace;
	o->outcome = r->cancelled ? "cancelled" : r->ok ? "ok" : r->kind;
	o->calls = r->calls;
	o->duration_ms = r->duration_ms;
	o->output_bytes = r->ok ? r->text_len : 0;
	o->is_error = !r->ok;
	if (!r->cancelled) {
		/* Lengths, not C strings: the value and the console may hold NUL. */
		struct sl_buf b;
		sl_buf_init(&b, SIZE_MAX);
		if (!r->ok)
			(void)!sl_buf_printf(&b, "%s: ", r->kind);
		(void)!sl_buf_append(&b, r->text, r->text_len);
		(void)!sl_buf_appends(&b, cons);
		(void)!sl_buf_append(&b, r->console, r->console_len);
		(void)!sl_buf_appends(&b, cut);
		o->text = sl_buf_take(&b, &o->text_len);
	}
	/* The answer passes the stage table as a tool result does: redaction,
	 * guard, governor, telemetry and audit (docs/internals/PIPELINE.md). */
	sl_stages_output(gen, o);
}

yyjson_mut_val *sl_codemode_result(const struct sl_output *o, yyjson_mut_doc *d)
{
	yyjson_mut_val *res = yyjson_mut_obj(d), *content = yyjson_mut_arr(d), *t;

	if (o->warning) {
		t = yyjson_mut_obj(d);
		yyjson_mut_obj_add_str(d, t, "type", "text");
		yyjson_mut_obj_add_strcpy(d, t, "text", o->warning);
		yyjson_mut_arr_append(content, t);
	}
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, t, "type", "text");
	yyjson_mut_obj_add_strncpy(d, t, "text", o->text ? o->text : "", o->text ? o->text_len : 0);
	yyjson_mut_arr_append(content, t);
	yyjson_mut_obj_add_val(d, res, "content", content);
	if (o->is_error)
		yyjson_mut_obj_add_bool(d, res, "isError", true);
	return res;
}

int sl_codemode_check(const struct sl_config *c, struct sl_err *err)
{
	for (size_t i = 0; i < c->nservers; i++) {
		char a[SL_SERVER_NAME_MAX + 2];
		sl_code_ident(c->servers[i].name, a);
		if (c->code_enabled && strcmp(a, SL_SKILLS_SERVER) == 0) {
			sl_err_set(err, "%s: server '%s' would be tools.skills in code mode, where the "
				   "saved skills are: rename it", c->path, c->servers[i].name);
			return SL_ERR_INVALID;
		}
	}
	for (size_t i = 0; i < c->nservers; i++)
		for (size_t j = 0; j < i; j++) {
			char a[SL_SERVER_NAME_MAX + 2], b[SL_SERVER_NAME_MAX + 2];
			sl_code_ident(c->servers[i].name, a);
			sl_code_ident(c->servers[j].name, b);
			if (strcmp(a, b) == 0) {
				sl_err_set(err, "%s: servers '%s' and '%s' would both be tools.%s in code "
					   "mode: rename one", c->path, c->servers[j].name,
					   c->servers[i].name, a);
				return SL_ERR_INVALID;
			}
		}
	return SL_OK;
}

/* ---- skills ------------------------------------------------------------------------- */

bool sl_codemode_skill_denied(const struct sl_gateway *gw, const struct sl_caller *who,
			      const char *name)
{
	const struct sl_policy *p =
		sl_policy_current(gw->gen ? sl_gen_state(gw->gen, &sl_stage_policy) : NULL);
	int rule;

	/* No annotations: a skill is a program, its calls are decided each. */
	return sl_policy_decide(p, who, SL_SKILLS_SERVER, name, NULL, false, &rule) ==
	       SL_POLICY_DENY;
}

/* name on the shelf of owner (NULL: the operator's), as sl_codemode_skill
 * answers, but SL_ERR_NOT_FOUND with err untouched when it has no such
 * file, and SL_ERR_STATE when the file is there but hidden. */
static int shelf_skill(const char *owner, const char *name, struct sl_skill *out,
		       struct sl_err *err)
{
	/* A model may call a hidden skill in a loop: its warnings are a few a
	 * minute, not one a call. */
	static struct sl_rate warned;
	struct sl_skill_shelf sh;
	struct sl_err e = { 0 };
	int rc;

	sl_skills_shelf(owner, &sh);
	rc = sl_skill_read(sh.dir, name, out, &e);
	if (rc < 0 && rc != SL_ERR_NOT_FOUND) {
		if (sl_rate_admit(&warned, 60000, 5))
			sl_log(SL_LOG_WARN, "skills: %s", e.msg);
		sl_err_set(err, "skill '%.100s' cannot be read (sluice's log says why)", name);
	} else if (rc == 0 && !sl_skill_approved(sh.pins, out)) {
		/* Changed outside save_skill (or never confirmed): hidden. */
		if (sl_rate_admit(&warned, 60000, 5))
			sl_log(SL_LOG_WARN, "skills: %s/%s.json differs from what was approved: it is "
			       "hidden until `sluice skills approve %s%s%s`", sh.dir, name,
			       owner ? owner : "", owner ? "/" : "", name);
		sl_skill_dispose(out);
		rc = SL_ERR_STATE;
	}
	sl_skills_shelf_dispose(&sh);
	return rc;
}

int sl_codemode_skill(const struct sl_gateway *gw, const struct sl_caller *who, const char *name,
		      struct sl_skill *out, struct sl_err *err)
{
	char owner[SL_SHA256_HEX];
	int rc = SL_ERR_NOT_FOUND;

	/* The caller's own shelf, then the operator's: nobody else's exists
	 * for it, and a denied name is as absent. */
	if (!sl_codemode_skill_denied(gw, who, name)) {
		if (sl_skills_owner(who, owner))
			rc = shelf_skill(owner, name, out, err);
		if (rc == SL_ERR_NOT_FOUND)
			rc = shelf_skill(NULL, name, out, err);
	}
	if (rc == SL_ERR_NOT_FOUND || rc == SL_ERR_STATE) {
		sl_err_set(err, "there is no skill '%.100s' (save_skill saves one)", name);
		rc = SL_ERR_NOT_FOUND;
	} else if (rc == SL_OK && out->code_len > gw->gen->cfg->code.max_source) {
		/* A file put on a shelf by hand: it runs as a program, whose
		 * bound holds (save_skill refuses such code). */
		sl_err_set(err, "skill '%.100s' cannot run: its code is %zu bytes, over "
			   "codeMode.maxSourceBytes (%zu)", name, out->code_len,
			   gw->gen->cfg->code.max_source);
		sl_skill_dispose(out);
		rc = SL_ERR_TOO_LARGE;
	}
	return rc;
}

bool sl_codemode_skills_exist(const struct sl_caller *who)
{
	char owner[SL_SHA256_HEX];
	struct sl_skill_shelf sh;
	bool any;

	sl_skills_shelf(NULL, &sh);
	any = sl_skills_exist(sh.dir);
	sl_skills_shelf_dispose(&sh);
	if (!any && sl_skills_owner(who, owner)) {
		sl_skills_shelf(owner, &sh);
		any = sl_skills_exist(sh.dir);
		sl_skills_shelf_dispose(&sh);
	}
	return any;
}

char *sl_codemode_skill_code(const struct sl_skill *sk, const char *args, size_t args_len,
			     bool nested, size_t *len, size_t *pre, size_t *post)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	size_t qlen;
	char *quoted = sl_json_write_mut_val(yyjson_mut_strncpy(d, args, args_len), &qlen);
	struct sl_buf b;

	/* All on the code's first line, so that its line numbers stay; JSON.parse
	 * rather than a literal, where "__proto__" would set the prototype. */
	sl_buf_init(&b, SIZE_MAX);
	(void)!sl_buf_appends(&b, "const args = JSON.parse(");
	(void)!sl_buf_append(&b, quoted, qlen);
	(void)!sl_buf_appends(&b, nested ? "); return JSON.stringify((await (async () => {" : "); ");
	*pre = b.len;
	(void)!sl_buf_append(&b, sk->code, sk->code_len);
	if (nested)
		(void)!sl_buf_appends(&b, "\n})()) ?? null);");
	*post = b.len - *pre - sk->code_len;
	free(quoted);
	yyjson_mut_doc_free(d);
	return sl_buf_take(&b, len);
}

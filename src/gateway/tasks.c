/*
 * Tasks (MCP 2025-11-25 basic/utilities/tasks): a task-augmented
 * tools/call is relayed to its server, and the task it creates is held
 * here under an id of the gateway's, bound to the client session that
 * created it (docs/internals/TASKS.md):
 *
 *   tools/call {task}  -> the pipeline's request half decides, the server
 *                         answers a CreateTaskResult: an entry is made,
 *                         the client sees our id
 *   tasks/get, tasks/cancel   forwarded to the task's server with its id
 *   tasks/result       a pipeline call from dispatch: the tool's output
 *                      passes the response half (redaction, guard,
 *                      governor) and the finish hooks (audit) as any
 *                      tools/call result does
 *   tasks/list         the session's own entries, from what was last heard
 *   notifications/tasks/status   to the owning session only
 *
 * An id names nothing outside the gateway's map: 128 random bits, and a
 * lookup from another session fails as an unknown id would. Entries are
 * bounded per session and in all (sluice.limits.tasksPerSession,
 * maxTasks) and freed once terminal and fetched, at the session's end, or
 * after their TTL.
 */
#include "gateway/session_int.h"
#include "auth/caller.h"
#include "core/digest.h"
#include "core/escape.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RELATED_TASK "io.modelcontextprotocol/related-task"
#define TASKS_EXT "io.modelcontextprotocol/tasks"
#define SEALED_MAX 600 /* the longest 2026-07-28 task id read */

struct sl_task {
	char id[40];            /* ours: "task-" and 32 hex digits */
	struct sl_session *s;   /* the owner */
	struct sl_upstream *up;
	char *up_id;            /* the server's id */
	char *key;              /* in gw->task_ups */
	char *tool;             /* the server's own tool name */
	yyjson_doc *args;       /* the call's arguments, for the fetch's stages */
	yyjson_doc *last;       /* the last Task object heard, with our id */
	uint64_t created_ms, expires_ms;
	bool terminal;
	bool fetched;
};

static void task_free(struct sl_gateway *gw, struct sl_task *t)
{
	sl_map_del(&gw->tasks, t->id);
	sl_map_del(&gw->task_ups, t->key);
	gw->ntasks--;
	if (t->s)
		t->s->ntasks--;
	free(t->up_id);
	free(t->key);
	free(t->tool);
	yyjson_doc_free(t->args);
	yyjson_doc_free(t->last);
	free(t);
}

static bool is_terminal(const char *status)
{
	return status && (strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
			  strcmp(status, "cancelled") == 0);
}

/* ---- bounds ------------------------------------------------------------------- */

static void expire_one(const char *key, void *value, void *ctx)
{
	struct sl_task *t = value;
	if (sl_now_ms() >= t->expires_ms)
		task_free(ctx, t);
}

struct oldest {
	const struct sl_session *s;
	struct sl_task *t;
};

static void find_oldest(const char *key, void *value, void *ctx)
{
	struct sl_task *t = value;
	struct oldest *o = ctx;
	if (t->s == o->s && t->terminal && (!o->t || t->created_ms < o->t->created_ms))
		o->t = t;
}

/* Makes room for one more task of s: expired entries go, then s's oldest
 * finished one if s is at its bound. Returns false (with why) if there is
 * still none. */
static bool reserve(struct sl_session *s, char *why, size_t n)
{
	struct sl_gateway *gw = s->gw;
	const struct sl_limits *l = &gw->gen->cfg->limits;

	sl_map_each(&gw->tasks, expire_one, gw);
	if (s->ntasks >= l->tasks_per_session) {
		struct oldest o = { s, NULL };
		sl_map_each(&gw->tasks, find_oldest, &o);
		if (o.t)
			task_free(gw, o.t);
	}
	if (s->ntasks >= l->tasks_per_session) {
		snprintf(why, n, "this session holds %u tasks, the limit (sluice.limits.tasksPerSession): "
			 "fetch their results or cancel some first", s->ntasks);
		return false;
	}
	if (gw->ntasks >= l->max_tasks) {
		snprintf(why, n, "the gateway holds %u tasks, the limit (sluice.limits.maxTasks); try "
			 "again later", gw->ntasks);
		return false;
	}
	s->ntasks++;
	gw->ntasks++;
	return true;
}

static void unreserve(struct sl_session *s)
{
	s->ntasks--;
	s->gw->ntasks--;
}

/* ---- task objects ---------------------------------------------------------------- */

/* A task's statusMessage is the server's text: it passes the peer hooks,
 * and a withheld one is left out. */
static void filter_status(struct sl_gen *gen, struct sl_upstream *u, const char *method,
			  yyjson_mut_doc *d, yyjson_mut_val *task)
{
	yyjson_mut_val *text;
	struct sl_peer peer;

	if (!yyjson_mut_is_str(yyjson_mut_obj_get(task, "statusMessage")))
		return;
	text = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, text, "statusMessage", yyjson_mut_obj_remove_key(task, "statusMessage"));
	sl_peer_init(&peer, SL_PEER_ANSWER, method, u, d, text);
	sl_stages_peer(gen, &peer);
	if (!peer.withheld)
		yyjson_mut_obj_add_val(d, task, "statusMessage",
				       yyjson_mut_val_mut_copy(d, yyjson_mut_obj_get(text, "statusMessage")));
	sl_peer_dispose(&peer);
}

/* Rewrites a Task object of t's server (in d) for the client: our id, the
 * server's status message through the peer hooks (dropped if withheld);
 * remembers it as t's last state. */
static void present(struct sl_task *t, struct sl_gen *gen, const char *method, yyjson_mut_doc *d,
		    yyjson_mut_val *task)
{
	const char *status = yyjson_mut_get_str(yyjson_mut_obj_get(task, "status"));
	yyjson_mut_val *ttl = yyjson_mut_obj_get(task, "ttl");

	yyjson_mut_obj_remove_key(task, "taskId");
	yyjson_mut_obj_add_strcpy(d, task, "taskId", t->id);
	filter_status(gen, t->up, method, d, task);
	if (is_terminal(status))
		t->terminal = true;
	if (yyjson_mut_is_uint(ttl) && t->created_ms + yyjson_mut_get_uint(ttl) < t->expires_ms)
		t->expires_ms = t->created_ms + yyjson_mut_get_uint(ttl);
	yyjson_doc_free(t->last);
	t->last = yyjson_mut_val_imut_copy(task, NULL);
	if (!t->last)
		sl_oom();
}

/* s's task named by m's params.taskId; else answers m with an error. */
static struct sl_task *lookup(struct sl_session *s, struct sl_msg *m)
{
	const char *id = m->params ? sl_json_str(m->params, "taskId") : NULL;
	struct sl_task *t;
	char msg[200];

	if (!id) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: taskId is required");
		return NULL;
	}
	sl_map_each(&s->gw->tasks, expire_one, s->gw);
	t = sl_map_get(&s->gw->tasks, id);
	/* Another session's task is as unknown as a made-up id: its
	 * existence is not revealed (MCP 2025-11-25 tasks, "Task Isolation"). */
	if (!t || t->s != s) {
		snprintf(msg, sizeof(msg), "Invalid params: unknown task '%.60s' (a task is known only "
			 "to the session that created it, until its result is fetched or it expires)", id);
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
		return NULL;
	}
	return t;
}

/* ---- 2026-07-28: the tasks extension ----------------------------------------------------- */

/*
 * 2026-07-28 has no session to bind a task to, and sluice keeps nothing
 * for these tasks: the id is sealed, "t2.<hex server>.<hex server's
 * id>.<HMAC>", under the generation key (kept across reloads). It cannot
 * be forged: a 2026 client can name only a task sluice handed to a 2026
 * client, never a legacy session's (those are random ids in the map). The
 * seal covers the key of the caller the task was created for (identity and
 * profile, auth/caller.h) without carrying it: the same id sent by another
 * caller is an unknown task, as a legacy task is outside its session.
 */
static char *hex(const char *v)
{
	size_t n = strlen(v);
	char *o = sl_alloc(2 * n + 1);
	sl_hex(v, n, o);
	return o;
}

/* The id's seal (core/digest.h): what it stands for is the payload, for
 * who (NULL: the anonymous caller). */
static char *task_what(const char *payload, const struct sl_caller *who)
{
	return sl_printf("sluice-task:%s\x1f%s", who ? who->key : "", payload);
}

/* NULL if a part holds the separator (the id could not be read back). */
static char *seal(const struct sl_gen *gen, const struct sl_caller *who, const char *server,
		  const char *tool, const char *up_id)
{
	char m[SL_SEAL_TAG_HEX + 1], *payload, *hp, *id, *what;
	if (strchr(tool, '\x1f') || strchr(up_id, '\x1f'))
		return NULL;
	payload = sl_printf("%s\x1f%s\x1f%s", server, tool, up_id);
	what = task_what(payload, who);
	sl_seal_tag(gen->key, sizeof(gen->key), what, m);
	free(what);
	hp = hex(payload);
	id = sl_printf("t2.%s.%s", hp, m);
	free(payload);
	free(hp);
	return id;
}

/* Decodes n hex digits at p into a new string; NULL if not lowercase hex
 * or a NUL inside. */
static char *unhex(const char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char *o;
	if (n % 2)
		return NULL;
	o = sl_alloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		const char *h = memchr(digits, p[2 * i], 16), *l = memchr(digits, p[2 * i + 1], 16);
		if (!h || !l || !p[2 * i] || !p[2 * i + 1] || (h == digits && l == digits)) {
			free(o);
			return NULL;
		}
		o[i] = (char)((h - digits) << 4 | (l - digits));
	}
	o[n / 2] = 0;
	return o;
}

/* The server of a sealed id, with its id and tool in p; NULL (having
 * answered m) if the id is not one of ours, or not sealed for m's caller. */
static struct sl_upstream *unseal(struct sl_session *s, struct sl_msg *m, char **up_id, char **tool)
{
	const char *id = m->params ? sl_json_str(m->params, "taskId") : NULL;
	const char *dot;
	char *payload = NULL, *a, *b, *what;
	struct sl_upstream *u = NULL;
	bool ours;
	char msg[200];

	if (!id) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: taskId is required");
		return NULL;
	}
	if (strncmp(id, "t2.", 3) == 0 && strlen(id) < SEALED_MAX && (dot = strchr(id + 3, '.')) &&
	    (payload = unhex(id + 3, dot - id - 3))) {
		what = task_what(payload, m->who);
		ours = sl_seal_tag_check(s->gw->gen->key, sizeof(s->gw->gen->key), what, dot + 1,
					 strlen(dot + 1));
		free(what);
		if (ours && (a = strchr(payload, '\x1f')) &&
		    (b = strchr(a + 1, '\x1f'))) {
			*a = *b = 0;
			u = sl_gateway_upstream(s->gw, payload);
			if (u) {
				*tool = sl_strdup(a + 1);
				*up_id = sl_strdup(b + 1);
			}
		}
	}
	free(payload);
	if (!u) {
		snprintf(msg, sizeof(msg), "Invalid params: unknown task '%.60s'", id);
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, msg);
	}
	return u;
}

bool sl_tasks_ext(struct sl_session *s, struct sl_msg *m)
{
	yyjson_val *caps = sl_session_caps(s, m, true);
	return sl_json_obj(sl_json_obj(caps, "extensions"), TASKS_EXT) != NULL;
}

/* A legacy Task object (in d) in the 2026-07-28 shape, with id. */
static void modernize(struct sl_gen *gen, struct sl_upstream *u, const char *method,
		      yyjson_mut_doc *d, yyjson_mut_val *task, const char *id)
{
	static const char *const renamed[][2] = { { "ttl", "ttlMs" }, { "pollInterval", "pollIntervalMs" } };
	yyjson_mut_obj_remove_key(task, "taskId");
	yyjson_mut_obj_add_strcpy(d, task, "taskId", id);
	for (size_t i = 0; i < SL_COUNT(renamed); i++) {
		yyjson_mut_val *v = yyjson_mut_obj_remove_key(task, renamed[i][0]);
		if (v)
			yyjson_mut_obj_add_val(d, task, renamed[i][1], v);
	}
	yyjson_mut_obj_remove_key(task, "_meta");
	filter_status(gen, u, method, d, task);
}

static yyjson_mut_val *created_modern(struct sl_session *s, struct sl_pending *p, struct sl_call *c,
				      yyjson_mut_doc *d, yyjson_mut_val *r)
{
	yyjson_mut_val *task = yyjson_mut_obj_get(r, "task");
	char *id = seal(c->gen, c->who, c->up->name, c->tool,
			yyjson_mut_get_str(yyjson_mut_obj_get(task, "taskId")));

	if (!id) {
		sl_tasks_cancel_upstream(c->via, yyjson_mut_get_str(yyjson_mut_obj_get(task, "taskId")),
					 c->timeout_ms);
		return sl_calls_error_result(d, "the server's task id cannot be relayed "
						 "(it holds a control character)");
	}
	/* SEP-2663: CreateTaskResult is Result & Task, resultType "task". */
	modernize(c->gen, c->up, "tools/call", d, task, id);
	yyjson_mut_obj_add_str(d, task, "resultType", "task");
	free(id);
	return task;
}

void sl_tasks_tools_call_modern(struct sl_session *s, struct sl_msg *m, struct sl_upstream *up,
				const char *tool, yyjson_val *args)
{
	struct sl_pending *p = sl_calls_prepare(s, m, true, SL_ORIGIN_DIRECT, up, tool, args, NULL);
	p->u.call.call->task = yyjson_mut_obj(p->u.call.call->doc);
	sl_call_run(p->u.call.call);
}

void sl_tasks_answer_state(struct sl_session *s, struct sl_pending *p, struct sl_call *c)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *task = yyjson_val_mut_copy(d, yyjson_doc_get_root(p->task_state));
	yyjson_mut_val *status;

	if (!d)
		sl_oom();
	yyjson_mut_obj_remove_key(task, "status");
	switch (c->outcome) {
	case SL_OUTCOME_OK: {
		/* The tool's output, past the response half; a tool's isError
		 * result is still a completed task (SEP-2663: failed is for
		 * JSON-RPC errors). */
		yyjson_mut_val *r = sl_call_result_copy(c, d), *it;
		size_t i, n;
		yyjson_mut_obj_remove_key(r, "_meta");
		yyjson_mut_arr_foreach(yyjson_mut_obj_get(r, "content"), i, n, it)
			sl_forward_namespace_block(s, d, it, c->up);
		status = yyjson_mut_str(d, "completed");
		yyjson_mut_obj_add_val(d, task, "result", r);
		break;
	}
	case SL_OUTCOME_RPC_ERROR:
		status = yyjson_mut_str(d, "failed");
		yyjson_mut_obj_add_val(d, task, "error", yyjson_val_mut_copy(d, c->rpc_error));
		break;
	case SL_OUTCOME_CANCELLED:
		yyjson_mut_doc_free(d);
		return;
	default:
		/* No answer from the server: the task is not known to have
		 * ended; the poll failed. */
		yyjson_mut_doc_free(d);
		sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, c->why ? c->why : "the fetch failed");
		return;
	}
	yyjson_mut_obj_add_val(d, task, "status", status);
	sl_session_answer(s, &p->msg, true, false, d, task);
}

/* ---- creation ------------------------------------------------------------------------ */

bool sl_tasks_supported(const struct sl_upstream *u)
{
	yyjson_val *t = u->capabilities ? sl_json_obj(u->capabilities, "tasks") : NULL;
	return t && sl_json_obj(sl_json_obj(sl_json_obj(t, "requests"), "tools"), "call");
}

bool sl_tasks_any(const struct sl_gateway *gw)
{
	for (size_t i = 0; i < gw->nups; i++)
		if (sl_tasks_supported(gw->ups[i]))
			return true;
	return false;
}

const char *sl_tasks_support(const struct sl_gateway *gw, const struct sl_upstream *u,
			     const char *tool)
{
	for (size_t i = 0; i < gw->catalog.tools.n; i++) {
		const struct sl_entry *e = &gw->catalog.tools.v[i];
		if (e->up == u && strcmp(e->name, tool) == 0)
			return sl_json_str(sl_json_obj(e->def, "execution"), "taskSupport");
	}
	return NULL;
}

void sl_tasks_tools_call(struct sl_session *s, struct sl_msg *m, bool modern, struct sl_upstream *up,
			 const char *tool, yyjson_val *args)
{
	yyjson_val *task = sl_json_obj(m->params, "task");
	struct sl_pending *p;
	char why[300];

	/* MCP 2025-11-25 tasks: a receiver without the capability runs the
	 * request plainly, ignoring the task field; so does the gateway for a
	 * server without it. */
	if (!sl_tasks_supported(up)) {
		sl_session_start_call(s, m, modern, SL_ORIGIN_DIRECT, up, tool, args, NULL);
		return;
	}
	if (!reserve(s, why, sizeof(why))) {
		sl_log(SL_LOG_INFO, "a task was refused: %s", why);
		sl_session_error(s, m->id, SL_RPC_SERVER_ERROR, why);
		return;
	}
	p = sl_calls_prepare(s, m, modern, SL_ORIGIN_DIRECT, up, tool, args, NULL);
	p->task_reserved = true;
	p->u.call.call->task = yyjson_val_mut_copy(p->u.call.call->doc, task);
	/* The client's ttl wish goes to the server; ours caps what we keep. */
	sl_call_run(p->u.call.call);
}

yyjson_mut_val *sl_tasks_created(struct sl_session *s, struct sl_pending *p, struct sl_call *c,
				 yyjson_mut_doc *d, yyjson_mut_val *r)
{
	struct sl_gateway *gw = s->gw;
	yyjson_mut_val *task = yyjson_mut_obj_get(r, "task");
	const char *up_id = yyjson_mut_get_str(yyjson_mut_obj_get(task, "taskId"));
	struct sl_task *t;
	unsigned char rnd[16];

	/* The reservation becomes the entry. */
	p->task_reserved = false;
	if (p->modern)
		return created_modern(s, p, c, d, r);
	t = sl_alloc(sizeof(*t));
	sl_random(rnd, sizeof(rnd));
	memcpy(t->id, "task-", 5);
	sl_hex(rnd, sizeof(rnd), t->id + 5);
	t->s = s;
	t->up = c->up;
	t->up_id = sl_strdup(up_id);
	t->key = sl_printf("%s\x1f%s", c->up->name, up_id);
	t->tool = sl_strdup(c->tool);
	t->args = yyjson_mut_val_imut_copy(c->args, NULL);
	t->created_ms = sl_now_ms();
	t->expires_ms = t->created_ms + gw->gen->cfg->limits.task_ttl_ms;
	if (!t->args)
		sl_oom();
	sl_map_put(&gw->tasks, t->id, t);
	sl_map_put(&gw->task_ups, t->key, t);
	present(t, c->gen, "tools/call", d, task);
	sl_log(SL_LOG_DEBUG, "task %s: %s's %s on %s", t->id, c->up->name, up_id, c->tool);
	return r;
}

void sl_tasks_unreserve(struct sl_pending *p)
{
	if (p->task_reserved)
		unreserve(p->s);
	p->task_reserved = false;
}

/* ---- tasks/result ----------------------------------------------------------------------- */

void sl_tasks_result(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_task *t = lookup(s, m);
	struct sl_pending *p;

	if (!t)
		return;
	p = sl_calls_prepare(s, m, modern, SL_ORIGIN_DIRECT, t->up, t->tool,
			     yyjson_doc_get_root(t->args), NULL);
	p->task = sl_strdup(t->id);
	p->u.call.call->task_fetch = sl_strdup(t->up_id);
	sl_call_run(p->u.call.call);
}

void sl_tasks_fetched(struct sl_session *s, struct sl_pending *p, yyjson_mut_doc *d,
		      yyjson_mut_val *r)
{
	struct sl_task *t = p->task ? sl_map_get(&s->gw->tasks, p->task) : NULL;
	yyjson_mut_val *meta = yyjson_mut_obj_get(r, "_meta"), *rel;

	/* A task awaited for a plain tools/call: the client knows of no task. */
	if (!p->task) {
		if (yyjson_mut_is_obj(meta))
			yyjson_mut_obj_remove_key(meta, RELATED_TASK);
		return;
	}
	/* MCP 2025-11-25 tasks: the result names its task in _meta; ours. */
	if (yyjson_mut_is_obj(meta) && (rel = yyjson_mut_obj_get(meta, RELATED_TASK))) {
		rel = yyjson_mut_obj(d);
		yyjson_mut_obj_add_strcpy(d, rel, "taskId", p->task);
		yyjson_mut_obj_remove_key(meta, RELATED_TASK);
		yyjson_mut_obj_add_val(d, meta, RELATED_TASK, rel);
	}
	/* A result comes only once the task is terminal: its entry is done. */
	if (t && t->s == s)
		task_free(s->gw, t);
}

/* ---- tasks/get, tasks/cancel ---------------------------------------------------------------- */

/* A 2026-07-28 tasks/get found p's task finished: its result is fetched
 * (tasks/result, through the response half) and put into task. */
static void fetch_into(struct sl_pending *p, yyjson_mut_val *task)
{
	struct sl_session *s = p->s;
	struct sl_upstream *u = p->up;
	struct sl_msg m = p->msg;
	struct sl_caller *who = sl_caller_ref(p->who); /* m.who, past p */
	char *up_id = p->task_up, *tool = p->task_tool;
	yyjson_doc *state = yyjson_mut_val_imut_copy(task, NULL);
	struct sl_pending *f;

	if (!state)
		sl_oom();
	p->task_up = p->task_tool = NULL;
	memset(&p->msg, 0, sizeof(p->msg));
	sl_pending_free(p);
	/* The same request, now waiting on the fetch. */
	f = sl_calls_prepare(s, &m, true, SL_ORIGIN_DIRECT, u, tool, NULL, NULL);
	sl_caller_unref(who);
	free(tool);
	f->task_state = state;
	f->u.call.call->task_fetch = up_id;
	sl_call_run(f->u.call.call);
}

static void on_task_reply(void *ctx, struct sl_reply *r)
{
	struct sl_pending *p = ctx;
	struct sl_session *s = p->s;
	struct sl_task *t = sl_map_get(&s->gw->tasks, p->task);
	yyjson_mut_val *o, *res;
	yyjson_mut_doc *d;

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
	d = sl_rpc_response_new(p->msg.id, &o);
	if (r->kind == SL_REPLY_ERROR) {
		struct sl_peer peer;
		sl_peer_init(&peer, SL_PEER_ERROR, p->msg.method, p->up, d,
			     yyjson_val_mut_copy(d, r->msg->error));
		peer.can_mark = true;
		sl_stages_peer(s->gw->gen, &peer);
		sl_peer_error_apply(&peer);
		yyjson_mut_obj_add_val(d, o, "error", peer.val);
		sl_peer_dispose(&peer);
	} else if (p->modern) {
		res = yyjson_val_mut_copy(d, r->msg->result);
		if (!yyjson_mut_is_obj(res))
			res = yyjson_mut_obj(d);
		if (strcmp(p->msg.method, "tasks/cancel") == 0) {
			/* SEP-2663: an empty acknowledgement. */
			res = yyjson_mut_obj(d);
		} else {
			const char *status = yyjson_mut_get_str(yyjson_mut_obj_get(res, "status"));
			modernize(s->gw->gen, p->up, p->msg.method, d, res, p->task);
			if (status && (strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0)) {
				fetch_into(p, res);
				yyjson_mut_doc_free(d);
				return;
			}
		}
		sl_session_seal(d, res, true, false);
		yyjson_mut_obj_add_val(d, o, "result", res);
	} else {
		res = yyjson_val_mut_copy(d, r->msg->result);
		if (!yyjson_mut_is_obj(res))
			res = yyjson_mut_obj(d);
		if (t) {
			present(t, s->gw->gen, p->msg.method, d, res);
		} else {
			/* Its entry expired meanwhile: still never the server's id. */
			yyjson_mut_obj_remove_key(res, "taskId");
			yyjson_mut_obj_add_strcpy(d, res, "taskId", p->task);
		}
		sl_session_seal(d, res, p->modern, false);
		yyjson_mut_obj_add_val(d, o, "result", res);
	}
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = p->msg.id,
					      .error = r->kind == SL_REPLY_ERROR }, d);
	yyjson_mut_doc_free(d);
	sl_pending_free(p);
}

static void forward(struct sl_session *s, struct sl_msg *m, bool modern)
{
	struct sl_task *t = NULL;
	struct sl_upstream *u;
	char *up_id = NULL, *tool = NULL;
	yyjson_mut_doc *d;
	yyjson_mut_val *params;
	struct sl_pending *p;
	struct sl_err err;

	if (modern) {
		if (!(u = unseal(s, m, &up_id, &tool)))
			return;
	} else {
		if (!(t = lookup(s, m)))
			return;
		u = t->up;
		up_id = sl_strdup(t->up_id);
	}
	d = yyjson_mut_doc_new(NULL);
	params = yyjson_mut_obj(d);
	yyjson_mut_obj_add_strcpy(d, params, "taskId", up_id);
	p = sl_pending_new(s, m, modern, SL_PENDING_FORWARD);
	p->task = sl_strdup(t ? t->id : sl_json_str(p->msg.params, "taskId"));
	p->task_up = up_id;
	p->task_tool = tool;
	sl_pending_forward(p, u, d, params, on_task_reply, &err);
	yyjson_mut_doc_free(d);
	if (!p->u.ureq) {
		sl_session_error(s, p->msg.id, SL_RPC_INTERNAL_ERROR, err.msg);
		sl_pending_free(p);
	}
}

void sl_tasks_get(struct sl_session *s, struct sl_msg *m, bool modern)
{
	forward(s, m, modern);
}

void sl_tasks_cancel(struct sl_session *s, struct sl_msg *m, bool modern)
{
	forward(s, m, modern);
}

void sl_tasks_update(struct sl_session *s, struct sl_msg *m, bool modern)
{
	char *up_id = NULL, *tool = NULL;
	if (!unseal(s, m, &up_id, &tool))
		return;
	free(up_id);
	free(tool);
	/* Tasks come only from 2025-11-25 servers, whose questions travel on
	 * tasks/result; sluice never shows a task's inputRequests, so there is
	 * nothing a client could answer here (docs/internals/TASKS.md). */
	sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
			 "Invalid params: this task has no input requests to answer (tasks/update)");
}

/* ---- tasks/list ---------------------------------------------------------------------------- */

struct listing {
	const struct sl_session *s;
	yyjson_mut_doc *d;
	yyjson_mut_val *arr;
};

static void list_one(const char *key, void *value, void *ctx)
{
	struct sl_task *t = value;
	struct listing *l = ctx;
	if (t->s == l->s && t->last)
		yyjson_mut_arr_append(l->arr, yyjson_val_mut_copy(l->d, yyjson_doc_get_root(t->last)));
}

void sl_tasks_list(struct sl_session *s, struct sl_msg *m, bool modern)
{
	yyjson_mut_val *r;
	yyjson_mut_doc *d = sl_session_doc(&r);
	struct listing l = { s, d, yyjson_mut_arr(d) };

	/* The session's own tasks, as last heard: at most tasksPerSession, so
	 * one page. Another session's are never listed. */
	sl_map_each(&s->gw->tasks, expire_one, s->gw);
	sl_map_each(&s->gw->tasks, list_one, &l);
	yyjson_mut_obj_add_val(d, r, "tasks", l.arr);
	sl_session_answer(s, m, modern, false, d, r);
}

/* ---- status notifications, session end ------------------------------------------------------ */

void sl_tasks_status(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m)
{
	const char *up_id = sl_json_str(m->params, "taskId");
	struct sl_task *t;
	yyjson_mut_doc *d;
	yyjson_mut_val *params;
	char *key;

	if (!up_id)
		return;
	key = sl_printf("%s\x1f%s", u->name, up_id);
	t = sl_map_get(&s->gw->task_ups, key);
	free(key);
	/* Only the session that created the task hears of it. */
	if (!t || t->s != s)
		return;
	d = yyjson_mut_doc_new(NULL);
	params = yyjson_val_mut_copy(d, m->params);
	present(t, s->gw->gen, m->method, d, params);
	yyjson_mut_obj_add_val(d, sl_rpc_envelope(d, NULL, m->method), "params", params);
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_NOTIFICATION }, d);
	yyjson_mut_doc_free(d);
}

void sl_tasks_cancel_upstream(struct sl_upstream *u, const char *up_id, uint64_t timeout_ms)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *params = yyjson_mut_obj(d);
	struct sl_err err;

	yyjson_mut_obj_add_strcpy(d, params, "taskId", up_id);
	if (!sl_upstream_request(u, "tasks/cancel", d, params, timeout_ms, NULL, NULL, NULL, &err))
		sl_log(SL_LOG_DEBUG, "task %s of %s not cancelled: %s", up_id, u->name, err.msg);
	yyjson_mut_doc_free(d);
}

static void end_one(const char *key, void *value, void *ctx)
{
	struct sl_task *t = value;
	struct sl_session *s = ctx;
	struct sl_upstream *link;
	struct sl_err err;

	if (t->s != s)
		return;
	/* Nobody can fetch it now: the server may stop working on it. */
	link = sl_upstream_for(t->up, s->caller, &err);
	if (!t->terminal && link && link->state == SL_UP_READY)
		sl_tasks_cancel_upstream(link, t->up_id, s->gw->gen->cfg->call_timeout_ms);
	task_free(s->gw, t);
}

void sl_tasks_session_end(struct sl_session *s)
{
	sl_map_each(&s->gw->tasks, end_one, s);
}

static void dispose_one(const char *key, void *value, void *ctx)
{
	struct sl_task *t = value;
	/* Its session was freed without closing (the process is ending). */
	t->s = NULL;
	task_free(ctx, t);
}

void sl_tasks_dispose(struct sl_gateway *gw)
{
	sl_map_each(&gw->tasks, dispose_one, gw);
	sl_map_dispose(&gw->tasks);
	sl_map_dispose(&gw->task_ups);
}

/*
 * What the parts of a session share (private to src/gateway/):
 *
 *   session.c   the method table, dispatch, eras, sending, lifecycle
 *   calls.c     tools/list, tools/call and execute_code; the in-flight
 *               requests (struct sl_pending) and their one cancel
 *   forward.c   resources, prompts and completion: listed from the catalog
 *               or forwarded to the server that owns them
 *   relay.c     requests of ours to the client: relayed for a server
 *               (elicitation, sampling, roots) or the gateway's own
 *   park.c      the same for 2026-07-28 clients: a tools/call answered
 *               input_required, its upstream call parked until the retry
 */
#ifndef SL_GATEWAY_SESSION_INT_H
#define SL_GATEWAY_SESSION_INT_H

#include "gateway/session.h"
#include "sandbox/sandbox.h"

/* A method's handler: answers m (now or later; it may take m's document). */
typedef void (*sl_method_fn)(struct sl_session *s, struct sl_msg *m, bool modern);

enum sl_pending_kind {
	SL_PENDING_CALL,     /* tools/call through the pipeline */
	SL_PENDING_PROGRAM,  /* execute_code */
	SL_PENDING_FORWARD,  /* another request forwarded to its server */
	SL_PENDING_LOOKUP,   /* read_result waiting for the shared store (router.c) */
};

/* A client request the session is working on, in s->calls by its id. */
struct sl_pending {
	struct sl_session *s;
	enum sl_pending_kind kind;
	struct sl_msg msg;           /* the request; owns the id; msg.who is who */
	struct sl_caller *who;       /* the request's caller (a reference; NULL: anonymous):
				      * the calls and the program it starts carry it */
	bool modern;
	struct sl_upstream *up;      /* the server it waits on (none: a program) */
	char key[80];
	uint32_t asks;               /* sampling and elicitation relayed for it */
	bool task_reserved;          /* a task creation holding a place (tasks.c) */
	bool await_task;             /* a task-required tool called plainly: sluice makes
				      * the task and answers with its result */
	char *task;                  /* owned: tasks/result, get, cancel: our task id */
	char *task_up, *task_tool;   /* owned: 2026-07-28 tasks/get: the server's id, the tool */
	yyjson_doc *task_state;      /* 2026-07-28 tasks/get of a finished task: the Task the
				      * fetched result goes into */
	bool asks_logged;            /* its refusals were logged (once a call) */
	struct sl_park *park;        /* 2026-07-28: its call's questions (park.c), or NULL */
	union {
		struct {
			struct sl_call *call;
			bool router;         /* answer upstream errors as isError results */
			uint64_t progress_us;/* when the last progress notification went out */
			uv_timer_t *defer;   /* the answer waits a moment after a progress */
		} call;
		struct {
			struct sl_program *program;
			unsigned steps;      /* tool calls finished, for progress */
			struct sl_replay *replay; /* a 2026-07-28 run that may ask (replay.h) */
			/* A retry whose state is being marked used on the shared
			 * store (shared/once.h): the program starts once it is,
			 * from code (owned, len bytes) and lang. */
			struct sl_once_wait *claim;
			char *code;
			size_t len;
			const char *lang;
			size_t pre, post;    /* sl_program_set_wrap's */
		} program;
		struct sl_ureq *ureq;        /* forwarded */
		struct sl_kept_wait *lookup; /* read_result (gateway/kept.h) */
	} u;
};

/* ---- session.c: sending ---- */

/* Sends d as message o describes (o->line is filled here); d stays the
 * caller's. With o->splice (a reference, taken), d holds the raw value
 * SL_SESSION_SPLICE_MARK once, where the spliced bytes go. Nothing goes
 * out once the session is closing. */
void sl_session_send(struct sl_session *s, struct sl_out *o, yyjson_mut_doc *d);
/* One byte that no written JSON holds otherwise (yyjson escapes control
 * characters in strings), as a raw value: where spliced bytes go. */
#define SL_SESSION_SPLICE_MARK "\x01"
/* Sends {"result": result} for m, sealed for the era (cacheable: a list
 * result), and frees d. */
void sl_session_answer(struct sl_session *s, struct sl_msg *m, bool modern, bool cacheable,
		       yyjson_mut_doc *d, yyjson_mut_val *result);
/* The same, with bytes [off, off + len) of k (a reference, taken) in place
 * of the raw value SL_SESSION_SPLICE_MARK in result, sent without a copy
 * where the transport can (a rendered tools/list: listing.c). */
void sl_session_answer_spliced(struct sl_session *s, struct sl_msg *m, bool modern,
			       bool cacheable, yyjson_mut_doc *d, yyjson_mut_val *result,
			       struct sl_blob *k, size_t off, size_t len);
/* Completes result for the era: resultType in 2026-07-28, and ttlMs and
 * cacheScope on cacheable results. */
void sl_session_seal(yyjson_mut_doc *d, yyjson_mut_val *result, bool modern, bool cacheable);
/* A new document with an empty object in *obj (not its root). */
yyjson_mut_doc *sl_session_doc(yyjson_mut_val **obj);
/* The method table's own (static) copy of name, or name when it has none:
 * an upstream request keeps its method's name for its life, which a
 * parked one lives past its client request's (park.c). */
const char *sl_session_method_name(const char *name);
/* params._meta of m, or NULL. */
yyjson_val *sl_session_meta(struct sl_msg *m);
/* The client's capabilities for m: its _meta's (2026-07-28) or the session's. */
yyjson_val *sl_session_caps(struct sl_session *s, struct sl_msg *m, bool modern);
/* The map key of a request id. */
void sl_session_id_key(yyjson_val *id, char *out, size_t n);

/* ---- calls.c ---- */

/* Registers m (taken) as in flight under its id, with a reference to its
 * sender (m->who). */
struct sl_pending *sl_pending_new(struct sl_session *s, struct sl_msg *m, bool modern,
				  enum sl_pending_kind kind);
void sl_pending_free(struct sl_pending *p);
/* The client cancelled p (notifications/cancelled) or went away (the
 * session is closing): whatever p waits on is cancelled, and p ends
 * unanswered. why is what the server hears. */
void sl_pending_cancel(struct sl_pending *p, const char *why);
/* Counts m, u's request that s is about to relay to its client, against
 * sluice.limits.serverRequestsPerCall (the call of s that waits on u) and
 * serverRequestsPerMinute (u's). Returns false if over either: u got a
 * JSON-RPC error naming the bound, logged once a call or a window. Only
 * sampling and elicitation count; anything else passes. */
/* An isError tool result with one text block (calls.c). */
yyjson_mut_val *sl_calls_error_result(yyjson_mut_doc *d, const char *text);
/* Sends p's request (p->msg.method, its params in d) to server u, through
 * the link that serves p's caller, with the server's timeout:
 * p->up and p->u.ureq are set. False, with err set, if it cannot go. */
bool sl_pending_forward(struct sl_pending *p, struct sl_upstream *u, yyjson_mut_doc *d,
			yyjson_mut_val *params, sl_reply_fn cb, struct sl_err *err);
bool sl_pending_server_request(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m);
/* p (a tools/call, its own call ended or never started) answers for c
 * from now on: c's progress and outcome are p's. A c that has finished
 * already is answered at once (p is then freed). */
void sl_pending_take_call(struct sl_pending *p, struct sl_call *c);
void sl_calls_tools_list(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_calls_tools_call(struct sl_session *s, struct sl_msg *m, bool modern);
/* Answers m (taken) with the outcome of program code (copied), run as
 * execute_code runs one: the session's program, its answer through the
 * output hooks; lang as sl_program_set_language, pre and post as
 * sl_program_set_wrap (0 for a program as sent). The sandbox must exist. */
void sl_calls_run_program(struct sl_session *s, struct sl_msg *m, bool modern, const char *code,
			  size_t len, const char *lang, size_t pre, size_t post);

/* ---- skilltools.c ---- */

struct sl_view;
/* Appends save_skill (when v's caller may save skills), and in passthrough
 * and hybrid exposure each skill visible to v's caller as skills__<name>,
 * to tools/list's arr (v offers execute_code). */
void sl_skills_list(const struct sl_view *v, yyjson_mut_doc *d, yyjson_mut_val *arr);
/* True if name is save_skill or skills__<name> and v offers code mode. */
bool sl_skills_handles(const struct sl_view *v, const char *name);
/* Runs save_skill (asking the person first) or a skill, for m's caller;
 * takes m. */
void sl_skills_call(struct sl_session *s, struct sl_msg *m, bool modern, const char *name,
		    yyjson_val *args);
/* search_tools' lines for the skills visible to v's caller that match
 * query (at most k), or NULL when none does. */
char *sl_skills_search(const struct sl_view *v, const char *query, size_t k);
/* describe_tools for server "skills": a .d.ts module of the skills
 * visible to v's caller (all, or the n named), or NULL with *msg set. */
char *sl_skills_describe(const struct sl_view *v, const char **names, size_t n, char **msg);

/* Sets up a tools/call of m (taken) as sl_session_start_call does, without
 * running it: the caller adjusts the call and runs it. */
struct sl_pending *sl_calls_prepare(struct sl_session *s, struct sl_msg *m, bool modern,
				    enum sl_origin origin, struct sl_upstream *up, const char *tool,
				    yyjson_val *args, yyjson_val *fields);

/* ---- tasks.c ---- */

/* A tools/call with params.task for u's tool: a task is created (bounds
 * permitting), or the call runs plainly if u has no tasks. Takes m. */
void sl_tasks_tools_call(struct sl_session *s, struct sl_msg *m, bool modern, struct sl_upstream *up,
			 const char *tool, yyjson_val *args);
/* The server's CreateTaskResult r (in d) for p: makes the entry and gives
 * r our id. Returns r. */
yyjson_mut_val *sl_tasks_created(struct sl_session *s, struct sl_pending *p, struct sl_call *c,
				 yyjson_mut_doc *d, yyjson_mut_val *r);
/* A tasks/result answer r (in d) for p: our id in its _meta; the entry goes. */
void sl_tasks_fetched(struct sl_session *s, struct sl_pending *p, yyjson_mut_doc *d,
		      yyjson_mut_val *r);
/* p is going: a creation's place is given back unless it became an entry. */
void sl_tasks_unreserve(struct sl_pending *p);
/* A 2026-07-28 tools/call of a task-required tool of u, by a client that
 * declared the tasks extension: answered with a CreateTaskResult. Takes m. */
void sl_tasks_tools_call_modern(struct sl_session *s, struct sl_msg *m, struct sl_upstream *up,
				const char *tool, yyjson_val *args);
/* True if m's client declared the 2026-07-28 tasks extension. */
bool sl_tasks_ext(struct sl_session *s, struct sl_msg *m);
/* The answer of c, p's fetch for a 2026-07-28 tasks/get (p->task_state). */
void sl_tasks_answer_state(struct sl_session *s, struct sl_pending *p, struct sl_call *c);
void sl_tasks_update(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_tasks_get(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_tasks_result(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_tasks_cancel(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_tasks_list(struct sl_session *s, struct sl_msg *m, bool modern);
/* notifications/tasks/status from u: to s if s owns the task. */
void sl_tasks_status(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m);
/* s is closing: its tasks go (cancelled upstream if not finished). */
void sl_tasks_session_end(struct sl_session *s);

/* ---- forward.c ---- */

void sl_forward_resources_list(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_forward_templates_list(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_forward_resources_read(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_forward_subscribe(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_forward_unsubscribe(struct sl_session *s, struct sl_msg *m, bool modern);
/* An adopted session's subscription (uri as the client names it) is sent
 * to its server again, answer ignored (sl_session_adopt). */
void sl_forward_resubscribe(struct sl_session *s, const char *uri);
/* The transport hears that what a replica needs to adopt s changed. */
void sl_session_changed(struct sl_session *s);
void sl_forward_prompts_list(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_forward_prompts_get(struct sl_session *s, struct sl_msg *m, bool modern);
void sl_forward_complete(struct sl_session *s, struct sl_msg *m, bool modern);
/* The server's answer r to a forwarded request (ctx: its struct
 * sl_pending) goes to the client with the gateway's names. */
void sl_forward_reply(void *ctx, struct sl_reply *r);
/* A content block that points at a resource of u gets the gateway's URI. */
void sl_forward_namespace_block(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *b,
				const struct sl_upstream *u);
/* A tools/list entry's MCP Apps View (_meta.ui.resourceUri and the older
 * _meta["ui/resourceUri"]) named as resources/list names it. */
void sl_forward_namespace_tool(struct sl_session *s, yyjson_mut_doc *d, yyjson_mut_val *tool,
			       const struct sl_upstream *u);

/* ---- listen.c ---- */

/* subscriptions/listen: acknowledges m's filter and keeps the listen open. */
void sl_listen_open(struct sl_session *s, struct sl_msg *m, bool modern);
/* Ends l with its graceful completion response. */
void sl_listen_end(struct sl_session *s, struct sl_listen *l);
/* notifications/cancelled for request key: true if it was a listen (now
 * ended, unanswered). */
bool sl_listen_cancel(struct sl_session *s, const char *key);
/* The session is closing: its listens go, sending nothing. */
void sl_listen_close_all(struct sl_session *s);
/* True if a listen of s watches the resource uri (the gateway's form). */
bool sl_listen_wants(const struct sl_session *s, const char *uri);
/* A list changed (what: "tools", "resources", "prompts"): every listen of
 * s that opted in hears it. */
void sl_listen_list_changed(struct sl_session *s, const char *what);
/* u's resource uri (the gateway's form) changed: params are the server's. */
void sl_listen_updated(struct sl_session *s, struct sl_upstream *u, yyjson_val *params,
		       const char *uri);

/* ---- relay.c ---- */

/* The client's answer m to a request of ours. */
void sl_relay_response(struct sl_session *s, struct sl_msg *m);
/* Frees what is left of s->relays (at sl_session_free). */
void sl_relay_dispose(struct sl_session *s);
/* Whether capabilities caps allow answering m (its method's capability;
 * for elicitation, its mode: form unless params.mode says url). */
bool sl_relay_allowed(yyjson_val *caps, struct sl_msg *m);
/* The client's answer (result, or error: exactly one) to u's request id
 * (of u's process generation upgen) goes back to u through the peer hooks
 * of s's generation. */
void sl_relay_answer(struct sl_session *s, struct sl_upstream *u, unsigned upgen, yyjson_val *id,
		     yyjson_val *result, yyjson_val *error);

/* ---- park.c ---- */

/* u asks m while p (a 2026-07-28 tools/call, or a request forwarded to a
 * server: prompts/get, resources/read, completion/complete) waits on it: the question
 * joins p's next answer, input_required (gathered on the loop's next turn,
 * so a server's several questions go together), and the call is parked.
 * Over a bound (sluice.limits.maxParkedCalls, maxParkedCallsPerClient,
 * maxInputRounds, serverRequests*) u gets the error instead. */
void sl_park_ask(struct sl_pending *p, struct sl_upstream *u, struct sl_msg *m);
/* m (taken when true is returned) is a tools/call (or a forwarded
 * request) with a requestState of park.c's: it resumes that parked call (its answers go to the server), or
 * is answered with an error saying why not (forged, tampered, expired,
 * replayed, another client's). False: not one of ours. */
bool sl_park_resume(struct sl_session *s, struct sl_msg *m);
/* p, which a park's call answered, is being freed: the park goes too. */
void sl_park_end(struct sl_pending *p);
/* The gateway stops: parked calls are cancelled and freed. */
void sl_park_stop_all(struct sl_gateway *gw);

#endif

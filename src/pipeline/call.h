/*
 * The call pipeline: every tool call, whichever way it arrived (a direct
 * tools/call, the router's invoke_tool, later a program's tools.x.y()),
 * becomes a struct sl_call and runs the same ordered stages:
 *
 *   request half:  stages[0].request ... stages[n-1].request
 *   dispatch:      to the upstream (asynchronous)
 *   response half: stages[0].response ... stages[n-1].response
 *   finish:        every stage's finish hook (audit), then call->done
 *
 * The order lives in one table (pipeline/stages.c). Stages are blind to
 * each other. See docs/internals/PIPELINE.md for the contract.
 *
 * API:
 *   c = sl_call_new(gen, origin, up, tool, args_doc, timeout, done, progress, ctx);
 *   sl_call_run(c);          runs until it finishes or a stage suspends
 *   sl_call_cancel(c, why);  the owner no longer wants an answer
 *   ...done(c) runs exactly once; the owner then calls sl_call_free(c).
 */
#ifndef SL_PIPELINE_CALL_H
#define SL_PIPELINE_CALL_H

#include "core/json.h"
#include "pipeline/gen.h"
#include "proto/trace.h"
#include "upstream/upstream.h"

struct sl_session;
struct sl_caller;

struct sl_call;

/* What a stage hook returns (nginx's phase handler codes). */
enum sl_stage_rc {
	SL_STAGE_NEXT,     /* done with this call here: go on */
	SL_STAGE_DECLINED, /* not my business (never an error): go on */
	SL_STAGE_DONE,     /* the call has its answer (a deny, a cache hit): skip
			    * the rest of the request half and dispatch */
	SL_STAGE_AGAIN,    /* suspended: the stage calls sl_call_resume once */
	SL_STAGE_ERROR,    /* a malfunction: the call fails with c->why */
};

/*
 * A stage's hooks receive the state its init made for the call's
 * generation (pipeline/gen.h): a stage keeps nothing in file-scope
 * variables, so two generations can run side by side during a reload.
 */
typedef enum sl_stage_rc (*sl_stage_fn)(void *state, struct sl_call *c);
typedef void (*sl_stage_finish_fn)(void *state, struct sl_call *c);
/* Reads the stage's own config section, sluice.<name> (NULL when absent,
 * borrowed for the life of cfg, which outlives the state), and makes its
 * state in *state (may stay NULL). svc is the process's shared services
 * (pipeline/gen.h; NULL in tests): the state may keep the pointer, and
 * reads the links in it when it needs them (they come later than the
 * first generation). Runs once per generation whose section differs from
 * the previous one's. On failure it sets err (naming the key,
 * "sluice.<name>.<key>: ...") and leaves *state NULL, having freed what
 * it made. */
typedef int (*sl_stage_init_fn)(const struct sl_config *cfg, const struct sl_services *svc,
				yyjson_val *section, void **state, struct sl_err *err);
/* Whether a tool may be shown to this caller at all (tools/list, search,
 * describe, programs); who is NULL for an anonymous caller. */
typedef bool (*sl_stage_visible_fn)(void *state, const struct sl_caller *who,
				    const struct sl_upstream *up, yyjson_val *tool);
/* Rewrites a copy of a tool definition (or a router summary) about to be
 * shown to a client, in d. */
typedef void (*sl_stage_present_fn)(void *state, yyjson_mut_doc *d, yyjson_mut_val *tool);
/* The call was cancelled while this stage held it suspended: stop waiting
 * and resume it (at once or later, exactly once as always). */
typedef void (*sl_stage_cancel_fn)(void *state, struct sl_call *c);

/* A person's answer to a question a stage asked (struct sl_asker): action
 * is "accept", "decline" or "cancel" (NULL: no answer will come: an error,
 * or the client went away); content is borrowed for the call. */
typedef void (*sl_answer_fn)(void *arg, const char *action, yyjson_val *content);

/*
 * How a stage asks a call's person (elicitation) without knowing who asks:
 * whoever owns the call implements it (a client session,
 * sl_session_bind_call) and sets it on the calls it makes. A zero asker
 * (elicit NULL) has nobody to ask: sluice exec, a parked call. Stages call
 * sl_call_can_ask and sl_call_ask. (A 2026-07-28 call asks through its
 * answer instead: c->mrtr, input_required.)
 */
struct sl_asker {
	/* True if the person can be asked now (the client declared elicitation). */
	bool (*can_elicit)(void *ctx);
	/* Asks message with schema (in d, copied). False, and cb never runs,
	 * if nobody can be asked; else cb(arg, ...) runs exactly once, later,
	 * from the loop. */
	bool (*elicit)(void *ctx, const char *message, yyjson_mut_doc *d, yyjson_mut_val *schema,
		       sl_answer_fn cb, void *arg);
	/* True if who (the caller of the request that asks) may see up's tool
	 * def through this person's endpoint: its profile's view and every
	 * stage but pinning (which hides what it would ask about). A person
	 * is never asked about a tool hidden from them. NULL: sees nothing. */
	bool (*sees)(void *ctx, const struct sl_caller *who, const struct sl_upstream *up,
		     yyjson_val *def);
	void *ctx;
};

/*
 * A code-mode program's final answer on its way to the model (or to
 * `sluice exec`'s output): it passes every stage's output hook in table
 * order, as a tool result passes the response hooks, so the answer is
 * redacted, scored, governed and recorded by the same table.
 */
struct sl_output {
	uint64_t program;           /* the program's id */
	struct sl_session *session; /* the client's, borrowed; NULL for sluice exec */
	uint64_t session_id;        /* 0 for sluice exec */
	char client_key[80];        /* as a call's (set by sl_codemode_output) */
	const struct sl_caller *who;/* borrowed: the caller of the execute_code request that
				     * started the program (NULL: anonymous, sluice exec) */
	const struct sl_trace *trace; /* borrowed: that request's traceparent (NULL or not
				     * valid: none; the program starts a trace) */
	const char *outcome;        /* "ok", "cancelled", or the failure kind (timeout, ...) */
	uint32_t calls;             /* tool calls the program made */
	double duration_ms;
	size_t output_bytes;        /* the return value's size as the program made it */
	char *text;                 /* owned; NULL when cancelled: the answer (console output
				     * included) or the failure's message; a hook may replace it */
	size_t text_len;            /* text's bytes: it may hold NUL (a hook that replaces
				     * text sets it) */
	bool is_error;              /* the model is told the program failed */
	char *warning;              /* owned, or NULL: a note the model gets before the answer */
	struct sl_metrics *metrics; /* the process's counters (set by sl_stages_output) */
};
typedef void (*sl_stage_output_fn)(void *state, struct sl_output *o);

/*
 * Peer text outside a tool call's arguments and result, on its way through
 * the gateway: everything else an upstream sends toward a client or a
 * program, and what a client sends an upstream outside tools/call. Every
 * such path calls sl_stages_peer, which runs every stage's peer hook in
 * table order (redaction redacts it, guard scores it), stopping at the
 * first hook that withholds it. The caller then delivers val (maybe
 * changed), with the warning where its message has room for one, or
 * delivers nothing of it and says why (docs/internals/PIPELINE.md, "Peer
 * text").
 */
enum sl_peer_kind {
	SL_PEER_ANSWER,       /* a forwarded request's result: resources/read, prompts/get,
			       * completion/complete */
	SL_PEER_ERROR,        /* an upstream's JSON-RPC error object: to a forwarded request,
			       * to a tools/call (direct, invoke_tool, a program's) */
	SL_PEER_NOTIFICATION, /* the params of notifications/message, notifications/progress */
	SL_PEER_REQUEST,      /* the params of an upstream's request relayed to the client:
			       * elicitation/create, sampling/createMessage, roots/list */
	SL_PEER_UPSTREAM,     /* toward an upstream: a client's forwarded params, its answer
			       * to a relayed request */
};

struct sl_peer {
	enum sl_peer_kind kind;
	const char *method;           /* the method it travels in, borrowed */
	const struct sl_upstream *up; /* the server it comes from or goes to, borrowed */
	bool can_mark;                /* the caller can deliver a warning with it */
	bool to_program;              /* an error for a program's call: the program's final
				       * answer is what reaches the model */
	bool to_person;               /* a question a stage asks the call's person (a
				       * confirmation): for the person, not the model, and
				       * sluice's own words around the arguments */
	yyjson_mut_doc *doc;          /* the caller's: holds val */
	yyjson_mut_val *val;          /* the text (an object); hooks edit it in place */
	bool changed;                 /* a hook edited val */
	char *withheld;               /* owned, set by a hook: deliver none of it, and why */
	char *warning;                /* owned, set by a hook: a note to deliver with it */
	const char *client_key;       /* the client's key (as a call's), borrowed, where the
				       * caller knows it (set after sl_peer_init), else NULL:
				       * the tokenize stage's map */
	struct sl_metrics *metrics;   /* the process's counters (set by sl_stages_peer) */
};
typedef void (*sl_stage_peer_fn)(void *state, struct sl_peer *p);

struct sl_conf_section;

struct sl_stage {
	const char *name;           /* also its config section: sluice.<name> */
	/* The keys of sluice.<name> (config/conf.h), which init applies and
	 * `sluice config-reference` lists; NULL: the stage has no settings. */
	const struct sl_conf_section *conf;
	sl_stage_init_fn init;      /* may be NULL */
	void (*fini)(void *state);  /* may be NULL: frees what init made */
	sl_stage_visible_fn visible;/* may be NULL */
	sl_stage_present_fn present;/* may be NULL */
	sl_stage_fn request;        /* may be NULL */
	sl_stage_fn response;       /* may be NULL */
	sl_stage_finish_fn finish;  /* runs for every call: ok, denied, failed, cancelled */
	sl_stage_cancel_fn cancel;  /* may be NULL: a stage that never suspends needs none */
	sl_stage_output_fn output;  /* may be NULL: a program's final answer */
	sl_stage_peer_fn peer;      /* may be NULL: peer text that is not a tool call's */
	bool restart_only;          /* a changed section takes effect at the next start: a
				     * reload keeps the old state (telemetry's timers and
				     * exporter live on the loop) */
};

enum sl_origin {
	SL_ORIGIN_DIRECT, /* tools/call of an exposed tool */
	SL_ORIGIN_ROUTER, /* invoke_tool */
	SL_ORIGIN_CODE,   /* a program's tool call */
};

enum sl_outcome {
	SL_OUTCOME_PENDING,
	SL_OUTCOME_OK,        /* result holds the tool's result (may be isError) */
	SL_OUTCOME_RPC_ERROR, /* the upstream answered with a JSON-RPC error: rpc_error */
	SL_OUTCOME_DENIED,    /* a stage refused it: why */
	SL_OUTCOME_FAILED,    /* no result: timeout, crash, unavailable: why */
	SL_OUTCOME_CANCELLED, /* the owner cancelled it */
	SL_OUTCOME_INPUT_REQUIRED, /* 2026-07-28: the client must answer input_required first */
};

typedef void (*sl_call_done_fn)(void *ctx, struct sl_call *c);
/* A stage started (true) or stopped (false) waiting for a human. */
typedef void (*sl_call_human_fn)(void *ctx, struct sl_call *c, bool waiting);
/* A progress notification's params from the upstream (token already stripped). */
typedef void (*sl_call_progress_fn)(void *ctx, struct sl_call *c, yyjson_val *params);

/*
 * A call. What is here is what the engine runs on or what more than one
 * module reads: the request (who, args, the client's bindings, the
 * 2026-07-28 and task fields, set by the owner and read by the engine and
 * by policy and pinning), the outcome and its result (every response hook,
 * the owner), the rate limit's answer (quota for the owner), the counters
 * the records read (audit, telemetry, metrics), the engine's position and
 * the owner's callbacks. What one stage keeps for one call lives in that
 * stage's slot (stage_ctx, sl_call_ctx), never in a field here.
 */
struct sl_call {
	uint64_t id;
	struct sl_gen *gen;       /* a reference: the stages' settings for this call */
	uint64_t parent;          /* the program's call id for origin code, else 0 */
	enum sl_origin origin;
	struct sl_upstream *up;   /* borrowed: the server */
	struct sl_upstream *via;  /* borrowed: the link that served it, once dispatched: up,
				   * or the caller's own (oauth.perUser) */
	char *tool;               /* the upstream's own tool name */
	/* The caller of the request this call serves (a reference, taken by
	 * whoever makes the call from that request's own credential, dropped
	 * by sl_call_free; NULL: anonymous): a program's calls carry the
	 * caller of its execute_code request. What stages decide, count and
	 * record with; never the session's. */
	struct sl_caller *who;
	/* The client it answers to, set by its owner (sl_session_bind_call):
	 * the session (borrowed; NULL: none, as for sluice exec or a call
	 * parked while its client is away), its id for the records (0: none),
	 * the key of the client's per-client state ("s<id>" a session of the
	 * session era, "c<credential digest>" the 2026-07-28 requests of one
	 * credential, "exec" none: the tokenize stage's map), and how a stage
	 * asks its person. Stages read these; the session pointer is for the
	 * owner's modules (and the governor's kept results, gateway/kept.h). */
	struct sl_session *session;
	uint64_t session_id;
	char client_key[80];
	struct sl_asker ask;
	/* The client capabilities through which its owner can answer the
	 * server's questions during this call (in doc, set with the asker),
	 * told to a 2026-07-28 server with the request (upstream.h); NULL:
	 * the gateway's own declaration. */
	yyjson_mut_val *caps;
	/* W3C trace context (SEP-414, proto/trace.h): the client's, from its
	 * request's _meta, validated (a program's calls carry their
	 * execute_code request's), set by the owner; and sluice's own span
	 * for the call, set by the telemetry stage when it exports spans
	 * (same trace, its span id the upstream's parent). The upstream
	 * request carries span when valid, else trace unchanged. */
	struct sl_trace_ctx trace;
	struct sl_trace span;

	yyjson_mut_doc *doc;      /* owns args and anything stages build */
	yyjson_mut_val *args;     /* the arguments object */
	yyjson_mut_val *fields;   /* invoke_tool's projection (strings, in doc), or NULL */
	/* MCP 2026-07-28 multi-round-trip requests: the client declared
	 * elicitation in this request, and a retry carries its answers. */
	bool mrtr;
	yyjson_mut_val *input_responses; /* in doc, or NULL */
	char *request_state;             /* owned, or NULL */
	yyjson_mut_val *input_required;  /* INPUT_REQUIRED: the result to send (in doc) */
	/* MCP 2025-11-25 tasks (docs/internals/TASKS.md). A call that creates a
	 * task carries the client's task params (dispatched with it); its
	 * answer is then a CreateTaskResult, which holds no tool output: the
	 * response half is skipped (task_created), and the output passes it
	 * later, in the call that fetches it. That call (task_fetch: the
	 * server's own task id) skips the request half, whose stages decided
	 * at creation, and dispatches tasks/result instead of tools/call. */
	yyjson_mut_val *task;            /* in doc, or NULL */
	char *task_fetch;                /* owned, or NULL */
	bool task_created;

	enum sl_outcome outcome;
	yyjson_doc *result_doc;   /* owned: the upstream's response */
	yyjson_val *result;       /* OK: the result object as the upstream sent it */
	yyjson_mut_val *mresult;  /* set once a stage changed it (in doc): what callers use */
	yyjson_val *rpc_error;    /* RPC_ERROR: the error object */
	char *why;                /* DENIED/FAILED/CANCELLED: a message for the model */
	/* DENIED by a rate limit (stages/quota.c): the caller may retry after
	 * this many seconds, so a client's answer is a JSON-RPC error with
	 * `limit` as its data (and over HTTP a 429), not a tool result; 0:
	 * not limited. */
	uint32_t retry_after_s;
	yyjson_mut_val *limit;    /* in doc, or NULL */

	uint64_t timeout_ms;
	uint64_t started_us, finished_us;
	/* Set by the cache stage, read by the records (audit, telemetry, the
	 * metrics): what happened to the call, not the stage's own state. */
	bool cache_hit;            /* the result came from the cache stage, not the upstream */
	bool cache_lookup;         /* the cache stage looked it up (a hit or a miss) */

	/* Engine position. */
	int phase;
	size_t pos;
	bool suspended;
	bool finished;
	struct sl_ureq *ureq;     /* while dispatched */

	sl_call_done_fn done;
	sl_call_progress_fn progress; /* NULL: the caller wants no progress */
	sl_call_human_fn human;   /* NULL: the caller does not care (programs pause their clock) */
	void *ctx;                /* the owner's, for done, progress and human */

	/* One slot per stage of gen's table, in its order (nginx's r->ctx):
	 * what that stage keeps for this call, NULL until it sets it. Read
	 * and set with sl_call_ctx and sl_call_set_ctx; the engine allocates
	 * them with the call and never looks inside. */
	void *stage_ctx[];
};

/* Takes args_doc (whose root is the arguments object; NULL: empty args);
 * takes a reference to gen, dropped by sl_call_free. */
struct sl_call *sl_call_new(struct sl_gen *gen, enum sl_origin origin, struct sl_upstream *up,
			    const char *tool,
			    yyjson_mut_doc *args_doc, uint64_t timeout_ms,
			    sl_call_done_fn done, sl_call_progress_fn progress, void *ctx);
void sl_call_free(struct sl_call *c);
/* Runs the call from its request half, or, for a task_fetch call, from
 * dispatch. */
void sl_call_run(struct sl_call *c);
/* Continues a call a stage suspended with SL_STAGE_AGAIN. */
void sl_call_resume(struct sl_call *c);
/* Stops the call: an in-flight upstream request is cancelled upstream; the
 * finish hooks run and done is called with outcome CANCELLED. */
void sl_call_cancel(struct sl_call *c, const char *why);

/* The result as a mutable object in c->doc, copied on first use; a stage
 * that rewrites the result edits this. NULL unless the outcome is OK. */
yyjson_mut_val *sl_call_result_mut(struct sl_call *c);
/* The result a caller should see: c->mresult when a stage made one, else a
 * copy of c->result made in d. */
yyjson_mut_val *sl_call_result_copy(struct sl_call *c, yyjson_mut_doc *d);

/* The result a caller should see, as an immutable value: c->result, or an
 * immutable copy of c->mresult whose document is returned in *doc (free it;
 * NULL when none was needed). */
yyjson_val *sl_call_result_view(struct sl_call *c, yyjson_doc **doc);

/* True if a stage can ask c's person now (c->ask). */
bool sl_call_can_ask(const struct sl_call *c);
/* Asks c's person through c->ask (see struct sl_asker): false, and cb never
 * runs, if nobody can be asked. */
bool sl_call_ask(struct sl_call *c, const char *message, yyjson_mut_doc *d, yyjson_mut_val *schema,
		 sl_answer_fn cb, void *arg);

/* For stages that wait for a person (a confirmation): tells the call's
 * owner when the wait starts and ends, so a program's wall clock can pause. */
void sl_call_human_wait(struct sl_call *c, bool waiting);

/* Stage st's slot on c (nginx's ngx_http_get_module_ctx): what st keeps for
 * this call, NULL until st sets it, and always NULL when st is not in the
 * table of c's generation. What st puts there stays st's to free; st
 * empties its slot before it resumes a call it held. */
void *sl_call_ctx(const struct sl_call *c, const struct sl_stage *st);
/* Sets st's slot on c (nothing when st is not in c's table). */
void sl_call_set_ctx(struct sl_call *c, const struct sl_stage *st, void *ctx);

/* Sets the outcome to DENIED or FAILED with a message (for stages). */
void sl_call_set_error(struct sl_call *c, enum sl_outcome o, const char *fmt, ...) SL_PRINTF(3, 4);

const char *sl_origin_name(enum sl_origin o);
const char *sl_outcome_name(enum sl_outcome o);

/* The ordered stage table (pipeline/stages.c), and its stages (one file
 * each under src/stages/; discovery's in src/discovery/infer.c): a module
 * reads a stage's state with sl_gen_state(gen, &sl_stage_<name>). */
extern const struct sl_stage *const sl_stages[];
extern const size_t sl_nstages;
extern const struct sl_stage sl_stage_policy, sl_stage_quota, sl_stage_pinning, sl_stage_redaction,
	sl_stage_cache, sl_stage_guard, sl_stage_governor, sl_stage_discovery, sl_stage_telemetry,
	sl_stage_audit, sl_stage_tokenize, sl_stage_tokenize_result;

/* True unless a stage of g hides the tool. */
bool sl_stages_visible(const struct sl_gen *g, const struct sl_caller *who,
		       const struct sl_upstream *up, yyjson_val *tool);
/* The same, asking every stage but skip. */
bool sl_stages_visible_but(const struct sl_gen *g, const struct sl_caller *who,
			   const struct sl_upstream *up, yyjson_val *tool,
			   const struct sl_stage *skip);
/* Lets every stage of g rewrite a copy of a tool definition shown to a client. */
void sl_stages_present(const struct sl_gen *g, yyjson_mut_doc *d, yyjson_mut_val *tool);
/* Runs every output hook of g, in table order, on a program's answer. */
void sl_stages_output(const struct sl_gen *g, struct sl_output *o);
/* An output hook's verdict on o's text: failed: the answer is withheld
 * (replaced by an error saying it could not be scanned for what); else
 * text, when not NULL, replaces it (taken, len bytes). */
void sl_output_rewrite(struct sl_output *o, bool failed, char *text, size_t len, const char *what);
/* Frees what o owns (text, warning). */
void sl_output_dispose(struct sl_output *o);
/* Sets p up for val (an object in d, both the caller's): nothing withheld,
 * no warning. */
void sl_peer_init(struct sl_peer *p, enum sl_peer_kind kind, const char *method,
		  const struct sl_upstream *up, yyjson_mut_doc *d, yyjson_mut_val *val);
/* Runs every peer hook of g, in table order, on p, until one withholds it. */
void sl_stages_peer(const struct sl_gen *g, struct sl_peer *p);
/* For SL_PEER_ERROR: makes val the error to deliver: withheld, its code and
 * the reason as message (data dropped); with a warning, the warning before
 * its message. */
void sl_peer_error_apply(struct sl_peer *p);
/* An immutable copy of p->val (the caller frees it). */
yyjson_doc *sl_peer_freeze(const struct sl_peer *p);
/* What messages call text of kind k: "answer", "error", "notification",
 * "request", "message". */
const char *sl_peer_noun(enum sl_peer_kind k);
/* Frees what p owns (withheld, warning; not the document). */
void sl_peer_dispose(struct sl_peer *p);

#endif

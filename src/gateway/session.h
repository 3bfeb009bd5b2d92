/*
 * One MCP client session: answers the protocol's methods in both eras,
 * turns tools/call into pipeline calls, relays progress, cancellation and
 * server-to-client requests, and sends list_changed.
 *
 * A transport owns the session's I/O: it feeds complete lines with
 * sl_session_input and receives messages through io->send, each described
 * by a struct sl_out (kind, the id it answers, progress token, line). The session never
 * frees itself; the transport calls sl_session_close and then, from the
 * loop, sl_session_free.
 */
#ifndef SL_GATEWAY_SESSION_H
#define SL_GATEWAY_SESSION_H

#include "core/buf.h"
#include "core/list.h"
#include "core/map.h"
#include "gateway/gateway.h"
#include "pipeline/call.h"
#include "proto/jsonrpc.h"

/* What a message the session sends is, so that a transport routes it
 * without parsing it again (HTTP: a response to the POST of its request,
 * a progress notification to the POST that asked for it). */
enum sl_out_kind { SL_OUT_RESPONSE, SL_OUT_NOTIFICATION, SL_OUT_REQUEST };

struct sl_out {
	enum sl_out_kind kind;
	yyjson_val *id;      /* a response: the id it answers, any type (NULL: null) */
	yyjson_val *token;   /* a progress notification: its progressToken, else NULL */
	bool error;          /* a response: an error response */
	/* A response refused by a rate limit (stages/quota.c): seconds until
	 * a retry may pass; HTTP answers 429 with Retry-After when the
	 * response is the whole body. 0: none. */
	uint32_t retry_after;
	/* A message of a subscriptions/listen stream (its acknowledgement,
	 * notifications, graceful end): the listen request's id, which the
	 * message also carries in _meta; else NULL. */
	yyjson_val *sub;
	char *line;          /* the message, ending in "\n" */
	size_t len;
	/* Optional: bytes sent between line[0, splice_at) and the rest of
	 * line without a copy (a rendered tools/list): the message is those,
	 * then splice->data[splice_off, + splice_len), then line[splice_at,
	 * len). The transport owns the reference: it drops it once they are
	 * written, or first joins them into line (sl_out_join). */
	struct sl_blob *splice;
	size_t splice_at, splice_off, splice_len;
};

/* Makes o one line again (copies the spliced bytes in): for a transport
 * that keeps or frames whole lines. Nothing when o has no splice. */
void sl_out_join(struct sl_out *o);

struct sl_session_io {
	/* Sends one message: takes out->line and out->splice; id and token
	 * are borrowed for the call only. */
	void (*send)(void *ctx, struct sl_out *out);
	/* Optional: what another replica needs to adopt the session changed
	 * (its resource subscriptions, its logging level): the HTTP transport
	 * stores the session's record again (shared/sessions.h). */
	void (*changed)(void *ctx);
};

enum sl_era { SL_ERA_NONE, SL_ERA_LEGACY, SL_ERA_MODERN };

struct sl_deferred;
struct sl_results;
struct sl_listen;
struct sl_caller;

struct sl_session {
	struct sl_list link;         /* in the gateway's sessions */
	uint64_t id;                 /* unique in this process, from 1 (audit, telemetry) */
	struct sl_gateway *gw;
	const struct sl_session_io *io;
	void *io_ctx;

	enum sl_era era;             /* set by initialize (legacy) or a modern request */
	bool initialized;            /* legacy: notifications/initialized seen */
	char version[16];            /* legacy: the negotiated version */
	yyjson_doc *caps_doc;        /* legacy: its capabilities, less those its version lacks */
	yyjson_val *caps;            /* legacy: its capabilities */
	char log_level[16];          /* legacy: its last logging/setLevel, "" if none */
	bool closing;
	struct sl_caller *caller;    /* who it serves (a reference), NULL: anonymous; the
				      * caller of its latest request (same identity, the
				      * claims of the latest credential): what no request
				      * asks for is decided with it */
	char cred[65];               /* the caller's key (sl_session_set_caller; the
				      * identity digest of nothing if none): binds
				      * the requestStates it is given */

	struct sl_map calls;         /* client request id -> struct sl_pending */
	struct sl_map relays;        /* our request id -> struct relay */
	struct sl_map subs;          /* resource URIs subscribed to, as the client names them */
	int64_t next_out_id;
	struct sl_list deferred;     /* requests waiting for upstreams to settle, oldest first */
	struct sl_results *results;  /* full results for read_result (the governor's) */
	struct sl_list listens;      /* 2026-07-28 subscriptions/listen open, newest first (listen.c) */
	uint32_t nlistens;
	uint32_t ntasks;             /* tasks held, and creations in flight (tasks.c) */
};

struct sl_session *sl_session_new(struct sl_gateway *gw, const struct sl_session_io *io, void *ctx);
/*
 * Makes s an initialized session of the session era as initialize (and
 * notifications/initialized) would have, from a session record another
 * replica stored (shared/sessions.h): version, capabilities (borrowed,
 * copied), the logging level (may be NULL) and the resource subscriptions
 * (borrowed, copied; at most the session's bound) as the client named
 * them. Starts the upstreams if nothing had; once they have settled, the
 * subscriptions and the level are sent to their servers again. Sends
 * nothing to the client.
 */
void sl_session_adopt(struct sl_session *s, const char *version, yyjson_val *caps,
		      const char *log_level, const char *const *subs, size_t nsubs);
/* Who the transport opened this session for (NULL: nobody in particular):
 * its profile's view, and a parked call's requestState is honoured only
 * for the same identity. Each request given with a caller of the same
 * identity replaces it (its claims are the latest credential's); a request
 * is decided with its own caller (m->who, c->who) all the same. */
void sl_session_set_caller(struct sl_session *s, struct sl_caller *who);
/* One complete message (a line without its newline) from the session's own
 * caller (stdio: the anonymous one). */
void sl_session_input(struct sl_session *s, const char *line, size_t len);
/* The same, sent with who's credential (borrowed for the call; NULL:
 * anonymous), which the HTTP transport checks on each request: the calls
 * and programs a request starts carry its caller (c->who), which is what
 * the stages decide and record with, never the session's. */
void sl_session_input_from(struct sl_session *s, struct sl_caller *who, const char *line,
			   size_t len);
/* The same for a message the transport has read already (with
 * SL_JSON_READ_FLAGS, core/json.h), so that it is parsed once: doc is
 * taken. Messages are processed in the order given, through any of the
 * three. */
void sl_session_input_doc(struct sl_session *s, struct sl_caller *who, yyjson_doc *doc);
/* A line over the transport's cap: answer with an error (id if findable). */
/* True if the session answers method name in the era (modern:
 * 2026-07-28); else why (n bytes) is the message of its -32601 (a
 * transport that answers it before any session does: HTTP's 404). */
bool sl_session_has_method(const char *name, bool modern, char *why, size_t n);
void sl_session_oversize(struct sl_session *s, const char *head, size_t hl, const char *tail,
			 size_t tl, size_t total, size_t max);
/* True when no request of this session is in flight or waiting. */
bool sl_session_idle(const struct sl_session *s);
/* The client closed its input (it may still read): pending elicitations of
 * the gateway's own are answered with no answer (their callbacks run now). */
void sl_session_input_end(struct sl_session *s);
/* The gateway shuts down: every subscriptions/listen of s ends with its
 * graceful completion response (call before sl_session_close). */
void sl_session_end_listens(struct sl_session *s);
/* The client is gone: cancel its calls; send nothing more. */
void sl_session_close(struct sl_session *s);
/* The gateway is stopping: every listen ends gracefully, every request in
 * flight in every session (also one still waiting for the upstreams) is
 * answered with a JSON-RPC error saying so, and the session is closed (sl_session_close), so no other
 * answer follows. Transports call it before they close; their own close
 * then finds the sessions closed. */
void sl_session_shutdown_all(struct sl_gateway *gw);
void sl_session_free(struct sl_session *s);

/* From the gateway. */
void sl_session_list_changed(struct sl_session *s, const char *what);
void sl_session_notify(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m);

enum sl_answerer {
	SL_ANSWER_NONE,   /* s has no request in flight to u (or to asker) */
	SL_ANSWER_CANNOT, /* it has, but cannot answer m: *why says why */
	SL_ANSWER_YES,    /* it has, and declared what m needs */
};
/* Whether s can answer m, a request of u's (elicitation/create,
 * sampling/createMessage, roots/list): s must have a request in flight
 * to u (asker, when not NULL: that very upstream request, for the input
 * requests of a 2026-07-28 server) and have declared the capability m
 * needs, in its initialize (legacy) or in that request's _meta (2026-07-28,
 * where only a tools/call, not a program, can be answered input_required).
 * *why (static text) is set for CANNOT. */
enum sl_answerer sl_session_answers(const struct sl_session *s, struct sl_upstream *u,
				    struct sl_msg *m, const struct sl_ureq *asker,
				    const char **why);
/* Relays an upstream's request to the client, which sl_session_answers
 * said can answer it (or, outside any call, to a stdio client that
 * declared the capability): a legacy session gets the request, a 2026-07-28
 * one an input_required answer to its tools/call (park.c). Returns false if
 * this session cannot after all. True also when the request was over a
 * bound of sluice.limits: the server then has its error. */
bool sl_session_relay(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m,
		      const struct sl_ureq *asker);

/* True if this session's client declared the elicitation capability. */
bool sl_session_can_elicit(const struct sl_session *s);
/* Asks the client's human through elicitation/create (schema is copied).
 * Returns false (and never calls cb) if the client cannot be asked; else
 * cb runs exactly once, later, from the loop (action NULL: the session
 * closed). */
bool sl_session_elicit(struct sl_session *s, const char *message, yyjson_mut_doc *d,
		       yyjson_mut_val *schema, sl_answer_fn cb, void *ctx);
/* The same as a call's asker (pipeline/call.h): s's elicitation. */
struct sl_asker sl_session_asker(struct sl_session *s);
/* The key of s's client for per-client state (out: 80 bytes): "s<id>" for
 * a session of the session era, "c<credential digest>" for 2026-07-28
 * requests (each has a fresh session: the credential is the client),
 * "exec" for NULL (sluice exec). */
void sl_session_client_key(const struct sl_session *s, char out[80]);
/* c answers to s from now on (NULL: to no client for now, as a parked
 * call): c->session, session_id, client_key and ask are set from s. */
void sl_session_bind_call(struct sl_session *s, struct sl_call *c);

/* Answers m with result (built in d, which this frees), sealed for the era. */
void sl_session_reply(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_mut_doc *d,
		      yyjson_mut_val *result);
/* Answers a request id with a JSON-RPC error. */
void sl_session_error(struct sl_session *s, yyjson_val *id, int code, const char *msg);
/* Runs a tool call through the pipeline and answers m when it ends. Takes m
 * (its document); args and fields (invoke_tool's projection, may be NULL)
 * are copied. */
void sl_session_start_call(struct sl_session *s, struct sl_msg *m, bool modern,
			   enum sl_origin origin, struct sl_upstream *up, const char *tool,
			   yyjson_val *args, yyjson_val *fields);

/* Tasks (gateway/tasks.c, docs/internals/TASKS.md). */
/* True if u declared tasks.requests.tools.call. */
bool sl_tasks_supported(const struct sl_upstream *u);
/* True if a server of gw did. */
bool sl_tasks_any(const struct sl_gateway *gw);
/* execution.taskSupport of u's tool (its own name), or NULL. */
const char *sl_tasks_support(const struct sl_gateway *gw, const struct sl_upstream *u,
			     const char *tool);
/* Sends tasks/cancel for the server's task id, answer ignored. */
void sl_tasks_cancel_upstream(struct sl_upstream *u, const char *up_id, uint64_t timeout_ms);
/* Frees the entries left (at sl_gateway_free). */
void sl_tasks_dispose(struct sl_gateway *gw);

#endif

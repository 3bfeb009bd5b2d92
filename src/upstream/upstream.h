/*
 * An upstream MCP server over a link (link.h: a child process on stdio, or
 * a remote server over HTTP): its era probe or handshake, its
 * tool/resource/prompt lists, and requests multiplexed by id.
 *
 * Lifetime: an upstream lives as long as the gateway. Its process (or HTTP
 * session) does not: a crashed or hung one is replaced after a backoff
 * (250 ms doubling to restartMaxBackoffMs) while the upstream object, and
 * the last lists it reported, stay.
 *
 * API:
 *   u = sl_upstream_new(loop, &gcfg->servers[i], gcfg, &ops, ctx);   takes a reference to gcfg
 *   sl_upstream_start(u, client_caps);      handshake; ops->ready when done
 *   r = sl_upstream_request(u, "tools/call", doc, params, timeout, cb, progress_cb, ctx, &err);
 *   sl_upstream_cancel(u, r, "reason");     cb is then never called
 *   sl_upstream_stop(u);                     graceful: stdin closed, TERM, KILL
 *   sl_upstream_free(u);                     once sl_upstream_stopped(u)
 *
 * Callbacks never run inside the call that caused them: a request that
 * cannot be sent fails synchronously through its return value instead.
 */
#ifndef SL_UPSTREAM_UPSTREAM_H
#define SL_UPSTREAM_UPSTREAM_H

#include "config/config.h"
#include "core/map.h"
#include "proto/jsonrpc.h"

#include <uv.h>

struct sl_upstream;
struct sl_ureq;
struct sl_oauth_client;

enum sl_upstream_state {
	SL_UP_IDLE,     /* not started yet */
	SL_UP_STARTING, /* process running, handshake or first lists in progress */
	SL_UP_READY,
	SL_UP_BACKOFF,  /* process gone, restart scheduled */
	SL_UP_DISABLED, /* never starts: disabled in config or a config error */
	SL_UP_STOPPING,
	SL_UP_STOPPED,
	SL_UP_FAILED,   /* given up for good: a restart would fail the same way
			 * (it speaks no protocol version sluice does) */
	SL_UP_NEEDS_LOGIN, /* a remote server that cannot be authorized until a
			    * person runs `sluice auth login NAME`: no restarts;
			    * it starts again when the login's record appears */
};

/* What an upstream reports to its owner (the gateway). */
struct sl_upstream_ops {
	/* Handshake finished, or a list changed after a list_changed refresh. */
	void (*ready)(void *ctx, struct sl_upstream *u);
	/* The process is gone or failed to start; u->error says why. */
	void (*down)(void *ctx, struct sl_upstream *u);
	/* A notification other than progress and the list_changed ones (which the
	 * upstream handles itself): notifications/message, resources/updated,
	 * cancelled. m is borrowed. */
	void (*notify)(void *ctx, struct sl_upstream *u, struct sl_msg *m);
	/* A server-to-client request (elicitation/create, sampling/createMessage,
	 * roots/list, ping). Answer with sl_upstream_respond. m is borrowed. */
	void (*request)(void *ctx, struct sl_upstream *u, struct sl_msg *m);
};

enum sl_reply_kind {
	SL_REPLY_RESULT, /* msg->result is set */
	SL_REPLY_ERROR,  /* a JSON-RPC error from the server: msg->error */
	SL_REPLY_FAILED, /* no answer: why says what happened */
};

struct sl_reply {
	enum sl_reply_kind kind;
	struct sl_msg *msg; /* RESULT/ERROR: borrowed; take msg->doc (and set it NULL) to keep it */
	const char *why;    /* FAILED */
};

typedef void (*sl_reply_fn)(void *ctx, struct sl_reply *r);
typedef void (*sl_progress_fn)(void *ctx, yyjson_val *params);

/* One list the server reported (tools, resources, templates, prompts). */
struct sl_item_list {
	yyjson_doc **docs; /* the pages, owned */
	size_t ndocs;
	yyjson_val **items; /* borrowed from docs */
	size_t n;
};

struct sl_upstream {
	char *name;
	const struct sl_server_config *cfg; /* its entry in gcfg */
	const struct sl_config *gcfg;  /* a reference, dropped when the upstream is freed */
	const struct sl_upstream_ops *ops;
	void *ctx;
	uv_loop_t *loop;

	enum sl_upstream_state state;
	char *error;             /* the last failure, for list_servers */
	unsigned starts;
	uint64_t backoff_ms;
	uint64_t ready_at;

	struct sl_link *link;    /* the current incarnation, NULL in BACKOFF */
	uv_timer_t timer;        /* handshake deadline, or restart backoff */
	int64_t next_id;
	struct sl_ureq *pending; /* requests awaiting an answer */
	yyjson_mut_doc *caps_doc;/* client capabilities declared upstream */

	/* From the handshake. */
	yyjson_doc *init_doc;
	yyjson_val *capabilities;
	yyjson_val *server_info;
	const char *protocol_version;
	bool modern;             /* spoken to in 2026-07-28 (it answered server/discover) */
	const char *instructions;

	struct sl_item_list tools, resources, templates, prompts;
	size_t tools_held;       /* of tools, hidden by pinning: set by the owner's ready */
	unsigned lists_loading;  /* list fetches in flight */
	bool lists_dirty;        /* a list_changed arrived during a fetch */
	bool closing_timer;

	/* sluice.limits: what the server sends toward the client. */
	struct sl_rate asks;     /* sampling and elicitation relayed, a minute (gateway/calls.c) */
	struct sl_rate notes;    /* notifications, a second: the excess is dropped */
	uv_timer_t notes_timer;  /* logs, at a window's end, how many it dropped */
	int handles;             /* the timers not yet closed, once freeing */
	/* 2026-07-28: sluice's own subscriptions/listen to the server, for
	 * its list changes and the resources clients' listens watch. */
	struct sl_ureq *listen;  /* open (or being opened), else NULL */
	uv_timer_t listen_timer; /* reopens it after listen_backoff_ms */
	uint64_t listen_backoff_ms;
	struct sl_map watched;   /* resource URIs (the server's own) to listen for */
	/* OAuth (oauth/client.h): a remote server without an Authorization
	 * header of its own has a client, kept across links and reloads. */
	struct sl_oauth_client *oauth;
	uv_fs_poll_t login_watch; /* NEEDS_LOGIN, or a list refused for a scope: the
				   * record's file, for a login */
	bool login_logged;       /* "needs login" was logged (once until it is ready) */
	/* The lists (bit 1 << k: tools, resources, templates, prompts) the
	 * server refused for a scope a login would grant: the upstream stays
	 * ready with the rest, error says which command to run, and a login
	 * saved meanwhile fetches every list again. */
	unsigned scope_refused;
};

/* True when the server's tools are missing until a person logs in (needs
 * login, or its tools/list refused for a scope): an unknown tool under its
 * prefix says so. */
bool sl_upstream_tools_await_login(const struct sl_upstream *u);

struct sl_upstream *sl_upstream_new(uv_loop_t *loop, const struct sl_server_config *cfg,
				    const struct sl_config *gcfg,
				    const struct sl_upstream_ops *ops, void *ctx);
/* caps: the client's capabilities to declare upstream (borrowed, may be NULL). */
void sl_upstream_start(struct sl_upstream *u, yyjson_val *caps);
/* Graceful stop: close stdin, then SIGTERM, then SIGKILL after a grace. */
void sl_upstream_stop(struct sl_upstream *u);
bool sl_upstream_stopped(const struct sl_upstream *u);
void sl_upstream_free(struct sl_upstream *u);
/* A reload kept this server as it was: its entry moves to the new config
 * (a reference is taken on gcfg, the old one's dropped). */
void sl_upstream_reconfigure(struct sl_upstream *u, const struct sl_server_config *cfg,
			     const struct sl_config *gcfg);

/*
 * Sends method with params (the object from sl_rpc_request_new-style docs:
 * d is borrowed and mutated: the envelope is added to its root, which must
 * be the params object). Returns the request, or NULL with err set if the
 * server is not available or its input is backed up. With progress set, a
 * progressToken is added and notifications/progress for it go to progress
 * until the reply arrives. cb may be NULL when the answer does not matter.
 */
struct sl_ureq *sl_upstream_request(struct sl_upstream *u, const char *method,
				    yyjson_mut_doc *d, yyjson_mut_val *params,
				    uint64_t timeout_ms, sl_reply_fn cb, sl_progress_fn progress,
				    void *ctx, struct sl_err *err);
/* Sends a notification with empty params. */
void sl_upstream_notify(struct sl_upstream *u, const char *method);
/* Forgets r (cb will not run) and tells the server with notifications/cancelled. */
void sl_upstream_cancel(struct sl_upstream *u, struct sl_ureq *r, const char *reason);

/* Answers a server-to-client request with a result or an error object
 * (exactly one non-NULL). gen is u's process generation when the request
 * arrived: an answer for a process since replaced is dropped. */
void sl_upstream_respond(struct sl_upstream *u, unsigned gen, yyjson_val *id,
			 yyjson_val *result, yyjson_val *error);
/* Answers the server's request id (of its current process) with the
 * JSON-RPC error {code, message}. */
void sl_upstream_refuse(struct sl_upstream *u, yyjson_val *id, int code, const char *message);
unsigned sl_upstream_generation(const struct sl_upstream *u);
/* The request of ours a server request id stands for: a 2026-07-28
 * server's input request (its input_required answer to that request,
 * relayed as a request under an id of ours), else NULL. */
const struct sl_ureq *sl_upstream_asker(struct sl_upstream *u, yyjson_val *id);

const char *sl_upstream_state_name(enum sl_upstream_state s);
/* A client's listen wants (on) or no longer wants the server's resource
 * uri (its own form): a 2026-07-28 server's listen is reopened with the
 * new set. The caller counts listeners: on once for the first, off once
 * for the last. */
void sl_upstream_watch(struct sl_upstream *u, const char *uri, bool on);
/* True if the server declared this capability (e.g. "tools") in its handshake. */
bool sl_upstream_has_cap(const struct sl_upstream *u, const char *cap);

#endif

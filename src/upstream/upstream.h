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
#include "core/list.h"
#include "core/lru.h"
#include "core/map.h"
#include "proto/jsonrpc.h"

#include <uv.h>

struct sl_upstream;
struct sl_ureq;
struct sl_oauth_client;
struct sl_caller;

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
	/* A user link (link->parent is the server) needs its user's login: where
	 * that user logs in (malloc'd), or NULL when nowhere (the gateway has no
	 * public URL). May be NULL. */
	char *(*login_url)(void *ctx, struct sl_upstream *link);
	/* Its last request in flight has answered (pending is back to 0); called
	 * from inside the answer's handling, so the owner defers anything that
	 * would free or stop u. May be NULL. */
	void (*idle)(void *ctx, struct sl_upstream *u);
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
	uint64_t version;   /* this process's count of lists received when this one
			     * arrived: never 0 for a list received, never reused, so
			     * that what is computed from a list can be kept with it */
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
	struct sl_list requests; /* requests awaiting an answer, newest first */
	unsigned pending;        /* how many */
	yyjson_mut_doc *caps_doc;/* client capabilities declared upstream */

	/* From the handshake. */
	yyjson_doc *init_doc;
	yyjson_val *capabilities;
	yyjson_val *server_info;
	const char *protocol_version;
	bool modern;             /* spoken to in 2026-07-28 (it answered server/discover) */
	unsigned probes;         /* server/discover sent on this link: a -32022 allows 2 */
	bool asking_both;        /* auto: a 2026-07-28 answer (in init_doc) is held while the
				  * server is asked initialize too (UPSTREAMS.md, "Choosing
				  * the era") */
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

	/* Per-user delegation (oauth.perUser; upstream/users.c): each caller
	 * with an identity reaches the server through a user link of its own,
	 * an upstream whose parent is the server's, carrying that caller's
	 * tokens. A user link fetches no lists (the server's make the
	 * catalog), reports through its server's ops with itself as u, holds
	 * requests while it connects, and closes when idle. User links live
	 * as long as their server: what a session holds on to (an answer to a
	 * server request) stays valid. */
	struct sl_upstream *parent; /* a user link's server; NULL for a server */
	char *user;              /* a user link's key (its store user); NULL for a server */
	char *user_name;         /* a user link's caller, for messages */
	char *login_url;         /* a user link that needs login: where its user logs in */
	uint64_t used_ms;        /* a user link's last request */
	bool idling;             /* a user link stopping for idleness: IDLE afterwards */
	struct sl_lru_entry in_users; /* a user link's place in its server's users */
	/* A server's user links by user key, the order they were made: never
	 * evicted nor expired (at most sluice.oauth.maxUsers, more refused). */
	struct sl_lru users;
	uv_timer_t idle_timer;   /* a server's: closes idle user links */
	/* Roots (roots.c): a session-era server keeps what its roots/list was
	 * answered, and roots belong to one client. Per link (per process). */
	bool roots_asked;        /* it asked roots/list on this link */
	bool roots_hold;         /* requests wait (held) until it has asked again */
	bool roots_deaf;         /* it did not ask again after a list_changed: no more waits */
	bool roots_reasked;      /* it asked during the current wait */
	char roots_for[80];      /* the client key whose roots it was last told; "": none */
	uv_timer_t roots_timer;  /* ends a wait: SL_UPSTREAM_ROOTS_WAIT_MS */
};

/* The link that serves caller's requests to server u: u itself, unless
 * its entry says oauth.perUser and the caller has an identity; then that
 * caller's own link, made on first use (and opened if closed). NULL, with
 * err set, when the server has sluice.oauth.maxUsers links already. */
struct sl_upstream *sl_upstream_for(struct sl_upstream *u, const struct sl_caller *caller,
				    struct sl_err *err);
/* The server a link belongs to (u itself for a server). */
struct sl_upstream *sl_upstream_server(struct sl_upstream *u);
/* A user link that needs its user's login: where to log in; else NULL. */
const char *sl_upstream_login_url(const struct sl_upstream *u);
/* How many of server u's user links are open, and how many wait for their
 * user's login (u->users.count in all). */
void sl_upstream_users_count(struct sl_upstream *u, size_t *open, size_t *awaiting_login);
/* A login for user (a user key) to server u was saved: that user's link
 * connects at once instead of at its next look at the store. */
void sl_upstream_user_logged_in(struct sl_upstream *u, const char *user);

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
 * The caller's client capabilities, when the caller put them in
 * params._meta["io.modelcontextprotocol/clientCapabilities"], are what a
 * 2026-07-28 server is told for this request, cut to what the gateway
 * relays (caps given to sl_upstream_start); without them it is told those;
 * a session-era server never gets the key.
 */
struct sl_ureq *sl_upstream_request(struct sl_upstream *u, const char *method,
				    yyjson_mut_doc *d, yyjson_mut_val *params,
				    uint64_t timeout_ms, sl_reply_fn cb, sl_progress_fn progress,
				    void *ctx, struct sl_err *err);
/* Roots belong to a client (MCP 2025-11-25 client features, "Roots"): a
 * server told one client's roots must not serve another client with them.
 * Before a request made for client (a client key, sl_session_client_key),
 * a session-era server that has asked roots/list on this link and was last
 * told another client's roots (or none) is sent
 * notifications/roots/list_changed, and its requests wait (held, in order)
 * until it has asked again and been answered, at most
 * SL_UPSTREAM_ROOTS_WAIT_MS; a server that did not ask again within that
 * is not waited for again on this link. */
#define SL_UPSTREAM_ROOTS_WAIT_MS 500
void sl_upstream_roots_before(struct sl_upstream *u, const char *client);
/* u's roots/list was answered with client's roots ("": an empty list, or
 * the asking client's error): held requests go out. */
void sl_upstream_roots_given(struct sl_upstream *u, const char *client);
/* Sends a notification with empty params. */
void sl_upstream_notify(struct sl_upstream *u, const char *method);
/* Forgets r (cb will not run) and tells the server with notifications/cancelled
 * (through the link r was sent on). */
void sl_upstream_cancel(struct sl_ureq *r, const char *reason);
/* r's answer goes to cb(ctx) from now on, not to the one it was sent
 * with: a request handed from one owner to another (a 2026-07-28 client's
 * request parked while it answers the server's questions, gateway/park.c). */
void sl_upstream_rebind(struct sl_ureq *r, sl_reply_fn cb, void *ctx);
/* The key a 2026-07-28 server gave the input request that u relays under
 * id (its inputRequests key), or NULL: not one of those, or answered. */
const char *sl_upstream_input_key(struct sl_upstream *u, yyjson_val *id);

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
/* Fetches the server's tools list again, as its notifications/tools/
 * list_changed would (the owner hears ready when it is in): for a tool a
 * refresh found that the list the gateway holds lacks. */
void sl_upstream_relist_tools(struct sl_upstream *u);
/* True if the server declared this capability (e.g. "tools") in its handshake. */
bool sl_upstream_has_cap(const struct sl_upstream *u, const char *cap);

#endif

/*
 * The gateway: the configuration, the upstreams, the merged catalog, and
 * the client sessions. It turns what upstreams report (ready, down, list
 * changes, notifications, server-to-client requests) into catalog rebuilds
 * and messages to sessions.
 *
 * API:
 *   gw = sl_gateway_new(loop, gen);
 *   sl_gateway_start(gw, client_caps);   once: starts every upstream
 *   sl_gateway_when_settled(gw, fn, ctx);  fn runs when every upstream has
 *                                          answered its first handshake or
 *                                          failed, or startupTimeoutMs passed
 *   sl_gateway_reload(gw, next, &err);  a config reload (SIGHUP): see below
 *   sl_gateway_stop(gw, fn, ctx);        stops upstreams; fn when all ended
 *   sl_gateway_free(gw);
 */
#ifndef SL_GATEWAY_GATEWAY_H
#define SL_GATEWAY_GATEWAY_H

#include "config/config.h"
#include "core/list.h"
#include "core/map.h"
#include "pipeline/gen.h"
#include "event/handles.h"
#include "core/map.h"
#include "upstream/catalog.h"

#include <uv.h>

struct sl_listing;
struct sl_session;
struct sl_sandbox;
struct sl_weblogin;
struct sl_redis;
struct sl_fleet;
struct sl_discovery_cache;

typedef void (*sl_gateway_fn)(void *ctx);

struct sl_waiter {
	struct sl_list link;       /* in the gateway's waiters */
	sl_gateway_fn fn;
	void *ctx;
};

struct sl_gateway {
	uv_loop_t *loop;
	uint64_t started_ms;           /* sl_now_ms() when made: the uptime sluice status shows */
	/* The current generation (a reference): new calls and programs take
	 * theirs from here; a reload replaces it, and the old one goes with
	 * the last call that holds it. The config is gen->cfg: there is no
	 * second way to reach it. */
	struct sl_gen *gen;
	/* Servers a reload removed or replaced: stopped once their requests in
	 * flight have answered (at most callTimeoutMs), kept until
	 * sl_gateway_free since calls may still hold them (each keeps a
	 * reference to the config its entry is in). */
	struct sl_upstream **retired;
	uint64_t *retire_by;           /* deadline (ms) per retired server */
	size_t nretired;
	uv_timer_t retire;             /* the next deadline, or at once when one goes idle */
	yyjson_doc *caps;              /* declared upstream, for servers a reload adds */
	/* Many clients at once (the HTTP front): upstreams are declared what
	 * sluice can relay, not the first client's capabilities, and a
	 * server's request outside a call reaches nobody (SESSIONS.md). */
	bool shared;
	/* sluice.shared.redis: the Redis client this process shares state with
	 * its replicas through (src/shared/); NULL without the section. Made
	 * by `serve` (sl_gateway_set_redis), kept across reloads, freed with
	 * the gateway; the stages reach it through gen->services. */
	struct sl_redis *redis;
	/* The replicas seen through redis (src/shared/fleet.c): made by
	 * `serve` with redis (sl_gateway_set_fleet), freed with the gateway
	 * before redis. */
	struct sl_fleet *fleet;
	/* MCP 2026-07-28 tool calls parked while their server's questions
	 * travel to the client as input_required (park.c): id -> struct
	 * sl_park, at most sluice.limits.maxParkedCalls. */
	struct sl_map parks;
	uint64_t next_park;
	struct sl_upstream **ups;
	size_t nups;
	struct sl_catalog catalog;
	/* search_tools' index, signature lines and describe_tools modules for
	 * catalog, kept per server list (discovery/discovery.h). */
	struct sl_discovery_cache *discovery;
	struct sl_list sessions;       /* struct sl_session, newest first */
	/* Client requests in flight (struct sl_pending), all sessions, both
	 * eras: at most sluice.limits.maxRequestsInFlight (session.c). */
	uint32_t requests;
	/* subscriptions/listen streams open, all sessions: at most
	 * sluice.limits.maxListens (listen.c). */
	uint32_t listens;
	/* Tasks relayed for clients (gateway/tasks.c): by the id clients see,
	 * and by "<server>\x1f<the server's id>" for its status notifications;
	 * at most sluice.limits.maxTasks. */
	struct sl_map tasks;
	struct sl_map task_ups;
	uint32_t ntasks;               /* entries, and creations in flight */
	bool started;
	bool settled;
	bool stopping;
	uint64_t resources_hash;
	uint64_t prompts_hash;
	/* What tools/list answers from (gateway/listing.h): presented
	 * definitions and rendered listings, per catalog change. */
	struct sl_listing *listing;
	uv_timer_t timer;          /* startup deadline, then stop polling */
	uv_timer_t wake;           /* runs waiters from the loop */
	struct sl_handles handles; /* the timers */
	struct sl_list waiters;    /* struct sl_waiter, oldest first */
	struct sl_sandbox *sandbox;/* code mode, once started */
	char code_error[512];      /* why code mode could not start */
	sl_gateway_fn on_stopped;
	void *stopped_ctx;
	/* Callers' logins through the HTTP face (oauth/weblogin.h): made
	 * when sluice.http.publicUrl is set, else NULL. */
	struct sl_weblogin *weblogin;
};

/* Takes a reference to gen, and registers the gateway's observer and
 * result keeper on gen->services (shared with every later generation). */
struct sl_gateway *sl_gateway_new(uv_loop_t *loop, struct sl_gen *gen);
void sl_gateway_free(struct sl_gateway *gw);
/* caps: the client's capabilities to declare upstream (borrowed, may be
 * NULL); ignored when gw->shared (set it before), where every upstream is
 * declared what sluice relays (roots, sampling, elicitation in form and
 * url modes), whoever connects first. */
void sl_gateway_start(struct sl_gateway *gw, yyjson_val *caps);
/* Runs fn from the loop (never inside this call) once settled. */
void sl_gateway_when_settled(struct sl_gateway *gw, sl_gateway_fn fn, void *ctx);
void sl_gateway_stop(struct sl_gateway *gw, sl_gateway_fn fn, void *ctx);

/*
 * Applies a new generation (built with sl_gen_new from the current one, so
 * its stages are already valid; a reference is taken) without dropping
 * sessions. Servers that are new start; servers
 * that are gone, or whose command, args, env, cwd or disabled flag changed,
 * are stopped once their calls in flight have answered (a changed one is
 * replaced by a new process at once); the others keep running with the new
 * entry (a new timeout applies to new calls). Exposure and log level apply
 * at once; clients hear notifications/tools/list_changed. New calls and
 * programs run on the new generation's stages at once; calls and programs
 * in flight finish on the one they started with. sluice.http (its tls aside,
 * which serve hands to the transport: sl_http_tls_load), sluice.codeMode,
 * sluice.telemetry and logFile are logged as needing a restart and otherwise
 * ignored. Returns SL_ERR_INVALID (nothing changed)
 * if the new config turns code mode on or off.
 */
int sl_gateway_reload(struct sl_gateway *gw, struct sl_gen *next, struct sl_err *err) SL_MUST_USE;

/* sluice.shared.redis: takes r (freed with the gateway), hands it to the
 * stages through the generations' services, and shares the pins through
 * it from now on (before any client lists: pins are reconciled on
 * connecting). */
void sl_gateway_set_redis(struct sl_gateway *gw, struct sl_redis *r);
/* Takes the fleet (freed with the gateway, before redis) and hands it on
 * likewise. */
void sl_gateway_set_fleet(struct sl_gateway *gw, struct sl_fleet *f);

struct sl_upstream *sl_gateway_upstream(struct sl_gateway *gw, const char *name);
/* The web login (borrowed; the gateway's until sl_gateway_free), or NULL
 * without sluice.http.publicUrl. */
struct sl_weblogin *sl_gateway_weblogin(struct sl_gateway *gw);

/* A stage's verdict on tools changed (pinning trusted a server's new
 * definitions; heard through gen->services): every session hears
 * notifications/tools/list_changed. */
void sl_gateway_tools_changed(struct sl_gateway *gw);
/* As sl_gateway_tools_changed, for the sessions of one caller identity
 * alone (key: its sl_caller key; NULL: every session): a skill saved on a
 * caller's shelf changes nobody else's list, and telling them would say
 * that a colleague saved one. */
void sl_gateway_tools_changed_for(struct sl_gateway *gw, const char *key);

/* GET /status (transport/http_operator.c, `sluice status`): version, uptime,
 * upstreams (name, state, tools), sessions (the transport's count), code
 * mode's programs, and the quota counters (stages/quota.h), as JSON: a
 * new string of *len bytes the caller frees. It holds no token or other
 * secret: names, counts and limits only. */
char *sl_gateway_status(struct sl_gateway *gw, uint32_t sessions, size_t *len);
/* The same, as an object made in d (the admin page's, gateway/admin.h). */
yyjson_mut_val *sl_gateway_status_doc(struct sl_gateway *gw, uint32_t sessions,
				      yyjson_mut_doc *d);
/* This replica's load for its fleet heartbeat (shared/fleet.h's
 * sl_fleet_load_fn; ctx is the gateway): legacy sessions, programs
 * running, upstreams ready and configured. */
struct sl_fleet_load;
void sl_gateway_fleet_load(void *ctx, struct sl_fleet_load *out);

/* What the HTTP front end owns that GET /metrics shows. */
struct sl_front_stats {
	uint32_t sessions;       /* Streamable HTTP sessions (session era) */
	uint32_t sse_sessions;   /* HTTP+SSE (2024-11-05) sessions */
	uint32_t stateless;      /* 2026-07-28 requests in flight, listens aside */
	uint32_t listens;        /* 2026-07-28 subscriptions/listen streams */
	uint32_t connections;    /* HTTP connections open */
	size_t buffered;         /* bytes charged to sluice.limits.maxBufferedBytes */
	size_t buffered_limit;   /* that limit */
};

/* GET /metrics (transport/http_operator.c; docs/METRICS.md): the gateway's gauges
 * (upstreams, sandbox boundaries, the front end's f) and the process's
 * counters (pipeline/metrics.h) in the Prometheus text format 0.0.4, as a
 * new string of *len bytes the caller frees. Names and counts only. */
char *sl_gateway_metrics(struct sl_gateway *gw, const struct sl_front_stats *f, size_t *len);

/* Sessions register to receive list changes and notifications. */
void sl_gateway_add_session(struct sl_gateway *gw, struct sl_session *s);
void sl_gateway_remove_session(struct sl_gateway *gw, struct sl_session *s);

#endif

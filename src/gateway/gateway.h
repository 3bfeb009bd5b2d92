/*
 * The gateway: the configuration, the upstreams, the merged catalog, and
 * the client sessions. It turns what upstreams report (ready, down, list
 * changes, notifications, server-to-client requests) into catalog rebuilds
 * and messages to sessions.
 *
 * API:
 *   gw = sl_gateway_new(loop, cfg);
 *   sl_gateway_start(gw, client_caps);   once: starts every upstream
 *   sl_gateway_when_settled(gw, fn, ctx);  fn runs when every upstream has
 *                                          answered its first handshake or
 *                                          failed, or startupTimeoutMs passed
 *   sl_gateway_stop(gw, fn, ctx);        stops upstreams; fn when all ended
 *   sl_gateway_free(gw);
 */
#ifndef SL_GATEWAY_GATEWAY_H
#define SL_GATEWAY_GATEWAY_H

#include "config/config.h"
#include "upstream/catalog.h"

#include <uv.h>

struct sl_session;
struct sl_sandbox;

typedef void (*sl_gateway_fn)(void *ctx);

struct sl_waiter {
	struct sl_waiter *next;
	sl_gateway_fn fn;
	void *ctx;
};

struct sl_gateway {
	uv_loop_t *loop;
	const struct sl_config *cfg;
	struct sl_upstream **ups;
	size_t nups;
	struct sl_catalog catalog;
	struct sl_session *sessions;
	bool started;
	bool settled;
	bool stopping;
	uint64_t resources_hash;
	uint64_t prompts_hash;
	uv_timer_t timer;          /* startup deadline, then stop polling */
	uv_timer_t wake;           /* runs waiters from the loop */
	int open_timers;
	struct sl_waiter *waiters;
	struct sl_sandbox *sandbox;/* code mode, once started */
	char code_error[512];      /* why code mode could not start */
	sl_gateway_fn on_stopped;
	void *stopped_ctx;
};

struct sl_gateway *sl_gateway_new(uv_loop_t *loop, const struct sl_config *cfg);
void sl_gateway_free(struct sl_gateway *gw);
/* caps: the client's capabilities to declare upstream (borrowed, may be NULL). */
void sl_gateway_start(struct sl_gateway *gw, yyjson_val *caps);
/* Runs fn from the loop (never inside this call) once settled. */
void sl_gateway_when_settled(struct sl_gateway *gw, sl_gateway_fn fn, void *ctx);
void sl_gateway_stop(struct sl_gateway *gw, sl_gateway_fn fn, void *ctx);

struct sl_upstream *sl_gateway_upstream(struct sl_gateway *gw, const char *name);

/* Sessions register to receive list changes and notifications. */
void sl_gateway_add_session(struct sl_gateway *gw, struct sl_session *s);
void sl_gateway_remove_session(struct sl_gateway *gw, struct sl_session *s);

#endif

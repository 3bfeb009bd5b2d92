/*
 * libcurl, loaded on first use. Linking it would map it and its dependencies
 * (TLS stacks, Kerberos, LDAP...) into every gateway, about 8 MiB of resident
 * pages, for features most configurations do not use: telemetry export and
 * remote (HTTP) upstreams. They call sl_curl_load() when configured and then
 * call libcurl through the sl_curl table.
 *
 *   if (!sl_curl_load("sluice.telemetry", &err)) fail with err.msg;
 *   CURL *e = sl_curl.easy_init();
 */
#ifndef SL_EVENT_CURL_H
#define SL_EVENT_CURL_H

#include "core/common.h"
#include "core/list.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

/* Every libcurl function sluice calls, without its curl_ prefix. */
#define SL_CURL_FUNCTIONS(X)                                                       \
	X(easy_cleanup) X(easy_getinfo) X(easy_init) X(easy_setopt) X(easy_strerror) \
	X(global_init) X(multi_add_handle) X(multi_assign) X(multi_cleanup)         \
	X(multi_info_read) X(multi_init) X(multi_remove_handle) X(multi_setopt)     \
	X(multi_socket_action) X(slist_append) X(slist_free_all) X(url)             \
	X(url_cleanup) X(url_get) X(url_set) X(free)

struct sl_curl_api {
	void *lib;
#define SL_CURL_MEMBER(f) __typeof__(curl_##f) *f;
	SL_CURL_FUNCTIONS(SL_CURL_MEMBER)
#undef SL_CURL_MEMBER
};

extern struct sl_curl_api sl_curl;

/* Loads libcurl once (and initialises it). who names the feature in err. */
bool sl_curl_load(const char *who, struct sl_err *err);

/* A header line as curl hands it to a CURLOPT_HEADERFUNCTION: when it is
 * `name: value` (name without its colon, any case), sets *v and *vl to the
 * value without the blanks around it and the line end, and returns true. */
bool sl_curl_header(const char *line, size_t len, const char *name, const char **v, size_t *vl);

/*
 * A multi handle driven by the libuv loop: curl's sockets are watched with
 * uv_poll handles and its timeouts with a uv timer, so curl never blocks
 * and never runs but from the loop. Every HTTP client of the gateway's
 * runs on one: each remote upstream's (upstream/remote.c) and each
 * fetcher's (event/fetch.h: JWKS, introspection, OAuth, telemetry's
 * exports). after(arg) runs once curl has acted on a socket or a timeout:
 * there its owner reads the finished transfers (multi_info_read) and does
 * what they call for, outside every curl callback. The timer and the polls
 * are members of the owner's handle set, which frees them once closed
 * (event/handles.h).
 *
 *   sl_curl_loop_init(&x->cl, loop, &x->handles, on_after, x);   after sl_curl_load
 *   sl_curl.multi_add_handle(x->cl.multi, easy); ...
 *   sl_curl_loop_dispose(&x->cl);    then sl_handles_close(&x->handles, ...)
 */
struct uv_loop_s;
struct sl_handles;
struct sl_curl_sock;

struct sl_curl_loop {
	CURLM *multi;
	struct uv_loop_s *loop;
	struct sl_handles *handles;
	void *timer;                     /* a uv_timer_t in handles */
	struct sl_list socks;            /* the sockets watched, newest first */
	void (*after)(void *arg);
	void *arg;
	bool unref;                      /* the timer and polls keep no loop running */
};

/* False when libcurl cannot make a multi handle. */
bool sl_curl_loop_init(struct sl_curl_loop *cl, struct uv_loop_s *loop,
		       struct sl_handles *handles, void (*after)(void *arg), void *arg);
/* From now on cl's timer and polls are unreferenced (uv_unref): transfers
 * in flight do not keep the loop running, for work that must never delay an
 * exit. libuv still runs their callbacks while something else keeps the
 * loop running. */
void sl_curl_loop_unref(struct sl_curl_loop *cl);
/* Stops watching curl's sockets and frees the multi handle: every easy
 * handle must have been removed first. */
void sl_curl_loop_dispose(struct sl_curl_loop *cl);

#endif

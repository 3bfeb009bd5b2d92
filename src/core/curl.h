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
#ifndef SL_CORE_CURL_H
#define SL_CORE_CURL_H

#include "core/common.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

/* Every libcurl function sluice calls, without its curl_ prefix. */
#define SL_CURL_FUNCTIONS(X)                                                       \
	X(easy_cleanup) X(easy_getinfo) X(easy_init) X(easy_perform) X(easy_setopt) X(easy_strerror) \
	X(global_init) X(multi_add_handle) X(multi_assign) X(multi_cleanup)         \
	X(multi_info_read) X(multi_init) X(multi_perform) X(multi_poll) X(multi_remove_handle)    \
	X(multi_setopt) X(multi_socket_action) X(multi_strerror) X(slist_append)    \
	X(slist_free_all) X(url) X(url_cleanup) X(url_get) X(url_set) X(free)

struct sl_curl_api {
	void *lib;
#define SL_CURL_MEMBER(f) __typeof__(curl_##f) *f;
	SL_CURL_FUNCTIONS(SL_CURL_MEMBER)
#undef SL_CURL_MEMBER
};

extern struct sl_curl_api sl_curl;

/* Loads libcurl once (and initialises it). who names the feature in err. */
bool sl_curl_load(const char *who, struct sl_err *err);

#endif

/*
 * libcurl through dlopen (see curl.h for why).
 */
#include "core/curl.h"

#include <dlfcn.h>
#include <string.h>

struct sl_curl_api sl_curl;

bool sl_curl_load(const char *who, struct sl_err *err)
{
	static const char *names[] = { "libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so" };
	struct sl_curl_api api = { 0 };

	if (sl_curl.lib)
		return true;
	for (size_t i = 0; i < SL_COUNT(names) && !api.lib; i++)
		api.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!api.lib) {
		sl_err_set(err, "%s: libcurl is not installed (apt-get install libcurl4)", who);
		return false;
	}
#define SL_CURL_RESOLVE(f)                                                        \
	if (!(api.f = (__typeof__(api.f))dlsym(api.lib, "curl_" #f))) {          \
		sl_err_set(err, "%s: this libcurl lacks curl_%s, which sluice needs", who, #f); \
		dlclose(api.lib);                                                \
		return false;                                                    \
	}
	SL_CURL_FUNCTIONS(SL_CURL_RESOLVE)
#undef SL_CURL_RESOLVE
	if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		sl_err_set(err, "%s: libcurl failed to initialise", who);
		dlclose(api.lib);
		return false;
	}
	sl_curl = api;
	return true;
}

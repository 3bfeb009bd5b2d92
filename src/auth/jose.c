/*
 * libcjose through dlopen (see jose.h for why).
 */
#include "auth/jose.h"

#include <dlfcn.h>

struct sl_jose_api sl_jose;

bool sl_jose_load(const char *who, struct sl_err *err)
{
	struct sl_jose_api api = { 0 };

	if (sl_jose.lib)
		return true;
	if (!(api.lib = dlopen("libcjose.so.0", RTLD_NOW | RTLD_LOCAL))) {
		sl_err_set(err, "%s: libcjose is not installed (apt-get install libcjose0)", who);
		return false;
	}
#define SL_JOSE_RESOLVE(f)                                                        \
	if (!(api.f = (__typeof__(api.f))dlsym(api.lib, "cjose_" #f))) {         \
		sl_err_set(err, "%s: this libcjose lacks cjose_%s, which sluice needs", who, #f); \
		dlclose(api.lib);                                                \
		return false;                                                    \
	}
	SL_JOSE_FUNCTIONS(SL_JOSE_RESOLVE)
#undef SL_JOSE_RESOLVE
	sl_jose = api;
	return true;
}

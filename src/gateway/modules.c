/*
 * The modules the config loader consults without including them
 * (config.h, struct sl_config_modules): defined here, in the lowest layer
 * that sees them all, as nginx's configure writes ngx_modules[] once for
 * the whole binary.
 */
#include "config/config.h"
#include "gateway/router.h"
#include "pipeline/call.h"
#include "sandbox/kernel.h"
#include "shared/fleet.h"
#include "shared/url.h"

static bool stage(size_t i, const char **name, const struct sl_conf_section **conf)
{
	if (i >= sl_nstages)
		return false;
	*name = sl_stages[i]->name;
	*conf = sl_stages[i]->conf;
	return true;
}

static int redis_url_check(const char *url, struct sl_err *err)
{
	struct sl_redis_addr a;
	int rc = sl_redis_url_parse(url, &a, err);

	if (rc == SL_OK)
		sl_redis_addr_dispose(&a);
	return rc;
}

const struct sl_config_modules sl_config_modules = {
	.stage = stage,
	.reserved_tool = sl_router_reserved,
	.boundary = sl_boundary_parse,
	.replica_id_ok = sl_fleet_id_ok,
	.replica_id_max = SL_FLEET_ID_MAX,
	.redis_url_check = redis_url_check,
};

/*
 * The configuration as every command sees it: the file, the OAuth module's
 * private keys, then the command line's overrides (--exposure,
 * --log-level), then code mode's own checks.
 * Shared by start-up and `serve`'s reload on SIGHUP, so that a reload reads
 * the file exactly as the start did.
 */
#include "cli/cli.h"
#include "core/log.h"
#include "gateway/codemode.h"
#include "oauth/oauth.h"

#include <string.h>

static int apply(struct sl_config *cfg, const struct sl_cli_opts *o, struct sl_err *err)
{
	if (sl_oauth_keys_load(cfg, err) < 0)
		return SL_ERR_INVALID;
	if (o && o->exposure) {
		if (!strcmp(o->exposure, "passthrough"))
			cfg->exposure = SL_EXPOSE_PASSTHROUGH;
		else if (!strcmp(o->exposure, "router"))
			cfg->exposure = SL_EXPOSE_ROUTER;
		else if (!strcmp(o->exposure, "hybrid"))
			cfg->exposure = SL_EXPOSE_HYBRID;
		else if (!strcmp(o->exposure, "code"))
			cfg->exposure = SL_EXPOSE_CODE, cfg->code_enabled = true;
		else {
			sl_err_set(err, "--exposure must be passthrough, router, hybrid or code");
			return SL_ERR_INVALID;
		}
	}
	if (cfg->code_enabled && sl_codemode_check(cfg, err) < 0)
		return SL_ERR_INVALID;
	if (o && o->log_level) {
		int l = sl_log_level_parse(o->log_level);
		if (l < 0) {
			sl_err_set(err, "--log-level must be error, warn, info or debug");
			return SL_ERR_INVALID;
		}
		cfg->log_level = l;
	}
	return SL_OK;
}

/* Finishes a load or parse that returned rc: the options on top, or
 * nothing kept on failure. */
static int finish(int rc, struct sl_config *cfg, const struct sl_cli_opts *o,
		  struct sl_config **out, struct sl_err *err)
{
	if (rc < 0)
		return rc;
	if ((rc = apply(cfg, o, err)) < 0) {
		sl_config_unref(cfg);
		return rc;
	}
	*out = cfg;
	return SL_OK;
}

int sl_cli_load(const char *path, const struct sl_cli_opts *o, struct sl_config **out,
		struct sl_err *err)
{
	struct sl_config *cfg = NULL;
	int rc = sl_config_load(path, &cfg, err);
	return finish(rc, cfg, o, out, err);
}

int sl_cli_parse(const char *text, size_t len, const struct sl_cli_opts *o,
		 struct sl_config **out, struct sl_err *err)
{
	struct sl_config *cfg = NULL;
	int rc = sl_config_parse("(defaults)", text, len, &cfg, err);
	return finish(rc, cfg, o, out, err);
}

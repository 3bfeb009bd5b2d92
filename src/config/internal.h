/*
 * What the config loader's files share (not for use outside src/config/).
 * config.c holds the file's root, the gateway's own sections (codeMode,
 * limits, shared, profiles) and loading; servers.c the server entries
 * (`mcpServers.<name>` and its `oauth`); http.c the HTTP face (`http`,
 * `http.tls`, `http.auth` and its parts, the OAuth client `sluice.oauth`).
 */
#ifndef SL_CONFIG_INTERNAL_H
#define SL_CONFIG_INTERNAL_H

#include "config/conf.h"
#include "config/config.h"

extern const struct sl_conf_section cfg_server_section;
extern const struct sl_conf_section cfg_server_oauth_section;
extern const struct sl_conf_section cfg_http_section;
extern const struct sl_conf_section cfg_tls_section;
extern const struct sl_conf_section cfg_auth_section;
extern const struct sl_conf_section cfg_token_section;
extern const struct sl_conf_section cfg_jwks_section;
extern const struct sl_conf_section cfg_introspection_section;
extern const struct sl_conf_section cfg_oauth_client_section;

/* The process environment, as sl_config_expand's getenv_fn. */
const char *cfg_getenv(const char *name);

/* One entry of mcpServers (or servers): group is the key it is under. */
int cfg_parse_server(struct sl_conf_ctx *cx, const char *group, const char *name,
		     yyjson_val *o, struct sl_server_config *s);

/* Key parsers more than one file's tables use (sl_conf_parse_fn). */
int cfg_parse_file(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		   void *target);
int cfg_parse_secret(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target);
int cfg_parse_long_secret(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			  void *target);
int cfg_parse_strings(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		      void *target);
int cfg_parse_oauth_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target);

/* What the auth section's keys cannot check alone; the origin of a URL
 * (sluice.http.publicUrl's default). */
int cfg_check_oauth(struct sl_conf_ctx *cx, const struct sl_auth_config *a);
char *cfg_url_origin(const char *u);

/* Frees a NULL-terminated array of strings (NULL is fine). */
void cfg_strings_free(char **l);

#endif

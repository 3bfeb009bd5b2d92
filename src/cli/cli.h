/*
 * The sluice commands. Each runs its own event loop to completion and
 * returns the process exit code.
 *
 *   serve: one MCP session on stdin/stdout, or MCP over HTTP (http: "host:port")
 *   check: start every server once, print what each offers, exit
 *   policy check SERVER.TOOL: the policy's decision, no server started
 *   pins list|diff|approve|reset [SERVER.TOOL|SERVER]: tool pins (stages/pinning)
 *   skills list|show|rm|approve [NAME]: saved skills (gateway/skills.h)
 *   status: a running HTTP gateway's GET /status, as tables or JSON
 *   auth login|status|logout [SERVER]: logins to remote servers (src/oauth/)
 *   import, install, uninstall: MCP clients' config files (cli/import.c)
 */
#ifndef SL_CLI_CLI_H
#define SL_CLI_CLI_H

#include "config/config.h"
#include "pipeline/gen.h"

/* The command line's overrides of the config file. */
struct sl_cli_opts {
	const char *exposure;  /* --exposure, or NULL */
	const char *log_level; /* --log-level, or NULL */
};

/* The config file with the overrides applied and code mode checked.
 * Returns 0 with *out owned by the caller, or SL_ERR_* with err set. */
int sl_cli_load(const char *path, const struct sl_cli_opts *o, struct sl_config **out,
		struct sl_err *err) SL_MUST_USE;
/* The same for a config held in memory. */
int sl_cli_parse(const char *text, size_t len, const struct sl_cli_opts *o,
		 struct sl_config **out, struct sl_err *err) SL_MUST_USE;

/* The commands that run the pipeline get the generation main built from
 * the config (borrowed). On SIGHUP, serve reads gen->cfg->path again with
 * the same opts and builds the next generation (see serve.c). */
int sl_cli_serve(struct sl_gen *gen, const char *http, const struct sl_cli_opts *o);
int sl_cli_check(struct sl_gen *gen);
int sl_cli_exec(struct sl_gen *gen, const char *code, size_t len);
int sl_cli_doctor(struct sl_gen *gen);
/* argv: the words after "policy" ("check", "server.tool"). */
int sl_cli_policy(struct sl_gen *gen, int argc, const char *const *argv);
/* url: "http://HOST:PORT" of the gateway, or NULL: cfg's sluice.http.listen
 * (cfg may be NULL with a url). json: print the answer as it came. */
int sl_cli_status(const struct sl_config *cfg, const char *url, bool json);
/* sub: list, diff, approve or reset; target: "server.tool", "server" or NULL (all). */
int sl_cli_pins(const struct sl_config *cfg, const char *sub, const char *target);
/* sub: list, show, rm, approve or publish; ref: the skill, NAME or
 * OWNER/NAME (not for list). Exit codes: 0 done, 1 a failure (no such
 * skill, a bad file), 2 usage. */
int sl_cli_skills(const char *sub, const char *ref);
/* argv: the words after "auth" (the subcommand, a server, its options).
 * Exit codes: 0 done; 1 a failure (a revocation or a removal that failed);
 * 2 a usage error, an unknown server (the remote ones are listed) or a
 * token store that cannot be opened. */
int sl_cli_auth(const struct sl_config *cfg, int argc, const char *const *argv);
/* argv: the words after the command (cli/import.c has them); config: the
 * --config path or $SLUICE_CONFIG, NULL for the default
 * ($XDG_CONFIG_HOME/sluice/config.json). Exit codes: 0 done; 1 something
 * refused (a file, a server, a client file changed since install); 2 a
 * usage error or a file that cannot be written. */
int sl_cli_import(const char *config, int argc, const char *const *argv);
int sl_cli_install(const char *config, int argc, const char *const *argv);
int sl_cli_uninstall(int argc, const char *const *argv);
/* sluice auth login SERVER (cli/login.c): headless reads the redirect
 * from stdin instead of listening for it; scope adds to what is asked. */
int sl_cli_auth_login(const struct sl_config *cfg, const struct sl_server_config *srv,
		      bool headless, const char *scope);
/* The login listener's whole answer (ok: the page saying the login came
 * back; else 404) into out; its length, 0 when cap is too small. */
size_t sl_cli_login_reply(char *out, size_t cap, bool ok);

#endif

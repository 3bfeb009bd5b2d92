/*
 * sluice: an MCP gateway. This file only reads the command line, loads the
 * config and hands over to a command in src/cli/.
 */
#include "cli/cli.h"
#include "core/log.h"
#include "pipeline/call.h"
#include "sandbox/zygote.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SL_MMAP_THRESHOLD (256 * 1024) /* bytes: larger blocks are mmapped */

static const char usage[] =
	"usage: sluice <command> [options]\n"
	"\n"
	"commands:\n"
	"  serve --config FILE   serve MCP on stdin/stdout, aggregating the config's servers\n"
	"  serve --http HOST:PORT --config FILE\n"
	"                        serve MCP Streamable HTTP at http://HOST:PORT/mcp instead\n"
	"  check --config FILE   validate the config, start each server once, print what it offers\n"
	"  exec --config FILE [PROGRAM | -f FILE]\n"
	"                        run a code-mode program (default: read from stdin) and print its result\n"
	"  doctor [--config FILE]  the kernel features and sandbox boundaries code mode gets here\n"
	"  policy check SERVER.TOOL [--as SUBJECT] [--groups A,B] [--scopes X,Y] [--client ID]\n"
	"               [--profile NAME] [--claims JSON] --config FILE\n"
	"                        the policy's decision for a tool called by that identity\n"
	"                        (default: anonymous) and the rule that made it\n"
	"  pins list|diff|approve|reset [SERVER.TOOL|SERVER] --config FILE\n"
	"                        tool pins: status against the live servers, what changed,\n"
	"                        trust the current definition, forget pins\n"
	"  skills list|show SKILL|rm SKILL|approve SKILL|publish SKILL\n"
	"                        saved skills (code mode), NAME (published) or OWNER/NAME (a\n"
	"                        caller's): status against their pins, the code (escaped),\n"
	"                        remove one, trust one changed on disk, publish a caller's\n"
	"  auth login SERVER [--headless] [--scope \"A B\"] --config FILE\n"
	"                        log in to a remote server's authorization server (OAuth): open\n"
	"                        or print the URL, store the tokens (--headless: paste the\n"
	"                        redirect URL back instead of a loopback listener)\n"
	"  auth status [SERVER] [--json] --config FILE\n"
	"                        each remote server's login: who, scopes, expiry (never a token)\n"
	"  auth logout SERVER --config FILE\n"
	"                        revoke the tokens where the server offers it, forget them\n"
	"                        (tokens: $XDG_STATE_HOME/sluice/oauth, 0600; encrypted with\n"
	"                        $SLUICE_TOKEN_KEY or sluice.oauth.keyFile when set)\n"
	"  status [--url http://HOST:PORT] [--json] [--config FILE]\n"
	"                        a running HTTP gateway's upstreams, sessions and quota counters\n"
	"                        (default URL: the config's sluice.http.listen; loopback only)\n"
	"  import [--write PATH] [--dry-run] [--client NAME] [--progress] [FILE...]\n"
	"                        read the MCP servers of the clients' config files found here\n"
	"                        (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Zed)\n"
	"                        or of the FILEs, print them, merge them into a sluice config\n"
	"                        (--write, else --config, else ~/.config/sluice/config.json;\n"
	"                        written 0600, the old one kept as PATH.bak); a project's servers\n"
	"                        only if approved in its client (or named), into its own config\n"
	"  install --client NAME [--mode stdio|http] [--url URL] [--file FILE] [--config PATH]\n"
	"                        import that client's servers, then point it at sluice alone\n"
	"                        (its file kept byte for byte as FILE.sluice-backup)\n"
	"  uninstall --client NAME [--file FILE]\n"
	"                        put the client's file back from the backup, byte for byte;\n"
	"                        refused if it changed since install\n"
	"                        (NAME: claude-desktop, claude-code, cursor, vscode, windsurf, zed)\n"
	"  config-reference      every config key, its range and default, as markdown\n"
	"\n"
	"options:\n"
	"  -c, --config FILE        config file (JSON with \"mcpServers\"; default $SLUICE_CONFIG)\n"
	"  --exposure MODE          passthrough | router | hybrid | code (overrides sluice.exposure)\n"
	"  --log-level LEVEL        error | warn | info | debug (overrides sluice.logLevel)\n"
	"  -h, --help               this text\n"
	"  -V, --version            the version\n"
	"\n"
	"Logs go to stderr; stdout carries only MCP messages.\n";

/* The program for exec: the argument, a file, or standard input. */
static char *read_program(const char *text, const char *file, size_t *len)
{
	FILE *f;
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (text) {
		*len = strlen(text);
		return strdup(text);
	}
	f = file ? fopen(file, "re") : stdin;
	if (!f) {
		fprintf(stderr, "sluice: cannot open %s\n", file);
		return NULL;
	}
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > (64u << 20)) {
				fprintf(stderr, "sluice: the program is too large\n");
				free(buf);
				buf = NULL;
				break;
			}
			buf = realloc(buf, cap + 1);
			if (!buf)
				abort();
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	if (f != stdin)
		fclose(f);
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	const char *cmd = NULL, *path = getenv("SLUICE_CONFIG");
	struct sl_cli_opts opts = { 0 };
	const char *program = NULL, *program_file = NULL, *http = NULL, *url = NULL;
	bool json = false;
	const char *words[80]; /* policy, pins, auth, import...: the words after the command */
	int nwords = 0;
	struct sl_config *cfg;
	struct sl_gen *gen;
	size_t nservers;
	struct sl_err err;
	int rc;

	/* The code-mode zygote is this binary, started afresh by the gateway. */
	if (argc > 1 && strcmp(argv[1], "__zygote") == 0)
		sl_zygote_main(argc, argv);
	/* Peer messages can be megabytes. A fixed mmap threshold keeps every
	 * block over it out of the heap, so freeing one returns it to the
	 * kernel at once: glibc's sliding threshold would move such blocks
	 * into the heap, where a flood's buffers stay as RSS after it ends.
	 * The heap's top is given back past twice that (glibc's own ratio
	 * when the threshold slides; fixing it leaves the default 128 KiB):
	 * a request's scratch under the threshold (a listing's picks at
	 * 10,000 tools, 240 KiB) is then not mapped and unmapped each time. */
	mallopt(M_MMAP_THRESHOLD, SL_MMAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, 2 * SL_MMAP_THRESHOLD);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("sluice %s (commit %s)\n", SL_VERSION, sl_build_commit);
			return 0;
		} else if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(a, "--exposure") && i + 1 < argc) {
			opts.exposure = argv[++i];
		} else if (!strcmp(a, "--log-level") && i + 1 < argc) {
			opts.log_level = argv[++i];
		} else if (cmd && (!strcmp(cmd, "auth") || !strcmp(cmd, "import") ||
				   !strcmp(cmd, "install") || !strcmp(cmd, "uninstall")) &&
			   nwords < (int)SL_COUNT(words)) {
			/* Its own options too (--json, --scope, --url ...): the command reads them. */
			words[nwords++] = a;
		} else if (!strcmp(a, "--http") && i + 1 < argc) {
			http = argv[++i];
		} else if (!strcmp(a, "--url") && i + 1 < argc) {
			url = argv[++i];
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "-f") && i + 1 < argc) {
			program_file = argv[++i];
		} else if (!cmd && a[0] != '-') {
			cmd = a;
		} else if (cmd && !strcmp(cmd, "exec") && !program && a[0] != '-') {
			program = a;
		} else if (cmd && (!strcmp(cmd, "pins") || !strcmp(cmd, "skills")) && nwords < 2 &&
			   a[0] != '-') {
			words[nwords++] = a;
		} else if (cmd && !strcmp(cmd, "policy") && nwords < (int)SL_COUNT(words)) {
			/* Its own options too (--as ...): sl_cli_policy reads them. */
			words[nwords++] = a;
		} else {
			fprintf(stderr, "sluice: unknown or incomplete argument '%s'\n\n%s", a, usage);
			return 2;
		}
	}
	if (cmd && strcmp(cmd, "config-reference") == 0) {
		sl_config_reference(stdout);
		return 0;
	}
	if (cmd && (!strcmp(cmd, "import") || !strcmp(cmd, "install") || !strcmp(cmd, "uninstall"))) {
		/* Client files and the sluice config: nothing is loaded or started. */
		signal(SIGPIPE, SIG_IGN);
		if (!strcmp(cmd, "import"))
			return sl_cli_import(path, nwords, words);
		if (!strcmp(cmd, "install"))
			return sl_cli_install(path, nwords, words);
		return sl_cli_uninstall(nwords, words);
	}
	if (cmd && strcmp(cmd, "skills") == 0) {
		/* Files under the XDG directories: no config, no server. */
		signal(SIGPIPE, SIG_IGN);
		return sl_cli_skills(nwords > 0 ? words[0] : NULL, nwords > 1 ? words[1] : NULL);
	}
	if (!cmd || (strcmp(cmd, "serve") && strcmp(cmd, "check") && strcmp(cmd, "exec") &&
		     strcmp(cmd, "doctor") && strcmp(cmd, "policy") && strcmp(cmd, "pins") &&
		     strcmp(cmd, "status") && strcmp(cmd, "auth"))) {
		fprintf(stderr, "sluice: %s%s%s\n\n%s", cmd ? "unknown command '" : "no command given",
			cmd ? cmd : "", cmd ? "'" : "", usage);
		return 2;
	}
	if ((url || json) && strcmp(cmd, "status") != 0) {
		fprintf(stderr, "sluice: --url and --json are options of status\n\n%s", usage);
		return 2;
	}
	/* status asks a running gateway: no generation, no server started,
	 * and no config at all with --url. */
	if (strcmp(cmd, "status") == 0 && (url || !path)) {
		if (!url) {
			fprintf(stderr, "sluice: status needs --url or a config (--config FILE or "
				"SLUICE_CONFIG)\n");
			return 2;
		}
		return sl_cli_status(NULL, url, json) == 0 ? 0 : 1;
	}
	if (!path && strcmp(cmd, "doctor") == 0) {
		static const char none[] = "{\"mcpServers\": {}}";
		if (sl_cli_parse(none, sizeof(none) - 1, &opts, &cfg, &err) < 0) {
			fprintf(stderr, "sluice: %s\n", err.msg);
			return 2;
		}
	} else if (!path) {
		fprintf(stderr, "sluice: no config: use --config FILE or set SLUICE_CONFIG\n");
		return 2;
	} else if (sl_cli_load(path, &opts, &cfg, &err) < 0) {
		fprintf(stderr, "sluice: %s\n", err.msg);
		return 2;
	}
	if (sl_log_init(cfg->log_level, cfg->log_file) < 0) {
		fprintf(stderr, "sluice: cannot open log file %s\n", cfg->log_file);
		sl_config_unref(cfg);
		return 2;
	}
	if (strcmp(cmd, "serve") == 0)
		for (size_t i = 0; i < cfg->nwarnings; i++)
			sl_log(SL_LOG_WARN, "%s", cfg->warnings[i]);
	if (strcmp(cmd, "status") == 0) {
		rc = sl_cli_status(cfg, NULL, json);
		sl_config_unref(cfg);
		return rc;
	}
	if (strcmp(cmd, "pins") == 0) {
		/* Opens the pins itself: reset must work where the stages cannot start. */
		signal(SIGPIPE, SIG_IGN);
		rc = sl_cli_pins(cfg, nwords > 0 ? words[0] : NULL, nwords > 1 ? words[1] : NULL);
		sl_config_unref(cfg);
		return rc;
	}
	if (strcmp(cmd, "auth") == 0) {
		/* Needs no generation: no server is started. */
		signal(SIGPIPE, SIG_IGN);
		rc = sl_cli_auth(cfg, nwords, words);
		sl_config_unref(cfg);
		return rc;
	}
	/* exec runs one program and doctor looks at the sandbox alone: code
	 * mode on, and for doctor no upstream. */
	nservers = cfg->nservers;
	if (strcmp(cmd, "exec") == 0 || strcmp(cmd, "doctor") == 0)
		cfg->code_enabled = true;
	if (strcmp(cmd, "doctor") == 0)
		cfg->nservers = 0;
	if (sl_gen_new(cfg, NULL, sl_stages, sl_nstages, &gen, &err) < 0) {
		fprintf(stderr, "sluice: %s\n", err.msg);
		cfg->nservers = nservers;
		sl_config_unref(cfg);
		return 2;
	}
	/* A peer that went away is an error to handle, never a reason to die. */
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(cmd, "serve") == 0) {
		rc = sl_cli_serve(gen, http, &opts);
	} else if (strcmp(cmd, "check") == 0) {
		rc = sl_cli_check(gen);
	} else if (strcmp(cmd, "doctor") == 0) {
		rc = sl_cli_doctor(gen);
	} else if (strcmp(cmd, "policy") == 0) {
		rc = sl_cli_policy(gen, nwords, words);
	} else {
		size_t len;
		char *code = read_program(program, program_file, &len);
		rc = code ? sl_cli_exec(gen, code, len) : 2;
		free(code);
	}
	sl_gen_unref(gen);
	cfg->nservers = nservers;
	sl_config_unref(cfg);
	return rc;
}

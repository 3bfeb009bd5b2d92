/*
 * MCP client config files (Claude Desktop, Claude Code, Cursor, VS Code,
 * Windsurf, Zed): their servers as sluice config entries, and the same
 * file with its servers replaced by one entry that runs sluice. No I/O:
 * bytes in, values out, so the fuzzer drives it (tests/fuzz/fuzz_clients.c).
 * The files are untrusted: their size, their server count and their
 * nesting are bounded, and every text from them that a person may read
 * (names, reasons) is escaped (core/escape.h) before it is kept here.
 *
 * API:
 *   struct sl_client_set set;
 *   struct sl_client_ctx cx = { .home = "/home/me", .project = NULL };
 *   if (sl_client_parse(SL_CLIENT_VSCODE, "mcp.json", text, len, &cx, &set, &err) < 0)
 *           ... err: "mcp.json:3:7: ..." (the whole file refused)
 *   for (i < set.n) set.v[i].entry       the sluice entry, or NULL with
 *                   set.v[i].problem     why this server alone was refused
 *   sl_client_set_dispose(&set);
 *
 *   struct sl_client_install in = { .command = "/usr/bin/sluice", .config = PATH, .refs = &set };
 *   sl_client_install_text(SL_CLIENT_VSCODE, text, len, &in, &out, &outlen, &err);
 *
 * docs/IMPORT.md describes the formats and the choices made here.
 */
#ifndef SL_CLI_CLIENTS_H
#define SL_CLI_CLIENTS_H

#include "core/common.h"

#include <yyjson.h>

#define SL_CLIENT_MAX_BYTES (4u << 20) /* one client file */
#define SL_CLIENT_MAX_SERVERS 1000     /* servers taken from one file */
#define SL_CLIENT_NAME_MAX 256         /* bytes of a server name in a client file */
#define SL_CLIENT_VAR_MAX 128          /* bytes of a variable's name in a reference */

enum sl_client_kind {
	SL_CLIENT_CLAUDE_DESKTOP,
	SL_CLIENT_CLAUDE_CODE,
	SL_CLIENT_CURSOR,
	SL_CLIENT_VSCODE,
	SL_CLIENT_WINDSURF,
	SL_CLIENT_ZED,
	SL_CLIENT_COUNT,
};

/* "claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed". */
const char *sl_client_name(enum sl_client_kind k);
/* The kind named s, or -1. */
int sl_client_by_name(const char *s);
/* The key holding the servers ("mcpServers", "servers", "context_servers"). */
const char *sl_client_key(enum sl_client_kind k);

/* What the references of a file resolve against. */
struct sl_client_ctx {
	const char *home;    /* ${userHome}; NULL: refused where used */
	const char *project; /* ${workspaceFolder}: the project of a project
			      * file; NULL for a user file (refused where used) */
};

struct sl_client_server {
	char *name;    /* the sluice name: 1-64 of A-Z a-z 0-9 _ - . (never NULL) */
	char *shown;   /* the name as the file has it, escaped for a terminal */
	char *scope;   /* NULL, or where in the file (Claude Code: "project /path"), escaped */
	char *raw;     /* the name as the file has it, unescaped (NUL-free where entry is
			* set): what a client's approval lists name */
	char *project; /* NULL, or the project a user file scopes it to (Claude Code's
			* projects.<path>.mcpServers: the path, unescaped) */
	yyjson_mut_val *entry; /* the sluice entry, in the set's doc; NULL: refused */
	char *problem; /* why refused (entry NULL), escaped */
	bool client_only; /* Zed: an extension's server, run by Zed itself (entry
			   * and problem NULL): not imported, kept by install */
	char *notes;   /* NULL, or "; "-separated remarks (references carried over,
			* a literal secret kept, keys left out), escaped */
};

/* A variable an entry references, and how the client file spelt it
 * ("${input:token}", "${env:TOKEN}", "${TOKEN}"): install passes it on. */
struct sl_client_var {
	char *var;
	char *ref;
};

struct sl_client_set {
	yyjson_mut_doc *doc;
	struct sl_client_server *v;
	size_t n;
	struct sl_client_var *vars;
	size_t nvars;
};

/*
 * The servers of one client file. Returns 0 with *set filled (the caller
 * disposes of it; n may be 0), or SL_ERR_INVALID / SL_ERR_TOO_LARGE with err
 * set ("FILE:LINE:COL: ...") and nothing to dispose of. A server that
 * cannot be carried over (no command nor url, a reference sluice cannot
 * expand, a name with control characters) is in the set with a problem.
 */
int sl_client_parse(enum sl_client_kind k, const char *file, const char *text, size_t len,
		    const struct sl_client_ctx *cx, struct sl_client_set *set,
		    struct sl_err *err) SL_MUST_USE;
void sl_client_set_dispose(struct sl_client_set *set);

/*
 * What Claude Code recorded about the servers of a project's .mcp.json, as
 * the person decided in its approval prompt or settings: ~/.claude.json's
 * projects.<dir> and the user's ~/.claude/settings.json (never a file of
 * the project: a repository could approve its own servers). A server it
 * disabled is rejected whatever else says; one it enabled (or every one,
 * enableAllProjectMcpServers) is approved; any other is not.
 */
struct sl_client_approvals {
	bool all;          /* enableAllProjectMcpServers */
	char **enabled;    /* enabledMcpjsonServers, NULL-terminated, never NULL */
	char **disabled;   /* disabledMcpjsonServers, NULL-terminated, never NULL */
};
enum sl_client_verdict { SL_CLIENT_UNAPPROVED, SL_CLIENT_APPROVED, SL_CLIENT_REJECTED };

void sl_client_approvals_init(struct sl_client_approvals *a);
/*
 * Adds what one Claude Code file records for project (a directory, as
 * Claude Code keys it): with project, the file's projects.<project> (the
 * shape of ~/.claude.json), else its top level (a settings.json). Each
 * list holds at most SL_CLIENT_MAX_SERVERS names. Returns 0, or
 * SL_ERR_INVALID / SL_ERR_TOO_LARGE with err set and a unchanged.
 */
int sl_client_approvals_add(struct sl_client_approvals *a, const char *file, const char *text,
			    size_t len, const char *project, struct sl_err *err) SL_MUST_USE;
enum sl_client_verdict sl_client_approval(const struct sl_client_approvals *a, const char *raw);
void sl_client_approvals_dispose(struct sl_client_approvals *a);

/*
 * What identifies a server across files, as canonical JSON (caller frees):
 * command, args, env and cwd for a child; type, url and headers for a
 * remote server. entry is a sluice entry (mutable).
 */
char *sl_client_identity(yyjson_mut_val *entry);

/* The one entry install writes. */
struct sl_client_install {
	const char *command;   /* sluice's absolute path (stdio) */
	const char *config;    /* the sluice config's absolute path (stdio) */
	const char *url;       /* set: an HTTP entry to this URL instead */
	const struct sl_client_set *refs; /* the variables to pass on (may be NULL) */
};

/*
 * The client file's text with every server replaced by one "sluice" entry
 * (Zed: its extensions' servers kept, they are no command sluice could
 * run; Claude Code: its per-project lists kept, they are not the user-wide
 * config's to take), the rest of the file
 * kept (re-serialised: comments are dropped). Returns 0 with *out
 * malloc'd, or SL_ERR_INVALID with err set (a file that does not parse, a
 * client without remote servers for url).
 */
int sl_client_install_text(enum sl_client_kind k, const char *text, size_t len,
			   const struct sl_client_install *in, char **out, size_t *outlen,
			   struct sl_err *err) SL_MUST_USE;

#endif

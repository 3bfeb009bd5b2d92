/*
 * sluice import, install and uninstall (docs/IMPORT.md).
 *
 *   import [--write PATH] [--dry-run] [--client NAME] [--progress] [FILE...]
 *       reads the MCP client files found under $HOME, $XDG_CONFIG_HOME and
 *       the current directory (or the FILEs), prints what it found, and
 *       merges the servers into a sluice config: a server already there
 *       (same identity, clients.h) is not added twice; a name taken by
 *       another server gets the client's name after it. The config is
 *       written atomically, 0600, the old one kept as PATH.bak (.bak.N).
 *       A project's servers go only where the person approved them, into
 *       that project's own config (below, "project servers").
 *   install --client NAME [--mode stdio|http] [--url URL] [--file FILE]
 *       imports that client's file, then rewrites it with one "sluice"
 *       entry; the original stays byte for byte in FILE.sluice-backup,
 *       and FILE.sluice-install.json holds the SHA-256 of both files.
 *   uninstall --client NAME [--file FILE]
 *       puts the backup back, byte for byte, unless FILE changed since
 *       install (its SHA-256 differs): those changes would be lost.
 *
 * Exit codes: 0 done; 1 something was refused (a file, a server, a changed
 * file at uninstall); 2 a usage error or a file that cannot be written.
 */
#include "cli/cli.h"
#include "cli/clients.h"
#include "core/buf.h"
#include "core/digest.h"
#include "core/escape.h"
#include "core/json.h"
#include "oauth/oauth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX (16u << 20) /* a sluice config we merge into, as config.c reads */
#define META_MAX (64u << 10)   /* FILE.sluice-install.json */
#define MAX_FILES 64           /* FILE arguments */
#define MAX_BACKUPS 100        /* PATH.bak, PATH.bak.1 ... PATH.bak.99 */
#define RENAME_TRIES 100       /* NAME-client, NAME-client-2 ... */

/* One file to read: where, which client, and its project (project files). */
struct source {
	enum sl_client_kind kind;
	char *path;
	char *project;
};

/* A file's path as a terminal may show it. */
static char *shown(const char *s)
{
	struct sl_buf b;
	sl_buf_init(&b, strlen(s) * 6 + 8);
	if (sl_escape(&b, s, strlen(s), SL_ESCAPE_LOG) < 0)
		sl_oom();
	return sl_buf_take(&b, NULL);
}

/*
 * Reads a regular file of at most max bytes. Returns 0, SL_ERR_NOT_FOUND
 * (no such file: nothing said), or a failure with err set. A FIFO or a
 * device is refused before any read (opened non-blocking: no hang).
 */
static int read_file(const char *path, size_t max, char **out, size_t *len, struct sl_err *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), rc;
	char *p;

	if (fd < 0) {
		if (errno == ENOENT)
			return SL_ERR_NOT_FOUND;
		p = shown(path);
		sl_err_set(err, "%s: %s", p, strerror(errno));
		free(p);
		return SL_ERR_IO;
	}
	p = shown(path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		sl_err_set(err, "%s: not a regular file", p);
		rc = SL_ERR_INVALID;
	} else if ((uint64_t)st.st_size > max) {
		sl_err_set(err, "%s: over %zu bytes: not read", p, max);
		rc = SL_ERR_TOO_LARGE;
	} else {
		rc = sl_read_fd(fd, p, max, "read", out, len, err);
	}
	free(p);
	close(fd);
	return rc;
}

static int sync_dir_of(const char *path)
{
	char *d = sl_strdup(path);
	int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	if (fd < 0 || fsync(fd) < 0)
		rc = -1;
	if (fd >= 0)
		close(fd);
	free(d);
	return rc;
}

/* A new file that must not exist yet (a backup). */
static int write_new(const char *path, const char *data, size_t len, struct sl_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	char *p = shown(path);
	int rc = SL_OK;

	if (fd < 0 || sl_write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		sl_err_set(err, "%s: %s", p, strerror(errno));
		rc = SL_ERR_IO;
		if (fd >= 0)
			unlink(path);
	}
	if (fd >= 0 && close(fd) < 0 && rc == SL_OK) {
		sl_err_set(err, "%s: %s", p, strerror(errno));
		rc = SL_ERR_IO;
	}
	free(p);
	return rc;
}

/* $HOME and the XDG config directory, absolute or NULL. */
static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	return h && h[0] == '/' ? h : NULL;
}

static char *config_home(void)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	if (x && x[0] == '/')
		return sl_strdup(x);
	return home_dir() ? sl_printf("%s/.config", home_dir()) : NULL;
}

/* The files each client keeps on Linux: the user's first, then the
 * project's (relative to the current directory). */
static const struct {
	enum sl_client_kind kind;
	int base; /* 0: $HOME, 1: the XDG config directory, 2: the project */
	const char *rel;
} known[] = {
	{ SL_CLIENT_CLAUDE_DESKTOP, 1, "Claude/claude_desktop_config.json" },
	{ SL_CLIENT_CLAUDE_CODE, 0, ".claude.json" },
	{ SL_CLIENT_CLAUDE_CODE, 2, ".mcp.json" },
	{ SL_CLIENT_CURSOR, 0, ".cursor/mcp.json" },
	{ SL_CLIENT_CURSOR, 2, ".cursor/mcp.json" },
	{ SL_CLIENT_VSCODE, 1, "Code/User/mcp.json" },
	{ SL_CLIENT_VSCODE, 2, ".vscode/mcp.json" },
	{ SL_CLIENT_WINDSURF, 0, ".codeium/windsurf/mcp_config.json" },
	{ SL_CLIENT_ZED, 1, "zed/settings.json" },
	{ SL_CLIENT_ZED, 2, ".zed/settings.json" },
};

static void add_source(struct source **v, size_t *n, enum sl_client_kind k, char *path,
		       char *project)
{
	*v = sl_realloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].kind = k;
	(*v)[*n].path = path;
	(*v)[*n].project = project;
	(*n)++;
}

static void free_sources(struct source *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].project);
	}
	free(v);
}

/* The known files of kind k (k < 0: all); user_only: no project file. */
static void known_sources(int k, bool user_only, struct source **v, size_t *n)
{
	char *xdg = config_home(), cwd[PATH_MAX];
	bool have_cwd = getcwd(cwd, sizeof(cwd)) != NULL;

	for (size_t i = 0; i < SL_COUNT(known); i++) {
		const char *base = known[i].base == 0 ? home_dir() : known[i].base == 1 ? xdg :
				   have_cwd ? cwd : NULL;
		char *path;
		bool dup = false;

		if ((k >= 0 && (int)known[i].kind != k) || !base || (user_only && known[i].base == 2))
			continue;
		/* Run from $HOME, ~/.cursor/mcp.json is the user file, not a
		 * project's: read once, as what it is. */
		path = sl_printf("%s/%s", base, known[i].rel);
		for (size_t j = 0; j < *n && !dup; j++)
			dup = !strcmp((*v)[j].path, path);
		if (dup) {
			free(path);
			continue;
		}
		add_source(v, n, known[i].kind, path, known[i].base == 2 ? sl_strdup(cwd) : NULL);
	}
	free(xdg);
}

/* The client of a file named on the command line, from its name; -1 when
 * the name does not say. */
static int guess_kind(const char *path, char **project)
{
	char *a = sl_strdup(path), *b = sl_strdup(path), *base = basename(a);
	char *dir = dirname(b), *c = sl_strdup(dir), *parent = basename(c);
	char *d = sl_strdup(dir), *grand = dirname(d);
	int k = -1;

	*project = NULL;
	if (!strcmp(base, "claude_desktop_config.json")) {
		k = SL_CLIENT_CLAUDE_DESKTOP;
	} else if (!strcmp(base, ".claude.json")) {
		k = SL_CLIENT_CLAUDE_CODE;
	} else if (!strcmp(base, ".mcp.json")) {
		k = SL_CLIENT_CLAUDE_CODE;
		*project = sl_strdup(dir);
	} else if (!strcmp(base, "mcp_config.json")) {
		k = SL_CLIENT_WINDSURF;
	} else if (!strcmp(base, "settings.json") && (!strcmp(parent, "zed") || !strcmp(parent, ".zed"))) {
		k = SL_CLIENT_ZED;
		if (!strcmp(parent, ".zed"))
			*project = sl_strdup(grand);
	} else if (!strcmp(base, "mcp.json") && !strcmp(parent, ".cursor")) {
		k = SL_CLIENT_CURSOR;
		if (strcmp(grand, home_dir() ? home_dir() : ""))
			*project = sl_strdup(grand);
	} else if (!strcmp(base, "mcp.json") && !strcmp(parent, ".vscode")) {
		k = SL_CLIENT_VSCODE;
		*project = sl_strdup(grand);
	} else if (!strcmp(base, "mcp.json") && !strcmp(parent, "User")) {
		k = SL_CLIENT_VSCODE;
	}
	free(a);
	free(b);
	free(c);
	free(d);
	return k;
}

/* The sluice config import writes and install uses. */
static char *target_path(const char *write, const char *config)
{
	char *xdg;

	if (write)
		return sl_strdup(write);
	if (config)
		return sl_strdup(config);
	if (!(xdg = config_home()))
		return NULL;
	char *p = sl_printf("%s/sluice/config.json", xdg);
	free(xdg);
	return p;
}

/* ---- the merge ---------------------------------------------------------- */

/* A line of the table (every text escaped), and the remarks under it. */
struct row {
	char *name;         /* as in the client file */
	const char *client;
	char *file;
	char *result;
	char *remark;       /* NULL, or the server's notes and scope */
};

struct merge {
	yyjson_mut_doc *doc;
	yyjson_mut_val *servers;  /* the config's mcpServers (or servers) */
	char **ids;               /* identity of each entry, in order */
	char **names;
	size_t n;
	size_t added, refused;
	struct row *rows;
	size_t nrows;
};

static void merge_add_known(struct merge *m, const char *name, yyjson_mut_val *e)
{
	m->ids = sl_realloc(m->ids, (m->n + 1) * sizeof(char *));
	m->names = sl_realloc(m->names, (m->n + 1) * sizeof(char *));
	m->ids[m->n] = sl_client_identity(e);
	m->names[m->n] = sl_strdup(name);
	m->n++;
}

static bool name_taken(const struct merge *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->names[i], name))
			return true;
	return false;
}

/* Opens the config at path (absent: a new one). */
static int merge_open(struct merge *m, const char *path, bool *existed, struct sl_err *err)
{
	char *text = NULL, *p = shown(path);
	size_t len = 0;
	yyjson_doc *doc = NULL;
	yyjson_read_err rerr;
	yyjson_mut_val *root, *k;
	yyjson_mut_obj_iter it;
	int rc;

	memset(m, 0, sizeof(*m));
	rc = read_file(path, CONFIG_MAX, &text, &len, err);
	*existed = rc != SL_ERR_NOT_FOUND;
	if (rc == SL_ERR_NOT_FOUND) {
		m->doc = yyjson_mut_doc_new(NULL);
		root = yyjson_mut_obj(m->doc);
		yyjson_mut_doc_set_root(m->doc, root);
		m->servers = yyjson_mut_obj_add_obj(m->doc, root, "mcpServers");
		rc = SL_OK;
		goto out;
	}
	if (rc < 0)
		goto out;
	doc = sl_json_read(text, len, SL_JSON_READ_FLAGS | YYJSON_READ_ALLOW_COMMENTS |
			   YYJSON_READ_ALLOW_TRAILING_COMMAS, &rerr);
	if (!doc) {
		size_t line = 0, col = 0;
		if (rerr.code != SL_JSON_READ_ERROR_DEPTH)
			sl_json_position(text, len, rerr.pos, &line, &col);
		sl_err_set(err, "%s:%zu:%zu: %s: not changed", p, line, col, rerr.msg);
		rc = SL_ERR_INVALID;
		goto out;
	}
	if (!yyjson_is_obj(yyjson_doc_get_root(doc))) {
		sl_err_set(err, "%s: not a JSON object: not changed", p);
		rc = SL_ERR_INVALID;
		goto out;
	}
	m->doc = yyjson_doc_mut_copy(doc, NULL);
	if (!m->doc)
		sl_oom();
	root = yyjson_mut_doc_get_root(m->doc);
	m->servers = yyjson_mut_obj_get(root, "mcpServers");
	if (!m->servers)
		m->servers = yyjson_mut_obj_get(root, "servers");
	if (!m->servers)
		m->servers = yyjson_mut_obj_add_obj(m->doc, root, "mcpServers");
	if (!yyjson_mut_is_obj(m->servers)) {
		sl_err_set(err, "%s: its servers are not an object: not changed", p);
		rc = SL_ERR_INVALID;
		goto out;
	}
	yyjson_mut_obj_iter_init(m->servers, &it);
	while ((k = yyjson_mut_obj_iter_next(&it)))
		merge_add_known(m, yyjson_mut_get_str(k), yyjson_mut_obj_iter_get_val(k));
out:
	if (doc)
		yyjson_doc_free(doc);
	if (text) {
		explicit_bzero(text, len); /* it may hold tokens */
		free(text);
	}
	free(p);
	return rc;
}

static void merge_dispose(struct merge *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->ids[i]);
		free(m->names[i]);
	}
	for (size_t i = 0; i < m->nrows; i++) {
		free(m->rows[i].name);
		free(m->rows[i].file);
		free(m->rows[i].result);
		free(m->rows[i].remark);
	}
	free(m->ids);
	free(m->names);
	free(m->rows);
	if (m->doc)
		yyjson_mut_doc_free(m->doc);
}

static void add_row(struct merge *m, const struct sl_client_server *s, enum sl_client_kind k,
		    const char *file, char *result)
{
	char *remark = NULL;

	if (s->notes || s->scope)
		remark = sl_printf("%s (%s%s%s): %s", s->shown, sl_client_name(k), s->scope ? ", " : "",
				   s->scope ? s->scope : "", s->notes ? s->notes : "from this project");
	m->rows = sl_realloc(m->rows, (m->nrows + 1) * sizeof(*m->rows));
	m->rows[m->nrows++] = (struct row){ sl_strdup(s->shown), sl_client_name(k), shown(file),
					    result, remark };
}

/* A free name for s: its own, else NAME-client, NAME-client-2 ... */
static char *free_name(const struct merge *m, const char *name, enum sl_client_kind k)
{
	const char *cl = sl_client_name(k);

	if (!name_taken(m, name))
		return sl_strdup(name);
	for (int i = 1; i <= RENAME_TRIES; i++) {
		char suffix[40], *c;
		if (i == 1)
			snprintf(suffix, sizeof(suffix), "-%s", cl);
		else
			snprintf(suffix, sizeof(suffix), "-%s-%d", cl, i);
		/* Within the 64 characters of a sluice name. */
		c = sl_printf("%.*s%s", (int)(64 - strlen(suffix)), name, suffix);
		if (!name_taken(m, c))
			return c;
		free(c);
	}
	return NULL;
}

/* s into the config of m (table: the merge whose rows are printed; where
 * says in which config, "" for the user-wide one). */
static void merge_one(struct merge *table, struct merge *m, const struct sl_client_server *s,
		      enum sl_client_kind k, const char *file, const char *where)
{
	char *id, *name, *result = NULL;
	size_t j;

	if (s->client_only) {
		add_row(table, s, k, file, sl_printf("left to %s (an extension's server)",
						     sl_client_name(k)));
		return;
	}
	if (!s->entry) {
		add_row(table, s, k, file, sl_printf("refused: %s", s->problem));
		table->refused++;
		return;
	}
	id = sl_client_identity(s->entry);
	for (j = 0; j < m->n && strcmp(m->ids[j], id) != 0; j++)
		;
	if (j < m->n) {
		add_row(table, s, k, file, sl_printf("same as %s%s", m->names[j], where));
		free(id);
		return;
	}
	free(id);
	if (!(name = free_name(m, s->name, k))) {
		add_row(table, s, k, file, sl_printf("refused: no free name near %s", s->name));
		table->refused++;
		return;
	}
	if (strcmp(name, s->name) != 0)
		result = sl_printf("added as %s (%s was taken)%s", name, s->name, where);
	else
		result = sl_printf("added%s", where);
	yyjson_mut_obj_add(m->servers, yyjson_mut_strcpy(m->doc, name),
			   yyjson_mut_val_mut_copy(m->doc, s->entry));
	merge_add_known(m, name, s->entry);
	m->added++;
	add_row(table, s, k, file, result);
	free(name);
}

static void print_table(const struct merge *m)
{
	size_t w[3] = { 6, 6, 4 };

	if (m->nrows == 0) {
		printf("no MCP server found\n");
		return;
	}
	for (size_t i = 0; i < m->nrows; i++) {
		size_t l[3] = { strlen(m->rows[i].name), strlen(m->rows[i].client),
				strlen(m->rows[i].file) };
		for (int c = 0; c < 3; c++)
			w[c] = l[c] > w[c] ? l[c] : w[c];
	}
	printf("%-*s  %-*s  %-*s  %s\n", (int)w[0], "SERVER", (int)w[1], "CLIENT", (int)w[2], "FILE",
	       "RESULT");
	for (size_t i = 0; i < m->nrows; i++)
		printf("%-*s  %-*s  %-*s  %s\n", (int)w[0], m->rows[i].name, (int)w[1],
		       m->rows[i].client, (int)w[2], m->rows[i].file, m->rows[i].result);
	for (size_t i = 0; i < m->nrows; i++)
		if (m->rows[i].remark)
			printf("  %s\n", m->rows[i].remark);
}

/* Writes the merged config to path (a backup of the old one first). */
static int merge_write(struct merge *m, const char *target, bool existed, struct sl_err *err)
{
	/* A config that is a symbolic link (dotfiles) stays one: the file it
	 * names is written. */
	char *real = realpath(target, NULL);
	const char *path = real ? real : target;
	char *text, *dir = sl_strdup(path), *bak = NULL, *old = NULL, *p = shown(path);
	size_t len, oldlen = 0;
	struct sl_config *cfg = NULL;
	int rc;

	text = yyjson_mut_write(m->doc, YYJSON_WRITE_PRETTY_TWO_SPACES | YYJSON_WRITE_NEWLINE_AT_END,
				&len);
	if (!text)
		sl_oom();
	/* What sluice would refuse to load is never written. */
	rc = sl_config_parse(path, text, len, &cfg, err);
	if (rc == SL_OK)
		rc = sl_oauth_keys_load(cfg, err);
	sl_config_unref(cfg);
	if (rc < 0)
		goto out;
	if (sl_make_dirs(dirname(dir)) < 0) {
		sl_err_set(err, "%s: cannot create its directory: %s", p, strerror(errno));
		rc = SL_ERR_IO;
		goto out;
	}
	if (existed) {
		if ((rc = read_file(path, CONFIG_MAX, &old, &oldlen, err)) < 0)
			goto out;
		for (int i = 0; i < MAX_BACKUPS; i++) {
			free(bak);
			bak = i ? sl_printf("%s.bak.%d", path, i) : sl_printf("%s.bak", path);
			if ((rc = write_new(bak, old, oldlen, err)) == SL_OK || errno != EEXIST)
				break;
		}
		if (rc < 0)
			goto out;
	}
	if ((rc = sl_write_file_atomic(path, text, len, 0600, err)) < 0)
		goto out;
	if (bak) {
		char *b = shown(bak);
		printf("wrote %s (%zu server%s added; the old file is %s)\n", p, m->added,
		       m->added == 1 ? "" : "s", b);
		free(b);
	} else {
		printf("wrote %s (%zu server%s)\n", p, m->added, m->added == 1 ? "" : "s");
	}
out:
	if (old) {
		explicit_bzero(old, oldlen);
		free(old);
	}
	explicit_bzero(text, len);
	free(text);
	free(dir);
	free(bak);
	free(p);
	free(real);
	return rc;
}

/* ---- project servers ----------------------------------------------------- */

/*
 * A project's servers (its .mcp.json, .cursor/mcp.json, .vscode/mcp.json,
 * .zed/settings.json, and Claude Code's projects.<path>.mcpServers) are the
 * project's: a repository someone clones writes them. They are imported
 * only where the person approved them for that project, and into that
 * project's sluice config, never the user-wide one (which every session
 * runs): see docs/IMPORT.md "Project servers".
 */

/* A project's sluice config and what goes into it. */
struct project {
	char *dir;     /* the project directory (resolved when it exists) */
	char *target;  /* its sluice config */
	struct merge m;
	bool existed;
};

struct import {
	struct merge main;       /* the user-wide config; its rows are the table */
	struct project p[MAX_FILES + 1]; /* the current directory's, and a named file's each */
	size_t np;
	bool one_target;         /* --write: the person named where everything goes */
	bool install;            /* install: a user file's per-project lists stay the client's */
	char *cwd;               /* the current directory, resolved; NULL if unknown */
};

/* A directory as resolved as it can be (caller frees). */
static char *resolved(const char *dir)
{
	char *r = realpath(dir, NULL);
	return r ? r : sl_strdup(dir);
}

/* The sluice config of project dir: $XDG_CONFIG_HOME/sluice/projects/
 * NAME-HASH.json, NAME its directory's name in sluice's name characters
 * (at most 40), HASH the first 12 hex digits of the SHA-256 of its path:
 * kept with the person's files, never in the repository. NULL: no HOME. */
static char *project_target(const char *dir)
{
	char *xdg = config_home(), *a, *base, *t, h[SL_SHA256_HEX];
	size_t n = 0;

	if (!xdg)
		return NULL;
	a = sl_strdup(dir);
	base = basename(a);
	for (char *c = base; *c && n < 40; c++, n++)
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
			*c = '-';
	base[n] = 0;
	sl_sha256_hex(dir, strlen(dir), h);
	t = sl_printf("%s/sluice/projects/%s-%.12s.json", xdg, *base && strcmp(base, "/") ?
		      base : "root", h);
	free(xdg);
	free(a);
	return t;
}

/* The config of project dir, opened the first time (NULL: printed why). */
static struct merge *project_merge(struct import *im, const char *dir)
{
	struct project *p;
	struct sl_err err;
	char *target;

	for (size_t i = 0; i < im->np; i++)
		if (!strcmp(im->p[i].dir, dir))
			return &im->p[i].m;
	if (im->np == SL_COUNT(im->p) || !(target = project_target(dir))) {
		fprintf(stderr, "sluice import: no project config for %s\n", dir);
		return NULL;
	}
	p = &im->p[im->np];
	if (merge_open(&p->m, target, &p->existed, &err) < 0) {
		fprintf(stderr, "sluice import: %s\n", err.msg);
		merge_dispose(&p->m);
		free(target);
		return NULL;
	}
	p->dir = sl_strdup(dir);
	p->target = target;
	im->np++;
	return &p->m;
}

/* What Claude Code recorded for project dir (as dir and as resolved):
 * ~/.claude.json and ~/.claude/settings.json, the person's own files. */
static void claude_approvals(const char *dir, struct sl_client_approvals *a)
{
	const char *home = home_dir();
	char *real = resolved(dir);
	const char *keys[2] = { dir, strcmp(real, dir) ? real : NULL };

	sl_client_approvals_init(a);
	for (int f = 0; home && f < 2; f++) {
		char *path = sl_printf("%s/%s", home, f ? ".claude/settings.json" : ".claude.json");
		char *text = NULL, *p = shown(path);
		struct sl_err err;
		size_t len;
		int rc = read_file(path, SL_CLIENT_MAX_BYTES, &text, &len, &err);

		/* ~/.claude.json under the project's key (both spellings), the
		 * settings at their top level. */
		for (int k = 0; rc == SL_OK && k < (f ? 1 : 2); k++)
			if (f || keys[k])
				rc = sl_client_approvals_add(a, p, text, len, f ? NULL : keys[k], &err);
		if (rc < 0 && rc != SL_ERR_NOT_FOUND)
			fprintf(stderr, "sluice import: %s (what it approves is not taken)\n", err.msg);
		if (text) {
			explicit_bzero(text, len);
			free(text);
		}
		free(path);
		free(p);
	}
	free(real);
}

/* The servers of one file, each where it belongs: a user-wide server into
 * the user-wide config; a project's, if approved, into its project's. */
static void route_set(struct import *im, const struct sl_client_set *set, const struct source *src,
		      bool named)
{
	enum sl_client_kind k = src->kind;
	struct sl_client_approvals cc = { 0 };
	char *dir = src->project ? resolved(src->project) : NULL, *p = shown(src->path);
	const char *cl = sl_client_name(k);

	if (dir && k == SL_CLIENT_CLAUDE_CODE)
		claude_approvals(src->project, &cc);
	for (size_t i = 0; i < set->n; i++) {
		const struct sl_client_server *s = &set->v[i];
		char *sdir = s->project ? resolved(s->project) : NULL;
		const char *pdir = sdir ? sdir : dir;
		enum sl_client_verdict v = SL_CLIENT_APPROVED;
		struct merge *dest = &im->main;

		if (!pdir || !s->entry) {
			merge_one(&im->main, dest, s, k, src->path, "");
			free(sdir);
			continue;
		}
		if (sdir) {
			/* Claude Code's list for a project, which the person made
			 * there (claude mcp add): that project's alone. */
			if (im->install || !im->cwd || strcmp(sdir, im->cwd)) {
				add_row(&im->main, s, k, src->path, sl_printf(
					"left to %s (%s's server: run sluice import there)", cl,
					s->scope ? s->scope : "a project"));
				free(sdir);
				continue;
			}
		} else if (k == SL_CLIENT_CLAUDE_CODE) {
			v = sl_client_approval(&cc, s->raw);
			/* Naming the file approves it, never a server rejected. */
			if (named && v == SL_CLIENT_UNAPPROVED)
				v = SL_CLIENT_APPROVED;
		} else if (!named) {
			v = SL_CLIENT_UNAPPROVED;
		}
		if (v == SL_CLIENT_REJECTED) {
			add_row(&im->main, s, k, src->path, sl_printf(
				"not imported: rejected in %s for this project (disabledMcpjsonServers)",
				cl));
		} else if (v == SL_CLIENT_UNAPPROVED) {
			add_row(&im->main, s, k, src->path, sl_printf(
				"not imported: a project server not approved in %s%s (name the file "
				"to import it: sluice import %s)", cl, k == SL_CLIENT_CLAUDE_CODE ? "" :
				", which keeps its approvals where sluice cannot read them", p));
		} else if (im->one_target) {
			merge_one(&im->main, dest, s, k, src->path, "");
		} else if ((dest = project_merge(im, pdir))) {
			merge_one(&im->main, dest, s, k, src->path, " to the project's config");
		} else {
			add_row(&im->main, s, k, src->path, sl_strdup("refused: no project config"));
			im->main.refused++;
		}
		free(sdir);
	}
	if (cc.enabled)
		sl_client_approvals_dispose(&cc);
	free(dir);
	free(p);
}

/* Reads one source into the merge. Returns 0, SL_ERR_NOT_FOUND (absent,
 * and it was not asked for by name), or a failure already printed. */
static int import_one(struct import *im, const struct source *src, bool named)
{
	struct sl_client_ctx cx = { .home = home_dir(), .project = src->project };
	struct sl_client_set set;
	struct sl_err err;
	char *text = NULL, *p;
	size_t len;
	int rc = read_file(src->path, SL_CLIENT_MAX_BYTES, &text, &len, &err);

	if (rc == SL_ERR_NOT_FOUND && !named)
		return rc;
	if (rc == SL_ERR_NOT_FOUND) {
		p = shown(src->path);
		sl_err_set(&err, "%s: no such file", p);
		free(p);
	}
	if (rc == SL_OK) {
		p = shown(src->path);
		rc = sl_client_parse(src->kind, p, text, len, &cx, &set, &err);
		free(p);
		explicit_bzero(text, len);
		free(text);
	}
	if (rc < 0) {
		fprintf(stderr, "sluice: %s\n", err.msg);
		return rc == SL_ERR_NOT_FOUND ? SL_ERR_INVALID : rc;
	}
	route_set(im, &set, src, named);
	sl_client_set_dispose(&set);
	return SL_OK;
}

struct args {
	const char *write, *client, *mode, *url, *file;
	bool dry_run, progress;
	const char *files[MAX_FILES];
	size_t nfiles;
};

static int parse_args(const char *cmd, int argc, const char *const *argv, struct args *a)
{
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < argc; i++) {
		const char *x = argv[i];
		const char **opt = !strcmp(x, "--write") ? &a->write : !strcmp(x, "--client") ? &a->client :
				   !strcmp(x, "--mode") ? &a->mode : !strcmp(x, "--url") ? &a->url :
				   !strcmp(x, "--file") ? &a->file : NULL;
		if (opt && i + 1 < argc) {
			*opt = argv[++i];
		} else if (!strcmp(x, "--dry-run")) {
			a->dry_run = true;
		} else if (!strcmp(x, "--progress")) {
			a->progress = true;
		} else if (x[0] != '-' && !strcmp(cmd, "import")) {
			if (a->nfiles == MAX_FILES) {
				fprintf(stderr, "sluice import: at most %d files at once\n", MAX_FILES);
				return -1;
			}
			a->files[a->nfiles++] = x;
		} else {
			char *s = shown(x);
			fprintf(stderr, "sluice %s: unknown or incomplete argument '%s' (sluice --help)\n",
				cmd, s);
			free(s);
			return -1;
		}
	}
	if (a->client && sl_client_by_name(a->client) < 0) {
		char *s = shown(a->client);
		fprintf(stderr, "sluice %s: unknown client '%s' (claude-desktop, claude-code, "
			"cursor, vscode, windsurf or zed)\n", cmd, s);
		free(s);
		return -1;
	}
	return 0;
}

/* Progress on stderr: on a terminal one line rewritten in place, with
 * --progress elsewhere one line per file. */
static void progress(bool on, bool tty, size_t i, size_t n, const char *path)
{
	char *p;

	if (!on)
		return;
	if (!path) {
		if (tty)
			fputs("\r\033[K", stderr);
		return;
	}
	p = shown(path);
	fprintf(stderr, tty ? "\r\033[Ksluice: reading %zu/%zu %s" : "sluice: reading %zu/%zu %s\n",
		i + 1, n, p);
	free(p);
}

int sl_cli_import(const char *config, int argc, const char *const *argv)
{
	struct args a;
	struct source *src = NULL;
	size_t nsrc = 0, failed = 0, read = 0;
	struct import *im;
	struct merge *m;
	struct sl_err err;
	bool existed, tty = isatty(2);
	char *target, cwd[PATH_MAX];
	int rc;

	if (parse_args("import", argc, argv, &a) < 0)
		return 2;
	if (!(target = target_path(a.write, config))) {
		fprintf(stderr, "sluice import: no HOME: name the config with --write PATH\n");
		return 2;
	}
	for (size_t i = 0; i < a.nfiles; i++) {
		char *project;
		int k = guess_kind(a.files[i], &project);
		if (a.client)
			k = sl_client_by_name(a.client);
		if (k < 0) {
			char *s = shown(a.files[i]);
			fprintf(stderr, "sluice import: %s: which client's file is it? Say it with "
				"--client NAME\n", s);
			free(s);
			free_sources(src, nsrc);
			free(project);
			free(target);
			return 2;
		}
		add_source(&src, &nsrc, (enum sl_client_kind)k, sl_strdup(a.files[i]), project);
	}
	if (a.nfiles == 0)
		known_sources(a.client ? sl_client_by_name(a.client) : -1, false, &src, &nsrc);
	im = sl_alloc(sizeof(*im));
	im->one_target = a.write != NULL;
	im->cwd = getcwd(cwd, sizeof(cwd)) ? resolved(cwd) : NULL;
	m = &im->main;
	if (merge_open(m, target, &existed, &err) < 0) {
		fprintf(stderr, "sluice import: %s\n", err.msg);
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < nsrc; i++) {
		progress(a.progress || tty, tty, i, nsrc, src[i].path);
		rc = import_one(im, &src[i], a.nfiles > 0);
		if (rc == SL_OK)
			read++;
		else if (rc != SL_ERR_NOT_FOUND)
			failed++;
	}
	progress(a.progress || tty, tty, 0, 0, NULL);
	print_table(m);
	rc = m->refused || failed ? 1 : 0;
	for (size_t i = 0; i <= im->np; i++) {
		struct merge *t = i ? &im->p[i - 1].m : m;
		const char *path = i ? im->p[i - 1].target : target;
		bool had = i ? im->p[i - 1].existed : existed;
		char *p = shown(path);

		if (i && !t->added) {
			free(p);
			continue;
		}
		if (a.dry_run) {
			char *text = yyjson_mut_write(t->doc, YYJSON_WRITE_PRETTY_TWO_SPACES |
						      YYJSON_WRITE_NEWLINE_AT_END, NULL);
			if (i)
				printf("--dry-run: not written; the project config %s would be:\n%s",
				       p, text);
			else
				printf("--dry-run: not written; the config would be:\n%s", text);
			free(text);
		} else if (!t->added) {
			printf("nothing new: %s %s\n", p, had ? "unchanged" : "not written");
		} else if (merge_write(t, path, had, &err) < 0) {
			fprintf(stderr, "sluice import: %s\n", err.msg);
			rc = 2;
		} else if (i) {
			char *d = shown(im->p[i - 1].dir);
			printf("the servers of %s are in %s: serve them there with sluice serve "
			       "--config %s\n", d, p, p);
			free(d);
		}
		free(p);
	}
	if (read == 0 && a.nfiles == 0)
		fprintf(stderr, "sluice import: no client config found (looked under $HOME, "
			"$XDG_CONFIG_HOME and the current directory)\n");
out:
	merge_dispose(m);
	for (size_t i = 0; i < im->np; i++) {
		merge_dispose(&im->p[i].m);
		free(im->p[i].dir);
		free(im->p[i].target);
	}
	free(im->cwd);
	free(im);
	free_sources(src, nsrc);
	free(target);
	return rc;
}

/* ---- install and uninstall ---------------------------------------------- */

/* The client file install and uninstall work on: --file, else the
 * client's user file; symbolic links resolved (a dotfiles link stays a
 * link: the file it points to is rewritten). */
static char *client_file(const struct args *a, enum sl_client_kind k, char **project)
{
	struct source *src = NULL;
	size_t n = 0;
	char *path, *real;

	*project = NULL;
	if (a->file) {
		path = sl_strdup(a->file);
		(void)guess_kind(a->file, project);
	} else {
		known_sources((int)k, true, &src, &n);
		if (n == 0)
			return NULL;
		path = src[0].path;
		src[0].path = NULL;
		free_sources(src, n);
	}
	real = realpath(path, NULL);
	if (real) {
		free(path);
		return real;
	}
	return path;
}

static const char *need_client(const char *cmd, const struct args *a)
{
	if (!a->client)
		fprintf(stderr, "sluice %s: which client? --client claude-desktop, claude-code, "
			"cursor, vscode, windsurf or zed\n", cmd);
	return a->client;
}

int sl_cli_install(const char *config, int argc, const char *const *argv)
{
	struct args a;
	struct sl_client_set set = { 0 };
	struct import *im;
	struct merge *m;
	struct sl_err err;
	enum sl_client_kind k;
	char *file = NULL, *project = NULL, *target = NULL, *backup = NULL, *meta = NULL;
	char *abs_target = NULL, *text = NULL, *out = NULL, *metatext = NULL, *self = NULL;
	char *pf = NULL, *dir = NULL, hb[SL_SHA256_HEX], hi[SL_SHA256_HEX];
	size_t len = 0, outlen = 0;
	bool existed;
	struct stat st;
	int rc = 2;

	if (parse_args("install", argc, argv, &a) < 0 || !need_client("install", &a))
		return 2;
	k = (enum sl_client_kind)sl_client_by_name(a.client);
	if (a.mode && strcmp(a.mode, "stdio") && strcmp(a.mode, "http")) {
		fprintf(stderr, "sluice install: --mode must be stdio or http\n");
		return 2;
	}
	if ((a.mode && !strcmp(a.mode, "http")) != (a.url != NULL)) {
		fprintf(stderr, "sluice install: --mode http needs --url URL (the gateway's, e.g. "
			"http://127.0.0.1:8370/mcp), and --url needs --mode http\n");
		return 2;
	}
	if (a.url && strncmp(a.url, "http://", 7) && strncmp(a.url, "https://", 8)) {
		fprintf(stderr, "sluice install: --url must start with http:// or https://\n");
		return 2;
	}
	im = sl_alloc(sizeof(*im));
	m = &im->main;
	/* A project's file goes into its project's config, never the
	 * user-wide one: the entry install writes serves that project alone. */
	if (!(file = client_file(&a, k, &project)) ||
	    !(target = project ? project_target(dir = resolved(project)) : target_path(NULL, config))) {
		fprintf(stderr, "sluice install: no HOME: name the files with --file and --config\n");
		goto out;
	}
	pf = shown(file);
	backup = sl_printf("%s.sluice-backup", file);
	meta = sl_printf("%s.sluice-install.json", file);
	if (access(backup, F_OK) == 0 || access(meta, F_OK) == 0) {
		fprintf(stderr, "sluice install: %s is already installed (%s.sluice-backup is there): "
			"sluice uninstall --client %s first\n", pf, pf, a.client);
		rc = 1;
		goto out;
	}
	if ((rc = read_file(file, SL_CLIENT_MAX_BYTES, &text, &len, &err)) < 0) {
		if (rc == SL_ERR_NOT_FOUND)
			fprintf(stderr, "sluice install: %s: no such file (is %s set up here? name "
				"its file with --file)\n", pf, a.client);
		else
			fprintf(stderr, "sluice install: %s\n", err.msg);
		rc = rc == SL_ERR_NOT_FOUND || rc == SL_ERR_IO ? 2 : 1;
		goto out;
	}
	if (stat(file, &st) < 0)
		st.st_mode = 0600;
	/* First the servers go into the sluice config, then the client. */
	if (merge_open(m, target, &existed, &err) < 0) {
		fprintf(stderr, "sluice install: %s\n", err.msg);
		goto out;
	}
	{
		struct sl_client_ctx cx = { .home = home_dir(), .project = project };
		if (sl_client_parse(k, pf, text, len, &cx, &set, &err) < 0) {
			fprintf(stderr, "sluice install: %s\n", err.msg);
			rc = 1;
			goto out;
		}
	}
	{
		/* Named, so approved, but a server rejected in the client is
		 * not carried over; a user file's per-project lists stay. */
		struct source src = { k, file, project };
		im->one_target = im->install = true;
		route_set(im, &set, &src, true);
	}
	print_table(m);
	if (m->refused) {
		fprintf(stderr, "sluice install: %zu server%s of %s could not be carried over "
			"(above): fix or remove them, then install again; nothing changed\n",
			m->refused, m->refused == 1 ? "" : "s", pf);
		rc = 1;
		goto out;
	}
	if ((m->added || !existed) && merge_write(m, target, existed, &err) < 0) {
		fprintf(stderr, "sluice install: %s\n", err.msg);
		goto out;
	}
	if (!a.url) {
		if (!(abs_target = realpath(target, NULL))) {
			char *t = shown(target);
			fprintf(stderr, "sluice install: %s: %s (no sluice config to serve: import "
				"first)\n", t, strerror(errno));
			free(t);
			goto out;
		}
		self = realpath("/proc/self/exe", NULL);
		if (!self) {
			fprintf(stderr, "sluice install: cannot find sluice's own path: %s\n",
				strerror(errno));
			goto out;
		}
	}
	{
		struct sl_client_install in = { self, abs_target, a.url, &set };
		if (sl_client_install_text(k, text, len, &in, &out, &outlen, &err) < 0) {
			fprintf(stderr, "sluice install: %s: %s\n", pf, err.msg);
			rc = 1;
			goto out;
		}
	}
	sl_sha256_hex(text, len, hb);
	sl_sha256_hex(out, outlen, hi);
	metatext = sl_printf("{\"version\": 1, \"client\": \"%s\", \"mode\": %u, "
			     "\"backupSha256\": \"%s\", \"installedSha256\": \"%s\"}\n",
			     sl_client_name(k), (unsigned)(st.st_mode & 07777), hb, hi);
	if (write_new(backup, text, len, &err) < 0) {
		fprintf(stderr, "sluice install: %s\n", err.msg);
		goto out;
	}
	if (write_new(meta, metatext, strlen(metatext), &err) < 0 ||
	    sl_write_file_atomic(file, out, outlen, st.st_mode & 07777, &err) < 0) {
		fprintf(stderr, "sluice install: %s (nothing changed)\n", err.msg);
		unlink(meta);
		unlink(backup);
		goto out;
	}
	if (a.url) {
		char *u = shown(a.url);
		printf("installed: %s now reaches sluice at %s\n", pf, u);
		free(u);
	} else {
		char *t = shown(abs_target);
		printf("installed: %s now runs sluice serve --config %s\n", pf, t);
		free(t);
	}
	printf("the original is %s.sluice-backup; undo: sluice uninstall --client %s%s%s\n", pf,
	       a.client, a.file ? " --file " : "", a.file ? pf : "");
	rc = 0;
out:
	if (set.doc)
		sl_client_set_dispose(&set);
	merge_dispose(m);
	free(im);
	free(dir);
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	free(out);
	free(metatext);
	free(self);
	free(abs_target);
	free(file);
	free(project);
	free(target);
	free(backup);
	free(meta);
	free(pf);
	return rc;
}

int sl_cli_uninstall(int argc, const char *const *argv)
{
	struct args a;
	struct sl_err err;
	char *file = NULL, *project = NULL, *backup = NULL, *meta = NULL, *pf = NULL;
	char *mtext = NULL, *btext = NULL, *ctext = NULL, hb[SL_SHA256_HEX], hc[SL_SHA256_HEX];
	size_t mlen = 0, blen = 0, clen = 0;
	yyjson_doc *md = NULL;
	const char *want_b, *want_i, *client;
	int64_t mode;
	int rc = 2, r;

	if (parse_args("uninstall", argc, argv, &a) < 0 || !need_client("uninstall", &a))
		return 2;
	if (a.url || a.mode || a.write || a.dry_run) {
		fprintf(stderr, "sluice uninstall: takes --client and --file only\n");
		return 2;
	}
	if (!(file = client_file(&a, (enum sl_client_kind)sl_client_by_name(a.client), &project))) {
		fprintf(stderr, "sluice uninstall: no HOME: name the file with --file\n");
		goto out;
	}
	pf = shown(file);
	backup = sl_printf("%s.sluice-backup", file);
	meta = sl_printf("%s.sluice-install.json", file);
	if ((r = read_file(meta, META_MAX, &mtext, &mlen, &err)) < 0) {
		if (r == SL_ERR_NOT_FOUND)
			fprintf(stderr, "sluice uninstall: %s was not installed by sluice (no "
				"%s.sluice-install.json)\n", pf, pf);
		else
			fprintf(stderr, "sluice uninstall: %s\n", err.msg);
		rc = 1;
		goto out;
	}
	md = sl_json_read(mtext, mlen, SL_JSON_READ_FLAGS, NULL);
	want_b = md ? sl_json_str(yyjson_doc_get_root(md), "backupSha256") : NULL;
	want_i = md ? sl_json_str(yyjson_doc_get_root(md), "installedSha256") : NULL;
	client = md ? sl_json_str(yyjson_doc_get_root(md), "client") : NULL;
	if (!want_b || !want_i || !client || !sl_json_int(yyjson_doc_get_root(md), "mode", &mode) ||
	    mode < 0 || mode > 07777) {
		fprintf(stderr, "sluice uninstall: %s.sluice-install.json is damaged: restore %s "
			"from %s.sluice-backup by hand\n", pf, pf, pf);
		rc = 1;
		goto out;
	}
	if (strcmp(client, a.client) != 0) {
		char *c = shown(client);
		fprintf(stderr, "sluice uninstall: %s was installed for %s, not %s\n", pf, c, a.client);
		free(c);
		rc = 1;
		goto out;
	}
	if ((r = read_file(backup, SL_CLIENT_MAX_BYTES, &btext, &blen, &err)) < 0) {
		fprintf(stderr, "sluice uninstall: %s\n", r == SL_ERR_NOT_FOUND ?
			"the backup is gone: nothing to restore" : err.msg);
		rc = 1;
		goto out;
	}
	sl_sha256_hex(btext, blen, hb);
	if (strcmp(hb, want_b) != 0) {
		fprintf(stderr, "sluice uninstall: %s.sluice-backup changed since install: not "
			"restored (look at it, then copy it by hand)\n", pf);
		rc = 1;
		goto out;
	}
	r = read_file(file, SL_CLIENT_MAX_BYTES, &ctext, &clen, &err);
	if (r < 0 && r != SL_ERR_NOT_FOUND) {
		fprintf(stderr, "sluice uninstall: %s\n", err.msg);
		rc = 1;
		goto out;
	}
	if (r == SL_OK) {
		sl_sha256_hex(ctext, clen, hc);
		if (strcmp(hc, want_i) != 0) {
			fprintf(stderr,
				"sluice uninstall: %s changed since sluice install: restoring the "
				"backup would lose those changes. Compare (diff %s %s.sluice-backup), "
				"then copy the backup over it by hand, or undo the changes\n",
				pf, pf, pf);
			rc = 1;
			goto out;
		}
	}
	if (sl_write_file_atomic(file, btext, blen, (mode_t)mode, &err) < 0) {
		fprintf(stderr, "sluice uninstall: %s\n", err.msg);
		goto out;
	}
	unlink(meta);
	unlink(backup);
	(void)sync_dir_of(file);
	printf("restored %s from its backup, byte for byte (the servers stay in the sluice "
	       "config)\n", pf);
	rc = 0;
out:
	if (md)
		yyjson_doc_free(md);
	if (btext) {
		explicit_bzero(btext, blen);
		free(btext);
	}
	if (ctext) {
		explicit_bzero(ctext, clen);
		free(ctext);
	}
	free(mtext);
	free(file);
	free(project);
	free(backup);
	free(meta);
	free(pf);
	return rc;
}

/*
 * MCP client config files -> sluice entries, and the install rewrite
 * (clients.h). The formats, as their documentation gives them:
 *
 *   Claude Desktop  mcpServers.<name>: command, args, env
 *   Claude Code     mcpServers.<name> (and projects.<path>.mcpServers in
 *                   ~/.claude.json): type stdio|http|sse, command, args,
 *                   env, url, headers; ${VAR} and ${VAR:-default}
 *   Cursor          mcpServers.<name>: command, args, env, envFile, url,
 *                   headers; ${env:VAR}, ${userHome}, ${workspaceFolder}
 *   VS Code         servers.<name>: type stdio|http|sse, command, args,
 *                   env, envFile, cwd, url, headers; inputs[] prompted for
 *                   and named ${input:id}; ${env:VAR}, ${workspaceFolder}
 *   Windsurf        mcpServers.<name>: command, args, env, serverUrl (or
 *                   url), headers, disabled; ${env:VAR}
 *   Zed             context_servers.<name>: command (a string, or the
 *                   older {path, args, env}), args, env, url, headers,
 *                   enabled; the file is JSON with comments
 *
 * One reader takes them all (each key where any client uses it), so a file
 * that mixes spellings still imports. Every file is read as JSON with
 * comments and trailing commas, through the depth gate.
 */
#include "cli/clients.h"
#include "config/config.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/json.h"
#include "oauth/oauth.h"

#include <ctype.h>
#include <string.h>

static const struct {
	const char *name;
	const char *key;
} kinds[SL_CLIENT_COUNT] = {
	[SL_CLIENT_CLAUDE_DESKTOP] = { "claude-desktop", "mcpServers" },
	[SL_CLIENT_CLAUDE_CODE] = { "claude-code", "mcpServers" },
	[SL_CLIENT_CURSOR] = { "cursor", "mcpServers" },
	[SL_CLIENT_VSCODE] = { "vscode", "servers" },
	[SL_CLIENT_WINDSURF] = { "windsurf", "mcpServers" },
	[SL_CLIENT_ZED] = { "zed", "context_servers" },
};

const char *sl_client_name(enum sl_client_kind k)
{
	return kinds[k].name;
}

const char *sl_client_key(enum sl_client_kind k)
{
	return kinds[k].key;
}

int sl_client_by_name(const char *s)
{
	for (int k = 0; k < SL_CLIENT_COUNT; k++)
		if (strcmp(s, kinds[k].name) == 0)
			return k;
	return -1;
}

#define READ_FLAGS (SL_JSON_READ_FLAGS | YYJSON_READ_ALLOW_COMMENTS | YYJSON_READ_ALLOW_TRAILING_COMMAS)
#define SHOWN_MAX 80 /* bytes of a name or value shown in a message */

/* s[0..n) escaped for a terminal, cut at max bytes ("..." after). */
static char *esc(const char *s, size_t n, size_t max)
{
	struct sl_buf b;
	bool cut = n > max;

	sl_buf_init(&b, max * 6 + 8);
	if (sl_escape(&b, s, cut ? max : n, SL_ESCAPE_LOG) < 0 || (cut && sl_buf_appends(&b, "...") < 0))
		sl_oom(); /* the cap holds the worst case */
	return sl_buf_take(&b, NULL);
}

/* Whether escaping would change s: a control, bidi or non-UTF-8 byte. */
static bool needs_escape(const char *s, size_t n)
{
	char *e = esc(s, n, n);
	bool r = strlen(e) != n || memcmp(e, s, n) != 0;
	free(e);
	return r;
}

/* The conversion of one server. */
struct conv {
	enum sl_client_kind kind;
	const struct sl_client_ctx *cx;
	struct sl_client_set *set;
	struct sl_client_server *s;
	struct sl_buf notes;
	char *problem; /* the first problem; the server is refused */
	const char *project; /* the projects.<path> being read, or NULL */
};

static void note(struct conv *cv, const char *fmt, ...) SL_PRINTF(2, 3);
static void note(struct conv *cv, const char *fmt, ...)
{
	va_list ap;
	char *m;

	va_start(ap, fmt);
	m = sl_vprintf(fmt, ap);
	va_end(ap);
	/* The notes are bounded: past the cap a server's remarks are cut. */
	if ((cv->notes.len == 0 || sl_buf_appends(&cv->notes, "; ") == 0))
		(void)!sl_buf_appends(&cv->notes, m);
	free(m);
}

static void fail(struct conv *cv, const char *fmt, ...) SL_PRINTF(2, 3);
static void fail(struct conv *cv, const char *fmt, ...)
{
	va_list ap;

	if (cv->problem)
		return;
	va_start(ap, fmt);
	cv->problem = sl_vprintf(fmt, ap);
	va_end(ap);
}

static bool var_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > SL_CLIENT_VAR_MAX || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* Remembers a variable the entries use; input: the ${input:id} it stands
 * for (VS Code), NULL for one from the environment. */
static void add_var(struct sl_client_set *set, const char *var, size_t n, const char *input)
{
	for (size_t i = 0; i < set->nvars; i++)
		if (strlen(set->vars[i].var) == n && memcmp(set->vars[i].var, var, n) == 0)
			return;
	set->vars = sl_realloc(set->vars, (set->nvars + 1) * sizeof(*set->vars));
	set->vars[set->nvars].var = sl_strndup(var, n);
	set->vars[set->nvars].ref = input ? sl_strdup(input) : NULL;
	set->nvars++;
}

static bool has_prefix(const char *s, size_t n, const char *p)
{
	size_t pl = strlen(p);
	return n >= pl && memcmp(s, p, pl) == 0;
}

static bool is(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && memcmp(s, w, n) == 0;
}

/*
 * A string of the client file as sluice writes it: each reference the
 * client expands becomes the ${VAR} sluice expands (${input:id} -> ${ID},
 * ${env:VAR} -> ${VAR}); the client's own variables for places are
 * resolved here. Anything else fails the server: sluice would otherwise
 * look up a variable of that odd name. what names the value in messages.
 */
static char *carry(struct conv *cv, yyjson_val *v, const char *what)
{
	const char *in = yyjson_get_str(v), *end, *body;
	size_t n = yyjson_get_len(v), blen;
	struct sl_buf b;
	bool places;

	if (!in) {
		fail(cv, "%s must be a string", what);
		return NULL;
	}
	if (memchr(in, '\0', n)) {
		fail(cv, "%s holds a NUL character", what);
		return NULL;
	}
	sl_buf_init(&b, 2 * SL_CLIENT_MAX_BYTES);
	/* Cursor and VS Code name places with variables of their own; in the
	 * other clients such a name is just an environment variable. */
	places = cv->kind == SL_CLIENT_CURSOR || cv->kind == SL_CLIENT_VSCODE;
	for (size_t i = 0; i < n;) {
		if (!(in[i] == '$' && i + 1 < n && in[i + 1] == '{')) {
			if (sl_buf_append(&b, in + i, 1) < 0)
				goto too_long;
			i++;
			continue;
		}
		body = in + i + 2;
		end = memchr(body, '}', n - i - 2);
		if (!end) {
			fail(cv, "%s: an unterminated ${", what);
			goto out;
		}
		blen = (size_t)(end - body);
		if (memmem(body, blen, "${", 2)) {
			fail(cv, "%s: a nested reference (sluice has none)", what);
			goto out;
		}
		if (has_prefix(body, blen, "input:")) {
			/* VS Code prompts for it: sluice reads it from its environment. */
			char var[SL_CLIENT_VAR_MAX + 2], *ref;
			size_t il = blen - 6, vl = 0;
			if (il == 0 || il > SL_CLIENT_VAR_MAX) {
				fail(cv, "%s: a bad ${input:...}", what);
				goto out;
			}
			if (isdigit((unsigned char)body[6]))
				var[vl++] = '_';
			for (size_t j = 0; j < il; j++) {
				unsigned char c = (unsigned char)body[6 + j];
				var[vl++] = isalnum(c) ? (char)toupper(c) : '_';
			}
			var[vl] = '\0';
			ref = sl_strndup(in + i, blen + 3);
			add_var(cv->set, var, vl, ref);
			if (!needs_escape(ref, strlen(ref)))
				note(cv, "%s: %s -> ${%s}", what, ref, var);
			free(ref);
			if (sl_buf_printf(&b, "${%s}", var) < 0)
				goto too_long;
		} else if (places && (is(body, blen, "workspaceFolder") || is(body, blen, "workspaceRoot"))) {
			if (!cv->cx || !cv->cx->project) {
				fail(cv, "%s: ${%.*s} outside a project file", what, (int)blen, body);
				goto out;
			}
			if (sl_buf_appends(&b, cv->cx->project) < 0)
				goto too_long;
		} else if (places && is(body, blen, "userHome")) {
			if (!cv->cx || !cv->cx->home) {
				fail(cv, "%s: ${userHome} with no home directory", what);
				goto out;
			}
			if (sl_buf_appends(&b, cv->cx->home) < 0)
				goto too_long;
		} else if (places && (is(body, blen, "/") || is(body, blen, "pathSeparator"))) {
			if (sl_buf_appends(&b, "/") < 0)
				goto too_long;
		} else if (has_prefix(body, blen, "env:") && var_name_ok(body + 4, blen - 4)) {
			add_var(cv->set, body + 4, blen - 4, NULL);
			if (sl_buf_printf(&b, "${%.*s}", (int)(blen - 4), body + 4) < 0)
				goto too_long;
		} else if (var_name_ok(body, blen)) {
			add_var(cv->set, body, blen, NULL);
			if (sl_buf_printf(&b, "${%.*s}", (int)blen, body) < 0)
				goto too_long;
		} else if (memmem(body, blen, ":-", 2) &&
			   var_name_ok(body, (size_t)((char *)memmem(body, blen, ":-", 2) - body))) {
			/* Claude Code's ${VAR:-default}: sluice has no defaults. */
			size_t vl = (size_t)((char *)memmem(body, blen, ":-", 2) - body);
			add_var(cv->set, body, vl, NULL);
			note(cv, "%s: the default of ${%.*s} dropped (sluice needs %.*s set)", what,
			     (int)vl, body, (int)vl, body);
			if (sl_buf_printf(&b, "${%.*s}", (int)vl, body) < 0)
				goto too_long;
		} else {
			char *shown = esc(body, blen, SHOWN_MAX);
			fail(cv, "%s: ${%s} is a reference sluice cannot expand", what, shown);
			free(shown);
			goto out;
		}
		i += blen + 3;
	}
	return sl_buf_take(&b, NULL);
too_long:
	fail(cv, "%s: too long", what);
out:
	sl_buf_dispose(&b);
	return NULL;
}

/* Whether a variable or header of this name usually holds a secret. */
static bool secret_name(const char *k)
{
	static const char *const words[] = { "TOKEN", "SECRET", "PASS", "KEY", "CREDENTIAL",
					     "AUTH", "COOKIE" };
	char up[64];
	size_t n = 0;

	for (; k[n] && n < sizeof(up) - 1; n++)
		up[n] = (char)toupper((unsigned char)k[n]);
	up[n] = '\0';
	for (size_t i = 0; i < SL_COUNT(words); i++)
		if (strstr(up, words[i]))
			return true;
	return false;
}

/* An object of strings (env, headers), each carried over, into e[key]. */
static void carry_map(struct conv *cv, yyjson_val *m, const char *key, yyjson_mut_val *e)
{
	yyjson_mut_doc *d = cv->set->doc;
	yyjson_mut_val *out;
	yyjson_val *k, *v;
	size_t i, max;

	if (!yyjson_is_obj(m)) {
		fail(cv, "%s must be an object of strings", key);
		return;
	}
	out = yyjson_mut_obj(d);
	yyjson_obj_foreach(m, i, max, k, v) {
		char *what, *val, *kshown = esc(yyjson_get_str(k), yyjson_get_len(k), SHOWN_MAX);
		what = sl_printf("%s.%s", key, kshown);
		free(kshown);
		if (memchr(yyjson_get_str(k), '\0', yyjson_get_len(k)) ||
		    needs_escape(yyjson_get_str(k), yyjson_get_len(k)) || yyjson_get_len(k) == 0) {
			fail(cv, "%s: a name with control characters", what);
			free(what);
			return;
		}
		val = carry(cv, v, what);
		if (!val) {
			free(what);
			return;
		}
		/* A literal secret is kept (moving it to a variable would break
		 * the server until someone sets it), and said. */
		if (val[0] && !memmem(yyjson_get_str(v), yyjson_get_len(v), "${", 2) &&
		    secret_name(yyjson_get_str(k)))
			note(cv, "%s: a literal secret, kept as is (better: a ${VAR})", what);
		free(what);
		yyjson_mut_obj_add(out, yyjson_mut_strncpy(d, yyjson_get_str(k), yyjson_get_len(k)),
				   yyjson_mut_strcpy(d, val));
		free(val);
	}
	yyjson_mut_obj_add_val(d, e, key, out);
}

static void carry_args(struct conv *cv, yyjson_val *a, yyjson_mut_val *e)
{
	yyjson_mut_doc *d = cv->set->doc;
	yyjson_mut_val *out;
	yyjson_val *v;
	size_t i, max;

	if (!yyjson_is_arr(a)) {
		fail(cv, "args must be an array of strings");
		return;
	}
	out = yyjson_mut_arr(d);
	yyjson_arr_foreach(a, i, max, v) {
		char what[32], *val;
		snprintf(what, sizeof(what), "args[%zu]", i);
		if (!(val = carry(cv, v, what)))
			return;
		yyjson_mut_arr_add_strcpy(d, out, val);
		free(val);
	}
	yyjson_mut_obj_add_val(d, e, "args", out);
}

/* The client's entry v as a sluice entry (NULL: cv->problem says why). */
static yyjson_mut_val *convert(struct conv *cv, yyjson_val *v)
{
	yyjson_mut_doc *d = cv->set->doc;
	yyjson_mut_val *e = yyjson_mut_obj(d);
	yyjson_val *command = NULL, *args = NULL, *env = NULL, *cwd = NULL, *url = NULL;
	yyjson_val *headers = NULL, *type = NULL, *k, *x;
	bool disabled = false;
	struct sl_buf left;
	size_t i, max;
	char *s;

	if (!yyjson_is_obj(v)) {
		fail(cv, "not an object");
		return NULL;
	}
	sl_buf_init(&left, 256);
	yyjson_obj_foreach(v, i, max, k, x) {
		const char *key = yyjson_get_str(k); /* for the list of keys left out */
		if (yyjson_equals_str(k, "command"))
			command = x;
		else if (yyjson_equals_str(k, "args"))
			args = x;
		else if (yyjson_equals_str(k, "env"))
			env = x;
		else if (yyjson_equals_str(k, "cwd"))
			cwd = x;
		else if (yyjson_equals_str(k, "url") ||
			 (cv->kind == SL_CLIENT_WINDSURF && yyjson_equals_str(k, "serverUrl")))
			url = x;
		else if (yyjson_equals_str(k, "headers"))
			headers = x;
		else if (yyjson_equals_str(k, "type"))
			type = x;
		else if (yyjson_equals_str(k, "disabled"))
			disabled = yyjson_is_true(x);
		else if (yyjson_equals_str(k, "enabled"))
			disabled = yyjson_is_false(x);
		else if (yyjson_equals_str(k, "source") && cv->kind == SL_CLIENT_ZED)
			; /* "custom" or "extension": the entry says which by itself */
		else if (yyjson_equals_str(k, "envFile"))
			note(cv, "envFile left out: set its variables in sluice's environment");
		else if (!(left.len && sl_buf_appends(&left, ", ") < 0))
			(void)!sl_buf_append(&left, key, strnlen(key, 32));
	}
	if (left.len && !(cv->kind == SL_CLIENT_ZED && !command && !url)) {
		s = esc(left.data, left.len, left.len);
		note(cv, "keys left out: %s", s);
		free(s);
	}
	sl_buf_dispose(&left);
	/* Zed's older form: "command": {"path", "args", "env"}. */
	if (cv->kind == SL_CLIENT_ZED && yyjson_is_obj(command)) {
		yyjson_val *c = command;
		command = yyjson_obj_get(c, "path");
		args = yyjson_obj_get(c, "args") ? yyjson_obj_get(c, "args") : args;
		env = yyjson_obj_get(c, "env") ? yyjson_obj_get(c, "env") : env;
		if (!command) {
			fail(cv, "command has no path");
			goto fail;
		}
	}
	if (type && !yyjson_is_str(type)) {
		fail(cv, "type must be a string");
		goto fail;
	}
	if (command && url) {
		fail(cv, "has both a command and a url");
		goto fail;
	}
	if (command) {
		if (type && strcmp(yyjson_get_str(type), "stdio") != 0) {
			fail(cv, "a command with a type other than stdio");
			goto fail;
		}
		if (!yyjson_is_str(command) || yyjson_get_len(command) == 0) {
			fail(cv, "command must be a non-empty string");
			goto fail;
		}
		if (!(s = carry(cv, command, "command")))
			goto fail;
		yyjson_mut_obj_add_strcpy(d, e, "command", s);
		free(s);
		if (args)
			carry_args(cv, args, e);
		if (env)
			carry_map(cv, env, "env", e);
		if (cwd && (s = carry(cv, cwd, "cwd"))) {
			yyjson_mut_obj_add_strcpy(d, e, "cwd", s);
			free(s);
		}
		if (headers)
			note(cv, "headers left out (a local server)");
	} else if (url) {
		const char *t = type ? yyjson_get_str(type) : "http";
		if (strcmp(t, "http") && strcmp(t, "sse") && strcmp(t, "streamable-http") &&
		    strcmp(t, "streamableHttp")) {
			s = esc(t, yyjson_get_len(type), SHOWN_MAX);
			fail(cv, "a url with type \"%s\"", s);
			free(s);
			goto fail;
		}
		if (!(s = carry(cv, url, "url")))
			goto fail;
		if (strncmp(s, "http://", 7) && strncmp(s, "https://", 8) && strncmp(s, "${", 2)) {
			free(s);
			fail(cv, "url must start with http:// or https://");
			goto fail;
		}
		if (!strcmp(t, "sse"))
			yyjson_mut_obj_add_str(d, e, "type", "sse");
		yyjson_mut_obj_add_strcpy(d, e, "url", s);
		free(s);
		if (headers)
			carry_map(cv, headers, "headers", e);
		if (args || env)
			note(cv, "args and env left out (a remote server)");
	} else if (cv->kind == SL_CLIENT_ZED) {
		/* An extension's server: Zed runs it from the extension. */
		cv->s->client_only = true;
		goto fail;
	} else {
		fail(cv, "neither a command nor a url");
		goto fail;
	}
	if (cv->problem)
		goto fail;
	if (disabled)
		yyjson_mut_obj_add_bool(d, e, "disabled", true);
	return e;
fail:
	return NULL;
}

/* A sluice name from the client's: A-Z a-z 0-9 _ - . kept, any other run
 * of bytes one '-', at most 64. */
static char *sluice_name(const char *s, size_t n)
{
	char *out = sl_alloc(65);
	size_t o = 0;

	for (size_t i = 0; i < n && o < 64; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isalnum(c) || c == '_' || c == '-' || c == '.')
			out[o++] = (char)c;
		else if (o == 0 || out[o - 1] != '-')
			out[o++] = '-';
	}
	if (o == 0 || (o == 1 && out[0] == '-'))
		strcpy(out, "server");
	else
		out[o] = '\0';
	return out;
}

/* Whether sluice's own loader takes the entry (a server that it would
 * refuse must not make the whole merged config unloadable). */
static void check_entry(struct conv *cv, yyjson_mut_val *e)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root, *servers;
	struct sl_config *c = NULL;
	struct sl_err err;
	char *text;
	size_t len;

	if (!d)
		sl_oom();
	root = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, root);
	servers = yyjson_mut_obj_add_obj(d, root, "mcpServers");
	yyjson_mut_obj_add(servers, yyjson_mut_strcpy(d, cv->s->name), yyjson_mut_val_mut_copy(d, e));
	text = yyjson_mut_write(d, 0, &len);
	if (!text)
		sl_oom();
	if (sl_config_parse("entry", text, len, &c, &err) < 0 || sl_oauth_keys_load(c, &err) < 0)
		fail(cv, "sluice would not load it: %s", err.msg);
	sl_config_unref(c);
	free(text);
	yyjson_mut_doc_free(d);
}

static void take(struct conv *cv, yyjson_val *k, yyjson_val *v, const char *scope)
{
	struct sl_client_set *set = cv->set;
	struct sl_client_server *s;
	const char *raw = yyjson_get_str(k);
	size_t n = yyjson_get_len(k);

	set->v = sl_realloc(set->v, (set->n + 1) * sizeof(*set->v));
	s = &set->v[set->n++];
	memset(s, 0, sizeof(*s));
	cv->s = s;
	cv->problem = NULL;
	sl_buf_init(&cv->notes, 4096);
	s->shown = esc(raw, n, SHOWN_MAX);
	s->raw = sl_alloc(n + 1);
	memcpy(s->raw, raw, n);
	s->scope = scope ? sl_strdup(scope) : NULL;
	s->project = cv->project ? sl_strdup(cv->project) : NULL;
	s->name = sluice_name(raw, n);
	if (n == 0)
		fail(cv, "an empty name");
	else if (n > SL_CLIENT_NAME_MAX)
		fail(cv, "a name of %zu bytes (at most %d)", n, SL_CLIENT_NAME_MAX);
	else if (memchr(raw, '\0', n) || needs_escape(raw, n))
		fail(cv, "a name with control characters");
	else if ((s->entry = convert(cv, v)))
		check_entry(cv, s->entry);
	if (cv->problem) {
		s->entry = NULL;
		s->problem = esc(cv->problem, strlen(cv->problem), 512);
		free(cv->problem);
	} else if (strlen(s->name) != n || memcmp(s->name, raw, n) != 0) {
		note(cv, "renamed from \"%s\"", s->shown);
	}
	if (cv->notes.len)
		s->notes = sl_buf_take(&cv->notes, NULL);
	sl_buf_dispose(&cv->notes);
}

/* obj[key], refusing a key given twice: the client may read the other one. */
static int get_once(yyjson_val *obj, const char *key, const char *file, yyjson_val **out,
		    struct sl_err *err)
{
	yyjson_val *k, *v;
	size_t i, max, seen = 0;

	*out = NULL;
	yyjson_obj_foreach(obj, i, max, k, v) {
		if (!yyjson_equals_str(k, key))
			continue;
		if (seen++) {
			sl_err_set(err, "%s: \"%s\" given twice: which one the client reads is unclear",
				   file, key);
			return SL_ERR_INVALID;
		}
		*out = v;
	}
	return SL_OK;
}

static int take_all(struct conv *cv, yyjson_val *servers, const char *where, const char *scope,
		    const char *file, struct sl_err *err)
{
	yyjson_val *k, *v;
	size_t i, max;

	if (!servers)
		return SL_OK;
	if (!yyjson_is_obj(servers)) {
		sl_err_set(err, "%s: %s must be an object", file, where);
		return SL_ERR_INVALID;
	}
	if (cv->set->n + yyjson_obj_size(servers) > SL_CLIENT_MAX_SERVERS) {
		sl_err_set(err, "%s: over %d servers: not read", file, SL_CLIENT_MAX_SERVERS);
		return SL_ERR_TOO_LARGE;
	}
	yyjson_obj_foreach(servers, i, max, k, v)
		take(cv, k, v, scope);
	return SL_OK;
}

static yyjson_doc *read_doc(const char *file, const char *text, size_t len, struct sl_err *err)
{
	yyjson_read_err rerr;
	yyjson_doc *doc;

	if (len > SL_CLIENT_MAX_BYTES) {
		sl_err_set(err, "%s: over %u bytes: not read", file, SL_CLIENT_MAX_BYTES);
		return NULL;
	}
	doc = sl_json_read(text, len, READ_FLAGS, &rerr);
	if (!doc) {
		size_t line, col;
		if (rerr.code == SL_JSON_READ_ERROR_DEPTH) {
			sl_err_set(err, "%s: %s", file, SL_JSON_DEPTH_WHY);
		} else {
			sl_json_position(text, len, rerr.pos, &line, &col);
			sl_err_set(err, "%s:%zu:%zu: %s", file, line, col, rerr.msg);
		}
		return NULL;
	}
	if (!yyjson_is_obj(yyjson_doc_get_root(doc))) {
		sl_err_set(err, "%s: not a JSON object", file);
		yyjson_doc_free(doc);
		return NULL;
	}
	return doc;
}

int sl_client_parse(enum sl_client_kind k, const char *file, const char *text, size_t len,
		    const struct sl_client_ctx *cx, struct sl_client_set *set, struct sl_err *err)
{
	struct conv cv = { .kind = k, .cx = cx, .set = set };
	yyjson_doc *doc;
	yyjson_val *root, *servers, *projects, *pk, *pv;
	size_t i, max;
	int rc;

	memset(set, 0, sizeof(*set));
	if (!(doc = read_doc(file, text, len, err)))
		return len > SL_CLIENT_MAX_BYTES ? SL_ERR_TOO_LARGE : SL_ERR_INVALID;
	root = yyjson_doc_get_root(doc);
	set->doc = yyjson_mut_doc_new(NULL);
	if (!set->doc)
		sl_oom();
	if ((rc = get_once(root, sl_client_key(k), file, &servers, err)) == SL_OK)
		rc = take_all(&cv, servers, sl_client_key(k), NULL, file, err);
	projects = NULL;
	if (rc == SL_OK && k == SL_CLIENT_CLAUDE_CODE)
		rc = get_once(root, "projects", file, &projects, err);
	if (rc == SL_OK && yyjson_is_obj(projects)) {
		yyjson_obj_foreach(projects, i, max, pk, pv) {
			char *p = esc(yyjson_get_str(pk), yyjson_get_len(pk), 4096);
			char *scope = sl_printf("project %s", p);
			rc = yyjson_is_obj(pv) ? get_once(pv, "mcpServers", file, &servers, err) : SL_OK;
			cv.project = yyjson_get_str(pk);
			if (rc == SL_OK && yyjson_is_obj(pv))
				rc = take_all(&cv, servers, "projects.<path>.mcpServers", scope, file,
					      err);
			cv.project = NULL;
			free(scope);
			free(p);
			if (rc < 0)
				break;
		}
	}
	yyjson_doc_free(doc);
	if (rc < 0)
		sl_client_set_dispose(set);
	return rc;
}

void sl_client_set_dispose(struct sl_client_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->v[i].name);
		free(set->v[i].shown);
		free(set->v[i].scope);
		free(set->v[i].raw);
		free(set->v[i].project);
		free(set->v[i].problem);
		free(set->v[i].notes);
	}
	for (size_t i = 0; i < set->nvars; i++) {
		free(set->vars[i].var);
		free(set->vars[i].ref);
	}
	free(set->v);
	free(set->vars);
	if (set->doc)
		yyjson_mut_doc_free(set->doc);
	memset(set, 0, sizeof(*set));
}

/* A copy of v (or of dflt when v is NULL) in d. */
static yyjson_mut_val *copy_or(yyjson_mut_doc *d, yyjson_mut_val *v, yyjson_mut_val *dflt)
{
	yyjson_mut_val *c = v ? yyjson_mut_val_mut_copy(d, v) : dflt;
	if (!c)
		sl_oom();
	return c;
}

char *sl_client_identity(yyjson_mut_val *e)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *id, *v;
	char *s;

	if (!d)
		sl_oom();
	id = yyjson_mut_obj(d);
	if ((v = yyjson_mut_obj_get(e, "url"))) {
		const char *t = yyjson_mut_get_str(yyjson_mut_obj_get(e, "type"));
		/* "http" and "streamable-http" are one transport. */
		yyjson_mut_obj_add_str(d, id, "type", t && !strcmp(t, "sse") ? "sse" : "http");
		yyjson_mut_obj_add_val(d, id, "url", copy_or(d, v, NULL));
		yyjson_mut_obj_add_val(d, id, "headers",
				       copy_or(d, yyjson_mut_obj_get(e, "headers"), yyjson_mut_obj(d)));
	} else {
		yyjson_mut_obj_add_val(d, id, "command",
				       copy_or(d, yyjson_mut_obj_get(e, "command"), yyjson_mut_null(d)));
		yyjson_mut_obj_add_val(d, id, "args",
				       copy_or(d, yyjson_mut_obj_get(e, "args"), yyjson_mut_arr(d)));
		yyjson_mut_obj_add_val(d, id, "env",
				       copy_or(d, yyjson_mut_obj_get(e, "env"), yyjson_mut_obj(d)));
		yyjson_mut_obj_add_val(d, id, "cwd",
				       copy_or(d, yyjson_mut_obj_get(e, "cwd"), yyjson_mut_null(d)));
	}
	s = sl_json_canonical(id, NULL);
	yyjson_mut_doc_free(d);
	return s;
}

/* How the client itself would pass variable var on to sluice, or NULL
 * where it expands none. */
static char *client_ref(enum sl_client_kind k, const struct sl_client_var *v)
{
	if (v->ref)
		return k == SL_CLIENT_VSCODE ? sl_strdup(v->ref) : NULL;
	switch (k) {
	case SL_CLIENT_CLAUDE_CODE:
		return sl_printf("${%s}", v->var);
	case SL_CLIENT_CURSOR:
	case SL_CLIENT_VSCODE:
	case SL_CLIENT_WINDSURF:
		return sl_printf("${env:%s}", v->var);
	default:
		return NULL; /* Claude Desktop and Zed expand nothing: sluice inherits */
	}
}

static yyjson_mut_val *install_entry(enum sl_client_kind k, yyjson_mut_doc *d,
				     const struct sl_client_install *in, struct sl_err *err)
{
	yyjson_mut_val *e = yyjson_mut_obj(d), *args, *env;

	if (in->url) {
		if (k == SL_CLIENT_CLAUDE_DESKTOP) {
			sl_err_set(err, "Claude Desktop's config file takes no remote server "
				   "(it adds them as connectors): use --mode stdio");
			return NULL;
		}
		if (k == SL_CLIENT_VSCODE || k == SL_CLIENT_CLAUDE_CODE)
			yyjson_mut_obj_add_str(d, e, "type", "http");
		yyjson_mut_obj_add_strcpy(d, e, k == SL_CLIENT_WINDSURF ? "serverUrl" : "url", in->url);
		return e;
	}
	if (k == SL_CLIENT_VSCODE)
		yyjson_mut_obj_add_str(d, e, "type", "stdio");
	yyjson_mut_obj_add_strcpy(d, e, "command", in->command);
	args = yyjson_mut_obj_add_arr(d, e, "args");
	yyjson_mut_arr_add_str(d, args, "serve");
	yyjson_mut_arr_add_str(d, args, "--config");
	yyjson_mut_arr_add_strcpy(d, args, in->config);
	env = yyjson_mut_obj(d);
	for (size_t i = 0; in->refs && i < in->refs->nvars; i++) {
		char *r = client_ref(k, &in->refs->vars[i]);
		if (r)
			yyjson_mut_obj_add(env, yyjson_mut_strcpy(d, in->refs->vars[i].var),
					   yyjson_mut_strcpy(d, r));
		free(r);
	}
	if (yyjson_mut_obj_size(env))
		yyjson_mut_obj_add_val(d, e, "env", env);
	return e;
}

/* obj[key] = v, in the key's place when it is there (else at the end). */
static void put(yyjson_mut_doc *d, yyjson_mut_val *obj, const char *key, yyjson_mut_val *v)
{
	yyjson_mut_val *k = yyjson_mut_strcpy(d, key);
	if (!yyjson_mut_obj_replace(obj, k, v))
		yyjson_mut_obj_add(obj, k, v);
}

int sl_client_install_text(enum sl_client_kind k, const char *text, size_t len,
			   const struct sl_client_install *in, char **out, size_t *outlen,
			   struct sl_err *err)
{
	yyjson_doc *doc = read_doc("the client file", text, len, err);
	yyjson_mut_doc *d;
	yyjson_mut_val *root, *servers, *old, *e, *pk, *pv;
	yyjson_mut_obj_iter it;
	int rc = SL_ERR_INVALID;
	char *s;

	if (!doc)
		return SL_ERR_INVALID;
	d = yyjson_doc_mut_copy(doc, NULL);
	yyjson_doc_free(doc);
	if (!d)
		sl_oom();
	root = yyjson_mut_doc_get_root(d);
	if (!(e = install_entry(k, d, in, err)))
		goto out;
	servers = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, servers, "sluice", e);
	old = yyjson_mut_obj_get(root, sl_client_key(k));
	if (k == SL_CLIENT_ZED && yyjson_mut_is_obj(old)) {
		yyjson_mut_obj_iter_init(old, &it);
		while ((pk = yyjson_mut_obj_iter_next(&it))) {
			pv = yyjson_mut_obj_iter_get_val(pk);
			if (!yyjson_mut_is_obj(pv) || yyjson_mut_obj_get(pv, "command") ||
			    yyjson_mut_obj_get(pv, "url"))
				continue;
			/* An extension's server of that name would be lost. */
			if (yyjson_mut_equals_str(pk, "sluice")) {
				sl_err_set(err, "context_servers has an extension's server named "
					   "\"sluice\": installing would replace it; rename or "
					   "remove it first");
				goto out;
			}
			yyjson_mut_obj_add(servers, yyjson_mut_strncpy(d, yyjson_mut_get_str(pk),
					   yyjson_mut_get_len(pk)), yyjson_mut_val_mut_copy(d, pv));
		}
	}
	put(d, root, sl_client_key(k), servers);
	s = yyjson_mut_write(d, YYJSON_WRITE_PRETTY_TWO_SPACES | YYJSON_WRITE_NEWLINE_AT_END, outlen);
	if (!s)
		sl_oom();
	*out = s;
	rc = SL_OK;
out:
	yyjson_mut_doc_free(d);
	return rc;
}

/* ---- Claude Code's approvals of a project's .mcp.json ------------------- */

void sl_client_approvals_init(struct sl_client_approvals *a)
{
	a->all = false;
	a->enabled = sl_alloc(sizeof(char *));
	a->disabled = sl_alloc(sizeof(char *));
}

static void names_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* Appends s (taken) to the NULL-terminated *v. */
static void list_push(char ***v, char *s)
{
	size_t n = 0;
	while ((*v)[n])
		n++;
	*v = sl_realloc(*v, (n + 2) * sizeof(char *));
	(*v)[n] = s;
	(*v)[n + 1] = NULL;
}

/* The strings of obj[key] added to *v (NULL-terminated): at most
 * SL_CLIENT_MAX_SERVERS in all; an entry that is not a string is skipped. */
static int add_names(char ***v, yyjson_val *obj, const char *key, const char *file,
		     struct sl_err *err)
{
	yyjson_val *arr = yyjson_obj_get(obj, key), *x;
	size_t n = 0, i, max;

	if (!arr)
		return SL_OK;
	if (!yyjson_is_arr(arr)) {
		sl_err_set(err, "%s: %s must be an array", file, key);
		return SL_ERR_INVALID;
	}
	while ((*v)[n])
		n++;
	if (n + yyjson_arr_size(arr) > SL_CLIENT_MAX_SERVERS) {
		sl_err_set(err, "%s: %s: over %d names: not read", file, key, SL_CLIENT_MAX_SERVERS);
		return SL_ERR_TOO_LARGE;
	}
	*v = sl_realloc(*v, (n + yyjson_arr_size(arr) + 1) * sizeof(char *));
	yyjson_arr_foreach(arr, i, max, x)
		if (yyjson_is_str(x))
			(*v)[n++] = sl_strdup(yyjson_get_str(x));
	(*v)[n] = NULL;
	return SL_OK;
}

int sl_client_approvals_add(struct sl_client_approvals *a, const char *file, const char *text,
			    size_t len, const char *project, struct sl_err *err)
{
	struct sl_client_approvals t;
	yyjson_doc *doc = read_doc(file, text, len, err);
	yyjson_val *o;
	int rc;

	if (!doc)
		return len > SL_CLIENT_MAX_BYTES ? SL_ERR_TOO_LARGE : SL_ERR_INVALID;
	o = yyjson_doc_get_root(doc);
	if (project)
		o = yyjson_obj_get(yyjson_obj_get(o, "projects"), project);
	sl_client_approvals_init(&t);
	if (yyjson_is_obj(o) &&
	    ((rc = add_names(&t.enabled, o, "enabledMcpjsonServers", file, err)) < 0 ||
	     (rc = add_names(&t.disabled, o, "disabledMcpjsonServers", file, err)) < 0)) {
		sl_client_approvals_dispose(&t);
		yyjson_doc_free(doc);
		return rc;
	}
	t.all = yyjson_is_obj(o) && yyjson_is_true(yyjson_obj_get(o, "enableAllProjectMcpServers"));
	/* Both sources hold: their lists are joined, and all from either. */
	for (size_t i = 0; t.enabled[i]; i++)
		list_push(&a->enabled, t.enabled[i]);
	for (size_t i = 0; t.disabled[i]; i++)
		list_push(&a->disabled, t.disabled[i]);
	a->all = a->all || t.all;
	free(t.enabled);
	free(t.disabled);
	yyjson_doc_free(doc);
	return SL_OK;
}

static bool named(char *const *v, const char *raw)
{
	for (size_t i = 0; v[i]; i++)
		if (!strcmp(v[i], raw))
			return true;
	return false;
}

enum sl_client_verdict sl_client_approval(const struct sl_client_approvals *a, const char *raw)
{
	if (named(a->disabled, raw))
		return SL_CLIENT_REJECTED;
	return a->all || named(a->enabled, raw) ? SL_CLIENT_APPROVED : SL_CLIENT_UNAPPROVED;
}

void sl_client_approvals_dispose(struct sl_client_approvals *a)
{
	names_free(a->enabled);
	names_free(a->disabled);
	a->enabled = a->disabled = NULL;
}

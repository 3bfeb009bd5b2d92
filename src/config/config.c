/*
 * Config file -> immutable struct sl_config.
 *
 * File-level mistakes (invalid JSON, wrong types, bad values) fail the load
 * with file:line:column. Server-level problems that the user may fix in the
 * environment (an unset ${VAR}) fail only that server: it shows up as failed
 * in list_servers while the others serve. Unknown keys are warnings.
 */
#include "config/config.h"
#include "config/conf.h"
#include "core/json.h"
#include "core/log.h"
#include "pipeline/call.h"
#include "sandbox/kernel.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_MAX_BYTES (16u << 20)

struct parser {
	struct sl_conf_ctx cx; /* first: on_warn finds the parser from it */
	struct sl_config *c;
};

static void add_warning(struct sl_config *c, char *msg)
{
	c->warnings = sl_realloc(c->warnings, (c->nwarnings + 1) * sizeof(char *));
	c->warnings[c->nwarnings++] = msg;
}

static void on_warn(struct sl_conf_ctx *cx, char *msg)
{
	add_warning(((struct parser *)cx)->c, msg);
}

static const char *env_getenv(const char *name)
{
	return getenv(name);
}

char *sl_config_expand(const char *s, const char *(*getenv_fn)(const char *), struct sl_err *err)
{
	size_t cap = strlen(s) + 1, len = 0;
	char *out = sl_alloc(cap);

	while (*s) {
		const char *end, *name, *val;
		size_t nlen, vlen;
		char var[256];

		if (s[0] != '$' || s[1] != '{') {
			out[len++] = *s++;
			continue;
		}
		end = strchr(s + 2, '}');
		if (!end) {
			sl_err_set(err, "unterminated ${ in \"%s\"", s);
			goto fail;
		}
		name = s + 2;
		nlen = (size_t)(end - name);
		if (nlen > 4 && memcmp(name, "env:", 4) == 0) {
			name += 4;
			nlen -= 4;
		}
		if (nlen == 0 || nlen >= sizeof(var)) {
			sl_err_set(err, "bad variable reference \"%.*s\"", (int)(end - s + 1), s);
			goto fail;
		}
		memcpy(var, name, nlen);
		var[nlen] = '\0';
		val = getenv_fn(var);
		if (!val) {
			sl_err_set(err, "environment variable %s is not set", var);
			goto fail;
		}
		vlen = strlen(val);
		cap += vlen;
		out = sl_realloc(out, cap);
		memcpy(out + len, val, vlen);
		len += vlen;
		s = end + 1;
	}
	out[len] = '\0';
	return out;
fail:
	free(out);
	return NULL;
}

/* Expands one server string; on failure marks the server failed. */
static char *expand_for(struct sl_server_config *s, const char *what, const char *v)
{
	struct sl_err e;
	char *r = sl_config_expand(v, env_getenv, &e);
	if (!r && !s->error)
		s->error = sl_printf("%s (in %s)", e.msg, what);
	return r;
}

static bool valid_server_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > SL_SERVER_NAME_MAX)
		return false;
	for (const char *p = n; *p; p++)
		if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') ||
		      ('0' <= *p && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return false;
	return true;
}

/* A header name is an RFC 9110 token; no value may break a line. */
static bool valid_header(const char *name, const char *value)
{
	if (!*name || strpbrk(value, "\r\n"))
		return false;
	for (const char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("!#$%&'*+-.^_`|~", *c))
			return false;
	return true;
}


/* command, cwd, url: a string with ${VAR} expanded for this server. */
static int parse_expanded(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			  void *target)
{
	if (!yyjson_is_str(v) || yyjson_get_len(v) < k->min)
		return sl_conf_bad(cx, k);
	*(char **)sl_conf_field(target, k) = expand_for(target, k->key, yyjson_get_str(v));
	return SL_OK;
}

static int parse_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	const char *u = yyjson_get_str(v);
	if (!u || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
		return sl_conf_bad(cx, k);
	return parse_expanded(cx, k, v, target);
}

static int parse_args(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		      void *target)
{
	struct sl_server_config *s = target;
	size_t i, n;
	yyjson_val *a;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	s->args = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(char *));
	yyjson_arr_foreach(v, i, n, a) {
		char what[32];
		if (!yyjson_is_str(a))
			return sl_conf_bad(cx, k);
		snprintf(what, sizeof(what), "args[%zu]", i);
		s->args[s->nargs] = expand_for(s, what, yyjson_get_str(a));
		if (s->args[s->nargs])
			s->nargs++;
	}
	return SL_OK;
}

/* What one entry of env or headers must be: NULL if it is fine, else
 * why not. value is NULL when it is not a string. */
typedef const char *(*kv_check_fn)(const char *name, const char *value);

static const char *env_check(const char *name, const char *value)
{
	if (!value)
		return "values must be strings";
	if (strchr(name, '=') || !*name)
		return "names must be non-empty and without '='";
	return NULL;
}

static const char *header_check(const char *name, const char *value)
{
	return value && valid_header(name, value) ? NULL :
	       "must map header names to single-line string values";
}

/* An object of strings, each ${VAR}-expanded, into *out (checked before and
 * after the expansion: a variable may bring a newline into a header). */
static int parse_kv(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		    struct sl_server_config *s, kv_check_fn check, struct sl_kv **out, size_t *n)
{
	yyjson_obj_iter it;
	yyjson_val *name;

	if (!yyjson_is_obj(v))
		return sl_conf_bad(cx, k);
	*out = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(**out));
	yyjson_obj_iter_init(v, &it);
	while ((name = yyjson_obj_iter_next(&it))) {
		const char *nm = yyjson_get_str(name);
		const char *raw = yyjson_get_str(yyjson_obj_iter_get_val(name)), *why;
		char what[300];
		char *val;
		if ((why = check(nm, raw)))
			return sl_conf_fail_key(cx, k, "%s", why);
		snprintf(what, sizeof(what), "%s.%s", k->key, nm);
		if (!(val = expand_for(s, what, raw)))
			continue;
		if (check(nm, val)) {
			free(val);
			return sl_conf_fail(cx, NULL, "%s expands to more than one line", what);
		}
		(*out)[*n].key = sl_strdup(nm);
		(*out)[(*n)++].value = val;
	}
	return SL_OK;
}

static int parse_env(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	struct sl_server_config *s = target;
	return parse_kv(cx, k, v, s, env_check, &s->env, &s->nenv);
}

static int parse_headers(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	struct sl_server_config *s = target;
	return parse_kv(cx, k, v, s, header_check, &s->headers, &s->nheaders);
}

/* "prefix": false is stored the other way round: unprefixed is the exception. */
static int parse_prefix(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target)
{
	if (!yyjson_is_bool(v))
		return sl_conf_bad(cx, k);
	((struct sl_server_config *)target)->unprefixed = !yyjson_get_bool(v);
	return SL_OK;
}

static const struct sl_conf_name transports[] = {
	{ "stdio", SL_TRANSPORT_STDIO },
	{ "http", SL_TRANSPORT_HTTP },
	{ "streamable-http", SL_TRANSPORT_HTTP },
	{ "streamableHttp", SL_TRANSPORT_HTTP },
	{ "sse", SL_TRANSPORT_SSE },
	{ NULL, 0 },
};

#define SRV(field) SL_CONF_AT(struct sl_server_config, field)
static const struct sl_conf_key server_keys[] = {
	{ "command", SL_CONF_CUSTOM, SRV(command), .min = 1, .parse = parse_expanded,
	  .shape = "a non-empty string",
	  .doc = "The program to run, searched in the entry's `PATH`; `${VAR}` expanded." },
	{ "args", SL_CONF_CUSTOM, SRV(args), .parse = parse_args, .shape = "an array of strings",
	  .dflt_doc = "`[]`", .doc = "Its arguments; `${VAR}` expanded." },
	{ "env", SL_CONF_CUSTOM, SRV(env), .parse = parse_env, .shape = "an object of strings",
	  .dflt_doc = "`{}`",
	  .doc = "Variables added to the child's least-privilege environment; `${VAR}` expanded." },
	{ "cwd", SL_CONF_CUSTOM, SRV(cwd), .parse = parse_expanded, .shape = "a string",
	  .dflt_doc = "the gateway's", .doc = "The child's working directory; `${VAR}` expanded." },
	{ "disabled", SL_CONF_BOOL, SRV(disabled), .doc = "`true`: the server is not started." },
	{ "prefix", SL_CONF_CUSTOM, SRV(unprefixed), .parse = parse_prefix, .shape = "true or false",
	  .dflt_doc = "`true`",
	  .doc = "`false`: its tools, prompts and resource URIs keep their own names instead of "
		 "`server__tool` and `sluice://server/uri` (a name already taken falls back to the "
		 "prefixed form, with a warning)." },
	{ "timeout", SL_CONF_UINT, SRV(timeout_ms), .min = 1, .max = UINT64_MAX,
	  .shape = "a positive number of milliseconds", .dflt_doc = "`sluice.callTimeoutMs`",
	  .doc = "How long one call to this server may take." },
	{ "type", SL_CONF_ENUM, SRV(transport), .names = transports,
	  .shape = "\"stdio\", \"http\" or \"sse\"", .dflt_doc = "`\"stdio\"`; `\"http\"` with a `url`",
	  .doc = "`\"http\"` (also `\"streamable-http\"`): Streamable HTTP; `\"sse\"`: the "
		 "2024-11-05 HTTP+SSE transport." },
	{ "url", SL_CONF_CUSTOM, SRV(url), .parse = parse_url, .shape = "an http:// or https:// URL",
	  .doc = "A remote server, instead of `command`; `${VAR}` expanded." },
	{ "headers", SL_CONF_CUSTOM, SRV(headers), .parse = parse_headers,
	  .shape = "an object of strings", .dflt_doc = "`{}`",
	  .doc = "Remote servers: sent on every request (where tokens go); `${VAR}` expanded." },
};
#undef SRV

static const struct sl_conf_section server_section = {
	"mcpServers.<name>",
	"One server entry (VS Code's `servers.<name>` is the same). Names are 1-64 characters of "
	"`A-Z a-z 0-9 _ - .`. An unset `${VAR}` fails that server alone, with a message naming the "
	"variable.",
	server_keys, SL_COUNT(server_keys), SL_CONF_KEY_FIRST, NULL,
};

static int parse_server(struct sl_conf_ctx *cx, const char *group, const char *name,
			yyjson_val *o, struct sl_server_config *s)
{
	char where[160];
	int rc;

	if (!name) /* object keys are strings; this keeps the compiler sure of it */
		name = "";
	snprintf(where, sizeof(where), "%s.%s", group, name);
	s->name = sl_strdup(name);
	if (!valid_server_name(name))
		return sl_conf_fail(cx, where, "server names are 1-64 characters of A-Z a-z 0-9 _ - .");
	if (!yyjson_is_obj(o))
		return sl_conf_fail(cx, where, "a server entry must be an object");
	if ((rc = sl_conf_apply(cx, &server_section, where, o, s)) < 0)
		return rc;
	if (s->url && !yyjson_obj_get(o, "type"))
		s->transport = SL_TRANSPORT_HTTP;
	if (s->transport == SL_TRANSPORT_STDIO) {
		if (yyjson_obj_get(o, "url"))
			return sl_conf_fail(cx, where, "a \"url\" needs \"type\": \"http\" or \"sse\", not \"stdio\"");
		if (!s->command && !s->error)
			return sl_conf_fail(cx, where, "missing \"command\" (or \"url\" for a remote server)");
	} else {
		if (s->command)
			return sl_conf_fail(cx, where, "a server has either \"command\" or \"url\", not both");
		if (!yyjson_obj_get(o, "url"))
			return sl_conf_fail(cx, where, "missing \"url\"");
	}
	if (!s->args)
		s->args = sl_alloc(sizeof(char *));
	if (!s->env)
		s->env = sl_alloc(sizeof(*s->env));
	return SL_OK;
}

static int parse_require(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	struct sl_config *c = target;
	yyjson_val *b;
	size_t i, n;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	yyjson_arr_foreach(v, i, n, b) {
		unsigned bit = yyjson_is_str(b) ? sl_boundary_parse(yyjson_get_str(b)) : 0;
		if (!bit)
			return sl_conf_fail_key(cx, k, "names are userns, pidns, netns, ipcns, mountns, "
						"rlimits, no_new_privs, landlock, seccomp");
		c->code_require |= bit;
	}
	return SL_OK;
}

#define CODE(field) SL_CONF_AT(struct sl_config, field)
static const struct sl_conf_key code_keys[] = {
	{ "enabled", SL_CONF_BOOL, CODE(code_enabled),
	  .doc = "Offers `execute_code` in every exposure mode (always on in `\"code\"`)." },
	{ "timeoutMs", SL_CONF_UINT, CODE(code.timeout_ms), .min = 1, .max = 3600000, .dflt = 30000,
	  .doc = "A program's wall clock, its tool calls included." },
	{ "cpuMs", SL_CONF_UINT, CODE(code.cpu_ms), .min = 1, .max = 3600000, .dflt = 5000,
	  .doc = "A program's CPU time." },
	{ "heapBytes", SL_CONF_UINT, CODE(code.heap_bytes), .min = 1u << 20, .max = 16ull << 30,
	  .dflt = 256u << 20, .doc = "The JavaScript heap." },
	{ "stackBytes", SL_CONF_UINT, CODE(code.stack_bytes), .min = 64u << 10, .max = 64u << 20,
	  .dflt = 1u << 20, .doc = "The JavaScript stack." },
	{ "maxCalls", SL_CONF_UINT, CODE(code.max_calls), .min = 1, .max = 100000, .dflt = 32,
	  .doc = "Tool calls per program." },
	{ "maxInFlight", SL_CONF_UINT, CODE(code.max_inflight), .min = 1, .max = 1000, .dflt = 4,
	  .doc = "Tool calls of one program running at once." },
	{ "maxOutputBytes", SL_CONF_UINT, CODE(code.max_output), .min = 1024, .max = 1u << 30,
	  .dflt = 64u << 10, .doc = "The return value, as text." },
	{ "maxConsoleBytes", SL_CONF_UINT, CODE(code.max_console), .min = 0, .max = 1u << 30,
	  .dflt = 4u << 10, .doc = "Console output kept for the answer." },
	{ "maxSourceBytes", SL_CONF_UINT, CODE(code.max_source), .min = 64, .max = 1u << 30,
	  .dflt = 64u << 10, .doc = "The program's source." },
	{ "maxArgsBytes", SL_CONF_UINT, CODE(code.max_args), .min = 64, .max = 1u << 30,
	  .dflt = 256u << 10, .doc = "One call's arguments, as JSON." },
	{ "maxResultBytes", SL_CONF_UINT, CODE(code.max_result), .min = 1024, .max = 1u << 30,
	  .dflt = 4u << 20,
	  .doc = "One tool result handed to the program, as JSON (over it the call rejects with "
		 "`too_large`)." },
	{ "poolSize", SL_CONF_UINT, CODE(code_pool), .min = 1, .max = 8, .dflt = 2,
	  .doc = "Workers prepared in advance." },
	{ "maxConcurrent", SL_CONF_UINT, CODE(code_max_concurrent), .min = 0, .max = 1000,
	  .dflt = 0, .dflt_doc = "`0`: twice the number of cores",
	  .doc = "Programs running at once (a worker each), all sessions, stdio and both HTTP eras "
		 "together; more wait in a queue (`maxQueued`). Each may use up to `heapBytes`." },
	{ "maxQueued", SL_CONF_UINT, CODE(code_max_queued), .min = 0, .max = 100000, .dflt = 32,
	  .doc = "Programs waiting for a free slot, first come first served: a queued program's "
		 "`timeoutMs` starts when it runs, and a cancelled one leaves the queue. One more is "
		 "refused at once with a \"busy\" error naming this limit." },
	{ "require", SL_CONF_CUSTOM, CODE(code_require), .parse = parse_require,
	  .shape = "an array of boundary names", .dflt_doc = "`[]`",
	  .doc = "Sandbox boundaries code mode refuses to run without: `userns`, `pidns`, `netns`, "
		 "`ipcns`, `mountns`, `rlimits`, `no_new_privs`, `landlock`, `seccomp` "
		 "(`sluice doctor` shows what this machine has)." },
};
#undef CODE

static const struct sl_conf_section code_section = {
	"sluice.codeMode",
	"Code mode: `execute_code` runs a JavaScript program in a sandboxed worker; these are its "
	"limits (docs/internals/SANDBOX.md).",
	code_keys, SL_COUNT(code_keys), 0, NULL,
};

void sl_code_limits_default(struct sl_code_limits *l)
{
	struct sl_config c = { 0 };
	sl_conf_defaults(&code_section, &c);
	*l = c.code;
}

static int parse_listen(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target)
{
	struct sl_http_config *h = target;
	if (!yyjson_is_str(v) || !strchr(yyjson_get_str(v), ':'))
		return sl_conf_bad(cx, k);
	free(h->listen);
	h->listen = sl_strdup(yyjson_get_str(v));
	return SL_OK;
}

static int parse_bearer(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target)
{
	struct sl_http_config *h = target;
	struct sl_err e;

	if (!yyjson_is_str(v) || !yyjson_get_len(v))
		return sl_conf_bad(cx, k);
	free(h->bearer_token);
	h->bearer_token = sl_config_expand(yyjson_get_str(v), env_getenv, &e);
	if (!h->bearer_token)
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	return SL_OK;
}

char *sl_config_path(const char *config_path, const char *value, struct sl_err *err)
{
	const char *home = getenv("HOME"), *slash;
	char *p = sl_config_expand(value, env_getenv, err), *abs;

	if (!p)
		return NULL;
	if (p[0] == '~' && (p[1] == '/' || p[1] == '\0') && home) {
		abs = sl_printf("%s%s", home, p + 1);
		free(p);
		p = abs;
	}
	if (p[0] == '/')
		return p;
	slash = config_path ? strrchr(config_path, '/') : NULL;
	if (slash) {
		abs = sl_printf("%.*s/%s", (int)(slash - config_path), config_path, p);
	} else {
		char cwd[PATH_MAX];
		abs = sl_printf("%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : ".", p);
	}
	free(p);
	return abs;
}

/* certFile, keyFile: a non-empty path, relative to the config file. */
static int parse_file(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		      void *target)
{
	char **out = sl_conf_field(target, k);
	struct sl_err e;

	if (!yyjson_is_str(v) || !yyjson_get_len(v))
		return sl_conf_bad(cx, k);
	free(*out);
	if (!(*out = sl_config_path(cx->file, yyjson_get_str(v), &e)))
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	return SL_OK;
}

#define TLS(field) SL_CONF_AT(struct sl_tls_config, field)
static const struct sl_conf_key tls_keys[] = {
	{ "certFile", SL_CONF_CUSTOM, TLS(cert_file), .parse = parse_file, .shape = "a path",
	  .dflt_doc = "required",
	  .doc = "PEM: the server's certificate first, then any intermediates (at most 16 "
		 "certificates, 1 MiB). `${VAR}` and a leading `~/` are expanded; a relative path "
		 "is taken from the config file's directory." },
	{ "keyFile", SL_CONF_CUSTOM, TLS(key_file), .parse = parse_file, .shape = "a path",
	  .dflt_doc = "required",
	  .doc = "PEM: the certificate's private key, unencrypted (at most 1 MiB); paths as "
		 "`certFile`. Both files are read again on SIGHUP: a renewed certificate is served "
		 "to new connections, and one that does not load is refused with the old one kept." },
};
#undef TLS

static const struct sl_conf_section tls_section = {
	"sluice.http.tls",
	"HTTPS on the front end (docs/internals/HTTP.md, \"TLS\"). Present, `serve --http` "
	"serves `https://HOST:PORT/mcp` and plain HTTP is not answered on that port.",
	tls_keys, SL_COUNT(tls_keys), SL_CONF_STRICT, NULL,
};

static int parse_tls(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	struct sl_tls_config *t = sl_conf_field(target, k);
	int rc;

	if (!yyjson_is_obj(v))
		return sl_conf_bad(cx, k);
	if ((rc = sl_conf_apply(cx, &tls_section, NULL, v, t)) < 0)
		return rc;
	if (!t->cert_file || !t->key_file)
		return sl_conf_fail(cx, "sluice.http.tls", "needs \"certFile\" and \"keyFile\"");
	return SL_OK;
}

static void strings_free(char **l)
{
	for (size_t i = 0; l && l[i]; i++)
		free(l[i]);
	free(l);
}

void sl_auth_config_dispose(struct sl_auth_config *a)
{
	for (size_t i = 0; i < a->ntokens; i++) {
		free(a->tokens[i].token);
		free(a->tokens[i].subject);
		strings_free(a->tokens[i].groups);
		strings_free(a->tokens[i].scopes);
	}
	free(a->tokens);
	memset(a, 0, sizeof(*a));
}

static int parse_origins(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	struct sl_http_config *h = target;
	yyjson_val *s;
	size_t i, max;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	h->allowed_origins = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(char *));
	yyjson_arr_foreach(v, i, max, s) {
		if (!yyjson_is_str(s))
			return sl_conf_bad(cx, k);
		h->allowed_origins[h->norigins++] = sl_strdup(yyjson_get_str(s));
	}
	return SL_OK;
}

/* A non-empty array of non-empty strings, NULL-terminated, into target. */
static int parse_strings(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	char ***out = sl_conf_field(target, k);
	yyjson_val *s;
	size_t i, max;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	*out = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(char *));
	yyjson_arr_foreach(v, i, max, s) {
		if (!yyjson_is_str(s) || !yyjson_get_len(s))
			return sl_conf_bad(cx, k);
		(*out)[i] = sl_strdup(yyjson_get_str(s));
	}
	return SL_OK;
}

static int parse_secret(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target)
{
	char **out = sl_conf_field(target, k);
	struct sl_err e;

	if (!yyjson_is_str(v) || !yyjson_get_len(v))
		return sl_conf_bad(cx, k);
	free(*out);
	if (!(*out = sl_config_expand(yyjson_get_str(v), env_getenv, &e)))
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	if (!**out)
		return sl_conf_fail_key(cx, k, "is empty once expanded");
	return SL_OK;
}

#define TOK(field) SL_CONF_AT(struct sl_auth_token, field)
static const struct sl_conf_key token_keys[] = {
	{ "token", SL_CONF_CUSTOM, TOK(token), .parse = parse_secret, .shape = "a non-empty string",
	  .dflt_doc = "required",
	  .doc = "The secret, sent as `Authorization: Bearer <token>`; `${VAR}` expanded (keep "
		 "secrets in the environment, not in the file)." },
	{ "subject", SL_CONF_STRING, TOK(subject), .min = 1, .dflt_doc = "required",
	  .doc = "Who holds it: the subject policy rules match and the audit names." },
	{ "groups", SL_CONF_CUSTOM, TOK(groups), .parse = parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[]`",
	  .doc = "Its groups, as policy rules' `groups` match them." },
	{ "scopes", SL_CONF_CUSTOM, TOK(scopes), .parse = parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[]`",
	  .doc = "Its scopes, as policy rules' `scopes` match them." },
};
#undef TOK

static const struct sl_conf_section token_section = {
	"sluice.http.auth.tokens[]",
	"One static token and the identity it stands for.",
	token_keys, SL_COUNT(token_keys), SL_CONF_STRICT, NULL,
};

static int parse_tokens(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target)
{
	struct sl_auth_config *a = target;
	yyjson_val *o;
	size_t i, n;
	int rc;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	a->tokens = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(*a->tokens));
	yyjson_arr_foreach(v, i, n, o) {
		struct sl_auth_token *t = &a->tokens[a->ntokens++];
		char where[64];

		snprintf(where, sizeof(where), "sluice.http.auth.tokens[%zu]", i);
		if ((rc = sl_conf_apply(cx, &token_section, where, o, t)) < 0)
			return rc;
		if (!t->token || !t->subject)
			return sl_conf_fail(cx, where, "needs \"token\" and \"subject\"");
		for (size_t j = 0; j + 1 < a->ntokens; j++)
			if (!strcmp(a->tokens[j].token, t->token))
				return sl_conf_fail(cx, where, "has the same token as tokens[%zu]", j);
	}
	return SL_OK;
}

#define AUTH(field) SL_CONF_AT(struct sl_auth_config, field)
static const struct sl_conf_key auth_keys[] = {
	{ "tokens", SL_CONF_CUSTOM, AUTH(tokens), .parse = parse_tokens, .sub = &token_section,
	  .shape = "an array of tokens", .dflt_doc = "`[]`",
	  .doc = "Static tokens, one per person or agent, each with the identity policy sees "
		 "(`sluice.http.auth.tokens[]` below): a team's keys without an identity provider." },
};
#undef AUTH

static const struct sl_conf_section auth_section = {
	"sluice.http.auth",
	"Who may use the HTTP front end, and as whom (docs/internals/AUTH.md). With any method "
	"here or `bearerToken`, a request without a valid credential gets 401.",
	auth_keys, SL_COUNT(auth_keys), SL_CONF_STRICT, NULL,
};

#define HTTP(field) SL_CONF_AT(struct sl_http_config, field)
static const struct sl_conf_key http_keys[] = {
	{ "listen", SL_CONF_CUSTOM, HTTP(listen), .parse = parse_listen, .shape = "\"host:port\"",
	  .dflt_doc = "none: stdio unless `--http`",
	  .doc = "Where `serve` listens; set, it serves HTTP at `/mcp`." },
	{ "bearerToken", SL_CONF_CUSTOM, HTTP(bearer_token), .parse = parse_bearer,
	  .shape = "a non-empty string", .dflt_doc = "none (loopback only)",
	  .doc = "Every request must carry `Authorization: Bearer <token>`; `${VAR}` expanded." },
	{ "allowedOrigins", SL_CONF_CUSTOM, HTTP(allowed_origins), .parse = parse_origins,
	  .shape = "an array of origins",
	  .dflt_doc = "`http://` on `localhost`, `127.0.0.1` and `[::1]`, any port (and `https://` "
		      "with `tls`)",
	  .doc = "Browser origins accepted in `Origin` (DNS rebinding protection)." },
	{ "maxBodyBytes", SL_CONF_UINT, HTTP(max_body_bytes), .min = 1024, .max = 1u << 30,
	  .dflt = 4u << 20, .doc = "One POST body; over it the answer is 413." },
	{ "maxSessions", SL_CONF_UINT, HTTP(max_sessions), .min = 1, .max = 100000, .dflt = 64,
	  .doc = "Live sessions, a 2026-07-28 request in flight counting as one; one more gets "
		 "503." },
	{ "maxRequestsPerSession", SL_CONF_UINT, HTTP(max_requests), .min = 1, .max = 100000,
	  .dflt = 32, .doc = "Requests in flight in one session, or 2026-07-28 requests in flight "
			     "with one credential (the bearer token; without one, all of them); one "
			     "more gets 429." },
	{ "idleSessionTimeoutMs", SL_CONF_UINT, HTTP(idle_timeout_ms), .min = 100,
	  .max = 7ull * 86400000, .dflt = 30ull * 60 * 1000,
	  .doc = "A session with no request and no open stream ends after this." },
	{ "heartbeatMs", SL_CONF_UINT, HTTP(heartbeat_ms), .min = 100, .max = 3600000, .dflt = 15000,
	  .doc = "An SSE comment on every open stream this often." },
	{ "auth", SL_CONF_OBJECT, HTTP(auth), .sub = &auth_section,
	  .doc = "See `sluice.http.auth` below." },
	{ "tls", SL_CONF_CUSTOM, HTTP(tls), .parse = parse_tls, .sub = &tls_section,
	  .shape = "an object", .dflt_doc = "none: plain HTTP",
	  .doc = "HTTPS: `certFile` and `keyFile` (`sluice.http.tls` below)." },
};
#undef HTTP

#define LIM(field) SL_CONF_AT(struct sl_limits, field)
static const struct sl_conf_key limits_keys[] = {
	{ "maxBufferedBytes", SL_CONF_UINT, LIM(max_buffered_bytes), .min = 1u << 20,
	  .max = 1ull << 40, .dflt = 256u << 20,
	  .doc = "Everything the HTTP transport holds for peers, all sessions together: SSE events "
		 "queued and kept for resumption, backlogs, request bodies. At the bound the session "
		 "holding the most gives up its oldest detached stream's history, then its oldest "
		 "backlog line; then a GET stream whose client is not reading ends, an answer becomes "
		 "a JSON-RPC error naming this key, and new work is refused with 503." },
	{ "maxSessionBytes", SL_CONF_UINT, LIM(max_session_bytes), .min = 64u << 10,
	  .max = 1ull << 40, .dflt = 16u << 20,
	  .doc = "What one session holds (its streams, their histories, its backlog); at the bound "
		 "the same order as `maxBufferedBytes`, within the session." },
	{ "maxRequestsInFlight", SL_CONF_UINT, LIM(max_requests), .min = 1, .max = 1000000,
	  .dflt = 256,
	  .doc = "Requests being answered at once, all sessions, stdio and both HTTP eras together: "
		 "those that wait on a server or a program (`tools/call`, `resources/read`, "
		 "`prompts/get`, `completion/complete`, subscriptions). One more gets JSON-RPC error "
		 "-32000 naming this key; lists and `ping`, answered at once, are never refused." },
	{ "maxConnections", SL_CONF_UINT, LIM(max_connections), .min = 16, .max = 1000000,
	  .dflt = 1024, .doc = "HTTP connections open at once; one more is closed at once (the "
			       "open-file limit is raised to fit, with a warning if it cannot be)." },
	{ "maxPendingConnections", SL_CONF_UINT, LIM(max_pending), .min = 1, .max = 1000000,
	  .dflt = 256,
	  .doc = "HTTP connections whose first request's headers have not all arrived and been "
		 "admitted; over it the oldest of them is closed." },
	{ "maxPendingPerAddress", SL_CONF_UINT, LIM(max_pending_per_ip), .min = 1, .max = 1000000,
	  .dflt = 32,
	  .doc = "Of those, from one client address; over it that address's oldest pending for a "
		 "second or more are closed (other addresses keep theirs)." },
	{ "headerTimeoutMs", SL_CONF_UINT, LIM(header_timeout_ms), .min = 100, .max = 3600000,
	  .dflt = 10000,
	  .doc = "A new connection must deliver its first request's headers whole within this "
		 "long in all (a peer trickling bytes gains nothing)." },
	{ "idleConnectionTimeoutMs", SL_CONF_UINT, LIM(idle_timeout_ms), .min = 1000,
	  .max = 86400000, .dflt = 120000,
	  .doc = "A kept-alive connection waits at most this long in all for its next request's "
		 "headers, and a request stalled this long (no byte either way) is closed; a stream "
		 "waiting for its next event is not." },
	{ "serverRequestsPerCall", SL_CONF_UINT, LIM(server_requests_per_call), .min = 0,
	  .max = 100000, .dflt = 16,
	  .doc = "Sampling and elicitation requests relayed to the client during one client "
		 "request (a tool call, or a whole `execute_code` program); the excess is refused to "
		 "the server with JSON-RPC error -32000 naming this key, logged once per call. `0` "
		 "relays none." },
	{ "serverRequestsPerMinute", SL_CONF_UINT, LIM(server_requests_per_minute), .min = 0,
	  .max = 1000000, .dflt = 60,
	  .doc = "The same, per server and minute (a fixed window, opened by the first request "
		 "after the last one closed); refused the same way, logged once per window." },
	{ "notificationsPerSecond", SL_CONF_UINT, LIM(notifications_per_second), .min = 1,
	  .max = 1000000, .dflt = 100,
	  .doc = "Notifications from one server (log messages, progress, list changes, resource "
		 "updates) per second (a fixed window); the excess is dropped, and one log line at the "
		 "end of the second says how many." },
	{ "tasksPerSession", SL_CONF_UINT, LIM(tasks_per_session), .min = 1, .max = 100000,
	  .dflt = 32,
	  .doc = "Tasks (MCP 2025-11-25 task-augmented `tools/call`) one client session holds: a "
		 "new task beyond it is refused with JSON-RPC error -32000 naming this key, after the "
		 "session's oldest finished task was dropped to make room. An entry goes when its "
		 "result was fetched, its session ends, or `taskTtlMs` passed (docs/internals/TASKS.md)." },
	{ "maxTasks", SL_CONF_UINT, LIM(max_tasks), .min = 1, .max = 1000000, .dflt = 1024,
	  .doc = "Tasks held for all sessions together; refused the same way." },
	{ "taskTtlMs", SL_CONF_UINT, LIM(task_ttl_ms), .min = 1000, .max = 604800000,
	  .dflt = 3600000,
	  .doc = "The longest sluice keeps a task (the server's own `ttl` when shorter): after it, "
		 "the task id is unknown to the client." },
	{ "maxParkedCalls", SL_CONF_UINT, LIM(max_parked), .min = 0, .max = 1000000, .dflt = 256,
	  .doc = "Tool calls of 2026-07-28 clients parked at once, all clients: their server asked "
		 "for sampling, elicitation or roots, the client got `input_required`, and the call "
		 "waits for the client's retry. One more: the server's request is refused with "
		 "JSON-RPC error -32000 naming this key. `0` parks none." },
	{ "maxParkedCallsPerClient", SL_CONF_UINT, LIM(max_parked_per_client), .min = 0,
	  .max = 1000000, .dflt = 16,
	  .doc = "Of those, one client's (one bearer token; over stdio, or HTTP without a token, "
		 "all requests are one client); refused the same way." },
	{ "parkTimeoutMs", SL_CONF_UINT, LIM(park_timeout_ms), .min = 100, .max = 3600000,
	  .dflt = 60000,
	  .doc = "How long a parked call waits for the client's retry; then the server's questions "
		 "are refused, its call is cancelled (`notifications/cancelled`) and the parked state "
		 "freed: a retry after it gets an error. The call's own timeout keeps running while "
		 "it is parked." },
	{ "maxInputRounds", SL_CONF_UINT, LIM(max_input_rounds), .min = 1, .max = 1000, .dflt = 8,
	  .doc = "`input_required` answers one tool call of a 2026-07-28 client may get for its "
		 "server's questions; a question after the last is refused to the server with "
		 "JSON-RPC error -32000 naming this key." },
	{ "maxListens", SL_CONF_UINT, LIM(max_listens), .min = 0, .max = 100000, .dflt = 256,
	  .doc = "`subscriptions/listen` streams of 2026-07-28 clients open at once, stdio and "
		 "HTTP together; one more gets JSON-RPC error -32000 naming this key before its "
		 "acknowledgement. `0` refuses every listen." },
	{ "maxListensPerSession", SL_CONF_UINT, LIM(max_listens_per_session), .min = 1,
	  .max = 100000, .dflt = 16,
	  .doc = "Of those, per stdio client, and over HTTP per credential (the bearer token; "
		 "without one configured, all clients together); refused the same way (HTTP 429). "
		 "A listen does not count as a request in flight." },
	{ "maxListenUris", SL_CONF_UINT, LIM(max_listen_uris), .min = 0, .max = 100000,
	  .dflt = 64,
	  .doc = "Resource URIs in one listen's `resourceSubscriptions`; more is refused with "
		 "JSON-RPC error -32602 naming this key." },
};
#undef LIM

static const struct sl_conf_section limits_section = {
	"sluice.limits",
	"Bounds on what the gateway holds and runs on behalf of peers (docs/RELIABILITY.md, "
	"\"Bounds\"): no peer, with or without a credential, can make it use more.",
	limits_keys, SL_COUNT(limits_keys), 0, NULL,
};

static const struct sl_conf_section http_section = {
	"sluice.http",
	"The Streamable HTTP front end (`serve --http`; docs/internals/HTTP.md).",
	http_keys, SL_COUNT(http_keys), 0, NULL,
};

/* A stage's own section: the stage reads it at start. */
static int stage_section(struct sl_conf_ctx *cx, const char *key, yyjson_val *v, void *target)
{
	if (!sl_stages_section(key))
		return SL_CONF_DECLINED;
	if (!yyjson_is_obj(v))
		return sl_conf_fail(cx, key, "a stage's section must be an object");
	return SL_OK;
}

static const struct sl_conf_name exposures[] = {
	{ "passthrough", SL_EXPOSE_PASSTHROUGH },
	{ "router", SL_EXPOSE_ROUTER },
	{ "hybrid", SL_EXPOSE_HYBRID },
	{ "code", SL_EXPOSE_CODE },
	{ NULL, 0 },
};

static const struct sl_conf_name log_levels[] = {
	{ "error", SL_LOG_ERROR },
	{ "warn", SL_LOG_WARN },
	{ "info", SL_LOG_INFO },
	{ "debug", SL_LOG_DEBUG },
	{ NULL, 0 },
};

#define GW(field) SL_CONF_AT(struct sl_config, field)
static const struct sl_conf_key gateway_keys[] = {
	{ "exposure", SL_CONF_ENUM, GW(exposure), .names = exposures, .dflt = SL_EXPOSE_PASSTHROUGH,
	  .doc = "What `tools/list` shows (README.md, \"Exposure modes\"); `--exposure` overrides it." },
	{ "logLevel", SL_CONF_ENUM, GW(log_level), .names = log_levels, .dflt = SL_LOG_INFO,
	  .doc = "`--log-level` overrides it. It governs libmicrohttpd's messages too (logged at warn)." },
	{ "logFile", SL_CONF_STRING, GW(log_file), .shape = "a path", .dflt_doc = "stderr",
	  .doc = "Where logs go (stdout carries only MCP messages)." },
	{ "callTimeoutMs", SL_CONF_UINT, GW(call_timeout_ms), .min = 1, .max = 86400000,
	  .dflt = 60000, .doc = "One tool call, unless its server sets `timeout`." },
	{ "startupTimeoutMs", SL_CONF_UINT, GW(startup_timeout_ms), .min = 1, .max = 3600000,
	  .dflt = 30000, .doc = "How long requests that need the catalog wait for every server's "
				"first handshake." },
	{ "restartMaxBackoffMs", SL_CONF_UINT, GW(restart_max_backoff_ms), .min = 1, .max = 3600000,
	  .dflt = 30000, .doc = "The longest wait between restarts of a failed server." },
	{ "maxRequestBytes", SL_CONF_UINT, GW(max_request_bytes), .min = 1024, .max = 1u << 30,
	  .dflt = 4u << 20, .doc = "One client message." },
	{ "maxUpstreamMessageBytes", SL_CONF_UINT, GW(max_upstream_message_bytes), .min = 1024,
	  .max = 1u << 30, .dflt = 32u << 20, .doc = "One upstream message." },
	{ "maxToolsPerServer", SL_CONF_UINT, GW(max_tools), .min = 1, .max = 100000, .dflt = 2000,
	  .doc = "Tools taken from one server's list." },
	{ "codeMode", SL_CONF_OBJECT, .offset = 0, .size = sizeof(struct sl_config),
	  .sub = &code_section, .doc = "See `sluice.codeMode` below." },
	{ "http", SL_CONF_OBJECT, GW(http), .sub = &http_section, .doc = "See `sluice.http` below." },
	{ "limits", SL_CONF_OBJECT, GW(limits), .sub = &limits_section,
	  .doc = "See `sluice.limits` below." },
};

static const struct sl_conf_section gateway_section = {
	"sluice",
	"The gateway's own settings. Each pipeline stage applies its own section (`sluice.policy`, "
	"`sluice.pinning`, `sluice.governor`, ...: docs/stages/) when it starts; they are listed "
	"after `sluice.limits`.",
	gateway_keys, SL_COUNT(gateway_keys), 0, stage_section,
};

static int parse_servers(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	struct sl_config *c = target;
	yyjson_obj_iter it;
	yyjson_val *sk;
	int rc = SL_OK;

	if (c->servers)
		return sl_conf_fail(cx, k->key, "use either \"mcpServers\" or \"servers\", not both");
	if (!yyjson_is_obj(v))
		return sl_conf_fail(cx, k->key, "must be an object of servers");
	c->servers = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*c->servers));
	yyjson_obj_iter_init(v, &it);
	while (rc == SL_OK && (sk = yyjson_obj_iter_next(&it))) {
		rc = parse_server(cx, k->key, yyjson_get_str(sk), yyjson_obj_iter_get_val(sk),
				  &c->servers[c->nservers]);
		c->nservers++;
	}
	return rc;
}

static const struct sl_conf_key root_keys[] = {
	{ "mcpServers", SL_CONF_CUSTOM, GW(servers), .parse = parse_servers,
	  .shape = "an object of servers", .dflt_doc = "required (or `servers`)",
	  .doc = "The servers to aggregate, as Claude Desktop, Cursor and Claude Code write them "
		 "(`mcpServers.<name>` below)." },
	{ "servers", SL_CONF_CUSTOM, GW(servers), .parse = parse_servers,
	  .shape = "an object of servers", .doc = "VS Code's spelling of `mcpServers` (not both)." },
	{ "sluice", SL_CONF_OBJECT, .offset = 0, .size = sizeof(struct sl_config),
	  .sub = &gateway_section, .doc = "The gateway (`sluice` below)." },
};
#undef GW

static const struct sl_conf_section root_section = {
	"top level",
	"The file is JSON; comments and trailing commas are accepted. Unknown keys are warnings "
	"naming the key; a key given twice is an error.",
	root_keys, SL_COUNT(root_keys), 0, NULL,
};

void sl_config_reference(FILE *f)
{
	static const struct sl_conf_section *const sections[] = {
		&root_section, &server_section, &gateway_section, &code_section, &http_section,
		&auth_section, &token_section, &tls_section, &limits_section,
	};
	fprintf(f, "# Configuration reference\n\n"
		"Generated by `sluice config-reference` from the key tables in src/config/config.c "
		"and in the stages (src/stages/, in the order of the stage table) (`make docs`); a "
		"unit test fails when this file and the tables differ.\n\n");
	for (size_t i = 0; i < SL_COUNT(sections); i++)
		sl_conf_reference(f, sections[i]);
	for (size_t i = 0; i < sl_nstages; i++) {
		const struct sl_conf_section *s = sl_stages[i]->conf;
		if (!s)
			continue;
		sl_conf_reference(f, s);
		for (size_t k = 0; k < s->nkeys; k++)
			if (s->keys[k].sub)
				sl_conf_reference(f, s->keys[k].sub);
	}
}

int sl_config_parse(const char *path, const char *text, size_t len,
		    struct sl_config **out, struct sl_err *err)
{
	struct sl_config *c = sl_alloc(sizeof(*c));
	struct parser p = { .cx = { .file = path, .err = err, .warn = on_warn }, .c = c };
	yyjson_read_err rerr;
	yyjson_doc *doc;
	yyjson_val *root;
	int rc = SL_OK;

	c->path = sl_strdup(path);
	sl_conf_defaults(&root_section, c);
	doc = sl_json_read(text, len, YYJSON_READ_ALLOW_COMMENTS | YYJSON_READ_ALLOW_TRAILING_COMMAS,
			   &rerr);
	if (!doc && rerr.code == SL_JSON_READ_ERROR_DEPTH) {
		sl_err_set(err, "%s: %s", path, rerr.msg);
		rc = SL_ERR_INVALID;
		goto out;
	}
	if (!doc) {
		size_t line, col;
		sl_json_position(text, len, rerr.pos, &line, &col);
		sl_err_set(err, "%s:%zu:%zu: invalid JSON: %s", path, line, col, rerr.msg);
		rc = SL_ERR_INVALID;
		goto out;
	}
	root = yyjson_doc_get_root(doc);
	if (!yyjson_is_obj(root)) {
		rc = sl_conf_fail(&p.cx, "top level", "the config must be a JSON object");
		goto out;
	}
	rc = sl_conf_apply(&p.cx, &root_section, NULL, root, c);
	c->sluice = yyjson_obj_get(root, "sluice");
	if (c->exposure == SL_EXPOSE_CODE)
		c->code_enabled = true;
	if (rc == SL_OK && !c->servers)
		rc = sl_conf_fail(&p.cx, "top level", "no \"mcpServers\" object: nothing to serve");
	for (size_t i = 0; rc == SL_OK && i < c->nservers; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->servers[i].name, c->servers[j].name) == 0)
				rc = sl_conf_fail(&p.cx, c->servers[i].name, "duplicate server name");
out:
	c->doc = doc;
	if (rc != SL_OK) {
		sl_config_unref(c);
		return rc;
	}
	*out = c;
	return SL_OK;
}

int sl_config_load(const char *path, struct sl_config **out, struct sl_err *err)
{
	FILE *f = fopen(path, "rbe");
	struct stat st;
	char *text;
	size_t n;
	int rc;

	if (!f) {
		sl_err_set(err, "%s: cannot open: %s", path, strerror(errno));
		return SL_ERR_IO;
	}
	if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		sl_err_set(err, "%s: not a regular file", path);
		return SL_ERR_IO;
	}
	if ((size_t)st.st_size > CONFIG_MAX_BYTES) {
		fclose(f);
		sl_err_set(err, "%s: larger than %u bytes", path, CONFIG_MAX_BYTES);
		return SL_ERR_TOO_LARGE;
	}
	text = sl_alloc((size_t)st.st_size + 1);
	n = fread(text, 1, (size_t)st.st_size, f);
	fclose(f);
	rc = sl_config_parse(path, text, n, out, err);
	free(text);
	return rc;
}

static void server_dispose(struct sl_server_config *s)
{
	free(s->name);
	free(s->command);
	for (size_t i = 0; s->args && i < s->nargs; i++)
		free(s->args[i]);
	free(s->args);
	for (size_t i = 0; s->env && i < s->nenv; i++) {
		free(s->env[i].key);
		free(s->env[i].value);
	}
	free(s->env);
	free(s->cwd);
	free(s->url);
	for (size_t i = 0; i < s->nheaders; i++) {
		free(s->headers[i].key);
		free(s->headers[i].value);
	}
	free(s->headers);
	free(s->error);
}

/* The count is the one field that changes in an immutable config. */
const struct sl_config *sl_config_ref(const struct sl_config *c)
{
	((struct sl_config *)c)->refs++;
	return c;
}

void sl_config_unref(const struct sl_config *cc)
{
	struct sl_config *c = (struct sl_config *)cc;
	if (!c || c->refs-- > 0)
		return;
	for (size_t i = 0; i < c->nservers; i++)
		server_dispose(&c->servers[i]);
	free(c->servers);
	for (size_t i = 0; i < c->nwarnings; i++)
		free(c->warnings[i]);
	free(c->warnings);
	free(c->log_file);
	free(c->path);
	free(c->http.listen);
	free(c->http.bearer_token);
	for (size_t i = 0; i < c->http.norigins; i++)
		free(c->http.allowed_origins[i]);
	free(c->http.allowed_origins);
	sl_auth_config_dispose(&c->http.auth);
	free(c->http.tls.cert_file);
	free(c->http.tls.key_file);
	yyjson_doc_free(c->doc);
	free(c);
}


const char *sl_exposure_name(enum sl_exposure e)
{
	return (size_t)e < SL_COUNT(exposures) - 1 ? exposures[e].name : "?";
}

/* What a child may inherit from the gateway: enough to find programs, run an
 * interpreter, reach a proxy and verify TLS; never secrets the gateway holds. */
static bool inherited(const char *kv)
{
	static const char *names[] = {
		"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
		"http_proxy", "https_proxy", "no_proxy", "all_proxy",
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
		"CURL_CA_BUNDLE",
	};
	const char *eq = strchr(kv, '=');
	size_t n = eq ? (size_t)(eq - kv) : strlen(kv);
	if (n > 3 && memcmp(kv, "LC_", 3) == 0)
		return true;
	for (size_t i = 0; i < SL_COUNT(names); i++)
		if (strlen(names[i]) == n && memcmp(kv, names[i], n) == 0)
			return true;
	return false;
}

char **sl_config_child_env(const struct sl_server_config *s, char *const *envp)
{
	size_t n = 0, cap = s->nenv + 1;
	char **env;

	for (char *const *e = envp; e && *e; e++)
		cap++;
	env = sl_alloc(cap * sizeof(char *));
	for (char *const *e = envp; e && *e; e++) {
		bool overridden = false;
		if (!inherited(*e))
			continue;
		for (size_t i = 0; i < s->nenv; i++) {
			size_t kl = strlen(s->env[i].key);
			if (strncmp(*e, s->env[i].key, kl) == 0 && (*e)[kl] == '=')
				overridden = true;
		}
		if (!overridden)
			env[n++] = sl_strdup(*e);
	}
	for (size_t i = 0; i < s->nenv; i++)
		env[n++] = sl_printf("%s=%s", s->env[i].key, s->env[i].value);
	env[n] = NULL;
	return env;
}

void sl_config_env_free(char **env)
{
	for (char **e = env; e && *e; e++)
		free(*e);
	free(env);
}

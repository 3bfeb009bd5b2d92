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
#include "core/glob.h"
#include "core/json.h"
#include "core/log.h"

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

static const struct sl_conf_section server_oauth_section;

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
	{ "oauth", SL_CONF_OBJECT, SRV(oauth), .sub = &server_oauth_section,
	  .dflt_doc = "discovered from a 401",
	  .doc = "Remote servers: how sluice gets its tokens (`mcpServers.<name>.oauth` below; "
		 "`sluice auth login NAME`). Not needed for a server that asks: a 401 with a Bearer "
		 "challenge is enough." },
};
#undef SRV

static const struct sl_conf_section server_section = {
	"mcpServers.<name>",
	"One server entry (VS Code's `servers.<name>` is the same). Names are 1-64 characters of "
	"`A-Z a-z 0-9 _ - .`. An unset `${VAR}` fails that server alone, with a message naming the "
	"variable.",
	server_keys, SL_COUNT(server_keys), SL_CONF_KEY_FIRST, NULL,
};

/* oauth.privateKeyFile with what it goes with. The key itself is read by
 * the OAuth module (sl_oauth_keys_load) where the config is loaded. */
static int server_key(struct sl_conf_ctx *cx, const char *where, struct sl_server_oauth *o)
{
	if (!o->private_key_file) {
		if (o->signing_alg != SL_OAUTH_ALG_AUTO)
			return sl_conf_fail(cx, where, "\"oauth\": \"signingAlg\" needs \"privateKeyFile\"");
		return SL_OK;
	}
	if (!o->client_id)
		return sl_conf_fail(cx, where, "\"oauth\": \"privateKeyFile\" needs \"clientId\" (the "
					       "client the authorization server holds the public key for)");
	if (o->client_secret)
		return sl_conf_fail(cx, where, "\"oauth\": \"privateKeyFile\" and \"clientSecret\" are "
					       "two ways to authenticate the client: set one");
	return SL_OK;
}

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
	if ((s->oauth.given = yyjson_obj_get(o, "oauth") != NULL) && !yyjson_obj_get(o, "url"))
		return sl_conf_fail(cx, where, "\"oauth\" is for remote servers (with a \"url\")");
	if ((rc = server_key(cx, where, &s->oauth)) < 0)
		return rc;
	if (s->oauth.grant == SL_GRANT_CLIENT_CREDENTIALS &&
	    (!s->oauth.client_id || (!s->oauth.client_secret && !s->oauth.private_key_file)))
		return sl_conf_fail(cx, where, "\"oauth\": \"grant\": \"client_credentials\" needs "
					       "\"clientId\" and \"clientSecret\" (or \"privateKeyFile\")");
	if (s->oauth.per_user && s->oauth.grant == SL_GRANT_CLIENT_CREDENTIALS)
		return sl_conf_fail(cx, where, "\"oauth\": \"perUser\" needs a person's login: it "
					       "does not go with \"grant\": \"client_credentials\"");
	if (s->oauth.token_exchange && !s->oauth.per_user)
		return sl_conf_fail(cx, where, "\"oauth\": \"tokenExchange\" needs \"perUser\": true "
					       "(it exchanges each caller's own token)");
	if (s->oauth.token_exchange && (!s->oauth.client_id ||
					(!s->oauth.client_secret && !s->oauth.private_key_file)))
		return sl_conf_fail(cx, where, "\"oauth\": \"tokenExchange\" needs \"clientId\" and "
					       "\"clientSecret\" (or \"privateKeyFile\"): a client "
					       "registered beforehand");
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
		unsigned bit = yyjson_is_str(b) ? sl_config_modules.boundary(yyjson_get_str(b)) : 0;
		if (!bit)
			return sl_conf_fail_key(cx, k, "names are userns, pidns, netns, ipcns, mountns, "
						"rlimits, no_new_privs, landlock, seccomp");
		c->code_require |= bit;
	}
	return SL_OK;
}

#define CODE(field) SL_CONF_AT(struct sl_config, field)
static const struct sl_conf_key code_keys[] = {
	{ "enabled", SL_CONF_BOOL, CODE(code_offered),
	  .doc = "Offers `execute_code` in every exposure mode and profile (always on in "
		 "`\"code\"`)." },
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
	"Code mode: `execute_code` runs a JavaScript or TypeScript program in a sandboxed worker; "
	"these are its limits (docs/internals/SANDBOX.md).",
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
	free(a->resource);
	free(a->resource_name);
	strings_free(a->authorization_servers);
	free(a->jwks_uri);
	strings_free(a->audiences);
	strings_free(a->algorithms);
	strings_free(a->token_types);
	strings_free(a->scopes_supported);
	strings_free(a->required_scopes);
	strings_free(a->groups_claims);
	free(a->introspection.endpoint);
	free(a->introspection.client_id);
	free(a->introspection.client_secret);
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

/* sluice.shared.secret and sluice.http.adminToken: long enough to key an
 * HMAC with (RFC 2104 wants at least the hash's length) or to resist
 * guessing; never echoed in an error. */
#define SECRET_MIN 32
static int parse_long_secret(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			     void *target)
{
	char **out = sl_conf_field(target, k);
	int rc = parse_secret(cx, k, v, target);

	if (rc < 0)
		return rc;
	if (strlen(*out) < SECRET_MIN) {
		free(*out);
		*out = NULL;
		return sl_conf_fail_key(cx, k, "is shorter than %d characters once expanded",
					SECRET_MIN);
	}
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

/* The JWS algorithms sluice can verify (libcjose 0.6): asymmetric only.
 * HS* would let anyone holding the key set sign (a public key used as an
 * HMAC secret), and "none" signs nothing: both are refused by name. */
static const char *const jws_algorithms[] = {
	"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
};

static int parse_algorithms(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			    void *target)
{
	char ***out = sl_conf_field(target, k);
	int rc;

	if ((rc = parse_strings(cx, k, v, target)) < 0)
		return rc;
	if (!**out)
		return sl_conf_fail_key(cx, k, "is empty: no token could be accepted");
	for (size_t i = 0; (*out)[i]; i++) {
		const char *a = (*out)[i];
		bool known = false;
		if (!strcasecmp(a, "none") || !strncasecmp(a, "HS", 2))
			return sl_conf_fail_key(cx, k, "\"%s\" is never accepted: an access token must "
						"be signed with the authorization server's private key", a);
		if (!strcmp(a, "EdDSA"))
			return sl_conf_fail_key(cx, k, "\"EdDSA\" is not supported by the JOSE library "
						"sluice uses (libcjose 0.6)");
		for (size_t j = 0; j < SL_COUNT(jws_algorithms); j++)
			known |= !strcmp(a, jws_algorithms[j]);
		if (!known)
			return sl_conf_fail_key(cx, k, "\"%s\" is not one of RS256, RS384, RS512, "
						"PS256, PS384, PS512, ES256, ES384, ES512", a);
	}
	return SL_OK;
}

/* An absolute http(s) URL without a fragment; plain http only to a
 * loopback host (OAuth 2.1 §1.5: every endpoint but loopback is HTTPS). */
static const char *url_problem(const char *u)
{
	const char *host;
	size_t hl;

	if (!strncmp(u, "https://", 8))
		host = u + 8;
	else if (!strncmp(u, "http://", 7))
		host = u + 7;
	else
		return "must be an absolute https:// URL";
	if (strchr(u, '#'))
		return "must not have a fragment";
	hl = strcspn(host, "/:?");
	if (!hl)
		return "has no host";
	if (u[4] == ':' && !((hl == 9 && !strncmp(host, "127.0.0.1", 9)) ||
			     (hl == 9 && !strncmp(host, "localhost", 9)) ||
			     !strncmp(host, "[::1]", 5)))
		return "must be https:// (plain http only to a loopback host)";
	return NULL;
}

static int parse_oauth_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	char **out = sl_conf_field(target, k);
	const char *why;

	if (!yyjson_is_str(v))
		return sl_conf_bad(cx, k);
	if ((why = url_problem(yyjson_get_str(v))))
		return sl_conf_fail_key(cx, k, "%s", why);
	free(*out);
	*out = sl_strdup(yyjson_get_str(v));
	return SL_OK;
}

/* sluice.http.publicUrl: an absolute URL without query or fragment; its
 * trailing slashes go, so "<publicUrl>/oauth/callback" has one. */
static int parse_public_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			    void *target)
{
	char **out = sl_conf_field(target, k);
	const char *why, *u;
	size_t n;

	if (!yyjson_is_str(v))
		return sl_conf_bad(cx, k);
	u = yyjson_get_str(v);
	if ((why = url_problem(u)))
		return sl_conf_fail_key(cx, k, "%s", why);
	if (strchr(u, '?'))
		return sl_conf_fail_key(cx, k, "must not have a query");
	n = strlen(u);
	while (n && u[n - 1] == '/')
		n--;
	free(*out);
	*out = sl_strndup(u, n);
	return SL_OK;
}

/* The origin of an absolute URL (scheme://authority), malloc'd. */
static char *url_origin(const char *u)
{
	const char *host = strstr(u, "://");

	host = host ? host + 3 : u;
	return sl_strndup(u, (size_t)(host - u) + strcspn(host, "/?#"));
}

static int parse_oauth_urls(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		      void *target)
{
	char ***out = sl_conf_field(target, k);
	const char *why;
	int rc;

	if ((rc = parse_strings(cx, k, v, target)) < 0)
		return rc;
	for (size_t i = 0; (*out)[i]; i++)
		if ((why = url_problem((*out)[i])))
			return sl_conf_fail_key(cx, k, "\"%s\" %s", (*out)[i], why);
	return SL_OK;
}

static const struct sl_conf_name grants[] = {
	{ "authorization_code", SL_GRANT_AUTHORIZATION_CODE },
	{ "client_credentials", SL_GRANT_CLIENT_CREDENTIALS },
	{ NULL, 0 },
};

static const struct sl_conf_name sign_algs[] = {
	{ "ES256", SL_OAUTH_ALG_ES256 },
	{ "RS256", SL_OAUTH_ALG_RS256 },
	{ NULL, 0 },
};

#define SOA(field) SL_CONF_AT(struct sl_server_oauth, field)
static const struct sl_conf_key server_oauth_keys[] = {
	{ "grant", SL_CONF_ENUM, SOA(grant), .names = grants,
	  .shape = "\"authorization_code\" or \"client_credentials\"",
	  .dflt_doc = "`\"authorization_code\"`",
	  .doc = "`\"authorization_code\"`: a person logs in (`sluice auth login NAME`); "
		 "`\"client_credentials\"`: sluice gets its own tokens with `clientId` and "
		 "`clientSecret` (or `privateKeyFile`), no person involved." },
	{ "clientId", SL_CONF_STRING, SOA(client_id), .min = 1, .dflt_doc = "registered by sluice",
	  .doc = "A client registered beforehand at the server's authorization server. Without it "
		 "sluice uses its Client ID Metadata Document where the authorization server accepts "
		 "them, else registers itself (RFC 7591)." },
	{ "clientSecret", SL_CONF_CUSTOM, SOA(client_secret), .parse = parse_secret,
	  .shape = "a non-empty string", .dflt_doc = "none: a public client",
	  .doc = "Its secret; `${VAR}` expanded." },
	{ "clientMetadataUrl", SL_CONF_CUSTOM, SOA(client_metadata_url), .parse = parse_oauth_url,
	  .shape = "an https:// URL", .dflt_doc = "`sluice.oauth.clientMetadataUrl`",
	  .doc = "A Client ID Metadata Document to use as the client id at this server." },
	{ "scope", SL_CONF_STRING, SOA(scope), .min = 1, .dflt_doc = "what the server asks for",
	  .doc = "Scopes asked for besides those the server's challenge or metadata name "
		 "(space-separated)." },
	{ "privateKeyFile", SL_CONF_CUSTOM, SOA(private_key_file), .parse = parse_file,
	  .shape = "a path", .dflt_doc = "none",
	  .doc = "`private_key_jwt` (RFC 7523): instead of `clientSecret`, sluice signs a short-lived "
		 "assertion with this PEM private key (unencrypted; EC P-256 or RSA of 2048 bits or "
		 "more) for every token request, the authorization server holding the public key "
		 "for `clientId`. Read at load and on reload; a file that does not load, or that "
		 "every user may read, fails the config. `${VAR}` and `~/` are expanded; a relative "
		 "path is taken from the config file's directory." },
	{ "signingAlg", SL_CONF_ENUM, SOA(signing_alg), .names = sign_algs,
	  .shape = "\"ES256\" or \"RS256\"", .dflt_doc = "from the key",
	  .doc = "The assertion's algorithm: `ES256` for an EC P-256 key, `RS256` for an RSA key." },
	{ "perUser", SL_CONF_BOOL, SOA(per_user), .dflt_doc = "`false`: every caller is served "
	  "with the gateway's own login",
	  .doc = "On a shared gateway (`sluice.http.auth`), each authenticated caller reaches this "
		 "server with tokens of its own, from its own login through the gateway (the link "
		 "to it arrives as a URL-mode elicitation, or in the error), on a link of its own. "
		 "A caller with no identity (stdio, or an HTTP face without authentication) uses "
		 "the gateway's own login. docs/internals/AUTH.md, \"Per-user delegation\"." },
	{ "tokenExchange", SL_CONF_BOOL, SOA(token_exchange), .dflt_doc = "`false`",
	  .doc = "With `perUser`: a caller authenticated by a JWT or by introspection gets its "
		 "token for this server by OAuth 2.0 Token Exchange (RFC 8693) of the access token "
		 "it presented to sluice, with no login. Needs `clientId` and `clientSecret` (or "
		 "`privateKeyFile`). Where the authorization server refuses, or the caller used a "
		 "static token, the caller logs in through the gateway as without it. "
		 "docs/internals/AUTH.md, \"Token exchange\"." },
};
#undef SOA

static const struct sl_conf_section server_oauth_section = {
	"mcpServers.<name>.oauth",
	"How sluice gets tokens for a remote server that requires OAuth (docs/internals/AUTH.md, "
	"\"Toward upstreams\"). Tokens are kept per server URL under the XDG state directory "
	"(`sluice auth status`).",
	server_oauth_keys, SL_COUNT(server_oauth_keys), SL_CONF_STRICT, NULL,
};

#define OAC(field) SL_CONF_AT(struct sl_oauth_config, field)
static const struct sl_conf_key oauth_client_keys[] = {
	{ "clientMetadataUrl", SL_CONF_CUSTOM, OAC(client_metadata_url), .parse = parse_oauth_url,
	  .shape = "an https:// URL", .dflt_doc = "none",
	  .doc = "Where sluice's Client ID Metadata Document is served (a URL you host): used as "
		 "the client id at authorization servers that support them, instead of registering." },
	{ "clientName", SL_CONF_STRING, OAC(client_name), .min = 1, .dflt_doc = "`\"sluice\"`",
	  .doc = "The name sluice registers under (shown on consent screens)." },
	{ "keyFile", SL_CONF_CUSTOM, OAC(key_file), .parse = parse_expanded, .shape = "a path",
	  .dflt_doc = "`SLUICE_TOKEN_KEY`, else none",
	  .doc = "Encrypts the stored tokens (AES-256-GCM) with a key read from this file; the "
		 "environment variable `SLUICE_TOKEN_KEY` does the same. Without either, tokens are "
		 "kept in files only their owner can read (0600)." },
	{ "refreshBeforeSeconds", SL_CONF_UINT, OAC(refresh_before_s), .min = 0, .max = 86400,
	  .dflt = 60, .doc = "A token this close to its expiry is refreshed before it is sent." },
	{ "maxHeldRequests", SL_CONF_UINT, OAC(max_held), .min = 1, .max = 100000, .dflt = 256,
	  .doc = "Requests to one server held while its token is refreshed; one more fails." },
	{ "maxUsers", SL_CONF_UINT, OAC(max_users), .min = 1, .max = 100000, .dflt = 1000,
	  .doc = "Callers with a link of their own to one `perUser` server; one more is refused "
		 "until the next config reload or restart. Each costs about 6 KiB while its link "
		 "is closed." },
	{ "userIdleSeconds", SL_CONF_UINT, OAC(user_idle_s), .min = 10, .max = 86400, .dflt = 300,
	  .doc = "A caller's own link to a `perUser` server unused this long is closed; the next "
		 "call opens it again." },
};
#undef OAC

static const struct sl_conf_section oauth_client_section = {
	"sluice.oauth",
	"sluice as an OAuth 2.1 client of the remote servers it calls (docs/internals/AUTH.md, "
	"\"Toward upstreams\").",
	oauth_client_keys, SL_COUNT(oauth_client_keys), SL_CONF_STRICT, NULL,
};

#define JWKS(field) SL_CONF_AT(struct sl_jwks_config, field)
static const struct sl_conf_key jwks_keys[] = {
	{ "minRefreshSeconds", SL_CONF_UINT, JWKS(min_refresh_s), .min = 1, .max = 3600, .dflt = 30,
	  .doc = "One issuer's key set is fetched at most once this often: a token naming an "
		 "unknown key (`kid`) fetches it again only then, so a flood of made-up key ids "
		 "costs one request to the authorization server per interval, and each such token "
		 "gets 401." },
	{ "maxAgeSeconds", SL_CONF_UINT, JWKS(max_age_s), .min = 60, .max = 7 * 86400, .dflt = 3600,
	  .doc = "Keys older than this are fetched again on their next use (removed keys stop "
		 "being accepted); the old set serves until the new one arrives." },
	{ "maxKeys", SL_CONF_UINT, JWKS(max_keys), .min = 1, .max = 256, .dflt = 32,
	  .doc = "Signing keys kept per issuer; a key set with more keeps its first ones." },
};
#undef JWKS

static const struct sl_conf_section jwks_section = {
	"sluice.http.auth.jwks",
	"The authorization servers' signing keys (JWKS), fetched from `jwksUri` or from the "
	"`jwks_uri` of the issuer's metadata.",
	jwks_keys, SL_COUNT(jwks_keys), SL_CONF_STRICT, NULL,
};

#define INTRO(field) SL_CONF_AT(struct sl_introspection_config, field)
static const struct sl_conf_key introspection_keys[] = {
	{ "endpoint", SL_CONF_CUSTOM, INTRO(endpoint), .parse = parse_oauth_url, .shape = "a URL",
	  .dflt_doc = "none: opaque tokens are refused",
	  .doc = "The authorization server's RFC 7662 introspection endpoint, asked about every "
		 "token that is not a JWT." },
	{ "clientId", SL_CONF_STRING, INTRO(client_id), .min = 1, .dflt_doc = "required with `endpoint`",
	  .doc = "sluice's client id at the authorization server (HTTP Basic authentication)." },
	{ "clientSecret", SL_CONF_CUSTOM, INTRO(client_secret), .parse = parse_secret,
	  .shape = "a non-empty string", .dflt_doc = "required with `endpoint`",
	  .doc = "Its secret; `${VAR}` expanded." },
	{ "cacheSeconds", SL_CONF_UINT, INTRO(cache_s), .min = 1, .max = 3600, .dflt = 60,
	  .doc = "An answer (active or not) is reused this long at most, never past the token's "
		 "`exp`: a token revoked meanwhile passes until then." },
	{ "maxEntries", SL_CONF_UINT, INTRO(max_entries), .min = 1, .max = 1000000, .dflt = 4096,
	  .doc = "Answers remembered (by the token's SHA-256, never the token); the oldest goes." },
	{ "maxInFlight", SL_CONF_UINT, INTRO(max_in_flight), .min = 1, .max = 10000, .dflt = 32,
	  .doc = "Introspection requests at once; a token that would need one more gets 503." },
};
#undef INTRO

static const struct sl_conf_section introspection_section = {
	"sluice.http.auth.introspection",
	"Opaque access tokens, checked with the authorization server (RFC 7662).",
	introspection_keys, SL_COUNT(introspection_keys), SL_CONF_STRICT, NULL,
};

#define AUTH(field) SL_CONF_AT(struct sl_auth_config, field)
static const struct sl_conf_key auth_keys[] = {
	{ "tokens", SL_CONF_CUSTOM, AUTH(tokens), .parse = parse_tokens, .sub = &token_section,
	  .shape = "an array of tokens", .dflt_doc = "`[]`",
	  .doc = "Static tokens, one per person or agent, each with the identity policy sees "
		 "(`sluice.http.auth.tokens[]` below): a team's keys without an identity provider." },
	{ "resource", SL_CONF_CUSTOM, AUTH(resource), .parse = parse_oauth_url, .shape = "a URL",
	  .dflt_doc = "none: no OAuth",
	  .doc = "This gateway's canonical URI as clients reach it (`https://mcp.example.com/mcp`): "
		 "set, sluice is an OAuth 2.1 resource server. Tokens must name it in `aud` (RFC "
		 "8707); the Protected Resource Metadata URL is built from it, never from a "
		 "request's Host." },
	{ "resourceName", SL_CONF_STRING, AUTH(resource_name), .min = 1, .dflt_doc = "`\"sluice\"`",
	  .doc = "`resource_name` in the Protected Resource Metadata." },
	{ "authorizationServers", SL_CONF_CUSTOM, AUTH(authorization_servers), .parse = parse_oauth_urls,
	  .shape = "an array of issuer URLs", .dflt_doc = "required with `resource`",
	  .doc = "The issuers whose tokens are accepted (`iss`, compared exactly), as advertised "
		 "in the Protected Resource Metadata." },
	{ "jwksUri", SL_CONF_CUSTOM, AUTH(jwks_uri), .parse = parse_oauth_url, .shape = "a URL",
	  .dflt_doc = "from the issuer's metadata",
	  .doc = "Where the one authorization server publishes its keys; without it, `jwks_uri` "
		 "from its RFC 8414 metadata, else its OpenID configuration." },
	{ "audiences", SL_CONF_CUSTOM, AUTH(audiences), .parse = parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[resource]`",
	  .doc = "A token's `aud` must contain one of these." },
	{ "algorithms", SL_CONF_CUSTOM, AUTH(algorithms), .parse = parse_algorithms,
	  .shape = "an array of JWS algorithms", .dflt_doc = "`[\"RS256\", \"ES256\", \"PS256\"]`",
	  .doc = "JWS algorithms accepted (the key's type must match too); `none` and `HS*` are "
		 "refused here." },
	{ "tokenTypes", SL_CONF_CUSTOM, AUTH(token_types), .parse = parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[\"at+jwt\", \"application/at+jwt\"]`",
	  .doc = "A JWT's `typ` header must be one of these (RFC 9068; compared without case). Add "
		 "`\"JWT\"` for a provider that marks its access tokens so; a token without `typ` is "
		 "refused." },
	{ "clockSkewSeconds", SL_CONF_UINT, AUTH(clock_skew_s), .max = 600, .dflt = 60,
	  .doc = "Leeway for `exp`, `nbf` and `iat` against this machine's clock." },
	{ "scopesSupported", SL_CONF_CUSTOM, AUTH(scopes_supported), .parse = parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "none",
	  .doc = "`scopes_supported` in the Protected Resource Metadata." },
	{ "requiredScopes", SL_CONF_CUSTOM, AUTH(required_scopes), .parse = parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "none",
	  .doc = "Every one must be granted (`scope` or `scp`): else 403 `insufficient_scope`, with "
		 "them in the challenge's `scope`, which every 401 also carries." },
	{ "groupsClaims", SL_CONF_CUSTOM, AUTH(groups_claims), .parse = parse_strings,
	  .shape = "an array of claim names", .dflt_doc = "`[\"groups\", \"roles\"]`",
	  .doc = "Claims (a string or an array of strings) whose values are the caller's groups." },
	{ "cacheEntries", SL_CONF_UINT, AUTH(cache_entries), .max = 1000000, .dflt = 4096,
	  .doc = "Validated JWTs remembered by their SHA-256 until they expire, so that a client's "
		 "next request skips the signature check; the oldest goes. 0: none." },
	{ "maxWaiting", SL_CONF_UINT, AUTH(max_waiting), .min = 1, .max = 100000, .dflt = 256,
	  .doc = "Requests held while keys or an introspection answer are fetched; one more gets "
		 "503." },
	{ "fetchTimeoutMs", SL_CONF_UINT, AUTH(fetch_timeout_ms), .min = 100, .max = 60000,
	  .dflt = 5000,
	  .doc = "One request to an authorization server (metadata, keys, introspection); a "
		 "request waiting for keys waits at most twice this (metadata, then keys), then "
		 "gets 503." },
	{ "maxDocumentBytes", SL_CONF_UINT, AUTH(max_document_bytes), .min = 1024, .max = 4u << 20,
	  .dflt = 256u << 10,
	  .doc = "One answer from an authorization server; a longer one fails that request." },
	{ "jwks", SL_CONF_OBJECT, AUTH(jwks), .sub = &jwks_section,
	  .doc = "See `sluice.http.auth.jwks` below." },
	{ "introspection", SL_CONF_OBJECT, AUTH(introspection), .sub = &introspection_section,
	  .doc = "See `sluice.http.auth.introspection` below." },
};
#undef AUTH

static const struct sl_conf_section auth_section = {
	"sluice.http.auth",
	"Who may use the HTTP front end, and as whom (docs/internals/AUTH.md). With any method "
	"here or `bearerToken`, a request without a valid credential gets 401. With `resource`, "
	"sluice is an OAuth 2.1 resource server: it serves Protected Resource Metadata (RFC 9728) "
	"and accepts the access tokens of `authorizationServers`: JWTs checked here against the "
	"issuer's keys, opaque tokens through `introspection`.",
	auth_keys, SL_COUNT(auth_keys), SL_CONF_STRICT, NULL,
};

/* What one key cannot check alone: OAuth needs its issuers, and the parts
 * that only make sense with it are not given without it. */
static int check_oauth(struct sl_conf_ctx *cx, const struct sl_auth_config *a)
{
	const struct sl_introspection_config *in = &a->introspection;
	size_t nas = 0;

	while (a->authorization_servers && a->authorization_servers[nas])
		nas++;
	if (!a->resource) {
		if (nas || a->jwks_uri || a->audiences || a->algorithms || a->required_scopes ||
		    a->scopes_supported || in->endpoint)
			return sl_conf_fail(cx, "sluice.http.auth", "OAuth keys are set without "
					    "\"resource\", this gateway's canonical URI");
		return SL_OK;
	}
	if (!nas)
		return sl_conf_fail(cx, "sluice.http.auth", "\"resource\" needs "
				    "\"authorizationServers\": the issuers whose tokens are accepted");
	if (a->jwks_uri && nas != 1)
		return sl_conf_fail(cx, "sluice.http.auth.jwksUri", "names one key set, but %zu "
				    "authorization servers are configured: leave it out (each "
				    "issuer's metadata names its own)", nas);
	if (in->endpoint && (!in->client_id || !in->client_secret))
		return sl_conf_fail(cx, "sluice.http.auth.introspection", "needs \"clientId\" and "
				    "\"clientSecret\" with \"endpoint\"");
	if (!in->endpoint && (in->client_id || in->client_secret))
		return sl_conf_fail(cx, "sluice.http.auth.introspection", "has credentials but no "
				    "\"endpoint\"");
	return SL_OK;
}

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
	{ "adminToken", SL_CONF_CUSTOM, HTTP(admin_token), .parse = parse_long_secret,
	  .shape = "a string of at least 32 characters", .dflt_doc = "none: loopback peers only",
	  .doc = "The operator's pages (`/status`, `/metrics`, `/admin`) answer a loopback peer, "
		 "or any peer sending `Authorization: Bearer <adminToken>`; `${VAR}` expanded. "
		 "It is not an MCP credential, and an MCP credential does not open these pages." },
	{ "publicUrl", SL_CONF_CUSTOM, HTTP(public_url), .parse = parse_public_url,
	  .shape = "an absolute URL", .dflt_doc = "the origin of `auth.resource`, else none",
	  .doc = "How a browser reaches this gateway (`https://mcp.example.com`; plain `http://` "
		 "only to a loopback host; no query; a trailing `/` is dropped). Set, a caller logs "
		 "in to a per-user upstream at `<publicUrl>/oauth/login/<id>`, and the "
		 "authorization server redirects back to `<publicUrl>/oauth/callback` "
		 "(docs/internals/AUTH.md, \"Logging in through the gateway\")." },
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
	{ "maxMetricSeries", SL_CONF_UINT, LIM(max_metric_series), .min = 10, .max = 100000,
	  .dflt = 1000,
	  .doc = "Distinct (server, tool) pairs `sluice_tool_calls_total` counts apart (`/metrics`, "
		 "docs/METRICS.md); a tool first called past the bound counts under `tool=\"_other\"`. "
		 "A reload's new value waits for a restart." },
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

/* sluice.shared.redis.url: checked here, so `sluice check` refuses a bad one. */
static int parse_redis_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			   void *target)
{
	struct sl_redis_config *r = target;
	struct sl_err e;

	if (!yyjson_is_str(v))
		return sl_conf_bad(cx, k);
	if (sl_config_modules.redis_url_check(yyjson_get_str(v), &e) < 0)
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	free(r->url);
	r->url = sl_strdup(yyjson_get_str(v));
	return SL_OK;
}

#define RDS(field) SL_CONF_AT(struct sl_redis_config, field)
static const struct sl_conf_key redis_keys[] = {
	{ "url", SL_CONF_CUSTOM, RDS(url), .parse = parse_redis_url,
	  .shape = "\"redis://host[:port][/db]\" or \"unix:/path[?db=N]\"", .dflt_doc = "required",
	  .doc = "The Redis server (or any server of the Redis protocol) the replicas share. A "
		 "password in the URL is refused: use `password`." },
	{ "password", SL_CONF_CUSTOM, RDS(password), .parse = parse_secret,
	  .shape = "a non-empty string", .dflt_doc = "none (no `AUTH`)",
	  .doc = "Sent with `AUTH` on every connection; `${VAR}` expanded." },
	{ "keyPrefix", SL_CONF_STRING, RDS(key_prefix), .min = 1, .dflt_doc = "`\"sluice:\"`",
	  .doc = "Put before every key and channel name, so several gateways can share one Redis." },
	{ "connectTimeoutMs", SL_CONF_UINT, RDS(connect_timeout_ms), .min = 10, .max = 600000,
	  .dflt = 2000, .doc = "One connection attempt, `AUTH` and `SELECT` included." },
	{ "commandTimeoutMs", SL_CONF_UINT, RDS(command_timeout_ms), .min = 10, .max = 600000,
	  .dflt = 1000,
	  .doc = "A command without its reply after this long drops the connection (the server "
		 "is taken as down: degraded state, reconnect with backoff)." },
	{ "maxPending", SL_CONF_UINT, RDS(max_pending), .min = 1, .max = 1000000, .dflt = 1024,
	  .doc = "Commands waiting for their reply at once; one more fails at once (its caller "
		 "keeps its local state)." },
	{ "maxReplyBytes", SL_CONF_UINT, RDS(max_reply_bytes), .min = 1024, .max = 1u << 30,
	  .dflt = 16u << 20,
	  .doc = "One reply as it arrives; a bigger one drops the connection with an error "
		 "naming this key." },
};
#undef RDS

static const struct sl_conf_section redis_section = {
	"sluice.shared.redis",
	"Redis for state the replicas of one gateway share (docs/internals/REPLICAS.md): tool "
	"pins, whose approvals reach every replica within a second, and, with "
	"`sluice.shared.secret`, session records, so that a replica adopts a session another "
	"one opened. Without this section nothing is shared and no Redis is needed. Changing "
	"it takes a restart (a reload keeps the connection it has).",
	redis_keys, SL_COUNT(redis_keys), SL_CONF_STRICT, NULL,
};

static int parse_redis(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	struct sl_redis_config *r = sl_conf_field(target, k);
	int rc;

	if (!yyjson_is_obj(v))
		return sl_conf_bad(cx, k);
	sl_conf_defaults(&redis_section, r);
	r->on = true;
	if ((rc = sl_conf_apply(cx, &redis_section, NULL, v, r)) < 0)
		return rc;
	if (!r->url)
		return sl_conf_fail(cx, "sluice.shared.redis", "needs \"url\"");
	if (!r->key_prefix)
		r->key_prefix = sl_strdup("sluice:");
	return SL_OK;
}

/* sluice.shared.replicaId: shown to operators (sluice status) and used as a
 * hash field, so bounded and printable. */
static int parse_replica_id(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			    void *target)
{
	char **id = sl_conf_field(target, k);

	if (!yyjson_is_str(v))
		return sl_conf_bad(cx, k);
	if (!sl_config_modules.replica_id_ok(yyjson_get_str(v)) ||
	    yyjson_get_len(v) != strlen(yyjson_get_str(v)))
		return sl_conf_fail_key(cx, k, "must be 1 to %u characters of printable ASCII "
					"without spaces", sl_config_modules.replica_id_max);
	free(*id);
	*id = sl_strdup(yyjson_get_str(v));
	return SL_OK;
}

#define SHR(field) SL_CONF_AT(struct sl_config, field)
static const struct sl_conf_key shared_keys[] = {
	{ "secret", SL_CONF_CUSTOM, SHR(shared_secret), .parse = parse_long_secret,
	  .shape = "a string of at least 32 characters", .dflt_doc = "none: seals are per process",
	  .doc = "The replicas' shared sealing key, `${VAR}` expanded (keep it in the environment); "
		 "never logged nor shown in `/status`. Everything a client carries back (session "
		 "ids, `requestState`, confirmations, task ids) is sealed with a key derived from "
		 "it (HMAC-SHA-256), so every replica with the same secret verifies every other's; "
		 "with `redis` too, a replica adopts a session another one opened "
		 "(docs/internals/REPLICAS.md). Read at start only." },
	{ "redis", SL_CONF_CUSTOM, SHR(redis), .parse = parse_redis, .sub = &redis_section,
	  .shape = "an object", .dflt_doc = "none: nothing shared",
	  .doc = "See `sluice.shared.redis` below." },
	{ "replicaId", SL_CONF_CUSTOM, SHR(replica_id), .parse = parse_replica_id,
	  .shape = "1 to 128 printable ASCII characters, no spaces",
	  .dflt_doc = "`\"<hostname>:<pid>\"`",
	  .doc = "This replica's name in the fleet (`sluice status`, `GET /status` `fleet`, the "
		 "Redis hash `<prefix>replicas`). Give each replica its own; read at start only." },
};
#undef SHR

static const struct sl_conf_section shared_section = {
	"sluice.shared",
	"State shared by several sluice processes serving as one gateway (replicas).",
	shared_keys, SL_COUNT(shared_keys), SL_CONF_STRICT, NULL,
};

/* Whether key names a stage (sluice.<key> is its own section). */
static bool is_stage(const char *key)
{
	const struct sl_conf_section *conf;
	const char *name;

	for (size_t i = 0; sl_config_modules.stage(i, &name, &conf); i++)
		if (strcmp(name, key) == 0)
			return true;
	return false;
}

/* A stage's own section: the stage reads it at start. */
static int stage_section(struct sl_conf_ctx *cx, const char *key, yyjson_val *v, void *target)
{
	if (!is_stage(key))
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

static int parse_profile_exposure(struct sl_conf_ctx *cx, const struct sl_conf_key *k,
				  yyjson_val *v, void *target)
{
	struct sl_profile *p = target;
	for (size_t i = 0; yyjson_is_str(v) && exposures[i].name; i++)
		if (!strcmp(exposures[i].name, yyjson_get_str(v))) {
			p->exposure = (enum sl_exposure)exposures[i].value;
			p->exposure_set = true;
			return SL_OK;
		}
	return sl_conf_bad(cx, k);
}

static const struct sl_conf_name log_levels[] = {
	{ "error", SL_LOG_ERROR },
	{ "warn", SL_LOG_WARN },
	{ "info", SL_LOG_INFO },
	{ "debug", SL_LOG_DEBUG },
	{ NULL, 0 },
};

/* ---- sluice.profiles (docs/PROFILES.md) ---- */

/* 1 to SL_PROFILE_NAME_MAX of [a-z0-9_-], and [A-Z] with upper. */
static bool valid_name(const char *n, bool upper)
{
	size_t len = strlen(n);
	if (len == 0 || len > SL_PROFILE_NAME_MAX)
		return false;
	for (; *n; n++)
		if (!(('a' <= *n && *n <= 'z') || (upper && 'A' <= *n && *n <= 'Z') ||
		      ('0' <= *n && *n <= '9') || *n == '_' || *n == '-'))
			return false;
	return true;
}

/* A profile's name: it is a URL path segment, /mcp/<name>. */
static bool valid_profile_name(const char *n)
{
	return valid_name(n, false);
}

/* A name a profile gives a tool: an exposed name of the catalog's alphabet
 * (upstream/catalog.h), so that it reads the same in every mode. */
static bool valid_tool_rename(const char *n)
{
	return valid_name(n, true);
}

/* An array of 1 to SL_PROFILE_GLOBS_MAX non-empty strings. */
static int parse_globs(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	if (yyjson_is_arr(v) && (yyjson_arr_size(v) == 0 || yyjson_arr_size(v) > SL_PROFILE_GLOBS_MAX))
		return sl_conf_bad(cx, k);
	return parse_strings(cx, k, v, target);
}

static int parse_profile_exposure(struct sl_conf_ctx *cx, const struct sl_conf_key *k,
				  yyjson_val *v, void *target);

static int parse_rename(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			void *target)
{
	struct sl_profile *p = target;
	yyjson_obj_iter it;
	yyjson_val *key;

	if (!yyjson_is_obj(v) || yyjson_obj_size(v) > SL_PROFILE_RENAME_MAX)
		return sl_conf_bad(cx, k);
	p->rename = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*p->rename));
	yyjson_obj_iter_init(v, &it);
	while ((key = yyjson_obj_iter_next(&it))) {
		const char *from = yyjson_get_str(key) ? yyjson_get_str(key) : "", *dot = strchr(from, '.');
		const char *to = yyjson_get_str(yyjson_obj_iter_get_val(key));
		if (!dot || dot == from || !dot[1] || strlen(from) != yyjson_get_len(key))
			return sl_conf_fail_key(cx, k, "keys are \"server.tool\" (exact names, not "
						"globs): \"%.100s\" is not", from);
		if (!to || !valid_tool_rename(to))
			return sl_conf_fail_key(cx, k, "\"%.100s\": a new name is 1 to %d of "
						"[A-Za-z0-9_-]", from, SL_PROFILE_NAME_MAX);
		/* The gateway's own tools keep their names in every profile. */
		if (sl_config_modules.reserved_tool(to))
			return sl_conf_fail_key(cx, k, "\"%.100s\": \"%s\" is a tool of the gateway's "
						"own", from, to);
		for (size_t i = 0; i < p->nrename; i++) {
			if (!strcmp(p->rename[i].key, from))
				return sl_conf_fail_key(cx, k, "\"%.100s\" is renamed twice", from);
			if (!strcmp(p->rename[i].value, to))
				return sl_conf_fail_key(cx, k, "\"%.100s\" and \"%.100s\" would both be "
							"\"%s\"", p->rename[i].key, from, to);
		}
		p->rename[p->nrename].key = sl_strdup(from);
		p->rename[p->nrename++].value = sl_strdup(to);
	}
	return SL_OK;
}

#define PROF(field) SL_CONF_AT(struct sl_profile, field)
static const struct sl_conf_key profile_keys[] = {
	{ "servers", SL_CONF_CUSTOM, PROF(servers), .parse = parse_globs,
	  .shape = "an array of 1 to 256 non-empty globs", .dflt_doc = "every server",
	  .doc = "Globs on server names (`*` any run, `?` one character): the servers this "
		 "profile shows; the others contribute nothing to its sessions (no tool, resource, "
		 "prompt, completion or notification)." },
	{ "tools", SL_CONF_CUSTOM, PROF(tools), .parse = parse_globs,
	  .shape = "an array of 1 to 256 non-empty globs", .dflt_doc = "every tool of those servers",
	  .doc = "Globs on `server.tool` (the config's server name, the tool's own name): the "
		 "tools of those servers it shows. Another tool is unknown to its sessions, whatever "
		 "name they call it by." },
	{ "rename", SL_CONF_CUSTOM, PROF(rename), .parse = parse_rename,
	  .shape = "an object of \"server.tool\": \"newName\" (at most 256)", .dflt_doc = "`{}`",
	  .doc = "The name a tool of the profile has there: the whole name in passthrough and "
		 "hybrid (`tools/list`, `tools/call`), the tool's name within its server in router "
		 "and code modes (`invoke_tool`, `tools.<server>.<newName>`). 1 to 64 of "
		 "`[A-Za-z0-9_-]`; two tools of a profile never share one (a new name that another "
		 "tool of the profile has in the catalog is not applied, with a warning)." },
	{ "exposure", SL_CONF_CUSTOM, PROF(exposure), .parse = parse_profile_exposure,
	  .shape = "`\"passthrough\"`, `\"router\"`, `\"hybrid\"` or `\"code\"`",
	  .dflt_doc = "`sluice.exposure`",
	  .doc = "Its exposure mode (README.md, \"Exposure modes\"); `--exposure` changes the "
		 "default, not a profile's own." },
};
#undef PROF

static const struct sl_conf_section profile_section = {
	"sluice.profiles.<name>",
	"A profile: a virtual server at `/mcp/<name>` showing a part of the catalog in a mode of "
	"its own (docs/PROFILES.md). Names are 1 to 64 of `[a-z0-9_-]`, at most 64 profiles; "
	"`default` shapes the plain `/mcp` (and stdio). Policy per profile is a policy rule with "
	"`who: [\"profile:NAME\"]` (docs/stages/POLICY.md).",
	profile_keys, SL_COUNT(profile_keys), SL_CONF_STRICT, NULL,
};

/* Whether "server.tool" key can name a tool the profile shows: its tools
 * globs match it, and its servers globs the part before some dot (server
 * names may hold dots themselves). */
static bool profile_covers(const struct sl_profile *p, const char *key)
{
	bool server = !p->servers, tool = !p->tools;
	for (size_t i = 0; p->tools && p->tools[i] && !tool; i++)
		tool = sl_glob_match(p->tools[i], key);
	for (const char *dot = strchr(key, '.'); dot && !server; dot = strchr(dot + 1, '.')) {
		char *name = sl_strndup(key, (size_t)(dot - key));
		for (size_t i = 0; p->servers[i] && !server; i++)
			server = sl_glob_match(p->servers[i], name);
		free(name);
	}
	return server && tool;
}

static int parse_profiles(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			  void *target)
{
	struct sl_config *c = target;
	yyjson_obj_iter it;
	yyjson_val *name;

	if (!yyjson_is_obj(v))
		return sl_conf_bad(cx, k);
	if (yyjson_obj_size(v) > SL_PROFILES_MAX)
		return sl_conf_fail_key(cx, k, "has %zu profiles, more than %d", yyjson_obj_size(v),
					SL_PROFILES_MAX);
	c->profiles = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*c->profiles));
	yyjson_obj_iter_init(v, &it);
	while ((name = yyjson_obj_iter_next(&it))) {
		const char *n = yyjson_get_str(name) ? yyjson_get_str(name) : "";
		struct sl_profile *p = &c->profiles[c->nprofiles];
		char where[128];
		int rc;

		snprintf(where, sizeof(where), "sluice.profiles.%.64s", n);
		if (!valid_profile_name(n) || strlen(n) != yyjson_get_len(name))
			return sl_conf_fail_key(cx, k, "\"%.100s\" is not a profile name (1 to %d of "
						"[a-z0-9_-])", n, SL_PROFILE_NAME_MAX);
		if (sl_config_profile(c, n))
			return sl_conf_fail(cx, where, "is given twice");
		if (!yyjson_is_obj(yyjson_obj_iter_get_val(name)))
			return sl_conf_fail(cx, where, "must be an object");
		p->name = sl_strdup(n);
		c->nprofiles++;
		rc = sl_conf_apply(cx, &profile_section, where, yyjson_obj_iter_get_val(name), p);
		if (rc != SL_OK)
			return rc;
		for (size_t i = 0; i < p->nrename; i++)
			if (!profile_covers(p, p->rename[i].key))
				return sl_conf_fail(cx, where, "renames \"%.100s\", which its servers or "
						    "tools leave out", p->rename[i].key);
	}
	return SL_OK;
}

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
	{ "oauth", SL_CONF_OBJECT, GW(oauth), .sub = &oauth_client_section,
	  .doc = "See `sluice.oauth` below." },
	{ "limits", SL_CONF_OBJECT, GW(limits), .sub = &limits_section,
	  .doc = "See `sluice.limits` below." },
	{ "shared", SL_CONF_OBJECT, .offset = 0, .size = sizeof(struct sl_config),
	  .sub = &shared_section, .doc = "See `sluice.shared` below." },
	{ "profiles", SL_CONF_CUSTOM, GW(profiles), .parse = parse_profiles, .sub = &profile_section,
	  .shape = "an object of profiles", .dflt_doc = "`{}`",
	  .doc = "Virtual servers at `/mcp/<name>` (`sluice.profiles.<name>` below; "
		 "docs/PROFILES.md). Reloaded on SIGHUP: a profile that goes answers 404." },
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
	c->servers_key = k->key;
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
		&root_section, &server_section, &server_oauth_section, &gateway_section, &code_section,
		&oauth_client_section, &http_section,
		&auth_section, &token_section, &jwks_section, &introspection_section, &tls_section,
		&limits_section, &shared_section, &redis_section, &profile_section,
	};
	const struct sl_conf_section *s;
	const char *name;

	fprintf(f, "# Configuration reference\n\n"
		"Generated by `sluice config-reference` from the key tables in src/config/config.c "
		"and in the stages (src/stages/, in the order of the stage table) (`make docs`); a "
		"unit test fails when this file and the tables differ.\n\n");
	for (size_t i = 0; i < SL_COUNT(sections); i++)
		sl_conf_reference(f, sections[i]);
	for (size_t i = 0; sl_config_modules.stage(i, &name, &s); i++) {
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
	c->code_enabled = c->code_offered || c->exposure == SL_EXPOSE_CODE;
	for (size_t i = 0; i < c->nprofiles; i++)
		c->code_enabled = c->code_enabled || (c->profiles[i].exposure_set &&
						      c->profiles[i].exposure == SL_EXPOSE_CODE);
	if (rc == SL_OK && !c->servers)
		rc = sl_conf_fail(&p.cx, "top level", "no \"mcpServers\" object: nothing to serve");
	if (rc == SL_OK)
		rc = check_oauth(&p.cx, &c->http.auth);
	if (rc == SL_OK && !c->http.public_url && c->http.auth.resource)
		c->http.public_url = url_origin(c->http.auth.resource);
	for (size_t i = 0; rc == SL_OK && i < c->nservers; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->servers[i].name, c->servers[j].name) == 0)
				rc = sl_conf_fail(&p.cx, c->servers[i].name, "duplicate server name");
	/* A glob that names no server is most likely a typo: said, not fatal
	 * (the server may come with the next reload). */
	for (size_t i = 0; rc == SL_OK && i < c->nprofiles; i++)
		for (size_t g = 0; c->profiles[i].servers && c->profiles[i].servers[g]; g++) {
			bool hit = false;
			for (size_t j = 0; j < c->nservers && !hit; j++)
				hit = sl_glob_match(c->profiles[i].servers[g], c->servers[j].name);
			if (!hit)
				add_warning(c, sl_printf("%s: sluice.profiles.%s.servers: \"%s\" matches no "
							 "configured server", path, c->profiles[i].name,
							 c->profiles[i].servers[g]));
		}
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
	free(s->oauth.client_id);
	free(s->oauth.client_secret);
	free(s->oauth.client_metadata_url);
	free(s->oauth.scope);
	free(s->oauth.private_key_file);
	if (s->oauth.key_free)
		s->oauth.key_free(s->oauth.key);
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
	free(c->oauth.client_metadata_url);
	free(c->oauth.client_name);
	free(c->oauth.key_file);
	free(c->http.listen);
	free(c->http.bearer_token);
	free(c->http.public_url);
	free(c->http.admin_token);
	for (size_t i = 0; i < c->http.norigins; i++)
		free(c->http.allowed_origins[i]);
	free(c->http.allowed_origins);
	sl_auth_config_dispose(&c->http.auth);
	for (size_t i = 0; i < c->nprofiles; i++) {
		struct sl_profile *p = &c->profiles[i];
		free(p->name);
		strings_free(p->servers);
		strings_free(p->tools);
		for (size_t j = 0; j < p->nrename; j++) {
			free(p->rename[j].key);
			free(p->rename[j].value);
		}
		free(p->rename);
	}
	free(c->profiles);
	free(c->http.tls.cert_file);
	free(c->http.tls.key_file);
	free(c->redis.url);
	free(c->redis.password);
	free(c->redis.key_prefix);
	if (c->shared_secret)
		explicit_bzero(c->shared_secret, strlen(c->shared_secret));
	free(c->shared_secret);
	free(c->replica_id);
	yyjson_doc_free(c->doc);
	free(c);
}


const struct sl_profile *sl_config_profile(const struct sl_config *c, const char *name)
{
	for (size_t i = 0; i < c->nprofiles; i++)
		if (!strcmp(c->profiles[i].name, name ? name : "default"))
			return &c->profiles[i];
	return NULL;
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

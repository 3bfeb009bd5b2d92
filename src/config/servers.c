/*
 * Config: the server entries, `mcpServers.<name>` (or VS Code's `servers`)
 * and their `oauth` section. A problem the user may fix in the environment
 * (an unset ${VAR}) fails only that server (config.c says how).
 */
#include "config/internal.h"
#include "core/json.h"
#include "core/log.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Expands one server string; on failure marks the server failed. */
static char *expand_for(struct sl_server_config *s, const char *what, const char *v)
{
	struct sl_err e;
	char *r = sl_config_expand(v, cfg_getenv, &e);
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

static const struct sl_conf_name protocols[] = {
	{ "auto", SL_PROTOCOL_AUTO },
	{ "2026-07-28", SL_PROTOCOL_2026_07_28 },
	{ "2025-11-25", SL_PROTOCOL_2025_11_25 },
	{ "2025-06-18", SL_PROTOCOL_2025_06_18 },
	{ "2025-03-26", SL_PROTOCOL_2025_03_26 },
	{ "2024-11-05", SL_PROTOCOL_2024_11_05 },
	{ NULL, 0 },
};

const char *sl_protocol_pin_version(enum sl_protocol_pin p)
{
	return p == SL_PROTOCOL_AUTO ? NULL : protocols[p].name;
}

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
	{ "protocol", SL_CONF_ENUM, SRV(protocol), .names = protocols, .dflt_doc = "`\"auto\"`",
	  .doc = "The MCP version spoken with the server. `\"auto\"`: probed (`server/discover` "
		 "first; a server whose 2026-07-28 answer declares resources without `subscribe` "
		 "is also asked `initialize`, and spoken to in the session era if it answers). A "
		 "version: that one only (a session-era version is offered in `initialize`); a "
		 "server that refuses it fails, with an error naming it." },
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
	{ "oauth", SL_CONF_OBJECT, SRV(oauth), .sub = &cfg_server_oauth_section,
	  .dflt_doc = "discovered from a 401",
	  .doc = "Remote servers: how sluice gets its tokens (`mcpServers.<name>.oauth` below; "
		 "`sluice auth login NAME`). Not needed for a server that asks: a 401 with a Bearer "
		 "challenge is enough." },
};
#undef SRV

const struct sl_conf_section cfg_server_section = {
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

int cfg_parse_server(struct sl_conf_ctx *cx, const char *group, const char *name,
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
	if ((rc = sl_conf_apply(cx, &cfg_server_section, where, o, s)) < 0)
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
	{ "clientSecret", SL_CONF_CUSTOM, SOA(client_secret), .parse = cfg_parse_secret,
	  .shape = "a non-empty string", .dflt_doc = "none: a public client",
	  .doc = "Its secret; `${VAR}` expanded." },
	{ "clientMetadataUrl", SL_CONF_CUSTOM, SOA(client_metadata_url), .parse = cfg_parse_oauth_url,
	  .shape = "an https:// URL", .dflt_doc = "`sluice.oauth.clientMetadataUrl`",
	  .doc = "A Client ID Metadata Document to use as the client id at this server." },
	{ "scope", SL_CONF_STRING, SOA(scope), .min = 1, .dflt_doc = "what the server asks for",
	  .doc = "Scopes asked for besides those the server's challenge or metadata name "
		 "(space-separated)." },
	{ "privateKeyFile", SL_CONF_CUSTOM, SOA(private_key_file), .parse = cfg_parse_file,
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

const struct sl_conf_section cfg_server_oauth_section = {
	"mcpServers.<name>.oauth",
	"How sluice gets tokens for a remote server that requires OAuth (docs/internals/AUTH.md, "
	"\"Toward upstreams\"). Tokens are kept per server URL under the XDG state directory "
	"(`sluice auth status`).",
	server_oauth_keys, SL_COUNT(server_oauth_keys), SL_CONF_STRICT, NULL,
};


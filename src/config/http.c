/*
 * Config: the HTTP face, `sluice.http` with its `tls` and `auth` (tokens,
 * JWKS, introspection) sections, and the OAuth client `sluice.oauth`.
 */
#include "config/internal.h"
#include "core/json.h"
#include "core/log.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	h->bearer_token = sl_config_expand(yyjson_get_str(v), cfg_getenv, &e);
	if (!h->bearer_token)
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	return SL_OK;
}

char *sl_config_path(const char *config_path, const char *value, struct sl_err *err)
{
	const char *home = getenv("HOME"), *slash;
	char *p = sl_config_expand(value, cfg_getenv, err), *abs;

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
int cfg_parse_file(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
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
	{ "certFile", SL_CONF_CUSTOM, TLS(cert_file), .parse = cfg_parse_file, .shape = "a path",
	  .dflt_doc = "required",
	  .doc = "PEM: the server's certificate first, then any intermediates (at most 16 "
		 "certificates, 1 MiB). `${VAR}` and a leading `~/` are expanded; a relative path "
		 "is taken from the config file's directory." },
	{ "keyFile", SL_CONF_CUSTOM, TLS(key_file), .parse = cfg_parse_file, .shape = "a path",
	  .dflt_doc = "required",
	  .doc = "PEM: the certificate's private key, unencrypted (at most 1 MiB); paths as "
		 "`certFile`. Both files are read again on SIGHUP: a renewed certificate is served "
		 "to new connections, and one that does not load is refused with the old one kept." },
};
#undef TLS

const struct sl_conf_section cfg_tls_section = {
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
	if ((rc = sl_conf_apply(cx, &cfg_tls_section, NULL, v, t)) < 0)
		return rc;
	if (!t->cert_file || !t->key_file)
		return sl_conf_fail(cx, "sluice.http.tls", "needs \"certFile\" and \"keyFile\"");
	return SL_OK;
}

void cfg_strings_free(char **l)
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
		cfg_strings_free(a->tokens[i].groups);
		cfg_strings_free(a->tokens[i].scopes);
	}
	free(a->tokens);
	free(a->resource);
	free(a->resource_name);
	cfg_strings_free(a->authorization_servers);
	free(a->jwks_uri);
	cfg_strings_free(a->audiences);
	cfg_strings_free(a->algorithms);
	cfg_strings_free(a->token_types);
	cfg_strings_free(a->scopes_supported);
	cfg_strings_free(a->required_scopes);
	cfg_strings_free(a->groups_claims);
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

/* sluice.http.allowedHosts: host names (no port, no IP literal: those
 * pass anyway), kept in lower case, at most SL_HTTP_NAMES_MAX. */
static int parse_hosts(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	struct sl_http_config *h = target;
	yyjson_val *s;
	size_t i, max, n = 0;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	if (yyjson_arr_size(v) > SL_HTTP_NAMES_MAX)
		return sl_conf_fail_key(cx, k, "at most %d names", SL_HTTP_NAMES_MAX);
	cfg_strings_free(h->allowed_hosts);
	h->allowed_hosts = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(char *));
	yyjson_arr_foreach(v, i, max, s) {
		const char *name = yyjson_is_str(s) ? yyjson_get_str(s) : NULL;
		size_t len = name ? strlen(name) : 0;
		if (!len || len > 253 || strspn(name, "abcdefghijklmnopqrstuvwxyz"
						"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != len ||
		    name[0] == '.' || name[0] == '-')
			return sl_conf_fail_key(cx, k, "entry %zu is not a host name (letters, digits, "
						"'.' and '-'; no port, no scheme)", i);
		h->allowed_hosts[n] = sl_strdup(name);
		for (char *p = h->allowed_hosts[n]; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		n++;
	}
	return SL_OK;
}

/* sluice.http.proxies: "address" or "address/bits", IPv4 or IPv6, at
 * most SL_HTTP_NAMES_MAX. */
static int parse_proxies(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			 void *target)
{
	struct sl_http_config *h = target;
	yyjson_val *s;
	size_t i, max;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	if (yyjson_arr_size(v) > SL_HTTP_NAMES_MAX)
		return sl_conf_fail_key(cx, k, "at most %d addresses", SL_HTTP_NAMES_MAX);
	free(h->proxies);
	h->proxies = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(*h->proxies));
	h->nproxies = 0;
	yyjson_arr_foreach(v, i, max, s) {
		struct sl_net *n = &h->proxies[h->nproxies];
		const char *text = yyjson_is_str(s) ? yyjson_get_str(s) : "";
		const char *slash = strchr(text, '/');
		char ip[INET6_ADDRSTRLEN];
		size_t len = slash ? (size_t)(slash - text) : strlen(text);
		unsigned long bits = 128;
		bool v4;

		if (len >= sizeof(ip))
			goto bad;
		memcpy(ip, text, len);
		ip[len] = '\0';
		memset(n, 0, sizeof(*n));
		v4 = inet_pton(AF_INET, ip, n->addr + 12) == 1;
		if (v4) {
			n->addr[10] = n->addr[11] = 0xff;
		} else if (inet_pton(AF_INET6, ip, n->addr) != 1) {
			goto bad;
		}
		if (slash) {
			char *end;
			if (!isdigit((unsigned char)slash[1]))
				goto bad;
			bits = strtoul(slash + 1, &end, 10);
			if (*end || bits > (v4 ? 32u : 128u))
				goto bad;
			if (v4)
				bits += 96;
		}
		n->bits = (unsigned)bits;
		h->nproxies++;
		continue;
bad:
		return sl_conf_fail_key(cx, k, "entry %zu is not an IP address or a CIDR range "
					"(\"127.0.0.1\", \"10.0.0.0/8\", \"::1\")", i);
	}
	return SL_OK;
}

/* A non-empty array of non-empty strings, NULL-terminated, into target. */
int cfg_parse_strings(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
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

int cfg_parse_secret(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		     void *target)
{
	char **out = sl_conf_field(target, k);
	struct sl_err e;

	if (!yyjson_is_str(v) || !yyjson_get_len(v))
		return sl_conf_bad(cx, k);
	free(*out);
	if (!(*out = sl_config_expand(yyjson_get_str(v), cfg_getenv, &e)))
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	if (!**out)
		return sl_conf_fail_key(cx, k, "is empty once expanded");
	return SL_OK;
}

/* sluice.shared.secret and sluice.http.adminToken: long enough to key an
 * HMAC with (RFC 2104 wants at least the hash's length) or to resist
 * guessing; never echoed in an error. */
#define SECRET_MIN 32
int cfg_parse_long_secret(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			  void *target)
{
	char **out = sl_conf_field(target, k);
	int rc = cfg_parse_secret(cx, k, v, target);

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
	{ "token", SL_CONF_CUSTOM, TOK(token), .parse = cfg_parse_secret, .shape = "a non-empty string",
	  .dflt_doc = "required",
	  .doc = "The secret, sent as `Authorization: Bearer <token>`; `${VAR}` expanded (keep "
		 "secrets in the environment, not in the file)." },
	{ "subject", SL_CONF_STRING, TOK(subject), .min = 1, .dflt_doc = "required",
	  .doc = "Who holds it: the subject policy rules match and the audit names." },
	{ "groups", SL_CONF_CUSTOM, TOK(groups), .parse = cfg_parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[]`",
	  .doc = "Its groups, as policy rules' `groups` match them." },
	{ "scopes", SL_CONF_CUSTOM, TOK(scopes), .parse = cfg_parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[]`",
	  .doc = "Its scopes, as policy rules' `scopes` match them." },
};
#undef TOK

const struct sl_conf_section cfg_token_section = {
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
		if ((rc = sl_conf_apply(cx, &cfg_token_section, where, o, t)) < 0)
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

	if ((rc = cfg_parse_strings(cx, k, v, target)) < 0)
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

int cfg_parse_oauth_url(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
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
char *cfg_url_origin(const char *u)
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

	if ((rc = cfg_parse_strings(cx, k, v, target)) < 0)
		return rc;
	for (size_t i = 0; (*out)[i]; i++)
		if ((why = url_problem((*out)[i])))
			return sl_conf_fail_key(cx, k, "\"%s\" %s", (*out)[i], why);
	return SL_OK;
}

#define OAC(field) SL_CONF_AT(struct sl_oauth_config, field)
static const struct sl_conf_key oauth_client_keys[] = {
	{ "clientMetadataUrl", SL_CONF_CUSTOM, OAC(client_metadata_url), .parse = cfg_parse_oauth_url,
	  .shape = "an https:// URL", .dflt_doc = "none",
	  .doc = "Where sluice's Client ID Metadata Document is served (a URL you host): used as "
		 "the client id at authorization servers that support them, instead of registering." },
	{ "clientName", SL_CONF_STRING, OAC(client_name), .min = 1, .dflt_doc = "`\"sluice\"`",
	  .doc = "The name sluice registers under (shown on consent screens)." },
	{ "keyFile", SL_CONF_CUSTOM, OAC(key_file), .parse = cfg_parse_file, .shape = "a path",
	  .dflt_doc = "`SLUICE_TOKEN_KEY`, else none",
	  .doc = "Encrypts the stored tokens (AES-256-GCM) with a key read from this file; the "
		 "environment variable `SLUICE_TOKEN_KEY` does the same. Without either, tokens are "
		 "kept in files only their owner can read (0600)." },
	{ "refreshBeforeSeconds", SL_CONF_UINT, OAC(refresh_before_s), .min = 0, .max = 86400,
	  .dflt = 60, .doc = "A token this close to its expiry is refreshed before it is sent; one "
	  "that lives less than twice this, once half its lifetime has passed." },
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

const struct sl_conf_section cfg_oauth_client_section = {
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

const struct sl_conf_section cfg_jwks_section = {
	"sluice.http.auth.jwks",
	"The authorization servers' signing keys (JWKS), fetched from `jwksUri` or from the "
	"`jwks_uri` of the issuer's metadata.",
	jwks_keys, SL_COUNT(jwks_keys), SL_CONF_STRICT, NULL,
};

#define INTRO(field) SL_CONF_AT(struct sl_introspection_config, field)
static const struct sl_conf_key introspection_keys[] = {
	{ "endpoint", SL_CONF_CUSTOM, INTRO(endpoint), .parse = cfg_parse_oauth_url, .shape = "a URL",
	  .dflt_doc = "none: opaque tokens are refused",
	  .doc = "The authorization server's RFC 7662 introspection endpoint, asked about every "
		 "token that is not a JWT." },
	{ "clientId", SL_CONF_STRING, INTRO(client_id), .min = 1, .dflt_doc = "required with `endpoint`",
	  .doc = "sluice's client id at the authorization server (HTTP Basic authentication)." },
	{ "clientSecret", SL_CONF_CUSTOM, INTRO(client_secret), .parse = cfg_parse_secret,
	  .shape = "a non-empty string", .dflt_doc = "required with `endpoint`",
	  .doc = "Its secret; `${VAR}` expanded." },
	{ "cacheSeconds", SL_CONF_UINT, INTRO(cache_s), .min = 1, .max = 3600, .dflt = 60,
	  .doc = "An answer (active or not) is reused this long at most, never past the token's "
		 "`exp`: a token revoked meanwhile passes until then." },
	{ "staleSeconds", SL_CONF_UINT, INTRO(stale_s), .min = 0, .max = 3600, .dflt = 60,
	  .doc = "After `cacheSeconds`, an active answer keeps serving its token at most this long "
		 "more (never past `exp`) while one request asks about it again: a known token is "
		 "not refused while the authorization server is slow or busy, and a revocation "
		 "takes effect when that answer comes (or when this runs out). 0: an aged-out answer "
		 "serves nothing, its token waits for the new one." },
	{ "maxEntries", SL_CONF_UINT, INTRO(max_entries), .min = 1, .max = 1000000, .dflt = 4096,
	  .doc = "Answers remembered (by the token's SHA-256, never the token), active ones and "
		 "the others apart, up to this many of each: the oldest goes, and a flood of unknown "
		 "tokens pushes out no active answer." },
	{ "maxInFlight", SL_CONF_UINT, INTRO(max_in_flight), .min = 1, .max = 10000, .dflt = 32,
	  .doc = "Introspection requests at once. A quarter of them (at least 1 from 2 on) is kept "
		 "for tokens with an active answer, asked again: an unknown token that would need "
		 "one more than the rest gets 503." },
};
#undef INTRO

const struct sl_conf_section cfg_introspection_section = {
	"sluice.http.auth.introspection",
	"Opaque access tokens, checked with the authorization server (RFC 7662).",
	introspection_keys, SL_COUNT(introspection_keys), SL_CONF_STRICT, NULL,
};

#define AUTH(field) SL_CONF_AT(struct sl_auth_config, field)
static const struct sl_conf_key auth_keys[] = {
	{ "tokens", SL_CONF_CUSTOM, AUTH(tokens), .parse = parse_tokens, .sub = &cfg_token_section,
	  .shape = "an array of tokens", .dflt_doc = "`[]`",
	  .doc = "Static tokens, one per person or agent, each with the identity policy sees "
		 "(`sluice.http.auth.tokens[]` below): a team's keys without an identity provider." },
	{ "resource", SL_CONF_CUSTOM, AUTH(resource), .parse = cfg_parse_oauth_url, .shape = "a URL",
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
	{ "jwksUri", SL_CONF_CUSTOM, AUTH(jwks_uri), .parse = cfg_parse_oauth_url, .shape = "a URL",
	  .dflt_doc = "from the issuer's metadata",
	  .doc = "Where the one authorization server publishes its keys; without it, `jwks_uri` "
		 "from its RFC 8414 metadata, else its OpenID configuration." },
	{ "audiences", SL_CONF_CUSTOM, AUTH(audiences), .parse = cfg_parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[resource]`",
	  .doc = "A token's `aud` must contain one of these." },
	{ "algorithms", SL_CONF_CUSTOM, AUTH(algorithms), .parse = parse_algorithms,
	  .shape = "an array of JWS algorithms", .dflt_doc = "`[\"RS256\", \"ES256\", \"PS256\"]`",
	  .doc = "JWS algorithms accepted (the key's type must match too); `none` and `HS*` are "
		 "refused here." },
	{ "tokenTypes", SL_CONF_CUSTOM, AUTH(token_types), .parse = cfg_parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "`[\"at+jwt\", \"application/at+jwt\"]`",
	  .doc = "A JWT's `typ` header must be one of these (RFC 9068; compared without case). Add "
		 "`\"JWT\"` for a provider that marks its access tokens so; a token without `typ` is "
		 "refused." },
	{ "clockSkewSeconds", SL_CONF_UINT, AUTH(clock_skew_s), .max = 600, .dflt = 60,
	  .doc = "Leeway for `exp`, `nbf` and `iat` against this machine's clock." },
	{ "scopesSupported", SL_CONF_CUSTOM, AUTH(scopes_supported), .parse = cfg_parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "none",
	  .doc = "`scopes_supported` in the Protected Resource Metadata." },
	{ "requiredScopes", SL_CONF_CUSTOM, AUTH(required_scopes), .parse = cfg_parse_strings,
	  .shape = "an array of non-empty strings", .dflt_doc = "none",
	  .doc = "Every one must be granted (`scope` or `scp`): else 403 `insufficient_scope`, with "
		 "them in the challenge's `scope`, which every 401 also carries." },
	{ "groupsClaims", SL_CONF_CUSTOM, AUTH(groups_claims), .parse = cfg_parse_strings,
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
	{ "jwks", SL_CONF_OBJECT, AUTH(jwks), .sub = &cfg_jwks_section,
	  .doc = "See `sluice.http.auth.jwks` below." },
	{ "introspection", SL_CONF_OBJECT, AUTH(introspection), .sub = &cfg_introspection_section,
	  .doc = "See `sluice.http.auth.introspection` below." },
};
#undef AUTH

const struct sl_conf_section cfg_auth_section = {
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
int cfg_check_oauth(struct sl_conf_ctx *cx, const struct sl_auth_config *a)
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
	  .doc = "Live sessions, a 2026-07-28 request in flight counting as one. At the bound a "
		 "newcomer closes the least recently used idle session (no request in flight, no "
		 "open stream; it ends as a DELETE would, and its client gets 404 and initializes "
		 "anew); with none idle it gets 503." },
	{ "maxSessionsPerCaller", SL_CONF_UINT, HTTP(max_sessions_caller), .min = 0, .max = 100000,
	  .dflt = 0, .dflt_doc = "`0`: half of `maxSessions`, at least 1",
	  .doc = "At the `maxSessions` bound, a caller (an identity: method, issuer and subject) "
		 "holding this many sessions or more closes its own least recently used idle one, "
		 "never another caller's, and gets 503 when all of its sessions are busy. The holders "
		 "of the shared `bearerToken` are one caller; without authentication there is no "
		 "share." },
	{ "maxRequestsPerSession", SL_CONF_UINT, HTTP(max_requests), .min = 1, .max = 100000,
	  .dflt = 32, .doc = "Requests in flight in one session, or 2026-07-28 requests in flight "
			     "with one credential (the bearer token; without one, all of them); one "
			     "more gets 429." },
	{ "idleSessionTimeoutMs", SL_CONF_UINT, HTTP(idle_timeout_ms), .min = 100,
	  .max = 7ull * 86400000, .dflt = 30ull * 60 * 1000,
	  .doc = "A session with no request and no open stream ends after this." },
	{ "heartbeatMs", SL_CONF_UINT, HTTP(heartbeat_ms), .min = 100, .max = 3600000, .dflt = 15000,
	  .doc = "An SSE comment on every open stream this often. A 2026-07-28 request's answer "
		 "comes as JSON if it is the first thing to send within this time; after it, the "
		 "response streams." },
	{ "adminToken", SL_CONF_CUSTOM, HTTP(admin_token), .parse = cfg_parse_long_secret,
	  .shape = "a string of at least 32 characters", .dflt_doc = "none: loopback peers only",
	  .doc = "The operator's pages (`/status`, `/metrics`, `/admin`) answer a loopback peer, "
		 "or any peer sending `Authorization: Bearer <adminToken>`; `${VAR}` expanded. "
		 "It is not an MCP credential, and an MCP credential does not open these pages." },
	{ "proxies", SL_CONF_CUSTOM, HTTP(proxies), .parse = parse_proxies,
	  .shape = "an array of IP addresses or CIDR ranges (at most 64)",
	  .dflt_doc = "none",
	  .doc = "The reverse proxies in front of this gateway (`[\"127.0.0.1\"]` for HAProxy on "
		 "the same host): a request from one of them came from elsewhere, so it is never a "
		 "local peer for the operator's pages, which then want `adminToken`. Without this, "
		 "a loopback peer's request that carries `Forwarded`, `X-Forwarded-For`, "
		 "`X-Forwarded-Host`, `X-Forwarded-Proto`, `X-Real-IP` or `Via` is not local either (docs/ADMIN.md, "
		 "\"Behind a proxy\")." },
	{ "allowedHosts", SL_CONF_CUSTOM, HTTP(allowed_hosts), .parse = parse_hosts,
	  .shape = "an array of host names (at most 64)",
	  .dflt_doc = "none: loopback names, IP literals and `publicUrl`'s host",
	  .doc = "Names accepted in `Host` besides `localhost`, `*.localhost`, IP literals and "
		 "the host of `publicUrl` (DNS rebinding protection): on a wildcard listener "
		 "(`0.0.0.0`, `[::]`) any other name is refused with 403; on a listener bound to "
		 "one address, that address is accepted too (with its port)." },
	{ "publicUrl", SL_CONF_CUSTOM, HTTP(public_url), .parse = parse_public_url,
	  .shape = "an absolute URL", .dflt_doc = "the origin of `auth.resource`, else none",
	  .doc = "How a browser reaches this gateway (`https://mcp.example.com`; plain `http://` "
		 "only to a loopback host; no query; a trailing `/` is dropped). Set, a caller logs "
		 "in to a per-user upstream at `<publicUrl>/oauth/login/<id>`, and the "
		 "authorization server redirects back to `<publicUrl>/oauth/callback` "
		 "(docs/internals/AUTH.md, \"Logging in through the gateway\")." },
	{ "auth", SL_CONF_OBJECT, HTTP(auth), .sub = &cfg_auth_section,
	  .doc = "See `sluice.http.auth` below." },
	{ "tls", SL_CONF_CUSTOM, HTTP(tls), .parse = parse_tls, .sub = &cfg_tls_section,
	  .shape = "an object", .dflt_doc = "none: plain HTTP",
	  .doc = "HTTPS: `certFile` and `keyFile` (`sluice.http.tls` below)." },
};
#undef HTTP


const struct sl_conf_section cfg_http_section = {
	"sluice.http",
	"The Streamable HTTP front end (`serve --http`; docs/internals/HTTP.md).",
	http_keys, SL_COUNT(http_keys), 0, NULL,
};

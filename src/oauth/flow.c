/*
 * The OAuth client's requests (see oauth.h): discovery, registration, the
 * authorization URL and its redirect, token and revocation requests. Each
 * is a small state machine over a fetcher; every document is read as
 * hostile (bounded by the fetcher, each field type-checked, each URL
 * checked before it is used).
 */
#include "oauth/oauth.h"
#include "auth/jwks.h"
#include "core/escape.h"
#include "core/json.h"
#include "event/fetch.h"
#include "proto/mcp.h"

#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- small helpers ---------------------------------------------------------------- */

/* http(s) only; plain http only to a loopback host (tokens and codes go
 * there). NULL if fine, else why not. */
static const char *url_problem(const char *u)
{
	const char *host;

	if (!u || strlen(u) > SL_OAUTH_VALUE_MAX)
		return "is missing or too long";
	for (const char *p = u; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return "has spaces or control characters";
	if (!strncmp(u, "https://", 8))
		return u[8] ? NULL : "has no host";
	if (strncmp(u, "http://", 7))
		return "is not an http:// or https:// URL";
	host = u + 7;
	if (!strncmp(host, "127.", 4) || !strncmp(host, "localhost", 9) || !strncmp(host, "[::1]", 5))
		return NULL;
	return "must be https:// (plain http only to a loopback host)";
}

/* The origin of an http(s) URL: scheme://host[:port], malloc'd. */
static char *origin_of(const char *u)
{
	const char *host = strstr(u, "://");

	host = host ? host + 3 : u;
	return sl_strndup(u, (size_t)(host - u) + strcspn(host, "/?#"));
}

/* The URL's path without query or fragment and without trailing slashes. */
static void path_of(const char *u, const char **p, size_t *n)
{
	const char *host = strstr(u, "://");

	host = host ? host + 3 : u;
	*p = host + strcspn(host, "/?#");
	*n = strcspn(*p, "?#");
	while (*n && (*p)[*n - 1] == '/')
		(*n)--;
}

/* Whether the PRM's resource covers the server's URL: the same origin and
 * a path that is the server's, or a whole-segment prefix of it (RFC 9728
 * 3.3; a root document names the origin). */
static bool resource_covers(const char *resource, const char *server)
{
	char *a = origin_of(resource), *b = origin_of(server);
	const char *pa, *pb;
	size_t na, nb;
	bool same = strcasecmp(a, b) == 0;

	free(a);
	free(b);
	if (!same || strchr(resource, '#'))
		return false;
	path_of(resource, &pa, &na);
	path_of(server, &pb, &nb);
	return na <= nb && !strncmp(pa, pb, na) && (na == nb || pb[na] == '/');
}

/* Issuer identifiers are compared as strings, nothing normalised: no
 * trailing slash stripped, no case folded (RFC 8414 3.3: "identical";
 * RFC 9207 2.4: simple string comparison, RFC 3986 6.2.1). */
static bool same_issuer(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

static char *dup_or_null(const char *s)
{
	return s ? sl_strdup(s) : NULL;
}

/* A string member no longer than SL_OAUTH_VALUE_MAX, else NULL. */
static const char *str(yyjson_val *o, const char *key)
{
	const char *s = sl_json_str(o, key);
	return s && *s && strlen(s) <= SL_OAUTH_VALUE_MAX ? s : NULL;
}

static bool has_string(yyjson_val *arr, const char *want)
{
	size_t i, max;
	yyjson_val *v;

	yyjson_arr_foreach(arr, i, max, v)
		if (yyjson_is_str(v) && !strcmp(yyjson_get_str(v), want))
			return true;
	return false;
}

/* A space-separated list of the array's strings (scopes). */
static char *join(yyjson_val *arr)
{
	struct sl_buf b;
	size_t i, max;
	yyjson_val *v;
	char *out;

	sl_buf_init(&b, SL_OAUTH_VALUE_MAX);
	yyjson_arr_foreach(arr, i, max, v) {
		const char *s = yyjson_get_str(v);
		if (yyjson_is_str(v) && *s && !strpbrk(s, " \"\\") &&
		    sl_buf_printf(&b, "%s%s", b.len ? " " : "", s) < 0)
			break; /* over the cap: the scopes that fit */
	}
	out = b.len ? sl_strndup(b.data, b.len) : NULL;
	sl_buf_dispose(&b);
	return out;
}

/* A value that goes into an HTTP header as it is: visible ASCII only. */
static bool header_safe(const char *s)
{
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e)
			return false;
	return true;
}

/* ---- PKCE and the authorization URL ---------------------------------------------- */

void sl_oauth_pkce_new(struct sl_oauth_pkce *p)
{
	uint8_t raw[32], digest[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;

	sl_random(raw, sizeof(raw));
	sl_base64url(raw, sizeof(raw), p->verifier);
	sha256_init(&h);
	sha256_update(&h, strlen(p->verifier), (const uint8_t *)p->verifier);
	sha256_digest(&h, sizeof(digest), digest);
	sl_base64url(digest, sizeof(digest), p->challenge);
	sl_random(raw, 24);
	sl_base64url(raw, 24, p->state);
}

static void add_param(struct sl_buf *b, const char *name, const char *v)
{
	char *e;

	if (!v)
		return;
	e = sl_url_encode(v);
	if (sl_buf_printf(b, "%s%s=%s", b->len ? "&" : "", name, e) < 0)
		abort(); /* uncapped (what goes in is bounded where it comes from a peer) */
	free(e);
}

/* Whether a space-separated list holds the word. */
static bool has_word(const char *list, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = list; p && *p; p += strcspn(p, " "), p += strspn(p, " "))
		if (strcspn(p, " ") == n && !strncmp(p, w, n))
			return true;
	return false;
}

char *sl_oauth_authorize_url(const struct sl_oauth_server *s,
			     const struct sl_oauth_registration *r, const char *redirect_uri,
			     const char *scope, const struct sl_oauth_pkce *p)
{
	struct sl_buf q;
	char *out;

	sl_buf_init(&q, SIZE_MAX / 2);
	add_param(&q, "response_type", "code");
	add_param(&q, "client_id", r->client_id);
	add_param(&q, "redirect_uri", redirect_uri);
	add_param(&q, "state", p->state);
	add_param(&q, "code_challenge", p->challenge);
	add_param(&q, "code_challenge_method", "S256");
	add_param(&q, "resource", s->resource);
	add_param(&q, "scope", scope && *scope ? scope : NULL);
	/* OpenID Connect Core 11: an offline_access asked without
	 * prompt=consent is ignored (oidc-provider drops it), and then no
	 * refresh token comes. */
	if (has_word(scope, "offline_access"))
		add_param(&q, "prompt", "consent");
	out = sl_printf("%s%c%.*s", s->authorization_endpoint,
			strchr(s->authorization_endpoint, '?') ? '&' : '?', (int)q.len, q.data);
	sl_buf_dispose(&q);
	return out;
}

/* ---- the redirect ------------------------------------------------------------------ */

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The value of name in a query string, percent- and plus-decoded; NULL
 * when absent, over SL_OAUTH_VALUE_MAX, or holding a control character. */
static char *query_get(const char *q, const char *name)
{
	size_t nl = strlen(name);

	while (*q) {
		size_t n = strcspn(q, "&");
		if (n > nl && !strncmp(q, name, nl) && q[nl] == '=') {
			const char *v = q + nl + 1, *end = q + n;
			char *out, *o;
			if ((size_t)(end - v) > SL_OAUTH_VALUE_MAX)
				return NULL;
			out = o = sl_alloc((size_t)(end - v) + 1);
			while (v < end) {
				int c = (unsigned char)*v++;
				if (c == '+') {
					c = ' ';
				} else if (c == '%' && end - v >= 2 && hexval(v[0]) >= 0 &&
					   hexval(v[1]) >= 0) {
					c = hexval(v[0]) * 16 + hexval(v[1]);
					v += 2;
				}
				if (c < 0x20 || c == 0x7f) {
					free(out);
					return NULL;
				}
				*o++ = (char)c;
			}
			*o = '\0';
			return out;
		}
		q += n + (q[n] == '&');
	}
	return NULL;
}

#define SHOWN_MAX (6 * 400 + 8)

int sl_oauth_redirect_check(const char *redirect, const struct sl_oauth_server *s,
			    const struct sl_oauth_pkce *p, char **code, struct sl_err *err)
{
	const char *q = strchr(redirect, '?');
	char *query, *state, *iss, *error, *desc, *c;
	int rc = SL_ERR_INVALID;
	struct sl_buf shown;

	q = q ? q + 1 : redirect;
	query = sl_strndup(q, strcspn(q, "#"));
	state = query_get(query, "state");
	iss = query_get(query, "iss");
	error = query_get(query, "error");
	desc = query_get(query, "error_description");
	c = query_get(query, "code");
	sl_buf_init(&shown, SHOWN_MAX);
	if (error) {
		/* The AS's words, for a person: escaped, and cut to a length
		 * whose escaped form always fits. */
		if (sl_escape(&shown, error, strnlen(error, 100), SL_ESCAPE_LOG) < 0 ||
		    (desc && (sl_buf_append(&shown, ": ", 2) < 0 ||
			      sl_escape(&shown, desc, strnlen(desc, 300), SL_ESCAPE_LOG) < 0)))
			abort(); /* SHOWN_MAX holds 400 bytes escaped */
		sl_err_set(err, "the authorization server refused: %.*s", (int)shown.len, shown.data);
	} else if (!state || strcmp(state, p->state) != 0) {
		sl_err_set(err, "the redirect's state does not match this login's: it answers another "
				"request (or was forged); nothing was saved");
	} else if (iss ? !same_issuer(iss, s->issuer) : s->iss_param) {
		sl_err_set(err, "the redirect's issuer (RFC 9207 iss) is %s, not %s: refused (a "
				"mix-up or a forged redirect)", iss ? "another one" : "missing", s->issuer);
	} else if (!c || !*c) {
		sl_err_set(err, "the redirect carries no code");
	} else {
		*code = c;
		c = NULL;
		rc = SL_OK;
	}
	sl_buf_dispose(&shown);
	free(query);
	free(state);
	free(iss);
	free(error);
	free(desc);
	free(c);
	return rc;
}

/* ---- discovery ---------------------------------------------------------------------- */

/* The probe asks without a token, as the gateway starts a link
 * (docs/internals/UPSTREAMS.md, "Protocol"), until a 401 names where to
 * log in. D_DISCOVER: server/discover in the 2026-07-28 form; a server
 * that answers it speaking that era is asked D_MODERN_LIST (its
 * tools/list, which such a server guards if discovery is open). Any other
 * answer: the session era. D_PROBE: an unauthenticated initialize. After
 * a 2xx to it, the rest of a client's handshake in the session it named:
 * D_PROBE_INITIALIZED (the notification), D_PROBE_LIST (tools/list, which
 * a server that lets initialize through guards), and D_PROBE_DELETE (the
 * session ended, so a login leaves nothing open on the server). Then the
 * PRM and the authorization server's metadata. The probe's steps come
 * first (step < D_PRM). */
enum disco_step { D_DISCOVER, D_MODERN_LIST, D_PROBE, D_PROBE_INITIALIZED, D_PROBE_LIST,
		  D_PROBE_DELETE, D_PRM, D_META };

#define PROBE_DELETE_MS 2000 /* ending the probe's session: a courtesy, not worth a longer wait */

struct disco {
	struct sl_fetcher *f;
	sl_oauth_discover_fn *cb;
	void *arg;
	char *server_url;
	struct sl_oauth_challenge ch;
	enum disco_step step;
	char *urls[4];               /* the candidates of this step */
	size_t nurls, at;
	struct sl_oauth_server s;
	char *prm_scopes;            /* the PRM's scopes_supported, joined */
	char *session_id;            /* the probe's session, after its initialize */
	char version[16];            /* the version its initialize chose (MCP-Protocol-Version) */
	char *probe_end;             /* after D_PROBE_DELETE: why discovery ends; NULL: the PRM */
};

static void disco_free(void *arg)
{
	struct disco *d = arg;

	for (size_t i = 0; i < d->nurls; i++)
		free(d->urls[i]);
	sl_oauth_server_dispose(&d->s);
	sl_oauth_challenge_dispose(&d->ch);
	free(d->prm_scopes);
	free(d->session_id);
	free(d->probe_end);
	free(d->server_url);
	free(d);
}

static void disco_end(struct disco *d, const char *why)
{
	if (!why && !d->s.scope)
		d->s.scope = d->ch.scope ? sl_strdup(d->ch.scope) : dup_or_null(d->prm_scopes);
	d->cb(d->arg, why ? NULL : &d->s, why);
	disco_free(d);
}

static void disco_fetch(struct disco *d);

static void set_candidates(struct disco *d, enum disco_step step)
{
	for (size_t i = 0; i < d->nurls; i++)
		free(d->urls[i]);
	d->nurls = d->at = 0;
	d->step = step;
}

static void add_candidate(struct disco *d, char *url)
{
	if (d->nurls < SL_COUNT(d->urls))
		d->urls[d->nurls++] = url;
	else
		free(url);
}

/* RFC 8414 3.1 and OpenID discovery, for an issuer with or without a path. */
static void meta_candidates(struct disco *d, const char *issuer)
{
	const char *p;
	size_t n;
	char *origin = origin_of(issuer);

	set_candidates(d, D_META);
	path_of(issuer, &p, &n);
	add_candidate(d, sl_well_known_url(issuer, "oauth-authorization-server"));
	add_candidate(d, sl_well_known_url(issuer, "openid-configuration"));
	if (n)
		add_candidate(d, sl_printf("%s%.*s/.well-known/openid-configuration", origin, (int)n, p));
	free(origin);
}

/* No PRM anywhere: the 2025-03-26 way. The server's origin is its
 * authorization server; without metadata there, its default endpoints. */
static void go_legacy(struct disco *d)
{
	char *origin = origin_of(d->server_url);

	d->s.legacy = true;
	free(d->s.resource);
	d->s.resource = sl_strdup(d->server_url);
	free(d->s.issuer);
	d->s.issuer = origin;
	set_candidates(d, D_META);
	add_candidate(d, sl_printf("%s/.well-known/oauth-authorization-server", origin));
	add_candidate(d, sl_printf("%s/.well-known/openid-configuration", origin));
	disco_fetch(d);
}

static void legacy_defaults(struct disco *d)
{
	const char *o = d->s.issuer;

	d->s.authorization_endpoint = sl_printf("%s/authorize", o);
	d->s.token_endpoint = sl_printf("%s/token", o);
	d->s.registration_endpoint = sl_printf("%s/register", o);
	disco_end(d, NULL);
}

/* The PRM: its resource must cover the server; its first authorization
 * server is the one used. Returns why it cannot be used, or NULL. */
static const char *take_prm(struct disco *d, yyjson_val *root, char *why, size_t wl)
{
	const char *resource = str(root, "resource");
	yyjson_val *as = yyjson_obj_get(root, "authorization_servers");
	const char *issuer = yyjson_is_arr(as) ? yyjson_get_str(yyjson_arr_get_first(as)) : NULL;
	const char *bad;

	if (!yyjson_is_obj(root))
		return "is not a JSON object";
	if (resource && !resource_covers(resource, d->server_url)) {
		snprintf(why, wl, "names the resource %.300s, which is not %.300s: refused (metadata "
				  "for another server)", resource, d->server_url);
		return why;
	}
	if (!issuer || strlen(issuer) > SL_OAUTH_VALUE_MAX)
		return "names no authorization server";
	if ((bad = url_problem(issuer))) {
		snprintf(why, wl, "names an authorization server that %s", bad);
		return why;
	}
	d->s.resource = sl_strdup(resource ? resource : d->server_url);
	d->s.issuer = sl_strdup(issuer);
	d->prm_scopes = join(yyjson_obj_get(root, "scopes_supported"));
	return NULL;
}

static const char *take_meta(struct disco *d, yyjson_val *root, char *why, size_t wl)
{
	static const struct { const char *key; size_t off; bool required; } eps[] = {
		{ "authorization_endpoint", offsetof(struct sl_oauth_server, authorization_endpoint), true },
		{ "token_endpoint", offsetof(struct sl_oauth_server, token_endpoint), true },
		{ "registration_endpoint", offsetof(struct sl_oauth_server, registration_endpoint), false },
		{ "revocation_endpoint", offsetof(struct sl_oauth_server, revocation_endpoint), false },
	};
	const char *issuer = str(root, "issuer"), *bad;
	yyjson_val *methods = yyjson_obj_get(root, "token_endpoint_auth_methods_supported");
	yyjson_val *pkce = yyjson_obj_get(root, "code_challenge_methods_supported");

	if (!yyjson_is_obj(root))
		return "is not a JSON object";
	/* RFC 8414 3.3: the issuer must be the one whose metadata was asked
	 * for (a 2025-03-26 server's may sit under its origin). */
	if (!issuer || (!d->s.legacy && !same_issuer(issuer, d->s.issuer))) {
		snprintf(why, wl, "is for the issuer %.300s, not %.300s: refused", issuer ? issuer : "(none)",
			 d->s.issuer);
		return why;
	}
	if (d->s.legacy) {
		char *a = origin_of(issuer), *b = origin_of(d->server_url);
		bool same = !strcasecmp(a, b);
		free(a);
		free(b);
		if (!same)
			return "names an issuer at another origin than the server's: refused";
		free(d->s.issuer);
		d->s.issuer = sl_strdup(issuer);
	}
	for (size_t i = 0; i < SL_COUNT(eps); i++) {
		const char *u = str(root, eps[i].key);
		if (!u && !eps[i].required)
			continue;
		if ((bad = url_problem(u))) {
			snprintf(why, wl, "has a %s that %s", eps[i].key, bad);
			return why;
		}
		*(char **)((char *)&d->s + eps[i].off) = sl_strdup(u);
	}
	/* MCP: PKCE with S256 is required; a server that lists methods
	 * without it cannot be used safely. */
	if (pkce && !has_string(pkce, "S256"))
		return "does not support PKCE with S256: refused (MCP requires it)";
	if (yyjson_is_arr(methods)) {
		if (has_string(methods, "none"))
			d->s.auth_methods |= SL_OAUTH_AUTH_NONE;
		if (has_string(methods, "client_secret_basic"))
			d->s.auth_methods |= SL_OAUTH_AUTH_BASIC;
		if (has_string(methods, "client_secret_post"))
			d->s.auth_methods |= SL_OAUTH_AUTH_POST;
	}
	d->s.cimd = yyjson_get_bool(yyjson_obj_get(root, "client_id_metadata_document_supported"));
	d->s.iss_param = yyjson_get_bool(yyjson_obj_get(root, "authorization_response_iss_parameter_supported"));
	d->s.offline_access = has_string(yyjson_obj_get(root, "scopes_supported"), "offline_access");
	return NULL;
}

/* The PRM's candidates: the challenge's resource_metadata, else the
 * path-suffixed, then the root well-known URL. */
static void prm_candidates(struct disco *d)
{
	char *origin, *root;

	set_candidates(d, D_PRM);
	if (d->ch.resource_metadata && !url_problem(d->ch.resource_metadata))
		add_candidate(d, sl_strdup(d->ch.resource_metadata));
	add_candidate(d, sl_well_known_url(d->server_url, "oauth-protected-resource"));
	origin = origin_of(d->server_url);
	root = sl_printf("%s/.well-known/oauth-protected-resource", origin);
	free(origin);
	if (strcmp(root, d->urls[d->nurls - 1]))
		add_candidate(d, root);
	else
		free(root);
	disco_fetch(d);
}

/* The probe is over: why discovery ends, or NULL to go on to the PRM. A
 * session it opened is ended first (MCP Streamable HTTP: DELETE with its
 * Mcp-Session-Id), whatever the outcome. */
static void probe_over(struct disco *d, const char *why)
{
	if (d->session_id) {
		d->probe_end = why ? sl_strdup(why) : NULL;
		d->step = D_PROBE_DELETE;
		disco_fetch(d);
	} else if (why) {
		disco_end(d, why);
	} else {
		prm_candidates(d);
	}
}

/* The version the server chose in its initialize answer (JSON, or the
 * first data line of an event stream), which the probe's later requests
 * carry in MCP-Protocol-Version: a server of an older version refuses the
 * latest one with 400, which would read as "needs no login". Unreadable or
 * unknown: the version asked for. */
static void probe_version(struct disco *d, const char *body, size_t len)
{
	const char *json = body, *end = body ? body + len : NULL;
	yyjson_doc *doc;
	const char *v;

	snprintf(d->version, sizeof(d->version), "%s", SL_MCP_LATEST_LEGACY);
	if (!body)
		return;
	while (json < end && (*json == ' ' || *json == '\t' || *json == '\r' || *json == '\n'))
		json++;
	if (json < end && *json != '{') { /* an event stream: its first data line */
		json = memmem(body, len, "data:", 5);
		if (!json)
			return;
		json += 5;
		end = memchr(json, '\n', (size_t)(body + len - json));
		if (!end)
			end = body + len;
	}
	doc = sl_json_read(json, (size_t)(end - json), 0, NULL);
	v = yyjson_get_str(yyjson_ptr_get(yyjson_doc_get_root(doc), "/result/protocolVersion"));
	if (v && sl_mcp_legacy_version(v) && strlen(v) < sizeof(d->version))
		snprintf(d->version, sizeof(d->version), "%s", v);
	yyjson_doc_free(doc);
}

/* Whether the answer to the probe's server/discover says the server
 * speaks 2026-07-28 (a JSON body: an event stream is not how that era
 * answers it). */
static bool discovered_modern(const struct sl_fetch_result *res)
{
	yyjson_doc *doc = res->body ? sl_json_read(res->body, res->len, 0, NULL) : NULL;
	yyjson_val *v, *versions = yyjson_ptr_get(yyjson_doc_get_root(doc), "/result/supportedVersions");
	size_t i, n;
	bool yes = false;

	yyjson_arr_foreach(versions, i, n, v)
		yes |= yyjson_is_str(v) && !strcmp(yyjson_get_str(v), SL_MCP_MODERN);
	yyjson_doc_free(doc);
	return yes;
}

/* An answer to one of the probe's requests (the steps before D_PRM). */
static void on_probe(struct disco *d, const struct sl_fetch_result *res)
{
	char why[800];

	if (d->step == D_PROBE_DELETE) {
		/* Whatever came back (405: the server does not let clients end
		 * sessions; no answer within PROBE_DELETE_MS), the probe is done. */
		if (d->probe_end)
			disco_end(d, d->probe_end);
		else
			prm_candidates(d);
		return;
	}
	if (!res->error && (res->status == 401 || res->status == 403)) {
		if (res->www_authenticate &&
		    sl_oauth_challenge_parse(res->www_authenticate, strlen(res->www_authenticate),
					     &d->ch) != SL_OK)
			memset(&d->ch, 0, sizeof(d->ch)); /* no usable challenge: the well-known URLs */
		probe_over(d, NULL);
		return;
	}
	if (res->error) {
		snprintf(why, sizeof(why), "the server %.300s cannot be reached: %s", d->server_url,
			 res->error);
		probe_over(d, why);
		return;
	}
	switch (d->step) {
	case D_DISCOVER:
		d->step = res->status >= 200 && res->status < 300 && discovered_modern(res) ?
			  D_MODERN_LIST : D_PROBE;
		disco_fetch(d);
		return;
	case D_MODERN_LIST:
		if (res->status >= 200 && res->status < 300)
			snprintf(why, sizeof(why), "the server answered without asking for authorization: "
				 "it needs no login");
		else
			snprintf(why, sizeof(why), "the server answered without asking for authorization "
				 "(server/discover, then HTTP %ld to tools/list): it needs no login",
				 res->status);
		break;
	case D_PROBE:
		if (res->status < 200 || res->status >= 300) {
			snprintf(why, sizeof(why), "the server answered HTTP %ld, not 401, without a token",
				 res->status);
			break;
		}
		/* MCP authorization leaves it to the server which requests need
		 * a token, and some let initialize through without one: finish
		 * the handshake and ask for its tools, which such a server guards. */
		if (res->session_id && header_safe(res->session_id))
			d->session_id = sl_strdup(res->session_id);
		probe_version(d, res->body, res->len);
		d->step = D_PROBE_INITIALIZED;
		disco_fetch(d);
		return;
	case D_PROBE_INITIALIZED:
		/* MCP 2025-11-25 lifecycle: initialized before any other request.
		 * Its answer (202) says nothing of tokens: tools/list will. */
		d->step = D_PROBE_LIST;
		disco_fetch(d);
		return;
	default:
		if (res->status >= 200 && res->status < 300)
			snprintf(why, sizeof(why), "the server answered without asking for authorization: "
				 "it needs no login");
		else
			/* Not a challenge (a server that refuses tools/list for
			 * another reason): initialize went through. */
			snprintf(why, sizeof(why), "the server answered without asking for authorization "
				 "(initialize, then HTTP %ld to tools/list): it needs no login", res->status);
		break;
	}
	probe_over(d, why);
}

static void on_disco(void *arg, const struct sl_fetch_result *res)
{
	struct disco *d = arg;
	char why[800], msg[1200];
	const char *bad = NULL;
	yyjson_doc *doc = NULL;
	const char *url;

	if (d->step < D_PRM) {
		on_probe(d, res);
		return;
	}
	url = d->urls[d->at];
	if (!res->error && res->status == 200)
		doc = sl_json_read(res->body, res->len, 0, NULL);
	if (doc) {
		bad = d->step == D_PRM ? take_prm(d, yyjson_doc_get_root(doc), why, sizeof(why)) :
					 take_meta(d, yyjson_doc_get_root(doc), why, sizeof(why));
		yyjson_doc_free(doc);
		if (bad) {
			snprintf(msg, sizeof(msg), "%s %.300s %s",
				 d->step == D_PRM ? "the protected resource metadata at" :
						    "the authorization server metadata at", url, bad);
			disco_end(d, msg);
			return;
		}
		if (d->step == D_PRM) {
			meta_candidates(d, d->s.issuer);
			disco_fetch(d);
		} else {
			disco_end(d, NULL);
		}
		return;
	}
	/* Unreachable or no document here: the next candidate. */
	if (++d->at < d->nurls) {
		disco_fetch(d);
		return;
	}
	if (d->step == D_PRM) {
		go_legacy(d);
	} else if (d->s.legacy && !res->error) {
		legacy_defaults(d);
	} else {
		snprintf(why, sizeof(why), "the authorization server %.300s publishes no metadata (%s)",
			 d->s.issuer, res->error ? res->error : "RFC 8414 and OpenID discovery both failed");
		disco_end(d, why);
	}
}

static void disco_fetch(struct disco *d)
{
	static const char probe[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\""
		SL_MCP_LATEST_LEGACY "\",\"capabilities\":{},\"clientInfo\":{\"name\":\"sluice\",\"version\":\""
		SL_VERSION "\"}}}";
	static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
	static const char list[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
	/* MCP 2026-07-28: every request carries the version, capabilities and
	 * who asks in _meta, and over HTTP the version and method as headers. */
#define MODERN_META "{\"_meta\":{\"" SL_MCP_META_VERSION "\":\"" SL_MCP_MODERN "\",\"" \
	SL_MCP_META_CAPS "\":{},\"" SL_MCP_META_CLIENT "\":{\"name\":\"sluice\",\"version\":\"" \
	SL_VERSION "\"}}}"
	static const char discover[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":" MODERN_META "}";
	static const char modern_list[] =
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":" MODERN_META "}";
#undef MODERN_META
	struct sl_fetch_req q = { .max_bytes = SL_OAUTH_DOC_MAX, .timeout_ms = SL_OAUTH_TIMEOUT_MS,
				  .dispose = disco_free };

	if (d->step <= D_MODERN_LIST) {
		q.url = d->server_url;
		q.accept = "application/json, text/event-stream";
		q.protocol_version = SL_MCP_MODERN;
		q.mcp_method = d->step == D_DISCOVER ? "server/discover" : "tools/list";
		q.json = d->step == D_DISCOVER ? discover : modern_list;
	} else if (d->step < D_PRM) {
		q.url = d->server_url;
		q.accept = "application/json, text/event-stream";
		if (d->step != D_PROBE) {
			q.session_id = d->session_id;
			q.protocol_version = d->version;
		}
		if (d->step == D_PROBE) {
			q.json = probe;
		} else if (d->step == D_PROBE_INITIALIZED) {
			q.json = initialized;
		} else if (d->step == D_PROBE_LIST) {
			q.json = list;
		} else {
			q.method = "DELETE";
			q.timeout_ms = PROBE_DELETE_MS;
		}
	} else {
		q.url = d->urls[d->at];
	}
	sl_fetch_start(d->f, &q, on_disco, d);
}

void sl_oauth_discover(struct sl_fetcher *f, const char *server_url,
		       const char *www_authenticate, sl_oauth_discover_fn *cb, void *arg)
{
	struct disco *d = sl_alloc(sizeof(*d));
	struct sl_fetch_result res = { .status = 401, .www_authenticate = www_authenticate };

	d->f = f;
	d->cb = cb;
	d->arg = arg;
	d->server_url = sl_strdup(server_url);
	d->step = D_DISCOVER;
	if (www_authenticate)
		on_disco(d, &res); /* as if the probe had been answered so */
	else
		disco_fetch(d);
}

/* ---- registration ------------------------------------------------------------------ */

struct reg {
	sl_oauth_register_fn *cb;
	void *arg;
	char *issuer, *redirect_uri, *asked_method;
};

static const char *pick_method(const struct sl_oauth_server *s, bool secret)
{
	if (!secret)
		return "none";
	if (!s->auth_methods || (s->auth_methods & SL_OAUTH_AUTH_BASIC))
		return "client_secret_basic";
	return (s->auth_methods & SL_OAUTH_AUTH_POST) ? "client_secret_post" : "client_secret_basic";
}

static void reg_free(void *arg)
{
	struct reg *g = arg;

	free(g->issuer);
	free(g->redirect_uri);
	free(g->asked_method);
	free(g);
}

static void on_registered(void *arg, const struct sl_fetch_result *res)
{
	struct reg *g = arg;
	yyjson_doc *doc = NULL;
	yyjson_val *root;
	struct sl_oauth_registration r = { 0 };
	char why[400];

	if (!res->error && (res->status == 200 || res->status == 201))
		doc = sl_json_read(res->body, res->len, 0, NULL);
	root = yyjson_doc_get_root(doc);
	if (!str(root, "client_id") || !header_safe(str(root, "client_id"))) {
		if (res->error)
			snprintf(why, sizeof(why), "dynamic registration failed: %s", res->error);
		else
			snprintf(why, sizeof(why), "dynamic registration failed: HTTP %ld%s%.80s",
				 res->status, str(root, "error") ? ": " : "",
				 str(root, "error") ? str(root, "error") : "");
		g->cb(g->arg, NULL, why);
	} else {
		const char *m = str(root, "token_endpoint_auth_method");
		r.issuer = g->issuer;
		r.client_id = (char *)str(root, "client_id");
		r.client_secret = (char *)str(root, "client_secret");
		r.auth_method = (char *)(m ? m : r.client_secret ? g->asked_method : "none");
		r.redirect_uri = g->redirect_uri;
		r.how = "dynamic";
		g->cb(g->arg, &r, NULL);
	}
	yyjson_doc_free(doc);
	reg_free(g);
}

char *sl_oauth_registration_body(const struct sl_oauth_client_want *want,
				  const char *redirect_uri, const char *auth_method)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(d), *a;
	char *body;

	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_str(d, o, "client_name", want->client_name ? want->client_name : "sluice");
	/* OpenID Connect Registration 2: a native client redirects to a
	 * loopback address (the CLI's listener); a redirect to a gateway's
	 * public URL is a web client's. */
	yyjson_mut_obj_add_str(d, o, "application_type",
			       !redirect_uri || !strncmp(redirect_uri, "http://127.0.0.1", 16) ||
					       !strncmp(redirect_uri, "http://localhost", 16) ||
					       !strncmp(redirect_uri, "http://[::1]", 12) ?
				       "native" : "web");
	yyjson_mut_obj_add_str(d, o, "token_endpoint_auth_method", auth_method);
	a = yyjson_mut_obj_add_arr(d, o, "grant_types");
	yyjson_mut_arr_add_str(d, a, "authorization_code");
	yyjson_mut_arr_add_str(d, a, "refresh_token");
	a = yyjson_mut_obj_add_arr(d, o, "response_types");
	yyjson_mut_arr_add_str(d, a, "code");
	a = yyjson_mut_obj_add_arr(d, o, "redirect_uris");
	if (redirect_uri)
		yyjson_mut_arr_add_str(d, a, redirect_uri);
	/* No "scope" (RFC 7591 2: optional). An AS may hold the client to the
	 * scopes it registered with (oidc-provider does): registered with the
	 * challenge's scope, it could never ask offline_access, nor a step-up
	 * scope with the registration that is reused. Scopes are asked on the
	 * authorization request. */
	body = yyjson_mut_write(d, 0, NULL);
	yyjson_mut_doc_free(d);
	if (!body)
		abort();
	return body;
}

void sl_oauth_register(struct sl_fetcher *f, const struct sl_oauth_server *s,
		       const struct sl_oauth_client_want *want,
		       const struct sl_oauth_registration *prev, const char *redirect_uri,
		       sl_oauth_register_fn *cb, void *arg)
{
	struct sl_oauth_registration r = { .issuer = s->issuer, .redirect_uri = (char *)redirect_uri };
	struct reg *g;
	struct sl_fetch_req q = { .max_bytes = SL_OAUTH_DOC_MAX, .timeout_ms = SL_OAUTH_TIMEOUT_MS,
				  .dispose = reg_free };
	char *body;

	if (want->client_id) {
		r.client_id = (char *)want->client_id;
		r.client_secret = (char *)want->client_secret;
		r.key = want->key;
		r.auth_method = (char *)(want->key ? "private_key_jwt" :
					 pick_method(s, want->client_secret != NULL));
		r.how = "config";
		cb(arg, &r, NULL);
		return;
	}
	/* A stored registration at this issuer (and, for a dynamic one, for
	 * this redirect) is reused. */
	if (prev && prev->client_id && prev->issuer && same_issuer(prev->issuer, s->issuer) &&
	    (!prev->how || strcmp(prev->how, "dynamic") || !redirect_uri ||
	     (prev->redirect_uri && !strcmp(prev->redirect_uri, redirect_uri))) &&
	    !(prev->how && !strcmp(prev->how, "config"))) {
		cb(arg, prev, NULL);
		return;
	}
	if (want->metadata_url && s->cimd) {
		r.client_id = (char *)want->metadata_url;
		r.auth_method = "none";
		r.how = "metadata document";
		cb(arg, &r, NULL);
		return;
	}
	if (!s->registration_endpoint) {
		cb(arg, NULL, "the authorization server offers no registration: set \"oauth\": "
			      "{\"clientId\": ...} in the server's entry (a client registered there)");
		return;
	}
	g = sl_alloc(sizeof(*g));
	g->cb = cb;
	g->arg = arg;
	g->issuer = sl_strdup(s->issuer);
	g->redirect_uri = dup_or_null(redirect_uri);
	/* A public client where the AS allows one, else what it takes. */
	g->asked_method = sl_strdup(!s->auth_methods || (s->auth_methods & SL_OAUTH_AUTH_NONE) ?
					    "none" : pick_method(s, true));
	body = sl_oauth_registration_body(want, redirect_uri, g->asked_method);
	q.url = s->registration_endpoint;
	q.json = body;
	sl_fetch_start(f, &q, on_registered, g);
	free(body);
}

/* ---- token requests ---------------------------------------------------------------- */

char *sl_oauth_token_subject(const char *token)
{
	const char *a = token ? strchr(token, '.') : NULL, *b = a ? strchr(a + 1, '.') : NULL;
	struct base64_decode_ctx ctx;
	yyjson_doc *doc = NULL;
	size_t n, len = 0;
	char *padded, *raw, *out = NULL;
	const char *sub;

	if (!b || strchr(b + 1, '.') || (n = (size_t)(b - a - 1)) == 0 || n > SL_OAUTH_DOC_MAX)
		return NULL;
	/* Nettle wants the padding JWTs leave out (RFC 7515 2). */
	padded = sl_printf("%.*s%.*s", (int)n, a + 1, (int)((4 - n % 4) % 4), "===");
	raw = sl_alloc(BASE64_DECODE_LENGTH(strlen(padded)) + 1);
	base64url_decode_init(&ctx);
	if (base64_decode_update(&ctx, &len, (uint8_t *)raw, strlen(padded), padded) &&
	    base64_decode_final(&ctx)) {
		doc = sl_json_read(raw, len, 0, NULL);
		sub = str(yyjson_doc_get_root(doc), "sub");
		if (sub && *sub && strlen(sub) <= SL_OAUTH_VALUE_MAX)
			out = sl_strdup(sub);
	}
	yyjson_doc_free(doc);
	free(raw);
	free(padded);
	return out;
}

struct tok {
	sl_oauth_token_fn *cb;
	void *arg;
	char *scope_asked;
};

static void tok_free(void *arg)
{
	struct tok *t = arg;

	free(t->scope_asked);
	free(t);
}

static void on_token(void *arg, const struct sl_fetch_result *res)
{
	struct tok *t = arg;
	struct sl_oauth_token_result out = { 0 };
	struct sl_oauth_tokens tk = { 0 };
	yyjson_doc *doc = NULL;
	yyjson_val *root, *exp;
	const char *type, *err;
	char why[400];

	if (!res->error && res->len)
		doc = sl_json_read(res->body, res->len, 0, NULL);
	root = yyjson_doc_get_root(doc);
	err = str(root, "error");
	type = str(root, "token_type");
	if (res->error) {
		snprintf(why, sizeof(why), "the token endpoint cannot be reached: %s", res->error);
	} else if (res->status == 200 && str(root, "access_token") &&
		   header_safe(str(root, "access_token")) && (!type || !strcasecmp(type, "bearer"))) {
		tk.access_token = (char *)str(root, "access_token");
		tk.refresh_token = str(root, "refresh_token") && header_safe(str(root, "refresh_token")) ?
					   (char *)str(root, "refresh_token") : NULL;
		tk.scope = (char *)(str(root, "scope") ? str(root, "scope") : t->scope_asked);
		exp = yyjson_obj_get(root, "expires_in");
		if (yyjson_is_num(exp) && yyjson_get_num(exp) > 0 && yyjson_get_num(exp) < 1e9) {
			tk.issued_at = (int64_t)time(NULL);
			tk.expires_at = tk.issued_at + (int64_t)yyjson_get_num(exp);
		}
		out.tokens = &tk;
		why[0] = '\0';
	} else if (res->status == 200) {
		snprintf(why, sizeof(why), "the token endpoint answered without a usable bearer token");
	} else if (err) {
		char code[64];
		snprintf(code, sizeof(code), "%s", err);
		for (char *c = code; *c; c++)
			if (*c < 0x21 || *c > 0x7e)
				*c = '?';
		/* 5xx is the server's own failure, not a refusal of this client. */
		snprintf(why, sizeof(why), "the authorization server %s the token request (HTTP %ld: %s)",
			 res->status >= 500 ? "failed on" : "refused", res->status, code);
		out.error = err;
	} else {
		snprintf(why, sizeof(why), "the token endpoint answered HTTP %ld", res->status);
	}
	out.why = why[0] ? why : NULL;
	t->cb(t->arg, &out);
	yyjson_doc_free(doc);
	tok_free(t);
}

/* The client's authentication at the token (or revocation) endpoint:
 * Basic (form-encoded id and secret, RFC 6749 2.3.1), in the body, a
 * client assertion signed with the client's key (RFC 7523 2.2), or only
 * client_id for a public client. NULL, or why the assertion could not be
 * made (err). */
static const char *client_auth(struct sl_buf *form, struct sl_fetch_req *q, char **user,
			       char **pass, const struct sl_oauth_server *s,
			       const struct sl_oauth_registration *r, struct sl_err *err)
{
	*user = *pass = NULL;
	if (r->key) {
		/* aud: the issuer (RFC 7523bis and MCP's SEP-1046; RFC 7523 3
		 * also allows the token endpoint, which an AS without
		 * metadata is known by). */
		char *jwt = sl_oauth_assertion(r->key, r->client_id,
					       s->issuer ? s->issuer : s->token_endpoint,
					       (int64_t)time(NULL), err);
		if (!jwt)
			return err->msg;
		add_param(form, "client_id", r->client_id);
		add_param(form, "client_assertion_type",
			  "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
		add_param(form, "client_assertion", jwt);
		free(jwt);
		return NULL;
	}
	if (r->client_secret && (!r->auth_method || !strcmp(r->auth_method, "client_secret_basic"))) {
		*user = sl_url_encode(r->client_id);
		*pass = sl_url_encode(r->client_secret);
		q->user = *user;
		q->password = *pass;
		return NULL;
	}
	add_param(form, "client_id", r->client_id);
	if (r->client_secret && r->auth_method && !strcmp(r->auth_method, "client_secret_post"))
		add_param(form, "client_secret", r->client_secret);
	return NULL;
}

void sl_oauth_token(struct sl_fetcher *f, const struct sl_oauth_server *s,
		    const struct sl_oauth_registration *r, const struct sl_oauth_grant *g,
		    sl_oauth_token_fn *cb, void *arg)
{
	struct sl_fetch_req q = { .url = s->token_endpoint, .max_bytes = SL_OAUTH_DOC_MAX,
				  .timeout_ms = SL_OAUTH_TIMEOUT_MS, .dispose = tok_free };
	struct tok *t = sl_alloc(sizeof(*t));
	struct sl_buf form;
	struct sl_err err;
	char *user, *pass;

	t->cb = cb;
	t->arg = arg;
	t->scope_asked = dup_or_null(g->scope);
	sl_buf_init(&form, SIZE_MAX / 2);
	switch (g->kind) {
	case SL_OAUTH_CODE:
		add_param(&form, "grant_type", "authorization_code");
		add_param(&form, "code", g->code);
		add_param(&form, "code_verifier", g->verifier);
		add_param(&form, "redirect_uri", g->redirect_uri);
		break;
	case SL_OAUTH_REFRESH:
		add_param(&form, "grant_type", "refresh_token");
		add_param(&form, "refresh_token", g->refresh_token);
		break;
	case SL_OAUTH_CLIENT_CREDENTIALS:
		add_param(&form, "grant_type", "client_credentials");
		break;
	case SL_OAUTH_TOKEN_EXCHANGE:
		add_param(&form, "grant_type", "urn:ietf:params:oauth:grant-type:token-exchange");
		add_param(&form, "subject_token", g->subject_token);
		add_param(&form, "subject_token_type",
			  g->subject_token_type ? g->subject_token_type : SL_OAUTH_ACCESS_TOKEN_TYPE);
		add_param(&form, "requested_token_type", SL_OAUTH_ACCESS_TOKEN_TYPE);
		break;
	}
	if (g->kind != SL_OAUTH_CODE)
		add_param(&form, "scope", g->scope && *g->scope ? g->scope : NULL);
	add_param(&form, "resource", s->resource);
	if (client_auth(&form, &q, &user, &pass, s, r, &err)) {
		/* No request was made: the answer comes now (oauth.h). */
		struct sl_oauth_token_result res = { .why = err.msg };
		cb(arg, &res);
		tok_free(t);
	} else {
		q.form = form.data;
		sl_fetch_start(f, &q, on_token, t);
	}
	sl_buf_dispose(&form);
	free(user);
	free(pass);
}

/* ---- revocation --------------------------------------------------------------------- */

struct revoke {
	sl_oauth_done_fn *cb;
	void *arg;
};

static void on_revoked(void *arg, const struct sl_fetch_result *res)
{
	struct revoke *v = arg;
	char why[300];

	if (res->error)
		snprintf(why, sizeof(why), "the revocation endpoint cannot be reached: %s", res->error);
	else if (res->status != 200)
		snprintf(why, sizeof(why), "the revocation endpoint answered HTTP %ld", res->status);
	else
		why[0] = '\0';
	v->cb(v->arg, why[0] ? why : NULL);
	free(v);
}

void sl_oauth_revoke(struct sl_fetcher *f, const struct sl_oauth_server *s,
		     const struct sl_oauth_registration *r, const char *token, const char *hint,
		     sl_oauth_done_fn *cb, void *arg)
{
	struct sl_fetch_req q = { .url = s->revocation_endpoint, .max_bytes = SL_OAUTH_DOC_MAX,
				  .timeout_ms = SL_OAUTH_TIMEOUT_MS, .dispose = free };
	struct revoke *v;
	struct sl_buf form;
	struct sl_err err;
	char *user, *pass;

	if (!s->revocation_endpoint || url_problem(s->revocation_endpoint)) {
		cb(arg, NULL);
		return;
	}
	v = sl_alloc(sizeof(*v));
	v->cb = cb;
	v->arg = arg;
	sl_buf_init(&form, SIZE_MAX / 2);
	add_param(&form, "token", token);
	add_param(&form, "token_type_hint", hint);
	if (client_auth(&form, &q, &user, &pass, s, r, &err)) {
		cb(arg, err.msg);
		free(v);
	} else {
		q.form = form.data;
		sl_fetch_start(f, &q, on_revoked, v);
	}
	sl_buf_dispose(&form);
	free(user);
	free(pass);
}

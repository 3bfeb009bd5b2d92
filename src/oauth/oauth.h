/*
 * sluice as an OAuth 2.1 client of remote MCP servers (the MCP
 * authorization specification, client side). src/auth/ is the other face:
 * who calls sluice. Here is how sluice proves itself to the servers it
 * calls. docs/internals/AUTH.md, "Toward upstreams".
 *
 *   oauth.h      the protocol: discovery, registration, authorization URL,
 *                redirect check, token and revocation requests (flow.c),
 *                the WWW-Authenticate reader (challenge.c), private_key_jwt
 *                client assertions (assertion.c)
 *   store.h      tokens and registrations on disk (store.c)
 *   client.h     one remote upstream's tokens at run time: the header to
 *                send, refresh (single-flight), "needs login" (client.c)
 *   login.h      one login's steps, for the CLI and the web login (login.c)
 *   weblogin.h   callers' logins through the gateway's HTTP face: pending
 *                logins and their pages (weblogin.c)
 *   cli/auth.c   sluice auth login | status | logout
 *
 * Every request goes through a fetcher (event/fetch.h): bounded answers, a
 * deadline, no redirect followed. A callback runs once: from the loop, or
 * before the call returns when no request was needed (a configured or
 * stored registration, no revocation endpoint).
 */
#ifndef SL_OAUTH_OAUTH_H
#define SL_OAUTH_OAUTH_H

#include "config/config.h"
#include "core/common.h"

#include <stdint.h>

struct sl_fetcher;

#define SL_OAUTH_DOC_MAX (64 * 1024) /* a metadata, registration or token answer */
#define SL_OAUTH_VALUE_MAX 8192      /* a token, a URL, a scope list */
#define SL_OAUTH_TIMEOUT_MS 10000    /* one request to an authorization server */

/* ---- WWW-Authenticate (RFC 6750 3, RFC 9728 5.1) -------------------------- */

/* What a Bearer challenge says; every field NULL when absent. */
struct sl_oauth_challenge {
	char *resource_metadata; /* RFC 9728: where the Protected Resource Metadata is */
	char *scope;             /* what the server wants (space-separated) */
	char *error;             /* invalid_token, insufficient_scope, ... */
	char *error_description;
};

/* Reads the Bearer challenge of a WWW-Authenticate value (the first one, if
 * the header carries several schemes). SL_ERR_NOT_FOUND: no Bearer
 * challenge; SL_ERR_INVALID: malformed. Values over SL_OAUTH_VALUE_MAX are
 * refused, not cut. */
int sl_oauth_challenge_parse(const char *h, size_t len, struct sl_oauth_challenge *out)
	SL_MUST_USE;
void sl_oauth_challenge_dispose(struct sl_oauth_challenge *c);

/* ---- what discovery finds ------------------------------------------------- */

enum {
	SL_OAUTH_AUTH_NONE = 1u << 0,            /* token endpoint auth methods */
	SL_OAUTH_AUTH_BASIC = 1u << 1,           /* client_secret_basic */
	SL_OAUTH_AUTH_POST = 1u << 2,            /* client_secret_post */
};

/* One server's authorization server, as discovery found it. */
struct sl_oauth_server {
	char *resource;               /* the RFC 8707 resource: the server's canonical URL */
	char *issuer;
	char *authorization_endpoint;
	char *token_endpoint;
	char *registration_endpoint;  /* NULL: no dynamic registration */
	char *revocation_endpoint;    /* NULL: no RFC 7009 */
	char *scope;                  /* what to ask for: the challenge's scope, else the PRM's
				       * scopes_supported, else NULL (ask for none) */
	unsigned auth_methods;        /* SL_OAUTH_AUTH_*; 0 when not said: basic assumed */
	bool cimd;                    /* client_id_metadata_document_supported */
	bool offline_access;          /* offline_access is among the AS's scopes */
	bool iss_param;               /* RFC 9207: the AS says it puts iss on redirects */
	bool legacy;                  /* 2025-03-26: no PRM, endpoints at the server's origin */
};

void sl_oauth_server_dispose(struct sl_oauth_server *s);
/* A deep copy. */
void sl_oauth_server_copy(struct sl_oauth_server *dst, const struct sl_oauth_server *src);

/* ---- private_key_jwt (RFC 7523 2.2) ------------------------------------------ */

/* A client's signing key: a PEM private key (PKCS#8, or the PKCS#1 / SEC 1
 * forms), through GnuTLS. ES256 takes an EC P-256 key, RS256 an RSA key of
 * 2048 bits or more. */
struct sl_oauth_key;

#define SL_OAUTH_KEY_FILE_MAX (64 * 1024)

/* Reads and parses the key file at path (a regular file of at most
 * SL_OAUTH_KEY_FILE_MAX bytes that other users cannot read: group
 * readable is allowed). Every error names the file. */
int sl_oauth_key_load(const char *path, enum sl_oauth_sign_alg alg, struct sl_oauth_key **out,
		      struct sl_err *err) SL_MUST_USE;
/* The same from PEM text in memory (what says "where" in err: a file). */
int sl_oauth_key_parse(const char *pem, size_t len, enum sl_oauth_sign_alg alg,
		       const char *where, struct sl_oauth_key **out, struct sl_err *err) SL_MUST_USE;
void sl_oauth_key_free(struct sl_oauth_key *k);
/* "ES256" or "RS256". */
const char *sl_oauth_key_alg(const struct sl_oauth_key *k);
/* Reads the key of every server of cfg that has oauth.privateKeyFile into
 * its oauth.key (freed with cfg), so that a missing or broken key fails the
 * start, reload or check that loads the config, naming the server and the
 * file, not a token request later. Returns 0, or SL_ERR_* with err set as
 * the config's own messages are (FILE: mcpServers.NAME: ...). */
int sl_oauth_keys_load(struct sl_config *cfg, struct sl_err *err) SL_MUST_USE;

/* A client assertion (RFC 7523 3): a JWS, compact, of
 * {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
 * "exp": now + SL_OAUTH_ASSERTION_TTL_S, "jti": 128 random bits}, signed
 * with k. Malloc'd; NULL with err set when GnuTLS cannot sign. */
#define SL_OAUTH_ASSERTION_TTL_S 60
char *sl_oauth_assertion(const struct sl_oauth_key *k, const char *client_id,
			 const char *audience, int64_t now, struct sl_err *err);

/* ---- registration ----------------------------------------------------------- */

/* sluice's client at one authorization server (bound to its issuer). */
struct sl_oauth_registration {
	char *issuer;
	char *client_id;
	char *client_secret;          /* NULL: a public client */
	const struct sl_oauth_key *key; /* borrowed (the config's): private_key_jwt; copied as
					 * the pointer it is, never stored */
	char *auth_method;            /* "none", "client_secret_basic", "client_secret_post",
				       * "private_key_jwt" */
	char *redirect_uri;           /* as registered (a loopback one's port may vary) */
	char *how;                    /* "config", "metadata document" or "dynamic" */
};

void sl_oauth_registration_dispose(struct sl_oauth_registration *r);
void sl_oauth_registration_copy(struct sl_oauth_registration *dst,
				const struct sl_oauth_registration *src);

/* ---- tokens ------------------------------------------------------------------ */

struct sl_oauth_tokens {
	char *access_token;
	char *refresh_token;          /* NULL: none given */
	char *scope;                  /* granted, as the AS said (else as asked) */
	int64_t expires_at;           /* unix seconds; 0: not said */
	int64_t issued_at;            /* unix seconds it was received; 0: unknown (read from the
				       * store, which keeps only expires_at) */
};

void sl_oauth_tokens_dispose(struct sl_oauth_tokens *t);
void sl_oauth_tokens_copy(struct sl_oauth_tokens *dst, const struct sl_oauth_tokens *src);

/* ---- the requests ------------------------------------------------------------- */

/* Discovery from a server's URL and, if known, its 401 challenge
 * (www_authenticate NULL: sluice probes without a token as the gateway
 * does, server/discover in the 2026-07-28 form first, else initialize,
 * and reads the challenge of the answers). Order: the challenge's
 * resource_metadata, else RFC 9728's path-suffixed then root well-known
 * URLs; the PRM's resource must be the server's URL (else refused, nothing
 * more is asked). Then the authorization server's metadata: RFC 8414
 * (path-inserted), then OpenID discovery (path-inserted, then appended);
 * its issuer must be the one asked for, exactly. No PRM at all: the 2025-03-26 way
 * (metadata at the server's origin, else /authorize, /token and /register
 * there). cb(arg, server, NULL) or cb(arg, NULL, why). */
typedef void sl_oauth_discover_fn(void *arg, const struct sl_oauth_server *s, const char *why);
void sl_oauth_discover(struct sl_fetcher *f, const char *server_url,
		       const char *www_authenticate, sl_oauth_discover_fn *cb, void *arg);

/* How a server entry wants sluice to register (mcpServers.<name>.oauth). */
struct sl_oauth_client_want {
	const char *client_id;        /* pre-registered; NULL: register */
	const char *client_secret;
	const struct sl_oauth_key *key; /* private_key_jwt instead of a secret */
	const char *metadata_url;     /* a Client ID Metadata Document URL, or NULL */
	const char *client_name;      /* for dynamic registration */
	bool machine;                 /* client credentials: no redirect */
};

/* In the spec's order: the configured client; a metadata document URL as
 * client_id where the AS supports them; dynamic registration (RFC 7591,
 * application_type "native" with a loopback redirect_uri, else "web"). A stored
 * registration for the same issuer should be passed back as prev and is
 * reused (no request). cb(arg, reg, NULL) or cb(arg, NULL, why). */
typedef void sl_oauth_register_fn(void *arg, const struct sl_oauth_registration *r,
				  const char *why);
void sl_oauth_register(struct sl_fetcher *f, const struct sl_oauth_server *s,
		       const struct sl_oauth_client_want *want,
		       const struct sl_oauth_registration *prev, const char *redirect_uri,
		       sl_oauth_register_fn *cb, void *arg);
/* The RFC 7591 request body sl_oauth_register sends (malloc'd JSON): a
 * native client (a web one when redirect_uri is not plain http to a
 * loopback host: a gateway's public URL), code and refresh grants, the redirect_uri (none when
 * NULL), auth_method; never a "scope" (asked per authorization instead). */
char *sl_oauth_registration_body(const struct sl_oauth_client_want *want,
				  const char *redirect_uri, const char *auth_method);

/* PKCE (RFC 7636, S256) and state: fresh random values from the kernel. */
struct sl_oauth_pkce {
	char verifier[64];            /* 43 characters, base64url of 32 random bytes */
	char challenge[64];           /* base64url(SHA-256(verifier)) */
	char state[64];               /* 32 characters, 24 random bytes */
};
void sl_oauth_pkce_new(struct sl_oauth_pkce *p);

/* The authorization URL: response_type=code, client_id, redirect_uri, scope
 * (omitted when NULL), state, code_challenge (S256), resource (RFC 8707),
 * and prompt=consent when the scope holds offline_access (OpenID Connect
 * Core 11: else no refresh token). Malloc'd. */
char *sl_oauth_authorize_url(const struct sl_oauth_server *s,
			     const struct sl_oauth_registration *r, const char *redirect_uri,
			     const char *scope, const struct sl_oauth_pkce *p);

/* Checks a redirect (a whole URL, or its query string): an error=...
 * answer says what the AS refused; state must match; iss (RFC 9207), when
 * present or when the AS said it sends it, must be the issuer. On success
 * *code is the code (malloc'd). */
int sl_oauth_redirect_check(const char *redirect, const struct sl_oauth_server *s,
			    const struct sl_oauth_pkce *p, char **code, struct sl_err *err)
	SL_MUST_USE;

/* The "sub" claim of a JWT access token (malloc'd), NULL for an opaque
 * token or a JWT without one. The signature is NOT checked: this names
 * the login for `sluice auth status`, and decides nothing. */
char *sl_oauth_token_subject(const char *token);

enum sl_oauth_grant_kind {
	SL_OAUTH_CODE,                /* code + verifier + redirect_uri */
	SL_OAUTH_REFRESH,             /* refresh_token */
	SL_OAUTH_CLIENT_CREDENTIALS,  /* scope */
	SL_OAUTH_TOKEN_EXCHANGE,      /* RFC 8693: subject_token (+ its type) */
};

/* RFC 8693 3: the type of a subject token that is an access token. */
#define SL_OAUTH_ACCESS_TOKEN_TYPE "urn:ietf:params:oauth:token-type:access_token"

struct sl_oauth_grant {
	enum sl_oauth_grant_kind kind;
	const char *code, *verifier, *redirect_uri;
	const char *refresh_token;
	const char *scope;            /* NULL: none sent */
	const char *subject_token, *subject_token_type; /* type NULL: an access token */
};

/* What a token request ended with. error is the AS's OAuth error code
 * ("invalid_grant": the refresh token is dead, a login is needed) or NULL
 * for a transport failure; why is a sentence for a person. */
struct sl_oauth_token_result {
	const struct sl_oauth_tokens *tokens; /* NULL on failure */
	const char *error;
	const char *why;
};
typedef void sl_oauth_token_fn(void *arg, const struct sl_oauth_token_result *res);
/* A token request with the client's auth method (Basic, POST, none, or a
 * client assertion signed with r->key) and the resource parameter. A
 * refresh that returns no new refresh token keeps the old one (the
 * caller's copy). An assertion that cannot be signed sends nothing: cb
 * runs before the call returns, with why. */
void sl_oauth_token(struct sl_fetcher *f, const struct sl_oauth_server *s,
		    const struct sl_oauth_registration *r, const struct sl_oauth_grant *g,
		    sl_oauth_token_fn *cb, void *arg);

/* RFC 7009: revokes token (hint "refresh_token" or "access_token").
 * cb(arg, NULL) when revoked or when the AS has no revocation endpoint
 * (nothing to do), else cb(arg, why) (before the call returns when an
 * assertion cannot be signed). */
typedef void sl_oauth_done_fn(void *arg, const char *why);
void sl_oauth_revoke(struct sl_fetcher *f, const struct sl_oauth_server *s,
		     const struct sl_oauth_registration *r, const char *token, const char *hint,
		     sl_oauth_done_fn *cb, void *arg);

#endif

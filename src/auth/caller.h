/*
 * Who a request comes from, and through which profile: made by the HTTP
 * transport when it admits a request (src/auth/auth.c), handed to the
 * session with the request's message, held by the calls and programs the
 * request starts (c->who), read by the stages through the call (policy
 * matches on it, quotas count it, audit and telemetry write it); the
 * session keeps the one it was opened with, for its profile. Immutable
 * once made, reference-counted. Over stdio, and over HTTP with no
 * authentication configured, there is no caller (NULL), and everything
 * that matches on one sees an anonymous caller: no subject, no group, no
 * scope.
 *
 * A caller never holds a token: only what was read from one.
 */
#ifndef SL_AUTH_CALLER_H
#define SL_AUTH_CALLER_H
#include "core/common.h"
#include "core/digest.h"

#include <stdbool.h>
#include <stdint.h>

struct sl_caller {
	unsigned refs;          /* references beyond the first */
	const char *method;     /* how it was authenticated: "token", "jwt", "introspection";
				 * "none": not at all, a caller only for its profile (an
				 * HTTP front end without authentication) */
	char *subject;          /* "sub", or a static token's name; NULL: none (bearerToken) */
	char *issuer;           /* the token's "iss"; NULL for static tokens */
	char *realm;            /* NULL, or whose namespace subject is in when no issuer
				 * names it: an introspection answer without "iss" (with
				 * several issuers configured) is the endpoint's, its URL */
	char *client_id;        /* the OAuth client ("client_id", else "azp"), or NULL */
	char **groups;          /* NULL-terminated, never NULL: groups and roles claims */
	char **scopes;          /* NULL-terminated, never NULL */
	char *profile;          /* the /mcp/<profile> it came through; NULL: the default */
	uint64_t expires_ms;    /* wall clock ms when its token expires; 0: never */
	char key[SL_SHA256_HEX];/* sl_caller_identity_digest of method, issuer, subject
				 * and profile: two callers with the same key are the
				 * same identity through the same endpoint (session
				 * binding, per-identity counts) */
};

/*
 * The identity digest: the one digest every place keys a caller identity
 * by (a caller's key, a session's credential, a person's per-user key), as
 * hex SHA-256. Its input (version 1) is the bytes "sluice-identity-1"
 * followed, for method, issuer, subject and profile in that order, by a
 * byte 0 when the field is absent (NULL), else a byte 1, the field's length
 * as 8 bytes big-endian, and its bytes: two different tuples never give the
 * same input (no separator a field could contain, absent apart from
 * empty). Pass profile NULL for an identity that holds on every endpoint.
 */
void sl_caller_identity_digest(const char *method, const char *issuer, const char *subject,
			       const char *profile, char out[SL_SHA256_HEX]);
/* The person c is, whatever profile they come through: the identity digest
 * of no profile and, for subject:
 *   a static token of sluice's       method "token", no issuer;
 *   a token whose issuer is known    no method, the issuer: the issuer
 *                                    names the person's namespace, however
 *                                    it was verified (JWT or introspection);
 *   a token no issuer names          its method, and its realm (the
 *                                    introspection endpoint's URL): a
 *                                    namespace of that endpoint's alone.
 * So no two methods or issuers share a person unless an issuer vouches for
 * both. The key a person's own upstream links (upstream/users.c), their
 * stored OAuth tokens (oauth/store.h), cache entries of per-user servers
 * and their subject tokens (oauth/subject.h) are held under. False (out
 * untouched) for a caller without a subject. */
bool sl_caller_user_key(const struct sl_caller *c, char out[SL_SHA256_HEX]);
/* The key c's fair shares are counted under (code-mode slots, sessions at
 * maxSessions): its person (sl_caller_user_key); for an authenticated
 * credential without a subject (the shared bearerToken), everyone holding
 * it is one caller. False (out untouched) without authentication (NULL, or
 * method "none"): every peer is the same anonymous caller there, and a
 * share would only leave capacity idle. */
bool sl_caller_share_key(const struct sl_caller *c, char out[SL_SHA256_HEX]);

/* A caller with no subject, groups or scopes yet; method is a literal. */
struct sl_caller *sl_caller_new(const char *method);
/* Fill in a new caller (before it is shared). Each copies its argument. */
void sl_caller_set_subject(struct sl_caller *c, const char *issuer, const char *subject);
void sl_caller_set_client(struct sl_caller *c, const char *client_id);
void sl_caller_set_realm(struct sl_caller *c, const char *realm);
void sl_caller_add_group(struct sl_caller *c, const char *group);
void sl_caller_add_scope(struct sl_caller *c, const char *scope);
void sl_caller_set_profile(struct sl_caller *c, const char *profile);
/* A copy of c through another profile (the transport's route). */
struct sl_caller *sl_caller_with_profile(const struct sl_caller *c, const char *profile);

struct sl_caller *sl_caller_ref(struct sl_caller *c);   /* NULL passes */
void sl_caller_unref(struct sl_caller *c);              /* NULL passes */

/* The same identity through the same profile (NULL is the anonymous caller
 * of the default profile, equal only to itself). */
bool sl_caller_same(const struct sl_caller *a, const struct sl_caller *b);
/* c has that group or scope (false for NULL). */
bool sl_caller_in_group(const struct sl_caller *c, const char *group);
bool sl_caller_has_scope(const struct sl_caller *c, const char *scope);
/* "alice (jwt, client cli, profile ops)" for logs: escaped by the log. */
const char *sl_caller_name(const struct sl_caller *c);

#endif

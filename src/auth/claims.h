/*
 * From a token's claims to a caller: one reading of claims for every method
 * that has them (a JWT access token's payload, an introspection answer,
 * `sluice policy check --claims`), so that a policy rule matches the same
 * caller whichever way it came (docs/internals/AUTH.md).
 *
 * Claims read (RFC 9068 §2.2, RFC 7662 §2.2, OpenID Connect Core §2):
 *   sub        the subject, a string
 *   iss        the issuer, a string
 *   client_id  the OAuth client, a string; else azp (OIDC's authorized party)
 *   scope      a space-separated string (RFC 6749 §3.3, RFC 9068 §2.2.3);
 *              scp too, a string or an array of strings (Azure AD, Okta)
 *   groups     every claim named in group_claims (NULL: "groups" and
 *              "roles", RFC 9068 §7.2.1.1), a string or an array of strings;
 *              a dotted name walks into objects ("realm_access.roles")
 *   exp        a NumericDate (seconds): the caller's expires_ms
 * An absent claim is no value; a claim of the wrong type refuses the claims
 * (err names it), as does a string with a NUL byte.
 *
 * Bounds: at most SL_CLAIMS_NAMES_MAX groups and as many scopes, each at
 * most SL_CLAIMS_NAME_MAX bytes. Claims over them are refused rather than
 * cut: a caller that lost some of its groups could pass a rule's notWho.
 *
 * API:
 *   struct sl_caller *who;
 *   if (sl_caller_from_claims("jwt", payload, cfg->group_claims, &who, &err) < 0)
 *           ... err.msg: "claim \"groups\": must be a string or an array of strings"
 *   ... who is new (not shared yet): set its profile, then share it
 */
#ifndef SL_AUTH_CLAIMS_H
#define SL_AUTH_CLAIMS_H
#include "auth/caller.h"

#include <yyjson.h>

#define SL_CLAIMS_NAMES_MAX 256 /* groups, and scopes, of one caller */
#define SL_CLAIMS_NAME_MAX 1024 /* bytes of an issuer, subject, client, group or scope */

/* A new caller (method: a literal) from the JSON object claims (borrowed).
 * group_claims: NULL-terminated names, or NULL for the default. Returns 0
 * with *out set, or SL_ERR_INVALID with err saying which claim. */
int sl_caller_from_claims(const char *method, yyjson_val *claims,
			  const char *const *group_claims, struct sl_caller **out,
			  struct sl_err *err) SL_MUST_USE;

#endif

/*
 * Subject tokens for OAuth 2.0 Token Exchange (RFC 8693; oauth.tokenExchange,
 * docs/internals/AUTH.md "Token exchange"): the access token each caller
 * last presented to the HTTP face, held so that the caller's own link to a
 * tokenExchange server can exchange it for a token of that server.
 *
 * A caller never holds its token (auth/caller.h); this is the one place
 * that does, apart from it and explicitly: one process-wide map, because
 * the HTTP face that fills it and the upstream links that read it share no
 * owner but the process. Keyed by the caller's user key (sl_caller_user_key,
 * auth/caller.h: the key a user link's tokens are stored under), one entry
 * per user, the newest token replacing the older.
 *
 * Bounds: SL_OAUTH_SUBJECTS_MAX entries (the oldest, by when its token was
 * last noted, is dropped for a new one); an entry whose token has expired
 * is dropped when it is looked up or reached by the sweep each note makes
 * from the oldest end. Held only in memory: never logged, never written,
 * wiped when dropped. Nothing is held unless the config has a
 * tokenExchange server (sl_oauth_subjects_configure).
 *
 * API:
 *   sl_oauth_subjects_configure(cfg);         at start and each reload; NULL: off, all dropped
 *   sl_oauth_subject_note(who, authorization); the transport, for each admitted request
 *   tok = sl_oauth_subject_get(user_key, as_issuer); a copy for one exchange; free it
 */
#ifndef SL_OAUTH_SUBJECT_H
#define SL_OAUTH_SUBJECT_H

#include "auth/caller.h"
#include "config/config.h"

#define SL_OAUTH_SUBJECTS_MAX 4096

/* Holds subject tokens while cfg (borrowed for the call) has a server with
 * oauth.tokenExchange; else (or NULL) holds none and drops those held. */
void sl_oauth_subjects_configure(const struct sl_config *cfg);
/* A request was admitted as who with this Authorization header (may be
 * NULL). Its bearer token is held for who's user key when who was
 * authenticated by "jwt" or "introspection" and has a subject; a static
 * token, or no authentication, is never held. */
void sl_oauth_subject_note(const struct sl_caller *who, const char *authorization);
/* The token held for user (a user key), unexpired, as a malloc'd copy the
 * caller wipes and frees (sl_oauth_subject_free); NULL when none is, or
 * when it was not issued by issuer: a token goes only back to the
 * authorization server that issued it, never to one an upstream names
 * (its metadata could name anyone's, to collect callers' tokens). */
char *sl_oauth_subject_get(const char *user, const char *issuer);
void sl_oauth_subject_free(char *token);
/* Whether sl_oauth_subject_get(user) would give one now. */
bool sl_oauth_subject_held(const char *user);
/* Entries held now (for tests). */
size_t sl_oauth_subjects_count(void);

#endif

/*
 * One remote upstream's tokens at run time (the gateway side of
 * src/oauth/). The upstream owns it for its whole life, across links; the
 * remote link (upstream/remote.c) asks it for the header to send and tells
 * it what the server answered.
 *
 *   token present, not about to expire   -> sent as Authorization: Bearer
 *   about to expire (sluice.oauth.refreshBeforeSeconds), or a 401 for the
 *   token in use                         -> one refresh (single-flight: every
 *                                           request waiting meanwhile is held
 *                                           and sent again with the new token)
 *   client credentials configured        -> the same, with that grant
 *   a user's link, oauth.tokenExchange,  -> the same, exchanging the user's own
 *   no refresh token                        token (RFC 8693, oauth/subject.h)
 *   refresh or exchange refused (invalid_grant), no refresh token, never
 *   logged in                            -> "needs login": the message names
 *                                           the command to run
 *   403 insufficient_scope               -> that call fails with the scope the
 *                                           server wants and the command; the
 *                                           scope is saved for the next login
 *
 * A record saved by `sluice auth login` (another process) is picked up:
 * the file is read again when it changes (sl_oauth_client_reload).
 */
#ifndef SL_OAUTH_CLIENT_H
#define SL_OAUTH_CLIENT_H

#include "oauth/store.h"

#include <uv.h>

struct sl_oauth_client;
struct sl_server_config;

/* For server entry cfg (its url, its oauth object). user: "" for the
 * gateway's own tokens. Never fails: a store that cannot be read leaves it
 * without tokens, and its status says why. */
struct sl_oauth_client *sl_oauth_client_new(uv_loop_t *loop, const struct sl_config *gcfg,
					    const struct sl_server_config *cfg, const char *user);
void sl_oauth_client_free(struct sl_oauth_client *c);
/* A config reload kept the server: its entry (and the gateway's settings)
 * are now these. Borrowed, as in sl_oauth_client_new. */
void sl_oauth_client_reconfigure(struct sl_oauth_client *c, const struct sl_config *gcfg,
				 const struct sl_server_config *cfg);

/* The access token to send now, or NULL (none yet: send without one and
 * see what the server says). Borrowed until the next call into c. */
const char *sl_oauth_client_token(struct sl_oauth_client *c);
/* True when the token should be refreshed before it is used (it expires
 * within the configured margin and a refresh is possible). */
bool sl_oauth_client_stale(const struct sl_oauth_client *c);
/* The rule behind it, for tokens t at unix time now: it has an expiry, and
 * that is at most margin seconds away (or past); when t->issued_at is
 * known, at most half its lifetime away if that is less (a token that
 * lives under the margin is refreshed at most once per half its life). */
bool sl_oauth_tokens_stale(const struct sl_oauth_tokens *t, int64_t now, uint32_t margin);

/* What to do with a request the server refused, or one held for a stale
 * token. */
enum sl_oauth_verdict {
	SL_OAUTH_RETRY,      /* wait: cb runs once a token is ready (or not) */
	SL_OAUTH_FAIL,       /* give up now: sl_oauth_client_why says why */
};

/* cb(arg, ok): ok, send again with sl_oauth_client_token; else fail with
 * sl_oauth_client_why. Runs from the loop, never inside the call. At most
 * sluice.oauth.maxHeldRequests callbacks wait at once: one more is FAIL,
 * "too many requests waiting for a token". */
typedef void sl_oauth_ready_fn(void *arg, bool ok);

/* The server answered status (401 or 403) with this WWW-Authenticate
 * (may be NULL) to a request sent with token used (NULL: none). */
enum sl_oauth_verdict sl_oauth_client_refused(struct sl_oauth_client *c, long status,
					      const char *www_authenticate, const char *used,
					      sl_oauth_ready_fn *cb, void *arg);
/* The token is stale: refresh before sending (same contract). */
enum sl_oauth_verdict sl_oauth_client_refresh(struct sl_oauth_client *c, sl_oauth_ready_fn *cb,
					      void *arg);
/* Forgets every cb registered with arg (its owner is going away). */
void sl_oauth_client_forget(struct sl_oauth_client *c, void *arg);

/* Why the last request could not be authorized: "needs login: run `sluice
 * auth login NAME`" or "needs the scope \"x\": run ...". NULL when fine. */
const char *sl_oauth_client_why(const struct sl_oauth_client *c);
/* The last refusal a login would mend: "needs the scope \"x\": run `sluice
 * auth login NAME`", kept until a new token comes (a refresh, or a record
 * a login saved); NULL when there is none. Not set for client credentials,
 * which no login changes. */
const char *sl_oauth_client_wants_scope(const struct sl_oauth_client *c);
/* True when nothing will work until a person logs in. */
bool sl_oauth_client_needs_login(const struct sl_oauth_client *c);
/* On a user's link to an oauth.tokenExchange server in "needs login": true
 * (and "needs login" ends) when the user now holds another token than the
 * one the authorization server refused, or holds one where it held none;
 * the next request exchanges it. */
bool sl_oauth_client_exchange_again(struct sl_oauth_client *c);
/* Reads the record again (after `sluice auth login` saved a new one).
 * True when it now has a token it did not have. */
bool sl_oauth_client_reload(struct sl_oauth_client *c);
/* The record's file, to watch for a login. */
const char *sl_oauth_client_path(const struct sl_oauth_client *c);

/* For `sluice status` and `sluice check`: "logged in (expires in 52 min,
 * scopes ...)", "needs login", "client credentials". Static or borrowed. */
const char *sl_oauth_client_describe(struct sl_oauth_client *c, char *buf, size_t len);

#endif

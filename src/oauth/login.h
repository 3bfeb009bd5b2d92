/*
 * One person's login to one remote server, for one user of the store: the
 * steps of `sluice auth login` (src/cli/login.c) and of the web login
 * through the gateway (oauth/weblogin.h), which differ only in where the
 * redirect comes back to.
 *
 *   discover       an unauthenticated initialize, its 401, the metadata
 *   register       configured client, metadata document, or RFC 7591 (the
 *                  stored record's registration passed as prev)
 *   authorize      scopes, PKCE, state: hooks->authorize gets the URL
 *   [the redirect] sl_oauth_login_redirect(l, "...?code=...&state=...")
 *   exchange       the code, with the PKCE verifier
 *   save           the record under (server URL, user); hooks->done
 *
 * A server with "grant": "client_credentials" needs no person: discovery,
 * then a token at once, saved; hooks->authorize never runs.
 *
 * API:
 *   struct sl_oauth_login_want w = { .cfg = cfg, .srv = srv, .user = "" };
 *   if (sl_oauth_login_new(loop, st, &w, &hooks, arg, &l, &err) < 0) ... err.msg
 *   sl_oauth_login_start(l);        hooks run later, from the loop
 *   ... hooks->authorize(arg, url, NULL): show url; the browser comes back:
 *   sl_oauth_login_redirect(l, redirect);
 *   ... hooks->done(arg, rec, NULL)
 *   sl_oauth_login_free(l);         never from inside one of its hooks
 */
#ifndef SL_OAUTH_LOGIN_H
#define SL_OAUTH_LOGIN_H

#include "oauth/store.h"

#include <uv.h>

struct sl_config;
struct sl_server_config;
struct sl_oauth_login;

struct sl_oauth_login_want {
	const struct sl_config *cfg;        /* borrowed, outlives the login */
	const struct sl_server_config *srv; /* the same */
	const char *user;                   /* the store's user: "" is the gateway's own (copied) */
	const char *extra_scope;            /* more scopes to ask (--scope), or NULL (copied) */
	const char *redirect_uri;           /* where the AS sends the browser back, unless
					     * hooks->redirect_uri chooses (copied) */
};

/* Each hook runs at most once, from the loop. why is a whole sentence
 * ("login to linear failed: ..."), the AS's words escaped. */
struct sl_oauth_login_hooks {
	/* After discovery, before registration (code flow only): the
	 * redirect URI to register and send, malloc'd, chosen knowing the
	 * stored registration (prev, NULL when none) — the CLI listens on
	 * its port. NULL with err set fails the login. NULL hook:
	 * want->redirect_uri. */
	char *(*redirect_uri)(void *arg, const struct sl_oauth_registration *prev,
			      struct sl_err *err);
	/* The authorization URL to send the person to; NULL hook: none. */
	void (*authorize)(void *arg, const char *url);
	/* The end: rec (borrowed) saved, why NULL; or rec NULL and why. */
	void (*done)(void *arg, const struct sl_oauth_record *rec, const char *why);
};

/* A login of want->srv for want->user, with its own fetcher on loop (so
 * freeing the login ends its requests). st is borrowed: the record is
 * read at start and saved at the end. Fails only when libcurl cannot be
 * loaded. */
int sl_oauth_login_new(uv_loop_t *loop, struct sl_oauth_store *st,
		       const struct sl_oauth_login_want *want,
		       const struct sl_oauth_login_hooks *hooks, void *arg,
		       struct sl_oauth_login **out, struct sl_err *err) SL_MUST_USE;
/* Reads the stored record (one that cannot be read is logged and
 * ignored) and starts discovery. Once. */
void sl_oauth_login_start(struct sl_oauth_login *l);
/* The redirect came back (a whole URL or its query string): checked
 * (sl_oauth_redirect_check), then the code exchanged; hooks->done follows
 * (before this returns when the check fails). Only the first one counts:
 * SL_ERR_INVALID, nothing done, for a redirect before the authorization
 * URL was made or after one was taken. */
int sl_oauth_login_redirect(struct sl_oauth_login *l, const char *redirect) SL_MUST_USE;
void sl_oauth_login_free(struct sl_oauth_login *l);

/* What the login knows so far (NULL before it is known; borrowed until
 * the login is freed). */
const struct sl_oauth_server *sl_oauth_login_server(const struct sl_oauth_login *l);
const struct sl_oauth_registration *sl_oauth_login_registration(const struct sl_oauth_login *l);
const char *sl_oauth_login_scope(const struct sl_oauth_login *l);
const char *sl_oauth_login_redirect_uri(const struct sl_oauth_login *l);
/* The OAuth state of the authorization URL (the full random value), or
 * NULL before it is made. */
const char *sl_oauth_login_state(const struct sl_oauth_login *l);

#endif

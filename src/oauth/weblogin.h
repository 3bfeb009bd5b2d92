/*
 * Logging in through the gateway: a caller of a shared HTTP gateway who has
 * no token for a per-user upstream is given a URL on the gateway's own
 * HTTP face, <publicUrl>/oauth/login/<id>; the person opens it, follows
 * the link to the authorization server, and comes back to
 * <publicUrl>/oauth/callback, where the gateway exchanges the code and
 * saves the tokens under (server URL, user). The steps are oauth/login.h's;
 * this is the map of pending logins and their two pages
 * (docs/internals/AUTH.md, "Logging in through the gateway").
 *
 * Bounds: at most SL_WEBLOGIN_MAX pending logins (one more drops the
 * oldest); each expires SL_WEBLOGIN_TTL_MS after it was made; each is used
 * once (its callback ends it, whatever the outcome); at most
 * SL_WEBLOGIN_WAITING_MAX pages wait on one login; a (server URL, user)
 * that has one pending gets the same one back, so retries do not fill the
 * map. An id is SL_WEBLOGIN_ID_BYTES random bytes from the kernel,
 * base64url: it cannot be guessed, and the state the authorization server
 * returns is the login's own random value.
 *
 * Bound to the browser (RFC 9700 4.7, login CSRF): the login page sets a
 * cookie, SL_WEBLOGIN_COOKIE<id> = the login's own random binder
 * (HttpOnly, SameSite=Lax; Path the callback's, or under https __Host-
 * prefixed, Secure and Path=/), and
 * the callback exchanges the code only when the request carries it: a
 * callback from a browser that never opened the gateway's page (someone
 * handed the authorization URL) saves nothing and ends the login.
 *
 * API:
 *   struct sl_weblogin *w = sl_weblogin_new(loop, cfg);
 *   sl_weblogin_set_done(w, on_logged_in, ctx);
 *   char *url = sl_weblogin_url(w, srv, user, sl_caller_name(who), NULL);  NULL: no publicUrl
 *   ... the transport, for GET /oauth/...:
 *   q = sl_weblogin_serve(w, path, &args, on_page, arg);   NULL: on_page already ran
 *   sl_weblogin_cancel(q);                                  the browser went away
 *   sl_weblogin_reconfigure(w, next);                       a reload
 *   sl_weblogin_free(w);
 */
#ifndef SL_OAUTH_WEBLOGIN_H
#define SL_OAUTH_WEBLOGIN_H

#include "core/common.h"

#include <uv.h>

struct sl_config;
struct sl_server_config;
struct sl_weblogin;
struct sl_weblogin_req;

#define SL_WEBLOGIN_MAX 256                    /* pending logins; one more drops the oldest */
#define SL_WEBLOGIN_TTL_MS (10ull * 60 * 1000) /* a pending login lives this long */
#define SL_WEBLOGIN_ID_BYTES 16                /* 128 random bits: 22 base64url characters */
#define SL_WEBLOGIN_WAITING_MAX 8              /* pages waiting on one login; one more: 503 */
#define SL_WEBLOGIN_LOGIN_PATH "/oauth/login/"
#define SL_WEBLOGIN_CALLBACK_PATH "/oauth/callback"
#define SL_WEBLOGIN_COOKIE "sluice_login_"    /* the binder's name: this, then the login's id */

/* A login's record was saved: the caller's link may start again. */
typedef void sl_weblogin_done_fn(void *ctx, const char *server_name, const char *user);

/* The map for gcfg (a reference is taken; sluice.http.publicUrl, the
 * servers), on loop. Never fails: without a publicUrl it makes no URL. */
struct sl_weblogin *sl_weblogin_new(uv_loop_t *loop, const struct sl_config *gcfg);
void sl_weblogin_set_done(struct sl_weblogin *w, sl_weblogin_done_fn *fn, void *ctx);
/* A reload: new logins use gcfg; a pending login whose server (by name
 * and URL) is gone fails (its waiting pages say so) and is dropped; the
 * others go on with the config they began with. */
void sl_weblogin_reconfigure(struct sl_weblogin *w, const struct sl_config *gcfg);
/* Ends every login; pages still waiting get 503. */
void sl_weblogin_free(struct sl_weblogin *w);

/* The URL where user logs in to srv (an entry of the current config):
 * "<publicUrl>/oauth/login/<id>", malloc'd; *id_out (if given) the id,
 * malloc'd. who is shown on the page (sl_caller_name's words), so the
 * person can tell whose login it is. A login pending for the same
 * (server URL, user) is reused. NULL (and *id_out NULL) when no
 * publicUrl is configured. Starts nothing: the page does. */
char *sl_weblogin_url(struct sl_weblogin *w, const struct sl_server_config *srv, const char *user,
		      const char *who, char **id_out);
/* The same at a given time (sl_now_ms()'s clock), for tests. */
char *sl_weblogin_url_at(struct sl_weblogin *w, const struct sl_server_config *srv,
			 const char *user, const char *who, char **id_out, uint64_t now_ms);
/* Pending logins at now_ms (expired ones are dropped first). */
size_t sl_weblogin_pending(struct sl_weblogin *w, uint64_t now_ms);

/* ---- the HTTP face ---------------------------------------------------------------- */

/* True when path (without its query) is one of the web login's. */
bool sl_weblogin_path(const char *path);

/* The query parameters the callback reads (each NULL when absent), and
 * the request's Cookie header (NULL: none), where the binder is looked for. */
struct sl_weblogin_args {
	const char *code, *state, *iss, *error, *error_description;
	const char *cookie;
};

/* A page: status and a whole HTML document, and the value of a Set-Cookie
 * header to send with it (NULL: none), all borrowed for the call. The
 * transport adds the headers (docs/internals/AUTH.md): text/html,
 * Cache-Control: no-store, Content-Security-Policy: default-src 'none',
 * X-Frame-Options: DENY, Referrer-Policy: no-referrer. */
typedef void sl_weblogin_page_fn(void *arg, unsigned status, const char *html,
				 const char *set_cookie);

/* Answers GET path: the login page (starting the login: discovery and
 * registration, async; it sets the binder cookie), or the callback (the
 * exchange, async, only with the binder; else 403 and the login ends), or
 * 404.
 * Returns NULL when page already ran, before the call returns; else a
 * handle: page runs later, once, from the loop, unless the handle is
 * cancelled first. Every value shown is HTML-escaped; no raw query value
 * is ever reflected. */
struct sl_weblogin_req *sl_weblogin_serve(struct sl_weblogin *w, const char *path,
					  const struct sl_weblogin_args *args,
					  sl_weblogin_page_fn *page, void *arg);
/* page will not run; the login goes on (another tab may come). */
void sl_weblogin_cancel(struct sl_weblogin_req *q);

#endif

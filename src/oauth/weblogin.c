/*
 * The web login's pending logins and pages (oauth/weblogin.h). A bounded
 * map (core/lru.h) by id, in the order the logins were made (never
 * touched), at most SL_WEBLOGIN_MAX long, each entry's deadline its
 * expiry: looked up by state and by (server URL, user) with a walk of at
 * most 256. Every way out of the map answers the pages still waiting: the
 * map's own (expiry) with 410, the others with the status drop() gives.
 *
 * A login ends inside its own hooks (oauth/login.h says never to free it
 * there): a dropped entry's login goes to a list freed from the loop.
 */
#include "oauth/weblogin.h"

#include "config/config.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/lru.h"
#include "oauth/login.h"

#include <nettle/memops.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PAGE_MAX (64 * 1024)

enum phase {
	IDLE,        /* made, nobody opened the page yet */
	STARTING,    /* discovery and registration */
	READY,       /* the authorization URL is known */
	EXCHANGING,  /* the callback came: the code is being exchanged */
};

struct sl_weblogin_req {
	struct entry *e;
	sl_weblogin_page_fn *page;
	void *arg;
	bool as_error;               /* the callback carried error=... */
	bool in_serve;               /* answered before serve returns: serve frees it */
	bool answered;
	struct sl_list link;         /* in its login's waiting pages, while e is set */
};

struct entry {
	struct sl_lru_entry le;      /* key: the id; until_ms: its expiry */
	struct sl_weblogin *w;
	char id[SL_BASE64URL_SIZE(SL_WEBLOGIN_ID_BYTES)];
	char binder[SL_BASE64URL_SIZE(SL_WEBLOGIN_ID_BYTES)]; /* the cookie's value */
	const struct sl_config *cfg; /* a reference: the config the login began with */
	const struct sl_server_config *srv;
	char *user, *who;
	enum phase phase;
	struct sl_oauth_store *st;
	struct sl_oauth_login *login;
	char *authorize_url;
	struct sl_list waiting;      /* struct sl_weblogin_req, in the order they came */
};

struct dead {
	struct sl_oauth_login *login;
	struct sl_oauth_store *st;
	struct sl_list link;
};

/* How a login the map drops on its own ends: it expired. */
#define EXPIRED_STATUS 410
#define EXPIRED_WHY "This login has expired. Ask again (retry the tool call) for a new link."

struct sl_weblogin {
	uv_loop_t *loop;
	const struct sl_config *cfg; /* a reference */
	sl_weblogin_done_fn *done;
	void *done_ctx;
	struct sl_lru logins;        /* struct entry by id, oldest first */
	unsigned end_status;         /* how the entry being freed ends (drop) */
	const char *end_why;
	struct sl_list dead;         /* struct dead: logins to free from the loop */
	uv_timer_t reap;
	bool freeing;
};

static struct entry *entry_of(struct sl_lru_entry *le)
{
	return sl_lru_item(le, struct entry, le);
}

/* The first page waiting on e, taken off its list, or NULL. */
static struct sl_weblogin_req *next_waiting(struct entry *e)
{
	struct sl_list *n = sl_list_first(&e->waiting);
	struct sl_weblogin_req *q;

	if (!n)
		return NULL;
	q = sl_list_entry(n, struct sl_weblogin_req, link);
	sl_list_remove(&q->link);
	q->e = NULL;
	return q;
}

/* ---- pages ---------------------------------------------------------------------------- */

static void put(struct sl_buf *b, const char *s)
{
	if (sl_escape(b, s ? s : "", s ? strlen(s) : 0, SL_ESCAPE_HTML) < 0)
		(void)!sl_buf_appends(b, "...");
}

/* A whole page: a title, then paragraphs; each %s of a paragraph is a
 * value, escaped (vals in order); cookie, a Set-Cookie to send with it. */
static void page(struct sl_weblogin_req *q, unsigned status, const char *title,
		 const char *const *paras, const char *const *vals, const char *cookie)
{
	struct sl_buf b;

	sl_buf_init(&b, PAGE_MAX);
	(void)!sl_buf_appends(&b, "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
			      "<meta name=\"referrer\" content=\"no-referrer\"><title>sluice: ");
	put(&b, title);
	(void)!sl_buf_appends(&b, "</title></head>\n<body>\n<h1>");
	put(&b, title);
	(void)!sl_buf_appends(&b, "</h1>\n");
	for (; *paras; paras++) {
		const char *p = *paras, *pc;
		(void)!sl_buf_appends(&b, "<p>");
		while ((pc = strstr(p, "%s"))) {
			(void)!sl_buf_append(&b, p, (size_t)(pc - p));
			put(&b, *vals++);
			p = pc + 2;
		}
		(void)!sl_buf_appends(&b, p);
		(void)!sl_buf_appends(&b, "</p>\n");
	}
	(void)!sl_buf_appends(&b, "</body></html>\n");
	q->answered = true;
	q->page(q->arg, status, b.data ? b.data : "", cookie);
	sl_buf_dispose(&b);
}

static void page_error(struct sl_weblogin_req *q, unsigned status, const char *why)
{
	const char *paras[] = { "%s", NULL };
	const char *vals[] = { why };
	page(q, status, "login failed", paras, vals, NULL);
}

/* Under an https public URL the binder is a __Host- cookie (RFC 6265bis
 * 4.1.3.2): only this host over TLS can set one, so a sibling subdomain
 * cannot toss its own binder into a colleague's browser (Domain=.parent)
 * to pass the check. That prefix wants Path=/; a plain http public URL
 * (loopback only) keeps the callback's path. */
static bool host_cookie(const struct entry *e)
{
	return !strncasecmp(e->cfg->http.public_url, "https:", 6);
}

/* The binder's name: [__Host-]SL_WEBLOGIN_COOKIE<id>, into out. */
static size_t binder_name(const struct entry *e, char *out, size_t size)
{
	return (size_t)snprintf(out, size, "%s%s%s", host_cookie(e) ? "__Host-" : "",
				SL_WEBLOGIN_COOKIE, e->id);
}

#define BINDER_NAME_SIZE (sizeof("__Host-") + sizeof(SL_WEBLOGIN_COOKIE) + \
			  SL_BASE64URL_SIZE(SL_WEBLOGIN_ID_BYTES))

/* The Set-Cookie that binds e to a browser (clear: the one that forgets
 * it): never to script (HttpOnly), sent on the authorization server's
 * redirect, a top-level GET, but not on another site's subrequests or
 * POSTs (SameSite=Lax); under https Secure and __Host- (above), else only
 * to the callback (Path: the public URL's path, cut at a character that
 * would end the attribute, then the callback's). */
static char *binder_cookie(const struct entry *e, bool clear)
{
	const char *pub = e->cfg->http.public_url, *auth = strstr(pub, "://");
	const char *path = "", *tail = "/";
	char name[BINDER_NAME_SIZE];

	binder_name(e, name, sizeof(name));
	if (!host_cookie(e)) {
		path = auth ? auth + 3 + strcspn(auth + 3, "/") : "";
		tail = SL_WEBLOGIN_CALLBACK_PATH;
	}
	return sl_printf("%s=%s; Path=%.*s%s; Max-Age=%llu; HttpOnly; SameSite=Lax%s", name,
			 clear ? "" : e->binder, (int)strcspn(path, "; \t\r\n,"), path, tail,
			 clear ? 0ull : (unsigned long long)(SL_WEBLOGIN_TTL_MS / 1000),
			 host_cookie(e) ? "; Secure" : "");
}

/* Whether the Cookie header holds e's binder (RFC 6265 5.4: "a=b; c=d"),
 * compared in constant time. */
static bool bound(const struct entry *e, const char *header)
{
	char name[BINDER_NAME_SIZE];
	size_t nl = binder_name(e, name, sizeof(name));
	size_t want = strlen(e->binder);
	const char *p = header;

	while (p && *p) {
		size_t n;
		p += strspn(p, " \t");
		n = strcspn(p, ";");
		if (n > nl && !strncmp(p, name, nl) && p[nl] == '=') {
			const char *v = p + nl + 1;
			size_t vl = n - nl - 1;
			while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (vl == want && memeql_sec(v, e->binder, want))
				return true;
		}
		p += n;
		if (*p)
			p++;
	}
	return false;
}

static void page_login(struct sl_weblogin_req *q, const struct entry *e)
{
	const struct sl_oauth_server *as = sl_oauth_login_server(e->login);
	const char *issuer = as && as->issuer ? as->issuer : "?";
	const char *paras[] = {
		"This login is for <strong>%s</strong>.",
		"Server: <strong>%s</strong> (%s)<br>Authorization server: %s",
		"<a href=\"%s\">Continue to %s</a>",
		"If you are not <strong>%s</strong>, close this page: whoever completes this login "
		"gives that caller their access to %s.",
		NULL,
	};
	const char *vals[] = { e->who, e->srv->name, e->srv->url, issuer, e->authorize_url,
			       issuer, e->who, e->srv->name };
	char title[128], *cookie = binder_cookie(e, false);

	snprintf(title, sizeof(title), "log in to %s", e->srv->name);
	page(q, 200, title, paras, vals, cookie);
	free(cookie);
}

/* ---- the map ---------------------------------------------------------------------------- */

static void on_reap(uv_timer_t *t)
{
	struct sl_weblogin *w = t->data;
	struct sl_list *n;

	while ((n = sl_list_first(&w->dead))) {
		struct dead *d = sl_list_entry(n, struct dead, link);
		sl_list_remove(&d->link);
		sl_oauth_login_free(d->login);
		if (d->st)
			sl_oauth_store_free(d->st);
		free(d);
	}
}

/* The map's free callback, for every way out: each page still waiting
 * gets (w->end_status, w->end_why) unless end_why is NULL (answered
 * already); its login is freed from the loop, as this may run inside one
 * of its hooks. */
static void entry_free(struct sl_lru_entry *le, void *arg)
{
	struct entry *e = entry_of(le);
	struct sl_weblogin *w = arg;
	struct sl_weblogin_req *q;

	while ((q = next_waiting(e))) {
		if (w->end_why)
			page_error(q, w->end_status, w->end_why);
		if (!q->in_serve)
			free(q);
	}
	if (e->login || e->st) {
		struct dead *d = sl_alloc(sizeof(*d));
		d->login = e->login;
		d->st = e->st;
		sl_list_push_back(&w->dead, &d->link);
		if (!w->freeing)
			uv_timer_start(&w->reap, on_reap, 0, 0);
	}
	sl_config_unref(e->cfg);
	free(e->user);
	free(e->who);
	free(e->authorize_url);
	free(e);
}

/* Drops e: each page still waiting gets (status, why) unless why is NULL. */
static void drop(struct entry *e, unsigned status, const char *why)
{
	struct sl_weblogin *w = e->w;

	w->end_status = status;
	w->end_why = why;
	sl_lru_drop(&w->logins, &e->le);
	w->end_status = EXPIRED_STATUS;
	w->end_why = EXPIRED_WHY;
}

size_t sl_weblogin_pending(struct sl_weblogin *w, uint64_t now_ms)
{
	(void)sl_lru_expire(&w->logins, now_ms);
	return w->logins.count;
}

/* Looked up after the expiry sweep of the same request: no second look
 * at the clock. */
static struct entry *by_id(struct sl_weblogin *w, const char *id)
{
	struct sl_lru_entry *le = sl_lru_peek(&w->logins, id);
	return le ? entry_of(le) : NULL;
}

static struct entry *by_state(struct sl_weblogin *w, const char *state)
{
	struct sl_list *n;

	sl_list_each(n, &w->logins.order) {
		struct entry *e = entry_of(sl_list_entry(n, struct sl_lru_entry, link));
		const char *s = e->phase == READY ? sl_oauth_login_state(e->login) : NULL;
		if (s && !strcmp(s, state))
			return e;
	}
	return NULL;
}

char *sl_weblogin_url_at(struct sl_weblogin *w, const struct sl_server_config *srv,
			 const char *user, const char *who, char **id_out, uint64_t now_ms)
{
	const char *base = w->cfg->http.public_url;
	uint8_t raw[SL_WEBLOGIN_ID_BYTES];
	struct entry *e = NULL, *x;
	struct sl_list *n;

	if (id_out)
		*id_out = NULL;
	if (!base || !srv->url)
		return NULL;
	(void)sl_lru_expire(&w->logins, now_ms);
	sl_list_each(n, &w->logins.order) {
		x = entry_of(sl_list_entry(n, struct sl_lru_entry, link));
		if (x->phase != EXCHANGING && !strcmp(x->srv->url, srv->url) && !strcmp(x->user, user)) {
			e = x;
			break;
		}
	}
	if (!e) {
		if (w->logins.count >= SL_WEBLOGIN_MAX)
			drop(entry_of(sl_lru_oldest(&w->logins)), 410, "This login was dropped: too many "
			     "logins are pending. Ask again for a new link.");
		e = sl_alloc(sizeof(*e));
		e->w = w;
		sl_random(raw, sizeof(raw));
		sl_base64url(raw, sizeof(raw), e->id);
		sl_random(raw, sizeof(raw));
		sl_base64url(raw, sizeof(raw), e->binder);
		e->cfg = sl_config_ref(w->cfg);
		e->srv = srv;
		e->user = sl_strdup(user);
		e->who = sl_strdup(who ? who : "an unnamed caller");
		sl_list_init(&e->waiting);
		(void)sl_lru_put(&w->logins, e->id, &e->le, 0, now_ms + SL_WEBLOGIN_TTL_MS);
	}
	if (id_out)
		*id_out = sl_strdup(e->id);
	return sl_printf("%s%s%s", base, SL_WEBLOGIN_LOGIN_PATH, e->id);
}

char *sl_weblogin_url(struct sl_weblogin *w, const struct sl_server_config *srv, const char *user,
		      const char *who, char **id_out)
{
	return sl_weblogin_url_at(w, srv, user, who, id_out, sl_now_ms());
}

/* ---- the login's hooks --------------------------------------------------------------------- */

static void on_authorize(void *arg, const char *url)
{
	struct entry *e = arg;
	struct sl_weblogin_req *q;

	e->authorize_url = sl_strdup(url);
	e->phase = READY;
	while ((q = next_waiting(e))) {
		page_login(q, e);
		if (!q->in_serve)
			free(q);
	}
}

static void on_done(void *arg, const struct sl_oauth_record *rec, const char *why)
{
	struct entry *e = arg;
	struct sl_weblogin *w = e->w;
	struct sl_weblogin_req *q;

	if (!rec) {
		/* The AS refused (error=... on the callback): the person's
		 * request, 400; else a server failed us: 502. */
		struct sl_list *first = sl_list_first(&e->waiting);
		unsigned status = first && sl_list_entry(first, struct sl_weblogin_req, link)->as_error ?
				  400 : 502;
		sl_log(SL_LOG_INFO, "web login of %s for %s: %s", e->srv->name, e->who, why);
		drop(e, status, why);
		return;
	}
	sl_log(SL_LOG_INFO, "web login: %s logged in to %s", e->who, e->srv->name);
	while ((q = next_waiting(e))) {
		const char *paras[] = { "Logged in to <strong>%s</strong> as <strong>%s</strong>. "
					"You can close this tab and retry.", NULL };
		const char *vals[] = { e->srv->name, e->who };
		char *clear = binder_cookie(e, true);
		page(q, 200, "logged in", paras, vals, clear);
		free(clear);
		if (!q->in_serve)
			free(q);
	}
	if (w->done)
		w->done(w->done_ctx, e->srv->name, e->user);
	drop(e, 0, NULL);
}

/* ---- serving ----------------------------------------------------------------------------- */

/* q waits for e's next page (the login page, or the callback's); false
 * when SL_WEBLOGIN_WAITING_MAX already do (q answered 503). */
static bool wait_on(struct entry *e, struct sl_weblogin_req *q)
{
	struct sl_list *p;
	unsigned n = 0;

	sl_list_each(p, &e->waiting)
		n++;
	if (n >= SL_WEBLOGIN_WAITING_MAX) {
		page_error(q, 503, "Too many pages wait for this login; try again in a moment.");
		return false;
	}
	q->e = e;
	sl_list_push_back(&e->waiting, &q->link);
	return true;
}

static bool start(struct entry *e, struct sl_err *err)
{
	struct sl_weblogin *w = e->w;
	char *redirect = sl_printf("%s%s", e->cfg->http.public_url, SL_WEBLOGIN_CALLBACK_PATH);
	struct sl_oauth_login_want want = { .cfg = e->cfg, .srv = e->srv, .user = e->user,
					    .redirect_uri = redirect };
	struct sl_oauth_login_hooks hooks = { .authorize = on_authorize, .done = on_done };
	int rc;

	rc = sl_oauth_store_open(e->cfg, &e->st, err);
	if (rc == SL_OK)
		rc = sl_oauth_login_new(w->loop, e->st, &want, &hooks, e, &e->login, err);
	free(redirect);
	if (rc < 0)
		return false;
	e->phase = STARTING;
	sl_oauth_login_start(e->login);
	return true;
}

static void login_page(struct sl_weblogin *w, const char *id, struct sl_weblogin_req *q)
{
	struct entry *e = by_id(w, id);
	struct sl_err err;

	if (!e) {
		page_error(q, 404, "This login link is unknown or has expired. Ask again (retry the "
			   "tool call) for a new one.");
	} else if (e->phase == READY) {
		page_login(q, e);
	} else if (e->phase == EXCHANGING) {
		page_error(q, 409, "This login is being completed already.");
	} else if (wait_on(e, q)) {
		if (e->phase == IDLE && !start(e, &err)) {
			char *why = sl_printf("login to %s failed: %s", e->srv->name, err.msg);
			drop(e, 500, why);
			free(why);
		}
	}
}

/* The query sl_oauth_redirect_check reads, rebuilt from the values (the
 * transport has them decoded). */
static char *query_of(const struct sl_weblogin_args *a)
{
	const char *names[] = { "code", "state", "iss", "error", "error_description" };
	const char *vals[] = { a->code, a->state, a->iss, a->error, a->error_description };
	struct sl_buf b;
	char *out;

	/* Each value is at most what libmicrohttpd read of one request, and
	 * one cut off fails the check rather than passing half a query. */
	sl_buf_init(&b, 3 * PAGE_MAX);
	for (size_t i = 0; i < SL_COUNT(names); i++)
		if (vals[i]) {
			char *v = sl_url_encode(vals[i]);
			(void)!sl_buf_printf(&b, "%s%s=%s", b.len ? "&" : "", names[i], v);
			free(v);
		}
	out = sl_strdup(b.data ? b.data : "");
	sl_buf_dispose(&b);
	return out;
}

static void callback(struct sl_weblogin *w, const struct sl_weblogin_args *a,
		     struct sl_weblogin_req *q)
{
	struct entry *e = a->state ? by_state(w, a->state) : NULL;
	char *query;

	if (!e) {
		page_error(q, 400, a->state ? "This login is unknown, already used or expired (the "
					     "state does not match a pending login). Ask again for "
					     "a new link." :
					     "The authorization server's answer has no state.");
		return;
	}
	if (!bound(e, a->cookie)) {
		/* RFC 9700 4.7: whoever got the authorization URL (or its
		 * state) cannot complete the login from another browser, into
		 * the account of the caller who asked for it. The state is
		 * spent, so the code this browser carries is never exchanged. */
		const char *paras[] = {
			"This login was for <strong>%s</strong> (server <strong>%s</strong>), and "
			"this browser did not open its page on the gateway (or did not keep its "
			"cookie). Nothing was saved, and this login has ended.",
			"A login through the gateway must be completed in the browser that opened "
			"the link the caller was given. If this login is yours, ask again (retry the "
			"tool call) and open the new link in this browser, the one where you log in.",
			NULL,
		};
		const char *vals[] = { e->who, e->srv->name };
		char *clear = binder_cookie(e, true);
		sl_log(SL_LOG_WARN, "web login of %s for %s: the callback came from a browser that "
		       "did not open the login page; nothing saved, the login ended", e->srv->name,
		       e->who);
		page(q, 403, "login refused", paras, vals, clear);
		free(clear);
		drop(e, 0, NULL);
		return;
	}
	if (!wait_on(e, q)) /* cannot be: a READY login has no page waiting */
		return;
	q->as_error = a->error != NULL;
	e->phase = EXCHANGING;
	query = query_of(a);
	if (sl_oauth_login_redirect(e->login, query) < 0)
		drop(e, 500, "The login was not waiting for this answer.");
	free(query);
}

bool sl_weblogin_path(const char *path)
{
	return !strncmp(path, SL_WEBLOGIN_LOGIN_PATH, strlen(SL_WEBLOGIN_LOGIN_PATH)) ||
	       !strcmp(path, SL_WEBLOGIN_CALLBACK_PATH);
}

struct sl_weblogin_req *sl_weblogin_serve(struct sl_weblogin *w, const char *path,
					  const struct sl_weblogin_args *args,
					  sl_weblogin_page_fn *fn, void *arg)
{
	struct sl_weblogin_req *q = sl_alloc(sizeof(*q));
	static const struct sl_weblogin_args none;

	q->page = fn;
	q->arg = arg;
	q->in_serve = true;
	sl_list_init(&q->link);
	(void)sl_lru_expire(&w->logins, sl_now_ms());
	if (!strncmp(path, SL_WEBLOGIN_LOGIN_PATH, strlen(SL_WEBLOGIN_LOGIN_PATH)))
		login_page(w, path + strlen(SL_WEBLOGIN_LOGIN_PATH), q);
	else if (!strcmp(path, SL_WEBLOGIN_CALLBACK_PATH))
		callback(w, args ? args : &none, q);
	else
		page_error(q, 404, "Not Found.");
	q->in_serve = false;
	if (q->answered) {
		free(q);
		return NULL;
	}
	return q;
}

void sl_weblogin_cancel(struct sl_weblogin_req *q)
{
	if (!q)
		return;
	sl_list_remove(&q->link);
	free(q);
}

/* ---- life ------------------------------------------------------------------------------- */

struct sl_weblogin *sl_weblogin_new(uv_loop_t *loop, const struct sl_config *gcfg)
{
	struct sl_weblogin *w = sl_alloc(sizeof(*w));

	w->loop = loop;
	w->cfg = sl_config_ref(gcfg);
	sl_lru_init(&w->logins, SL_WEBLOGIN_MAX, 0, entry_free, w);
	w->end_status = EXPIRED_STATUS;
	w->end_why = EXPIRED_WHY;
	sl_list_init(&w->dead);
	uv_timer_init(loop, &w->reap);
	w->reap.data = w;
	return w;
}

void sl_weblogin_set_done(struct sl_weblogin *w, sl_weblogin_done_fn *fn, void *ctx)
{
	w->done = fn;
	w->done_ctx = ctx;
}

static const struct sl_server_config *same_server(const struct sl_config *c,
						  const struct sl_server_config *srv)
{
	for (size_t i = 0; i < c->nservers; i++)
		if (!strcmp(c->servers[i].name, srv->name) && c->servers[i].url &&
		    !strcmp(c->servers[i].url, srv->url))
			return &c->servers[i];
	return NULL;
}

void sl_weblogin_reconfigure(struct sl_weblogin *w, const struct sl_config *gcfg)
{
	struct sl_list *n, *next;

	sl_list_each_safe(n, next, &w->logins.order) {
		struct entry *e = entry_of(sl_list_entry(n, struct sl_lru_entry, link));
		const struct sl_server_config *now = same_server(gcfg, e->srv);
		if (!now) {
			char *why = sl_printf("The server %s is no longer configured.", e->srv->name);
			drop(e, 410, why);
			free(why);
		} else if (e->phase == IDLE) {
			/* Not begun: it begins with the new config. */
			sl_config_unref(e->cfg);
			e->cfg = sl_config_ref(gcfg);
			e->srv = now;
		}
	}
	sl_config_unref(w->cfg);
	w->cfg = sl_config_ref(gcfg);
}

static void on_reap_closed(uv_handle_t *h)
{
	free(h->data);
}

void sl_weblogin_free(struct sl_weblogin *w)
{
	struct sl_lru_entry *le;

	if (!w)
		return;
	w->freeing = true;
	while ((le = sl_lru_oldest(&w->logins)))
		drop(entry_of(le), 503, "The gateway is shutting down.");
	sl_lru_dispose(&w->logins);
	on_reap(&w->reap);
	sl_config_unref(w->cfg);
	uv_close((uv_handle_t *)&w->reap, on_reap_closed);
}

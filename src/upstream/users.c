/*
 * Per-user delegation (mcpServers.<name>.oauth.perUser): on a shared
 * gateway each caller with an identity reaches an OAuth server through a
 * link of its own, carrying that caller's tokens (an MCP server binds its
 * session to the token's subject, so one link cannot carry several users).
 * docs/internals/AUTH.md, "Per-user delegation".
 *
 *   key         the caller's user key (sl_caller_user_key, auth/caller.h):
 *               one person is one user whatever profile they come through,
 *               in the server's u->users (a core/lru map, never evicting)
 *   made        on the caller's first request (sl_upstream_for), at most
 *               sluice.oauth.maxUsers per server; kept until the server
 *               goes (a reload that drops it, the gateway's end), so that
 *               a pointer a session holds stays valid
 *   connects    on a request, which is held meanwhile (upstream.c)
 *   closes      unused for sluice.oauth.userIdleSeconds (link ended, or
 *               its wait for a login given up), back to IDLE: about 6 KiB
 *               (the upstream 1.2 KiB, its OAuth client 3 KiB, its tokens)
 */
#include "upstream/link.h"
#include "auth/caller.h"
#include "core/log.h"
#include "oauth/client.h"
#include "oauth/store.h"

#include <stdlib.h>
#include <string.h>

#define SWEEP_MIN_MS 1000
#define SWEEP_MAX_MS 60000

struct sl_upstream *sl_upstream_server(struct sl_upstream *u)
{
	return u->parent ? u->parent : u;
}

const char *sl_upstream_login_url(const struct sl_upstream *u)
{
	return u->parent && u->state == SL_UP_NEEDS_LOGIN ? u->login_url : NULL;
}

static struct sl_upstream *link_of(struct sl_list *n)
{
	return sl_lru_item(sl_list_entry(n, struct sl_lru_entry, link), struct sl_upstream, in_users);
}

static void link_free(struct sl_lru_entry *e, void *arg)
{
	(void)arg;
	sl_upstream_free(sl_lru_item(e, struct sl_upstream, in_users));
}

void sl_upstream_users_init(struct sl_upstream *u)
{
	/* No bound of the map's: past maxUsers a new user is refused, and a
	 * link lives as long as its server. */
	sl_lru_init(&u->users, 0, 0, link_free, NULL);
}

/* ---- closing idle links --------------------------------------------------------- */

static uint64_t idle_ms(const struct sl_upstream *u)
{
	return (uint64_t)u->gcfg->oauth.user_idle_s * 1000;
}

static void sweep_one(struct sl_upstream *l, uint64_t now)
{
	if (l->pending || now - l->used_ms < idle_ms(l))
		return;
	if (l->state == SL_UP_READY) {
		sl_log(SL_LOG_DEBUG, "server '%s': closing %s's idle link", l->name, l->user_name);
		l->idling = true;
		sl_upstream_stop(l);
	} else if (l->state == SL_UP_NEEDS_LOGIN || l->state == SL_UP_BACKOFF) {
		/* No more watching for a login nobody waits on: the next call
		 * looks again. */
		sl_upstream_stop(l);
		l->state = SL_UP_IDLE;
	}
}

static void on_sweep(uv_timer_t *t)
{
	struct sl_upstream *u = t->data;
	uint64_t now = sl_now_ms();
	struct sl_list *n;

	sl_list_each(n, &u->users.order)
		sweep_one(link_of(n), now);
}

static void sweep_start(struct sl_upstream *u)
{
	uint64_t every = idle_ms(u) / 4;

	if (uv_is_active((uv_handle_t *)&u->idle_timer))
		return;
	every = every < SWEEP_MIN_MS ? SWEEP_MIN_MS : every > SWEEP_MAX_MS ? SWEEP_MAX_MS : every;
	uv_timer_start(&u->idle_timer, on_sweep, every, every);
}

/* ---- finding and making ------------------------------------------------------------ */

/* Tokens a person saved under the user key of before (oauth/store.h,
 * sl_oauth_store_migrate) move to their key now, before the link reads them. */
static void migrate(const struct sl_upstream *u, const char *key, const struct sl_caller *caller)
{
	struct sl_oauth_store *st;
	struct sl_err err;

	if (sl_oauth_store_open(u->gcfg, &st, &err) < 0)
		return; /* the link says why it has no store */
	if (sl_oauth_store_migrate(st, u->cfg->url, caller, key, &err) < 0)
		sl_log(SL_LOG_WARN, "server '%s': %s's saved tokens stay under their old name: %s",
		       u->name, sl_caller_name(caller), err.msg);
	sl_oauth_store_free(st);
}

static struct sl_upstream *user_link_new(struct sl_upstream *u, const char *key,
					 const struct sl_caller *caller)
{
	struct sl_upstream *l;

	migrate(u, key, caller);
	l = sl_upstream_make(u->loop, u->cfg, u->gcfg, u->ops, u->ctx, key);

	l->parent = u;
	l->user = sl_strdup(key);
	l->user_name = sl_strdup(sl_caller_name(caller));
	/* It declares upstream what its server does. */
	yyjson_mut_doc_set_root(l->caps_doc, yyjson_mut_val_mut_copy(l->caps_doc,
				yyjson_mut_doc_get_root(u->caps_doc)));
	(void)sl_lru_put(&u->users, key, &l->in_users, 0, 0);
	sweep_start(u);
	return l;
}

struct sl_upstream *sl_upstream_for(struct sl_upstream *u, const struct sl_caller *caller,
				    struct sl_err *err)
{
	struct sl_lru_entry *e;
	struct sl_upstream *l;
	char key[65];

	if (u->parent || !u->oauth || !u->cfg->oauth.per_user || !sl_caller_user_key(caller, key))
		return u;
	if (u->state == SL_UP_DISABLED || u->state == SL_UP_FAILED ||
	    u->state == SL_UP_STOPPING || u->state == SL_UP_STOPPED)
		return u; /* it fails the way its server does */
	if ((e = sl_lru_peek(&u->users, key))) {
		l = sl_lru_item(e, struct sl_upstream, in_users);
	} else {
		if (u->users.count >= u->gcfg->oauth.max_users) {
			sl_err_set(err, "server '%s' has links for %zu users already "
				   "(sluice.oauth.maxUsers): %s cannot have one until the gateway "
				   "reloads its config or restarts", u->name, u->users.count,
				   sl_caller_name(caller));
			return NULL;
		}
		l = user_link_new(u, key, caller);
	}
	/* oauth.tokenExchange: a token of the caller's other than the one
	 * refused is exchanged by the next request, no login. */
	if (l->state == SL_UP_NEEDS_LOGIN && sl_oauth_client_exchange_again(l->oauth)) {
		sl_upstream_stop(l);
		l->state = SL_UP_IDLE;
	}
	return l;
}

void sl_upstream_users_count(struct sl_upstream *u, size_t *open, size_t *awaiting_login)
{
	struct sl_list *n;

	*open = *awaiting_login = 0;
	sl_list_each(n, &u->users.order) {
		const struct sl_upstream *l = link_of(n);
		*open += l->link != NULL;
		*awaiting_login += l->state == SL_UP_NEEDS_LOGIN;
	}
}

void sl_upstream_user_logged_in(struct sl_upstream *u, const char *user)
{
	struct sl_lru_entry *e = sl_lru_peek(&u->users, user);
	struct sl_upstream *l = e ? sl_lru_item(e, struct sl_upstream, in_users) : NULL;

	if (l && l->state == SL_UP_NEEDS_LOGIN && sl_oauth_client_reload(l->oauth)) {
		sl_upstream_stop(l);
		l->state = SL_UP_IDLE; /* the next request connects, with the new token */
	}
}

/* ---- following the server -------------------------------------------------------------- */

void sl_upstream_users_stop(struct sl_upstream *u)
{
	struct sl_list *n;

	uv_timer_stop(&u->idle_timer);
	sl_list_each(n, &u->users.order) {
		struct sl_upstream *l = link_of(n);
		l->idling = false; /* a link closing for idleness now ends for good */
		sl_upstream_stop(l);
	}
}

bool sl_upstream_users_stopped(const struct sl_upstream *u)
{
	struct sl_list *n;

	sl_list_each(n, &u->users.order)
		if (!sl_upstream_stopped(link_of(n)))
			return false;
	return true;
}

/* Frees every link, then the map: the server is going. */
void sl_upstream_users_free(struct sl_upstream *u)
{
	sl_lru_dispose(&u->users);
}

void sl_upstream_users_reconfigure(struct sl_upstream *u)
{
	struct sl_list *n;

	sl_list_each(n, &u->users.order)
		sl_upstream_reconfigure(link_of(n), u->cfg, u->gcfg);
}

/*
 * One remote upstream's tokens at run time (client.h is the contract;
 * docs/internals/AUTH.md, "At run time: refresh, held requests, needs
 * login").
 *
 * State: the record from the store (rec.url NULL: none on disk), and what
 * the last token request ended with. At most one token request is in
 * flight (busy); every request that needs a token meanwhile waits in
 * `waiting` (at most sluice.oauth.maxHeldRequests), and all of them are
 * answered from one completion. Answers go out from a zero timer, so a
 * callback never runs inside the call that registered it, and a waiter
 * forgotten before its turn is never called.
 *
 * A new token comes by one of three requests (enum how): a refresh, the
 * client credentials grant, or, on a user's own link to an
 * oauth.tokenExchange server, the exchange of that user's own access token
 * (RFC 8693, held by oauth/subject.h) when no refresh token serves.
 */
#include "oauth/client.h"
#include "config/config.h"
#include "core/digest.h"
#include "core/list.h"
#include "core/log.h"
#include "event/fetch.h"
#include "oauth/subject.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETRY_GAP_MS 1000 /* after a failed token request, the next waits this long */
#define WHY_MAX 600

/* How a new access token is had without a person. */
enum how {
	HOW_NONE,                /* only a login gives one */
	HOW_REFRESH,
	HOW_CLIENT_CREDENTIALS,
	HOW_EXCHANGE,            /* RFC 8693 of the user's own token */
};

struct waiter {
	struct sl_list link;     /* in c->waiting or c->answering, oldest first */
	sl_oauth_ready_fn *cb;
	void *arg;
};

struct sl_oauth_client {
	uv_loop_t *loop;
	const struct sl_config *gcfg;         /* borrowed: the upstream holds a reference */
	const struct sl_server_config *cfg;
	char *user;
	struct sl_oauth_store *store;         /* NULL: it cannot be opened (store_error) */
	char *path;
	char *store_error;
	struct sl_oauth_record rec;
	struct sl_fetcher *fetcher;           /* made on first need */

	bool busy;                            /* a discovery or token request in flight */
	enum how asked;                       /* what that request is */
	bool needs_login;
	uint64_t failed_at;                   /* the last transient failure; 0: none */
	char failed_why[WHY_MAX];             /* and what it was */
	struct sl_list waiting, answering;    /* answering: taken by the timer, being called */
	unsigned nwaiting;
	bool answer_ok;
	char answer_why[WHY_MAX];
	uv_timer_t timer;
	char why[WHY_MAX];
	char scope_why[WHY_MAX];              /* a refusal a login mends; "": none since the last token */
	char sent_subject[SL_SHA256_HEX];     /* digest of the subject token of the exchange in flight */
	char refused_subject[SL_SHA256_HEX];  /* and of the last one refused; "": none */
};

static int64_t unix_now(void)
{
	return (int64_t)time(NULL);
}

static const char *name_of(const struct sl_oauth_client *c)
{
	return c->cfg->name;
}

static bool machine(const struct sl_oauth_client *c)
{
	return c->cfg->oauth.grant == SL_GRANT_CLIENT_CREDENTIALS;
}

bool sl_oauth_tokens_stale(const struct sl_oauth_tokens *t, int64_t now, uint32_t margin)
{
	int64_t m = margin, life = t->expires_at - t->issued_at;

	if (!t->access_token || t->expires_at <= 0)
		return false;
	/* A token that lives less than twice the margin (its lifetime known)
	 * is refreshed once half its life has passed: with the margin alone,
	 * one that lives under it would be stale from birth, and refreshed
	 * before every request. */
	if (t->issued_at > 0 && life > 0 && life / 2 < m)
		m = life / 2;
	return t->expires_at - m <= now;
}

/* A user's own link to a server that exchanges callers' tokens. */
static bool exchanges(const struct sl_oauth_client *c)
{
	return c->cfg->oauth.token_exchange && *c->user;
}

/* On an exchanging link in "needs login": the caller now holds another
 * token than the one refused (or one at all), worth one more exchange.
 * Bounded: one exchange per token the caller presents. */
static bool another_subject(const struct sl_oauth_client *c)
{
	char *t, hash[SL_SHA256_HEX];
	bool other;

	if (!exchanges(c))
		return false;
	if (!c->rec.as.issuer) /* never asked: any token held is worth it */
		return sl_oauth_subject_held(c->user);
	if (!(t = sl_oauth_subject_get(c->user, c->rec.as.issuer)))
		return false;
	sl_sha256_hex(t, strlen(t), hash);
	other = strcmp(hash, c->refused_subject) != 0;
	sl_oauth_subject_free(t);
	return other;
}

static enum how how_renewed(const struct sl_oauth_client *c)
{
	if (machine(c))
		return HOW_CLIENT_CREDENTIALS;
	if (c->rec.tokens.refresh_token && c->rec.as.token_endpoint && c->rec.reg.client_id)
		return HOW_REFRESH;
	if (exchanges(c) && sl_oauth_subject_held(c->user))
		return HOW_EXCHANGE;
	return HOW_NONE;
}

/* A new access token can be had without a person. */
static bool can_refresh(const struct sl_oauth_client *c)
{
	return how_renewed(c) != HOW_NONE;
}

static void set_why(struct sl_oauth_client *c, const char *fmt, ...) SL_PRINTF(2, 3);
static void set_why(struct sl_oauth_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

static void login_needed(struct sl_oauth_client *c)
{
	c->needs_login = true;
	set_why(c, "needs login: run `sluice auth login %s`", name_of(c));
}

/* ---- the store ----------------------------------------------------------- */

static void load(struct sl_oauth_client *c)
{
	struct sl_err err;
	int rc;

	sl_oauth_record_dispose(&c->rec);
	memset(&c->rec, 0, sizeof(c->rec));
	if (!c->store)
		return;
	rc = sl_oauth_store_load(c->store, c->cfg->url, c->user, &c->rec, &err);
	free(c->store_error);
	c->store_error = NULL;
	if (rc < 0) {
		memset(&c->rec, 0, sizeof(c->rec));
		if (rc != SL_ERR_NOT_FOUND)
			c->store_error = sl_strdup(err.msg);
	}
}

static void save(struct sl_oauth_client *c)
{
	struct sl_err err;

	if (!c->store)
		return;
	if (!c->rec.url) {
		c->rec.url = sl_strdup(c->cfg->url);
		c->rec.user = sl_strdup(c->user);
	}
	free(c->rec.server);
	c->rec.server = sl_strdup(name_of(c));
	c->rec.saved_at = unix_now();
	if (sl_oauth_store_save(c->store, &c->rec, &err) < 0)
		sl_log(SL_LOG_WARN, "server '%s': its token cannot be saved (%s); it is used until "
		       "sluice stops", name_of(c), err.msg);
}

/* ---- answering waiters ----------------------------------------------------- */

static void on_answer(uv_timer_t *t)
{
	struct sl_oauth_client *c = t->data;
	struct sl_list *n;

	while ((n = sl_list_first(&c->waiting))) {
		sl_list_remove(n);
		sl_list_push_back(&c->answering, n);
	}
	c->nwaiting = 0;
	while ((n = sl_list_first(&c->answering))) {
		struct waiter *w = sl_list_entry(n, struct waiter, link);
		sl_list_remove(n);
		memcpy(c->why, c->answer_why, sizeof(c->why));
		w->cb(w->arg, c->answer_ok);
		free(w);
	}
}

/* Every waiter hears ok (else c->why) on the next loop turn. */
static void answer(struct sl_oauth_client *c, bool ok)
{
	c->answer_ok = ok;
	memcpy(c->answer_why, c->why, sizeof(c->why));
	uv_timer_start(&c->timer, on_answer, 0, 0);
}

static enum sl_oauth_verdict wait_add(struct sl_oauth_client *c, sl_oauth_ready_fn *cb, void *arg)
{
	struct waiter *w;

	if (c->nwaiting >= c->gcfg->oauth.max_held) {
		set_why(c, "too many requests waiting for a token (sluice.oauth.maxHeldRequests, %u)",
			c->gcfg->oauth.max_held);
		return SL_OAUTH_FAIL;
	}
	w = sl_alloc(sizeof(*w));
	w->cb = cb;
	w->arg = arg;
	sl_list_push_back(&c->waiting, &w->link);
	c->nwaiting++;
	return SL_OAUTH_RETRY;
}

void sl_oauth_client_forget(struct sl_oauth_client *c, void *arg)
{
	struct sl_list *lists[] = { &c->waiting, &c->answering }, *n, *next;

	for (size_t i = 0; i < SL_COUNT(lists); i++)
		sl_list_each_safe(n, next, lists[i]) {
			struct waiter *w = sl_list_entry(n, struct waiter, link);
			if (w->arg != arg)
				continue;
			sl_list_remove(n);
			if (i == 0)
				c->nwaiting--;
			free(w);
		}
}

/* ---- token requests -------------------------------------------------------- */

/* Words of b not in a, appended to a (space-separated scope lists). */
static void scope_add(char **a, const char *b)
{
	const char *p = b;

	while (p && *p) {
		size_t n = strcspn(p, " ");
		bool have = false;
		for (const char *q = *a; q && *q;) {
			size_t m = strcspn(q, " ");
			if (m == n && !strncmp(p, q, n))
				have = true;
			q += m + (q[m] == ' ');
		}
		if (n && !have) {
			char *s = *a ? sl_printf("%s %.*s", *a, (int)n, p) : sl_strndup(p, n);
			free(*a);
			*a = s;
		}
		p += n + (p[n] == ' ');
	}
}

/* Every word of b is in a. */
static bool scope_has(const char *a, const char *b)
{
	char *u = a ? sl_strdup(a) : NULL;
	bool same;

	scope_add(&u, b);
	same = (!u && !a) || (u && a && !strcmp(u, a));
	free(u);
	return same;
}

static void on_token(void *arg, const struct sl_oauth_token_result *res);

/* The configured client: its secret (or key) stays in the config, not in
 * the record. Basic unless the authorization server takes only secrets in
 * the body. */
static struct sl_oauth_registration configured_client(const struct sl_oauth_client *c)
{
	const struct sl_server_oauth *o = &c->cfg->oauth;
	struct sl_oauth_registration reg = { .client_id = o->client_id, .client_secret = o->client_secret,
					     .key = o->key };

	if (o->key)
		reg.auth_method = "private_key_jwt";
	else if (c->rec.as.auth_methods && !(c->rec.as.auth_methods & SL_OAUTH_AUTH_BASIC) &&
	    (c->rec.as.auth_methods & SL_OAUTH_AUTH_POST))
		reg.auth_method = "client_secret_post";
	return reg;
}

/* The scopes a new token asks for: the config's, the server's, and those
 * a step-up asked for (as a login does). Malloc'd, or NULL. */
static char *scope_wanted(const struct sl_oauth_client *c)
{
	char *scope = NULL;

	scope_add(&scope, c->cfg->oauth.scope);
	scope_add(&scope, c->rec.as.scope);
	scope_add(&scope, c->rec.needs_scope);
	return scope;
}

static void request_client_credentials(struct sl_oauth_client *c)
{
	struct sl_oauth_registration reg = configured_client(c);
	struct sl_oauth_grant g = { .kind = SL_OAUTH_CLIENT_CREDENTIALS };
	char *scope = scope_wanted(c);

	g.scope = scope;
	sl_oauth_token(c->fetcher, &c->rec.as, &reg, &g, on_token, c);
	free(scope);
}

/* RFC 8693 2.1: the user's own access token, for one for this server (the
 * resource parameter, which sl_oauth_token adds). A token no longer held
 * (expired since the request was decided on), or one another authorization
 * server issued, leaves a login: a caller's token goes only back to its
 * issuer (oauth/subject.h). */
static void request_exchange(struct sl_oauth_client *c)
{
	struct sl_oauth_registration reg = configured_client(c);
	struct sl_oauth_grant g = { .kind = SL_OAUTH_TOKEN_EXCHANGE,
				    .subject_token_type = SL_OAUTH_ACCESS_TOKEN_TYPE };
	char *subject = sl_oauth_subject_get(c->user, c->rec.as.issuer), *scope;

	if (!subject) {
		if (sl_oauth_subject_held(c->user))
			sl_log(SL_LOG_WARN, "server '%s': its authorization server (%s) did not issue "
			       "the caller's token, which is not sent there: that caller logs in "
			       "instead", name_of(c), c->rec.as.issuer ? c->rec.as.issuer : "no issuer");
		c->busy = false;
		login_needed(c);
		answer(c, false);
		return;
	}
	scope = scope_wanted(c);
	sl_sha256_hex(subject, strlen(subject), c->sent_subject);
	g.subject_token = subject;
	g.scope = scope;
	sl_oauth_token(c->fetcher, &c->rec.as, &reg, &g, on_token, c);
	free(scope);
	sl_oauth_subject_free(subject);
}

static void request_refresh(struct sl_oauth_client *c)
{
	struct sl_oauth_registration reg = c->rec.reg;
	struct sl_oauth_grant g = { .kind = SL_OAUTH_REFRESH, .refresh_token = c->rec.tokens.refresh_token };

	/* A configured client's secret (or key) is the config's, not the
	 * record's. */
	if (!reg.client_secret && c->cfg->oauth.client_id && reg.client_id &&
	    !strcmp(c->cfg->oauth.client_id, reg.client_id)) {
		reg.client_secret = c->cfg->oauth.client_secret;
		reg.key = c->cfg->oauth.key;
	}
	sl_oauth_token(c->fetcher, &c->rec.as, &reg, &g, on_token, c);
}

/* A transient failure: this round's waiters fail, the state is unchanged
 * (a refresh token is still good), the next request tries again after
 * RETRY_GAP_MS. */
static void transient(struct sl_oauth_client *c, const char *what, const char *why)
{
	c->failed_at = sl_now_ms();
	set_why(c, "%s: %s; the next request tries again", what, why ? why : "no answer");
	memcpy(c->failed_why, c->why, sizeof(c->why));
	sl_log(SL_LOG_WARN, "server '%s' %s", name_of(c), c->why);
}

/* A token came: whatever was refused is worth trying again. */
static void fresh_token(struct sl_oauth_client *c)
{
	c->needs_login = false;
	c->failed_at = 0;
	c->why[0] = '\0';
	c->scope_why[0] = '\0';
}

static void on_token(void *arg, const struct sl_oauth_token_result *res)
{
	struct sl_oauth_client *c = arg;
	char *kept = NULL, *scope = NULL;

	c->busy = false;
	if (res->tokens) {
		/* A refresh answered without a refresh token keeps the old one. */
		if (!res->tokens->refresh_token) {
			kept = c->rec.tokens.refresh_token;
			c->rec.tokens.refresh_token = NULL;
		}
		/* RFC 6749 6: a refresh that names no scope grants the scope
		 * granted before (flow.c fills in only a scope it asked for).
		 * Step-up's "no login for scopes the token has" reads it. */
		if (!res->tokens->scope && !machine(c)) {
			scope = c->rec.tokens.scope;
			c->rec.tokens.scope = NULL;
		}
		sl_oauth_tokens_dispose(&c->rec.tokens);
		sl_oauth_tokens_copy(&c->rec.tokens, res->tokens);
		if (kept) {
			free(c->rec.tokens.refresh_token);
			c->rec.tokens.refresh_token = kept;
		}
		if (scope) {
			free(c->rec.tokens.scope);
			c->rec.tokens.scope = scope;
		}
		/* An exchanged token's refresh token (if any) is for the
		 * configured client: the record names it, never its secret. */
		if (c->asked == HOW_EXCHANGE && !c->rec.reg.client_id)
			c->rec.reg.client_id = sl_strdup(c->cfg->oauth.client_id);
		fresh_token(c);
		save(c);
		sl_log(SL_LOG_DEBUG, "server '%s': a new access token%s", name_of(c),
		       c->asked == HOW_EXCHANGE ? ", exchanged for a caller's own" : "");
		answer(c, true);
		return;
	}
	if (res->error && strcmp(res->error, "temporarily_unavailable") &&
	    strcmp(res->error, "server_error") && !machine(c)) {
		/* invalid_grant (expired or revoked), or a client the
		 * authorization server no longer knows: only a login mends it.
		 * So does an exchange refused (unsupported_grant_type,
		 * invalid_target, ...): the user logs in through the gateway. */
		if (c->asked == HOW_EXCHANGE)
			memcpy(c->refused_subject, c->sent_subject, sizeof(c->refused_subject));
		if (c->asked == HOW_EXCHANGE)
			sl_log(SL_LOG_INFO, "server '%s': a caller's token was not exchanged (%s); "
			       "that caller logs in instead", name_of(c), res->why ? res->why : res->error);
		else
			sl_log(SL_LOG_WARN, "server '%s': its refresh token was refused: %s", name_of(c),
			       res->why ? res->why : res->error);
		sl_oauth_tokens_dispose(&c->rec.tokens);
		memset(&c->rec.tokens, 0, sizeof(c->rec.tokens));
		login_needed(c);
	} else {
		transient(c, machine(c) ? "cannot get a token with its client credentials" :
			     c->asked == HOW_EXCHANGE ? "cannot exchange the caller's token" :
							"cannot refresh its token", res->why);
	}
	answer(c, false);
}

static void on_discovered(void *arg, const struct sl_oauth_server *s, const char *why)
{
	struct sl_oauth_client *c = arg;

	if (!s) {
		c->busy = false;
		transient(c, "cannot find its authorization server", why);
		answer(c, false);
		return;
	}
	sl_oauth_server_dispose(&c->rec.as);
	sl_oauth_server_copy(&c->rec.as, s);
	save(c);
	if (c->asked == HOW_EXCHANGE)
		request_exchange(c);
	else
		request_client_credentials(c);
}

/* Reads the record again before asking for a token: another process
 * (`sluice auth login`, a second gateway) may have one already, and a
 * refresh token rotated there would be refused here. True when the token
 * on disk differs from used (and is not itself stale). */
static bool newer_on_disk(struct sl_oauth_client *c, const char *used)
{
	struct sl_oauth_record rec = { 0 };
	struct sl_err err;

	if (!c->store || sl_oauth_store_load(c->store, c->cfg->url, c->user, &rec, &err) < 0)
		return false;
	if (!rec.tokens.access_token || (used && !strcmp(rec.tokens.access_token, used)) ||
	    (c->rec.tokens.access_token && !strcmp(rec.tokens.access_token, c->rec.tokens.access_token))) {
		sl_oauth_record_dispose(&rec);
		return false;
	}
	sl_oauth_record_dispose(&c->rec);
	c->rec = rec;
	c->needs_login = false;
	c->scope_why[0] = '\0';
	return !sl_oauth_tokens_stale(&c->rec.tokens, unix_now(), c->gcfg->oauth.refresh_before_s);
}

/* Starts the one token request, with cb waiting on it. www: the server's
 * challenge, for discovery (may be NULL). */
static enum sl_oauth_verdict start(struct sl_oauth_client *c, const char *www,
				   sl_oauth_ready_fn *cb, void *arg)
{
	struct sl_err err;

	if (c->failed_at && sl_now_ms() - c->failed_at < RETRY_GAP_MS) {
		memcpy(c->why, c->failed_why, sizeof(c->why));
		return SL_OAUTH_FAIL;
	}
	if (!c->fetcher) {
		char who[128];
		snprintf(who, sizeof(who), "server '%s' OAuth", name_of(c));
		if (sl_fetcher_new(c->loop, who, &c->fetcher, &err) < 0) {
			set_why(c, "cannot make token requests: %s", err.msg);
			return SL_OAUTH_FAIL;
		}
	}
	if (wait_add(c, cb, arg) == SL_OAUTH_FAIL)
		return SL_OAUTH_FAIL;
	c->busy = true;
	c->asked = how_renewed(c);
	/* Client credentials and an exchange find the token endpoint
	 * themselves; a refresh token comes with one (a login's). */
	if (c->asked == HOW_REFRESH)
		request_refresh(c);
	else if (!c->rec.as.token_endpoint)
		sl_oauth_discover(c->fetcher, c->cfg->url, www, on_discovered, c);
	else if (c->asked == HOW_EXCHANGE)
		request_exchange(c);
	else
		request_client_credentials(c);
	return SL_OAUTH_RETRY;
}

/* A new token is wanted (the one used was refused, or is stale). */
static enum sl_oauth_verdict renew(struct sl_oauth_client *c, const char *www, const char *used,
				   sl_oauth_ready_fn *cb, void *arg)
{
	enum sl_oauth_verdict v;

	if (c->busy)
		return wait_add(c, cb, arg);
	if (newer_on_disk(c, used)) {
		if ((v = wait_add(c, cb, arg)) == SL_OAUTH_RETRY)
			answer(c, true);
		return v;
	}
	if (!can_refresh(c)) {
		login_needed(c);
		return SL_OAUTH_FAIL;
	}
	return start(c, www, cb, arg);
}

/* ---- the interface ----------------------------------------------------------- */

struct sl_oauth_client *sl_oauth_client_new(uv_loop_t *loop, const struct sl_config *gcfg,
					    const struct sl_server_config *cfg, const char *user)
{
	struct sl_oauth_client *c = sl_alloc(sizeof(*c));
	struct sl_err err;

	c->loop = loop;
	c->gcfg = gcfg;
	c->cfg = cfg;
	c->user = sl_strdup(user);
	sl_list_init(&c->waiting);
	sl_list_init(&c->answering);
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	if (sl_oauth_store_open(gcfg, &c->store, &err) < 0) {
		c->store = NULL;
		c->store_error = sl_strdup(err.msg);
		c->path = sl_strdup("");
	} else {
		c->path = sl_oauth_store_path(c->store, cfg->url, user);
		load(c);
	}
	return c;
}

void sl_oauth_client_reconfigure(struct sl_oauth_client *c, const struct sl_config *gcfg,
				 const struct sl_server_config *cfg)
{
	bool was_machine = machine(c);

	c->gcfg = gcfg;
	c->cfg = cfg;
	/* Client credentials need no person: a switch to them ends "needs login". */
	if (machine(c) && !was_machine) {
		c->needs_login = false;
		c->failed_at = 0;
	}
}

static void on_client_closed(uv_handle_t *h)
{
	struct sl_oauth_client *c = h->data;
	free(c);
}

void sl_oauth_client_free(struct sl_oauth_client *c)
{
	struct sl_list *lists[2], *n;

	if (!c)
		return;
	lists[0] = &c->waiting;
	lists[1] = &c->answering;
	for (size_t i = 0; i < SL_COUNT(lists); i++)
		while ((n = sl_list_first(lists[i]))) {
			sl_list_remove(n);
			free(sl_list_entry(n, struct waiter, link));
		}
	if (c->fetcher)
		sl_fetcher_free(c->fetcher);
	sl_oauth_record_dispose(&c->rec);
	sl_oauth_store_free(c->store);
	free(c->store_error);
	free(c->path);
	free(c->user);
	uv_close((uv_handle_t *)&c->timer, on_client_closed);
}

const char *sl_oauth_client_token(struct sl_oauth_client *c)
{
	return c->rec.tokens.access_token;
}

bool sl_oauth_client_stale(const struct sl_oauth_client *c)
{
	if ((c->needs_login && !another_subject(c)) || !can_refresh(c))
		return false;
	/* Client credentials, or a user's token to exchange: get the first
	 * token before the first request. */
	if ((machine(c) || how_renewed(c) == HOW_EXCHANGE) && !c->rec.tokens.access_token)
		return true;
	return sl_oauth_tokens_stale(&c->rec.tokens, unix_now(), c->gcfg->oauth.refresh_before_s);
}

enum sl_oauth_verdict sl_oauth_client_refused(struct sl_oauth_client *c, long status,
					      const char *www_authenticate, const char *used,
					      sl_oauth_ready_fn *cb, void *arg)
{
	struct sl_oauth_challenge ch = { 0 };
	const char *cur = c->rec.tokens.access_token;
	enum sl_oauth_verdict v;
	bool parsed = www_authenticate &&
		      sl_oauth_challenge_parse(www_authenticate, strlen(www_authenticate), &ch) == SL_OK;

	if (status == 403) {
		const char *want = ch.scope ? ch.scope : "";
		bool asked;
		if (!parsed || !ch.error || strcmp(ch.error, "insufficient_scope")) {
			set_why(c, "refused the request (HTTP 403)");
			v = SL_OAUTH_FAIL;
			goto out;
		}
		/* A token newer than the one refused (in memory, or saved by a
		 * login that asked for the scope since): try again with it.
		 * Bounded: each try needs another token than the last one. */
		if (!c->busy && ((cur && used && strcmp(used, cur)) || newer_on_disk(c, used))) {
			if ((v = wait_add(c, cb, arg)) == SL_OAUTH_RETRY)
				answer(c, true);
			goto out;
		}
		/* Refused for scopes its token was granted: a login asking for
		 * them again would get the same refusal, so none is asked for
		 * (the loop MCP's scope challenge handling warns of). */
		if (*want && c->rec.tokens.scope && scope_has(c->rec.tokens.scope, want)) {
			set_why(c, "refused the request for the scope \"%s\", which its token has: a "
				"new login would not help", want);
			v = SL_OAUTH_FAIL;
			goto out;
		}
		/* MCP authorization, step-up: the scope is kept in the record,
		 * and asked for by the next login (or client credentials
		 * request). */
		asked = scope_has(c->rec.needs_scope, want);
		scope_add(&c->rec.needs_scope, want);
		if (!asked && c->rec.url)
			save(c);
		if (machine(c) && !asked && *want) {
			v = c->busy ? wait_add(c, cb, arg) : start(c, www_authenticate, cb, arg);
			goto out;
		}
		if (machine(c))
			set_why(c, "needs the scope \"%s\", which its client credentials were not granted",
				want);
		else
			set_why(c, "needs the scope \"%s\": run `sluice auth login %s`", want, name_of(c));
		if (!machine(c))
			memcpy(c->scope_why, c->why, sizeof(c->why));
		v = SL_OAUTH_FAIL;
		goto out;
	}
	/* A refusal of a token since replaced: try again with the new one. */
	if (cur && (!used || strcmp(used, cur)) && !c->busy) {
		if ((v = wait_add(c, cb, arg)) == SL_OAUTH_RETRY)
			answer(c, true);
		goto out;
	}
	if (c->needs_login && !sl_oauth_client_exchange_again(c)) {
		login_needed(c);
		v = SL_OAUTH_FAIL;
		goto out;
	}
	/* No Bearer challenge, no oauth object, no login: not an OAuth server
	 * (a wrong API key in "headers", say). */
	if (!parsed && !c->cfg->oauth.given && !c->rec.url) {
		set_why(c, "refused the request (HTTP %ld, without a Bearer challenge)", status);
		v = SL_OAUTH_FAIL;
		goto out;
	}
	v = renew(c, www_authenticate, used, cb, arg);
out:
	sl_oauth_challenge_dispose(&ch);
	return v;
}

enum sl_oauth_verdict sl_oauth_client_refresh(struct sl_oauth_client *c, sl_oauth_ready_fn *cb,
					      void *arg)
{
	if (c->needs_login && !sl_oauth_client_exchange_again(c)) {
		login_needed(c);
		return SL_OAUTH_FAIL;
	}
	return renew(c, NULL, c->rec.tokens.access_token, cb, arg);
}

const char *sl_oauth_client_why(const struct sl_oauth_client *c)
{
	return c->why[0] ? c->why : NULL;
}

bool sl_oauth_client_needs_login(const struct sl_oauth_client *c)
{
	return c->needs_login;
}

bool sl_oauth_client_exchange_again(struct sl_oauth_client *c)
{
	if (!c->needs_login || !another_subject(c))
		return false;
	c->needs_login = false;
	c->why[0] = '\0';
	return true;
}

bool sl_oauth_client_reload(struct sl_oauth_client *c)
{
	char *had = c->rec.tokens.access_token ? sl_strdup(c->rec.tokens.access_token) : NULL;
	bool fresh;

	load(c);
	fresh = c->rec.tokens.access_token && (!had || strcmp(had, c->rec.tokens.access_token));
	free(had);
	if (fresh)
		fresh_token(c);
	return fresh;
}

const char *sl_oauth_client_wants_scope(const struct sl_oauth_client *c)
{
	return c->scope_why[0] ? c->scope_why : NULL;
}

const char *sl_oauth_client_path(const struct sl_oauth_client *c)
{
	return c->path;
}

const char *sl_oauth_client_describe(struct sl_oauth_client *c, char *buf, size_t len)
{
	const struct sl_oauth_tokens *t = &c->rec.tokens;
	char exp[64] = "";

	if (c->store_error) {
		snprintf(buf, len, "its token store cannot be read: %s", c->store_error);
		return buf;
	}
	if (c->needs_login)
		return "needs login";
	if (!t->access_token)
		return machine(c) ? "client credentials (no token yet)" : "not logged in";
	if (t->expires_at) {
		int64_t left = t->expires_at - unix_now();
		if (left <= 0)
			snprintf(exp, sizeof(exp), "expired");
		else
			snprintf(exp, sizeof(exp), "expires in %lld min", (long long)((left + 59) / 60));
	}
	snprintf(buf, len, "%s (%s%s%s%s)", machine(c) ? "client credentials" : "logged in",
		 *exp ? exp : "no expiry given", t->scope ? ", scopes " : "", t->scope ? t->scope : "",
		 c->rec.needs_scope ? "; the server asks for more" : "");
	return buf;
}

/*
 * One login's steps (oauth/login.h): discovery, registration, the
 * authorization URL, the redirect, the exchange, the record saved. Where
 * the redirect comes back to, and what a person reads, are the caller's
 * (src/cli/login.c, oauth/weblogin.c).
 */
#include "oauth/login.h"

#include "config/config.h"
#include "core/buf.h"
#include "core/log.h"
#include "event/fetch.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum step { FRESH, DISCOVERING, AUTHORIZING, EXCHANGING, ENDED };

struct sl_oauth_login {
	const struct sl_config *cfg;
	const struct sl_server_config *srv;
	struct sl_oauth_store *st;
	struct sl_fetcher *f;
	struct sl_oauth_login_hooks hooks;
	void *arg;
	char *user;
	char *extra_scope;
	char *redirect_uri;
	enum step step;
	struct sl_oauth_record rec;   /* what was stored (prev registration, needs_scope) */
	bool have_rec;
	bool have_as, have_reg, have_pkce;
	struct sl_oauth_server as;
	struct sl_oauth_registration reg;
	struct sl_oauth_pkce pkce;
	char *scope;
};

static void fail(struct sl_oauth_login *l, const char *fmt, ...) SL_PRINTF(2, 3);

static void fail(struct sl_oauth_login *l, const char *fmt, ...)
{
	va_list ap;
	char *why;

	if (l->step == ENDED)
		return;
	l->step = ENDED;
	va_start(ap, fmt);
	why = sl_vprintf(fmt, ap);
	va_end(ap);
	if (l->hooks.done)
		l->hooks.done(l->arg, NULL, why);
	free(why);
}

/* ---- saving ------------------------------------------------------------------------ */

static void on_tokens(void *arg, const struct sl_oauth_token_result *res)
{
	struct sl_oauth_login *l = arg;
	struct sl_oauth_record r = { 0 };
	struct sl_err err;
	int rc;

	if (!res->tokens) {
		fail(l, "login to %s failed: %s", l->srv->name, res->why);
		return;
	}
	r.url = l->srv->url;
	r.user = l->user;
	r.server = l->srv->name;
	r.as = l->as;
	r.reg = l->reg;
	/* A configured client's secret stays in the config (client.c takes
	 * it from there): not a second copy in the record, gone stale when
	 * the config's is rotated. */
	if (r.reg.how && !strcmp(r.reg.how, "config"))
		r.reg.client_secret = NULL;
	r.tokens = *res->tokens;
	r.subject = sl_oauth_token_subject(r.tokens.access_token);
	r.saved_at = (int64_t)time(NULL);
	rc = sl_oauth_store_save(l->st, &r, &err);
	if (rc < 0) {
		fail(l, "login to %s succeeded, but the tokens cannot be saved: %s", l->srv->name,
		     err.msg);
	} else {
		l->step = ENDED;
		if (l->hooks.done)
			l->hooks.done(l->arg, &r, NULL);
	}
	free(r.subject);
}

int sl_oauth_login_redirect(struct sl_oauth_login *l, const char *redirect)
{
	struct sl_oauth_grant g = { .kind = SL_OAUTH_CODE, .verifier = l->pkce.verifier,
				    .redirect_uri = l->redirect_uri, .scope = l->scope };
	struct sl_err err;
	char *code;

	if (l->step != AUTHORIZING)
		return SL_ERR_INVALID;
	l->step = EXCHANGING;
	if (sl_oauth_redirect_check(redirect, &l->as, &l->pkce, &code, &err) < 0) {
		fail(l, "login to %s failed: %s", l->srv->name, err.msg);
		return SL_OK;
	}
	g.code = code;
	sl_oauth_token(l->f, &l->as, &l->reg, &g, on_tokens, l);
	free(code);
	return SL_OK;
}

/* ---- the steps -------------------------------------------------------------------------- */

/* The scopes to ask for: the server's (challenge or metadata), the
 * entry's, what a call was refused for (step-up), the caller's, and
 * offline_access where the AS has it (a refresh token); each once. */
static char *scopes(struct sl_oauth_login *l)
{
	const char *parts[5] = { l->as.scope, l->srv->oauth.scope,
				 l->have_rec ? l->rec.needs_scope : NULL, l->extra_scope,
				 l->as.offline_access ? "offline_access" : NULL };
	struct sl_buf b;
	char *out;

	sl_buf_init(&b, SL_OAUTH_VALUE_MAX);
	for (size_t i = 0; i < SL_COUNT(parts); i++) {
		const char *p = parts[i];
		while (p && *p) {
			size_t n = strcspn(p, " ");
			bool dup = false;
			for (const char *q = b.data; n && q && *q; q += strcspn(q, " "), q += *q == ' ')
				if (strcspn(q, " ") == n && !strncmp(q, p, n))
					dup = true;
			if (n && !dup && sl_buf_printf(&b, "%s%.*s", b.len ? " " : "", (int)n, p) < 0)
				break;
			p += n;
			p += strspn(p, " ");
		}
	}
	out = b.len ? sl_strndup(b.data, b.len) : NULL;
	sl_buf_dispose(&b);
	return out;
}

static void on_registered(void *arg, const struct sl_oauth_registration *r, const char *why)
{
	struct sl_oauth_login *l = arg;
	char *url;

	if (!r) {
		fail(l, "login to %s failed: %s", l->srv->name, why);
		return;
	}
	sl_oauth_registration_copy(&l->reg, r);
	l->have_reg = true;
	if (!l->reg.issuer)
		l->reg.issuer = sl_strdup(l->as.issuer);
	if (!l->reg.redirect_uri)
		l->reg.redirect_uri = sl_strdup(l->redirect_uri);
	l->scope = scopes(l);
	sl_oauth_pkce_new(&l->pkce);
	l->have_pkce = true;
	l->step = AUTHORIZING;
	url = sl_oauth_authorize_url(&l->as, &l->reg, l->redirect_uri, l->scope, &l->pkce);
	if (l->hooks.authorize)
		l->hooks.authorize(l->arg, url);
	free(url);
}

/* Client credentials: no person, no redirect; a token at once. */
static void machine_token(struct sl_oauth_login *l, const struct sl_oauth_client_want *want)
{
	struct sl_oauth_grant g = { .kind = SL_OAUTH_CLIENT_CREDENTIALS };
	const struct sl_oauth_server *s = &l->as;

	l->reg.client_id = sl_strdup(want->client_id);
	l->reg.client_secret = want->client_secret ? sl_strdup(want->client_secret) : NULL;
	l->reg.key = want->key;
	l->reg.issuer = sl_strdup(s->issuer);
	l->reg.auth_method = sl_strdup(want->key ? "private_key_jwt" :
				       !s->auth_methods || (s->auth_methods & SL_OAUTH_AUTH_BASIC) ?
					       "client_secret_basic" : "client_secret_post");
	l->reg.how = sl_strdup("config");
	l->have_reg = true;
	l->scope = scopes(l);
	g.scope = l->scope;
	l->step = EXCHANGING;
	sl_oauth_token(l->f, &l->as, &l->reg, &g, on_tokens, l);
}

static void on_discovered(void *arg, const struct sl_oauth_server *s, const char *why)
{
	struct sl_oauth_login *l = arg;
	const struct sl_server_config *srv = l->srv;
	struct sl_oauth_client_want want = {
		.client_id = srv->oauth.client_id, .client_secret = srv->oauth.client_secret,
		.key = srv->oauth.key,
		.metadata_url = srv->oauth.client_metadata_url ? srv->oauth.client_metadata_url :
								  l->cfg->oauth.client_metadata_url,
		.client_name = l->cfg->oauth.client_name,
		.machine = srv->oauth.grant == SL_GRANT_CLIENT_CREDENTIALS,
	};
	struct sl_err err;

	if (!s) {
		fail(l, "login to %s failed: %s", srv->name, why);
		return;
	}
	sl_oauth_server_copy(&l->as, s);
	l->have_as = true;
	if (want.machine) {
		machine_token(l, &want);
		return;
	}
	if (l->hooks.redirect_uri) {
		free(l->redirect_uri);
		l->redirect_uri = l->hooks.redirect_uri(l->arg, l->have_rec ? &l->rec.reg : NULL,
							&err);
		if (!l->redirect_uri) {
			fail(l, "login to %s failed: %s", srv->name, err.msg);
			return;
		}
	}
	if (!l->redirect_uri) {
		fail(l, "login to %s failed: no redirect URI", srv->name);
		return;
	}
	sl_oauth_register(l->f, &l->as, &want, l->have_rec ? &l->rec.reg : NULL, l->redirect_uri,
			  on_registered, l);
}

int sl_oauth_login_new(uv_loop_t *loop, struct sl_oauth_store *st,
		       const struct sl_oauth_login_want *want,
		       const struct sl_oauth_login_hooks *hooks, void *arg,
		       struct sl_oauth_login **out, struct sl_err *err)
{
	struct sl_oauth_login *l = sl_alloc(sizeof(*l));

	if (sl_fetcher_new(loop, "the OAuth login", &l->f, err) < 0) {
		free(l);
		return SL_ERR_INVALID;
	}
	l->cfg = want->cfg;
	l->srv = want->srv;
	l->st = st;
	l->hooks = *hooks;
	l->arg = arg;
	l->user = sl_strdup(want->user ? want->user : "");
	l->extra_scope = want->extra_scope ? sl_strdup(want->extra_scope) : NULL;
	l->redirect_uri = want->redirect_uri ? sl_strdup(want->redirect_uri) : NULL;
	*out = l;
	return SL_OK;
}

void sl_oauth_login_start(struct sl_oauth_login *l)
{
	struct sl_err err;
	int rc;

	if (l->step != FRESH)
		return;
	l->step = DISCOVERING;
	rc = sl_oauth_store_load(l->st, l->srv->url, l->user, &l->rec, &err);
	if (rc == SL_OK)
		l->have_rec = true;
	else if (rc != SL_ERR_NOT_FOUND)
		sl_log(SL_LOG_WARN, "the stored login for %s is ignored: %s", l->srv->name, err.msg);
	sl_oauth_discover(l->f, l->srv->url, NULL, on_discovered, l);
}

void sl_oauth_login_free(struct sl_oauth_login *l)
{
	if (!l)
		return;
	sl_fetcher_free(l->f);
	if (l->have_rec)
		sl_oauth_record_dispose(&l->rec);
	sl_oauth_server_dispose(&l->as);
	sl_oauth_registration_dispose(&l->reg);
	free(l->user);
	free(l->extra_scope);
	free(l->redirect_uri);
	free(l->scope);
	free(l);
}

const struct sl_oauth_server *sl_oauth_login_server(const struct sl_oauth_login *l)
{
	return l->have_as ? &l->as : NULL;
}

const struct sl_oauth_registration *sl_oauth_login_registration(const struct sl_oauth_login *l)
{
	return l->have_reg ? &l->reg : NULL;
}

const char *sl_oauth_login_scope(const struct sl_oauth_login *l)
{
	return l->scope;
}

const char *sl_oauth_login_redirect_uri(const struct sl_oauth_login *l)
{
	return l->redirect_uri;
}

const char *sl_oauth_login_state(const struct sl_oauth_login *l)
{
	return l->have_pkce ? l->pkce.state : NULL;
}

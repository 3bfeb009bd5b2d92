/*
 * sluice auth: the gateway's own logins to remote servers (src/oauth/).
 *
 *   auth login SERVER [--headless] [--scope "a b"]   sl_cli_auth_login (login.c)
 *   auth status [SERVER] [--json]    what the token store holds for each
 *                                    remote server: never a token or secret
 *   auth logout SERVER               revokes (RFC 7009) where the AS offers
 *                                    it, then forgets the record
 *
 * Only the gateway's own records (user "") are shown: a shared gateway's
 * per-user records are its users' business.
 */
#include "cli/cli.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/json.h"
#include "event/fetch.h"
#include "oauth/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "sluice auth"

static bool is_remote(const struct sl_server_config *s)
{
	return s->transport != SL_TRANSPORT_STDIO && s->url;
}

/* Text from a record or an authorization server, for a terminal. */
static void put(const char *s)
{
	struct sl_buf b;
	size_t len;
	char *e;

	sl_buf_init(&b, 4 * SL_OAUTH_VALUE_MAX);
	if (sl_escape(&b, s, strlen(s), SL_ESCAPE_LOG) < 0)
		(void)!sl_buf_appends(&b, "...");
	e = sl_buf_take(&b, &len);
	fputs(e, stdout);
	free(e);
}

static void row(const char *label, const char *value)
{
	printf("  %-12s ", label);
	put(value);
	putchar('\n');
}

/* "52 min", "3 h", "2 days": a rough span for a person. */
static void span(char *out, size_t n, int64_t s)
{
	if (s < 120)
		snprintf(out, n, "%lld s", (long long)s);
	else if (s < 120 * 60)
		snprintf(out, n, "%lld min", (long long)(s / 60));
	else if (s < 48 * 3600)
		snprintf(out, n, "%lld h", (long long)(s / 3600));
	else
		snprintf(out, n, "%lld days", (long long)(s / 86400));
}

static void list_remote(const struct sl_config *cfg)
{
	size_t n = 0;

	for (size_t i = 0; i < cfg->nservers; i++)
		if (is_remote(&cfg->servers[i]))
			fprintf(stderr, "%s%s", n++ ? ", " : " (remote servers: ",
				cfg->servers[i].name);
	fputs(n ? ")\n" : " (the config has no remote server)\n", stderr);
}

/* The remote server called name, or NULL after saying why. */
static const struct sl_server_config *find_remote(const struct sl_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nservers; i++)
		if (strcmp(cfg->servers[i].name, name) == 0) {
			if (is_remote(&cfg->servers[i]))
				return &cfg->servers[i];
			fprintf(stderr, CMD ": '%s' is not a remote server (no url): nothing to "
				"log in to;", name);
			list_remote(cfg);
			return NULL;
		}
	fprintf(stderr, CMD ": no server named '%s';", name);
	list_remote(cfg);
	return NULL;
}

/* ---- status ------------------------------------------------------------------- */

static void status_text(const struct sl_server_config *s, int rc, const struct sl_oauth_record *r,
			const char *why, int64_t now)
{
	char when[96], buf[48];
	char *line;

	put(s->name);
	fputs("  ", stdout);
	put(s->url);
	putchar('\n');
	if (rc == SL_ERR_NOT_FOUND) {
		printf("  not logged in: run `sluice auth login %s`\n", s->name);
		return;
	}
	if (rc < 0) {
		row("unreadable", why);
		return;
	}
	row("logged in", r->subject ? r->subject : "(subject not known)");
	if (r->as.issuer)
		row("issuer", r->as.issuer);
	if (r->reg.client_id) {
		line = sl_printf("%s (%s%s)", r->reg.client_id, r->reg.how ? r->reg.how : "registered",
				 r->reg.how && strcmp(r->reg.how, "dynamic") == 0 ? " registration" : "");
		row("client", line);
		free(line);
	}
	row("scopes", r->tokens.scope && r->tokens.scope[0] ? r->tokens.scope : "(none granted)");
	if (!r->tokens.access_token)
		snprintf(when, sizeof(when), "none");
	else if (r->tokens.expires_at == 0)
		snprintf(when, sizeof(when), "no expiry given");
	else if (r->tokens.expires_at > now) {
		span(buf, sizeof(buf), r->tokens.expires_at - now);
		snprintf(when, sizeof(when), "expires in %s", buf);
	} else {
		span(buf, sizeof(buf), now - r->tokens.expires_at);
		snprintf(when, sizeof(when), "expired %s ago", buf);
	}
	line = sl_printf("%s; refresh token: %s", when, r->tokens.refresh_token ? "yes" : "no");
	row("token", line);
	free(line);
	if (r->needs_scope) {
		row("needs scope", r->needs_scope);
		printf("  %-12s sluice auth login %s --scope \"", "", s->name);
		put(r->needs_scope);
		fputs("\"\n", stdout);
	}
}

static void add_str(yyjson_mut_doc *d, yyjson_mut_val *o, const char *k, const char *v)
{
	if (v)
		yyjson_mut_obj_add_strcpy(d, o, k, v);
	else
		yyjson_mut_obj_add_null(d, o, k);
}

static void status_json(yyjson_mut_doc *d, yyjson_mut_val *arr, const struct sl_server_config *s,
			int rc, const struct sl_oauth_record *r, const char *why, int64_t now)
{
	yyjson_mut_val *o = yyjson_mut_arr_add_obj(d, arr);
	bool in = rc == 0;

	yyjson_mut_obj_add_strcpy(d, o, "server", s->name);
	yyjson_mut_obj_add_strcpy(d, o, "url", s->url);
	yyjson_mut_obj_add_bool(d, o, "loggedIn", in);
	if (rc < 0 && rc != SL_ERR_NOT_FOUND)
		yyjson_mut_obj_add_strcpy(d, o, "error", why);
	if (!in)
		return;
	add_str(d, o, "subject", r->subject);
	add_str(d, o, "issuer", r->as.issuer);
	add_str(d, o, "clientId", r->reg.client_id);
	add_str(d, o, "registration", r->reg.how);
	add_str(d, o, "scope", r->tokens.scope);
	yyjson_mut_obj_add_bool(d, o, "accessToken", r->tokens.access_token != NULL);
	if (r->tokens.expires_at) {
		yyjson_mut_obj_add_int(d, o, "expiresAt", r->tokens.expires_at);
		yyjson_mut_obj_add_int(d, o, "expiresIn", r->tokens.expires_at - now);
	} else {
		yyjson_mut_obj_add_null(d, o, "expiresAt");
		yyjson_mut_obj_add_null(d, o, "expiresIn");
	}
	yyjson_mut_obj_add_bool(d, o, "refreshToken", r->tokens.refresh_token != NULL);
	add_str(d, o, "needsScope", r->needs_scope);
	yyjson_mut_obj_add_int(d, o, "savedAt", r->saved_at);
}

static int status(const struct sl_config *cfg, struct sl_oauth_store *st,
		  const struct sl_server_config *only, bool json)
{
	yyjson_mut_doc *d = json ? yyjson_mut_doc_new(NULL) : NULL;
	yyjson_mut_val *arr = NULL;
	int64_t now = (int64_t)time(NULL);
	size_t shown = 0;

	if (d) {
		arr = yyjson_mut_arr(d);
		yyjson_mut_doc_set_root(d, arr);
	}
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct sl_server_config *s = &cfg->servers[i];
		struct sl_oauth_record r = { 0 };
		struct sl_err err = { "" };
		int rc;

		if (!is_remote(s) || (only && only != s))
			continue;
		rc = sl_oauth_store_load(st, s->url, "", &r, &err);
		if (d) {
			status_json(d, arr, s, rc, &r, err.msg, now);
		} else {
			if (shown)
				putchar('\n');
			status_text(s, rc, &r, err.msg, now);
		}
		shown++;
		if (rc == 0)
			sl_oauth_record_dispose(&r);
	}
	if (d) {
		size_t len;
		char *text = yyjson_mut_write(d, YYJSON_WRITE_PRETTY_TWO_SPACES, &len);
		if (!text)
			sl_oom();
		puts(text);
		free(text);
		yyjson_mut_doc_free(d);
	} else if (!shown) {
		puts("no remote servers in the config");
	}
	return 0;
}

/* ---- logout ------------------------------------------------------------------- */

struct revoke {
	uv_loop_t *loop;
	bool done;
	char *why;        /* NULL: revoked */
};

static void on_revoked(void *arg, const char *why)
{
	struct revoke *rv = arg;

	rv->done = true;
	rv->why = why ? sl_strdup(why) : NULL;
	uv_stop(rv->loop);
}

/* RFC 7009 on a loop of its own: NULL when revoked, else why not (malloc'd). */
static char *revoke_token(const struct sl_oauth_record *r, const char *token, const char *hint)
{
	uv_loop_t loop;
	struct sl_fetcher *f;
	struct sl_err err;
	struct revoke rv = { .loop = &loop };

	if (uv_loop_init(&loop) < 0)
		return sl_strdup("cannot start an event loop");
	if (sl_fetcher_new(&loop, CMD " logout", &f, &err) < 0) {
		uv_loop_close(&loop);
		return sl_strdup(err.msg);
	}
	sl_oauth_revoke(f, &r->as, &r->reg, token, hint, on_revoked, &rv);
	uv_run(&loop, UV_RUN_DEFAULT);
	/* Freed here, never inside its own callback; its handles close on
	 * the second run. */
	sl_fetcher_free(f);
	uv_run(&loop, UV_RUN_DEFAULT);
	(void)uv_loop_close(&loop);
	if (!rv.done)
		return sl_strdup("no answer");
	return rv.why;
}

static int logout(struct sl_oauth_store *st, const struct sl_server_config *s)
{
	struct sl_oauth_record r = { 0 };
	struct sl_err err;
	const char *token, *hint;
	char *why = NULL, *path;
	int rc, exit_code = 0;

	rc = sl_oauth_store_load(st, s->url, "", &r, &err);
	if (rc == SL_ERR_NOT_FOUND) {
		printf("%s: not logged in; nothing to do\n", s->name);
		return 0;
	}
	if (rc < 0) {
		/* Nothing to revoke with, and a record that another key opens
		 * is not thrown away by a slip of the environment. */
		path = sl_oauth_store_path(st, s->url, "");
		fprintf(stderr, CMD ": %s\n" CMD ": nothing revoked or removed; to forget this "
			"login anyway, delete %s\n", err.msg, path);
		free(path);
		return 1;
	}
	token = r.tokens.refresh_token ? r.tokens.refresh_token : r.tokens.access_token;
	hint = r.tokens.refresh_token ? "refresh_token" : "access_token";
	if (!token) {
		printf("%s: no token to revoke\n", s->name);
	} else if (!r.as.revocation_endpoint) {
		printf("%s: the authorization server offers no revocation (RFC 7009): the %s "
		       "stays valid until it expires\n", s->name,
		       r.tokens.refresh_token ? "refresh token" : "access token");
	} else if ((why = revoke_token(&r, token, hint))) {
		fprintf(stderr, CMD ": warning: %s: revoking the %s failed: %s\n", s->name,
			r.tokens.refresh_token ? "refresh token" : "access token", why);
		exit_code = 1;
	} else {
		printf("%s: revoked the %s\n", s->name,
		       r.tokens.refresh_token ? "refresh token" : "access token");
	}
	rc = sl_oauth_store_remove(st, s->url, "", &err);
	if (rc < 0 && rc != SL_ERR_NOT_FOUND) {
		fprintf(stderr, CMD ": %s\n", err.msg);
		exit_code = 1;
	} else {
		printf("%s: logged out (the stored tokens are removed)\n", s->name);
	}
	free(why);
	sl_oauth_record_dispose(&r);
	return exit_code;
}

/* ---- the command -------------------------------------------------------------- */

int sl_cli_auth(const struct sl_config *cfg, int argc, const char *const *argv)
{
	const char *sub = argc > 0 ? argv[0] : NULL, *name = NULL, *scope = NULL;
	const struct sl_server_config *srv = NULL;
	bool json = false, headless = false;
	struct sl_oauth_store *st;
	struct sl_err err;
	int rc;

	if (!sub || (strcmp(sub, "login") && strcmp(sub, "status") && strcmp(sub, "logout"))) {
		fprintf(stderr, CMD ": %s%s%s (login, status or logout)\n",
			sub ? "unknown subcommand '" : "which one?", sub ? sub : "", sub ? "'" : "");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--json") && !strcmp(sub, "status")) {
			json = true;
		} else if (!strcmp(a, "--headless") && !strcmp(sub, "login")) {
			headless = true;
		} else if (!strcmp(a, "--scope") && !strcmp(sub, "login") && i + 1 < argc) {
			scope = argv[++i];
		} else if (!name && a[0] != '-') {
			name = a;
		} else {
			fprintf(stderr, CMD " %s: unknown or extra argument '%s'\n", sub, a);
			return 2;
		}
	}
	if (!name && strcmp(sub, "status") != 0) {
		fprintf(stderr, CMD " %s: which server?", sub);
		list_remote(cfg);
		return 2;
	}
	if (name && !(srv = find_remote(cfg, name)))
		return 2;
	if (!strcmp(sub, "login"))
		return sl_cli_auth_login(cfg, srv, headless, scope);
	if (sl_oauth_store_open(cfg, &st, &err) < 0) {
		fprintf(stderr, CMD ": %s\n", err.msg);
		return 2;
	}
	rc = !strcmp(sub, "status") ? status(cfg, st, srv, json) : logout(st, srv);
	sl_oauth_store_free(st);
	return rc;
}

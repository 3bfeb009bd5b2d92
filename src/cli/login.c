/*
 * sluice auth login SERVER: a person logs sluice in to a remote server that
 * requires OAuth (src/oauth/oauth.h has the protocol).
 *
 *   discover       an unauthenticated initialize, its 401, the metadata
 *   register       configured client, metadata document, or RFC 7591
 *   authorize      the URL on stdout (one line), opened in a browser where
 *                  a desktop is; the redirect comes back to a listener on
 *                  127.0.0.1 (a port the system picks, or the one the
 *                  stored registration names), or, with --headless, is
 *                  pasted on stdin
 *   exchange       the code, with the PKCE verifier; the tokens are saved
 *
 * A server with "grant": "client_credentials" needs no person: login gets
 * a token at once, to check the credentials. Everything a person reads on
 * stderr; stdout carries only the URL, for scripts.
 */
#include "cli/cli.h"
#include "core/escape.h"
#include "core/log.h"
#include "event/fetch.h"
#include "oauth/login.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_S 300             /* for the person to finish in the browser */
#define REQUEST_MAX 8192       /* of one request to the listener */
#define MAX_CONNECTIONS 16     /* at once on the listener (browsers open several); one
				* more replaces the oldest still silent */

struct login;

struct conn {
	uv_tcp_t tcp;
	struct login *l;
	char buf[REQUEST_MAX + 1];
	size_t len;
	char out[512];                /* the answer (sl_cli_login_reply) */
	bool done;
	unsigned slot;                /* in login.slot */
	uint64_t seq;                 /* accept order: the oldest silent one goes first */
};

struct login {
	uv_loop_t loop;
	const struct sl_server_config *srv;
	struct sl_oauth_store *st;
	struct sl_oauth_login *ol;    /* the steps (oauth/login.h) */
	bool headless;
	char *redirect_uri;           /* the listener's (or the headless one) */
	uv_tcp_t listener;
	bool listening;
	struct conn *slot[MAX_CONNECTIONS]; /* open connections; NULL: free */
	uint64_t accepted;
	uv_timer_t deadline;
	int rc;                       /* the exit status, once finished */
	bool finished;
};

static void finish(struct login *l, int rc, const char *fmt, ...) SL_PRINTF(3, 4);

static void close_listener(struct login *l)
{
	if (l->listening) {
		uv_close((uv_handle_t *)&l->listener, NULL);
		l->listening = false;
	}
}

static void finish(struct login *l, int rc, const char *fmt, ...)
{
	va_list ap;

	if (l->finished)
		return;
	l->finished = true;
	l->rc = rc;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	close_listener(l);
	uv_timer_stop(&l->deadline);
}

static void on_done(void *arg, const struct sl_oauth_record *r, const char *why)
{
	struct login *l = arg;
	long mins;

	if (!r) {
		finish(l, 1, "sluice: %s", why);
		return;
	}
	mins = r->tokens.expires_at ? (long)(r->tokens.expires_at - (int64_t)time(NULL)) / 60 : -1;
	if (mins >= 0)
		finish(l, 0, "sluice: logged in to %s (scopes: %s; the token expires in %ld min%s)",
		       l->srv->name, r->tokens.scope ? r->tokens.scope : "none named", mins,
		       r->tokens.refresh_token ? ", refreshed by sluice" : "");
	else
		finish(l, 0, "sluice: logged in to %s (scopes: %s)", l->srv->name,
		       r->tokens.scope ? r->tokens.scope : "none named");
}

static void exchange(struct login *l, const char *redirect)
{
	if (sl_oauth_login_redirect(l->ol, redirect) < 0)
		finish(l, 1, "sluice: login to %s: the redirect came too early", l->srv->name);
}

/* ---- the loopback listener ------------------------------------------------------------ */

static const char page_ok[] =
	"<!doctype html><title>sluice</title><p>sluice received the login. You can close this tab.\n";

size_t sl_cli_login_reply(char *out, size_t cap, bool ok)
{
	const char *body = ok ? page_ok : "";
	int n;

	/* Content-Length counted here, never by hand: a browser waits for the
	 * bytes a wrong one promises. */
	n = snprintf(out, cap, "HTTP/1.1 %s\r\nContent-Type: text/html; charset=utf-8\r\n"
		     "Connection: close\r\nCache-Control: no-store\r\nContent-Length: %zu\r\n\r\n%s",
		     ok ? "200 OK" : "404 Not Found", strlen(body), body);
	return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (c->l->slot[c->slot] == c) /* an evicted one's slot is another's now */
		c->l->slot[c->slot] = NULL;
	free(c);
}

static void on_written(uv_write_t *w, int status)
{
	struct conn *c = w->data;
	free(w);
	if (!uv_is_closing((uv_handle_t *)&c->tcp)) /* else closed by the end of the login */
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void reply(struct conn *c, bool ok)
{
	uv_write_t *w = sl_alloc(sizeof(*w));
	uv_buf_t b = uv_buf_init(c->out, (unsigned)sl_cli_login_reply(c->out, sizeof(c->out), ok));

	c->done = true;
	uv_read_stop((uv_stream_t *)&c->tcp);
	w->data = c;
	if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0) {
		free(w);
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
	}
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct conn *c = h->data;
	*b = uv_buf_init(c->buf + c->len, (unsigned)(REQUEST_MAX - c->len));
}

/* One request: "GET /callback?... HTTP/1.1"; only its request line counts. */
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct conn *c = s->data;
	struct login *l = c->l;
	char *eol, *target, *sp;

	if (n < 0) {
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	if (!strstr(c->buf, "\r\n\r\n")) {
		if (c->len >= REQUEST_MAX)
			reply(c, false);
		return;
	}
	eol = strstr(c->buf, "\r\n");
	*eol = '\0';
	target = strncmp(c->buf, "GET ", 4) == 0 ? c->buf + 4 : NULL;
	sp = target ? strchr(target, ' ') : NULL;
	if (!sp || strncmp(target, "/callback?", 10) != 0 || l->finished) {
		reply(c, false);
		return;
	}
	*sp = '\0';
	reply(c, true);
	close_listener(l); /* one redirect is the answer; no second try */
	exchange(l, target);
}

/* A free slot for a new connection. With none, the oldest connection that
 * has sent no whole request yet is closed and its slot taken: idle
 * connections (a browser's spares, or another local user's) cannot keep
 * the redirect out. -1: every one is being answered. */
static int free_slot(struct login *l)
{
	int oldest = -1;

	for (int i = 0; i < MAX_CONNECTIONS; i++) {
		if (!l->slot[i])
			return i;
		if (!l->slot[i]->done && !uv_is_closing((uv_handle_t *)&l->slot[i]->tcp) &&
		    (oldest < 0 || l->slot[i]->seq < l->slot[oldest]->seq))
			oldest = i;
	}
	if (oldest >= 0) {
		uv_close((uv_handle_t *)&l->slot[oldest]->tcp, on_conn_closed);
		l->slot[oldest] = NULL;
	}
	return oldest;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct login *l = server->data;
	struct conn *c;
	int i;

	if (status < 0)
		return;
	c = sl_alloc(sizeof(*c));
	c->l = l;
	uv_tcp_init(&l->loop, &c->tcp);
	c->tcp.data = c;
	i = free_slot(l);
	c->slot = i < 0 ? 0 : (unsigned)i;
	c->seq = ++l->accepted;
	if (i >= 0)
		l->slot[i] = c;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || i < 0 ||
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* Listens on 127.0.0.1: the stored dynamic registration's port if it is
 * free (so that registration is reused), else one the system picks. */
static int listen_loopback(struct login *l, const struct sl_oauth_registration *reg,
			   struct sl_err *err)
{
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int port = 0, len = sizeof(got), rc;
	const char *prev = reg && reg->how && !strcmp(reg->how, "dynamic") ? reg->redirect_uri : NULL;

	if (prev && !strncmp(prev, "http://127.0.0.1:", 17))
		port = atoi(prev + 17);
	for (int attempt = 0; attempt < 2; attempt++, port = 0) {
		uv_tcp_init(&l->loop, &l->listener);
		l->listener.data = l;
		uv_ip4_addr("127.0.0.1", port > 0 && port < 65536 ? port : 0, &a);
		if ((rc = uv_tcp_bind(&l->listener, (const struct sockaddr *)&a, 0)) == 0 &&
		    (rc = uv_listen((uv_stream_t *)&l->listener, 16, on_connection)) == 0)
			break;
		uv_close((uv_handle_t *)&l->listener, NULL);
		if (attempt == 1) {
			sl_err_set(err, "cannot listen on 127.0.0.1 for the redirect: %s", uv_strerror(rc));
			return SL_ERR_IO;
		}
	}
	l->listening = true;
	uv_tcp_getsockname(&l->listener, (struct sockaddr *)&got, &len);
	l->redirect_uri = sl_printf("http://127.0.0.1:%d/callback",
				    ntohs(((struct sockaddr_in *)&got)->sin_port));
	return SL_OK;
}

/* ---- the steps -------------------------------------------------------------------------- */

/* Opens the URL in the desktop's browser, if there is a desktop. */
static void open_browser(struct login *l, const char *url)
{
	static uv_process_t proc;
	char *args[] = { "xdg-open", (char *)url, NULL };
	uv_process_options_t o = { .file = "xdg-open", .args = args,
				   .flags = UV_PROCESS_DETACHED };
	uv_stdio_container_t io[3] = { { .flags = UV_IGNORE }, { .flags = UV_IGNORE },
				       { .flags = UV_IGNORE } };

	if (l->headless || (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY")))
		return;
	o.stdio = io;
	o.stdio_count = 3;
	if (uv_spawn(&l->loop, &proc, &o) == 0) {
		uv_unref((uv_handle_t *)&proc);
		uv_close((uv_handle_t *)&proc, NULL);
	}
}

static void on_authorize(void *arg, const char *url)
{
	struct login *l = arg;
	const struct sl_oauth_server *as = sl_oauth_login_server(l->ol);
	const char *scope = sl_oauth_login_scope(l->ol);
	struct sl_buf shown;
	char line[SL_OAUTH_VALUE_MAX + 2];

	sl_buf_init(&shown, 6 * SL_OAUTH_VALUE_MAX);
	if (sl_escape(&shown, as->issuer, strlen(as->issuer), SL_ESCAPE_LOG) < 0)
		(void)!sl_buf_appends(&shown, "?");
	fprintf(stderr, "sluice: to log in to %s, open this URL in a browser (authorization server "
		"%s, client registered by %s, scopes: %s):\n", l->srv->name, shown.data,
		sl_oauth_login_registration(l->ol)->how, scope ? scope : "none asked");
	sl_buf_dispose(&shown);
	printf("%s\n", url);
	fflush(stdout);
	if (l->headless) {
		fprintf(stderr, "sluice: then paste here the whole address the browser was sent to "
			"(it starts with %s):\n", l->redirect_uri);
		if (!fgets(line, sizeof(line), stdin)) {
			finish(l, 1, "sluice: login to %s: nothing was pasted", l->srv->name);
		} else {
			line[strcspn(line, "\r\n")] = '\0';
			exchange(l, line);
		}
	} else {
		fprintf(stderr, "sluice: waiting for the browser to come back to %s (%d min at most)\n",
			l->redirect_uri, WAIT_S / 60);
		open_browser(l, url);
	}
}

/* The redirect URI, once discovery found a code flow: the listener's, or
 * with --headless the stored loopback one (nothing listens: the person
 * pastes the address). */
static char *on_redirect_uri(void *arg, const struct sl_oauth_registration *prev,
			     struct sl_err *err)
{
	struct login *l = arg;
	const char *was = prev ? prev->redirect_uri : NULL;

	if (l->headless)
		l->redirect_uri = sl_strdup(was && !strncmp(was, "http://127.0.0.1", 16) ? was :
					    "http://127.0.0.1/callback");
	else if (listen_loopback(l, prev, err) < 0)
		return NULL;
	return sl_strdup(l->redirect_uri);
}

static void on_deadline(uv_timer_t *t)
{
	struct login *l = t->data;
	finish(l, 1, "sluice: login to %s: no answer from the browser within %d min; run the "
	       "command again", l->srv->name, WAIT_S / 60);
}

static void close_all(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int sl_cli_auth_login(const struct sl_config *cfg, const struct sl_server_config *srv,
		      bool headless, const char *scope)
{
	struct login *l = sl_alloc(sizeof(*l));
	struct sl_oauth_login_want want = { .cfg = cfg, .srv = srv, .user = "",
					    .extra_scope = scope };
	struct sl_oauth_login_hooks hooks = { .redirect_uri = on_redirect_uri,
					      .authorize = on_authorize, .done = on_done };
	struct sl_err err;
	int rc;

	l->srv = srv;
	l->headless = headless;
	l->rc = 1;
	uv_loop_init(&l->loop);
	uv_timer_init(&l->loop, &l->deadline);
	l->deadline.data = l;
	if (sl_oauth_store_open(cfg, &l->st, &err) < 0 ||
	    sl_oauth_login_new(&l->loop, l->st, &want, &hooks, l, &l->ol, &err) < 0) {
		fprintf(stderr, "sluice: %s\n", err.msg);
		goto out;
	}
	uv_timer_start(&l->deadline, on_deadline, (uint64_t)WAIT_S * 1000, 0);
	sl_oauth_login_start(l->ol);
	while (!l->finished && uv_run(&l->loop, UV_RUN_ONCE))
		;
out:
	rc = l->rc;
	sl_oauth_login_free(l->ol);
	close_listener(l);
	for (int i = 0; i < MAX_CONNECTIONS; i++) /* connections still open free themselves */
		if (l->slot[i] && !uv_is_closing((uv_handle_t *)&l->slot[i]->tcp))
			uv_close((uv_handle_t *)&l->slot[i]->tcp, on_conn_closed);
	uv_walk(&l->loop, close_all, NULL);
	uv_run(&l->loop, UV_RUN_DEFAULT);
	uv_loop_close(&l->loop);
	if (l->st)
		sl_oauth_store_free(l->st);
	free(l->redirect_uri);
	free(l);
	return rc;
}

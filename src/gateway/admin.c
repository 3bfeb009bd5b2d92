/*
 * The admin page (admin.h, docs/ADMIN.md). What it shows is read from the
 * objects that own it: upstreams, sessions and programs from the /status
 * object (status.c), pins from the pinning stage's store, waiting
 * confirmations from the policy stage, the audit tail from the audit file.
 * Nothing here changes state but sl_admin_act.
 *
 * No script at all: the buttons are plain forms, and the one style sheet is
 * allowed by its hash, so that markup a server slipped past the escaping
 * (there should be none) could neither run nor restyle the page.
 */
#include "gateway/admin.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "gateway/session.h"
#include "auth/caller.h"
#include "pipeline/call.h"
#include "pipeline/gen.h"
#include "stages/audit.h"
#include "stages/pinning.h"
#include "stages/policy.h"
#include "upstream/upstream.h"

#include <nettle/base16.h>
#include <nettle/base64.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define PAGE_MAX (8u << 20) /* bytes of one page; SL_ADMIN_ROWS rows of bounded cells fit */
#define CELL_MAX 300        /* bytes of one name or description shown, before escaping */

struct sl_admin {
	struct sl_gateway *gw;
	char csrf[SL_ADMIN_CSRF_HEX];
	char csp[256];
};

/* The whole style of the page: allowed by its SHA-256 in the CSP. */
static const char style[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}"
	"h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}"
	"table{border-collapse:collapse;background:#fff}"
	"td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}"
	"th{background:#eee}.meta{color:#666}.ok{color:#080}.bad{color:#b00;font-weight:bold}"
	".note{background:#ffd;border:1px solid #cc8;padding:.4em .6em;margin:.6em 0}"
	".err{background:#fdd;border-color:#c88}pre{background:#fff;border:1px solid #ccc;"
	"padding:.5em;overflow:auto;font-size:12px}form{display:inline;margin:0}"
	"button{font:inherit;padding:.1em .6em}.desc{color:#444;font-size:12px}";

struct sl_admin *sl_admin_new(struct sl_gateway *gw)
{
	struct sl_admin *a = sl_alloc(sizeof(*a));
	uint8_t rnd[32], digest[SHA256_DIGEST_SIZE];
	char b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
	struct sha256_ctx h;

	*a = (struct sl_admin){ .gw = gw };
	/* 32 bytes never come short from getrandom(2) once the pool is
	 * ready (random(7)); a failure is the kernel's, and a guessable
	 * token is worse than stopping. */
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		sl_log(SL_LOG_ERROR, "admin: getrandom failed: %s", strerror(errno));
		abort();
	}
	base16_encode_update(a->csrf, sizeof(rnd), rnd);
	a->csrf[2 * sizeof(rnd)] = '\0';
	sha256_init(&h);
	sha256_update(&h, sizeof(style) - 1, (const uint8_t *)style);
	sha256_digest(&h, sizeof(digest), digest);
	base64_encode_raw(b64, sizeof(digest), digest);
	b64[sizeof(b64) - 1] = '\0';
	snprintf(a->csp, sizeof(a->csp), "default-src 'none'; style-src 'sha256-%s'; "
		 "form-action 'self'; frame-ancestors 'none'; base-uri 'none'", b64);
	return a;
}

void sl_admin_free(struct sl_admin *a)
{
	free(a);
}

const char *sl_admin_csp(const struct sl_admin *a)
{
	return a->csp;
}

/* ---- writing the page ------------------------------------------------------------ */

/* The page being written: after the first failed append (over PAGE_MAX)
 * nothing more is added, and the page says it was cut. */
struct page {
	struct sl_buf b;
	int rc;
};

static void raw(struct page *p, const char *s)
{
	if (p->rc == 0)
		p->rc = sl_buf_appends(&p->b, s);
}

static void SL_PRINTF(2, 3) rawf(struct page *p, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = sl_vprintf(fmt, ap);
	va_end(ap);
	raw(p, s);
	free(s);
}

/* Untrusted text, escaped, cut at max bytes on a character's start. */
static void text_n(struct page *p, const char *s, size_t len, size_t max)
{
	bool cut = len > max;

	if (cut) {
		len = max;
		while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
			len--;
	}
	if (p->rc == 0)
		p->rc = sl_escape(&p->b, s, len, SL_ESCAPE_HTML);
	if (cut)
		raw(p, "…");
}

static void text(struct page *p, const char *s)
{
	if (!s)
		raw(p, "<span class=meta>-</span>");
	else
		text_n(p, s, strlen(s), CELL_MAX);
}

/* A name as a form value: every byte in hex, so the value names exactly
 * that name (admin.h, struct sl_admin_form). */
static void hexval(struct page *p, const char *s)
{
	size_t n = strlen(s);
	char *h = sl_alloc(BASE16_ENCODE_LENGTH(n) + 1);

	base16_encode_update(h, n, (const uint8_t *)s);
	h[BASE16_ENCODE_LENGTH(n)] = '\0';
	raw(p, h);
	free(h);
}

static void button(struct page *p, const struct sl_admin *a, const char *action, const char *label,
		   const char *server, const char *tool, const char *sha)
{
	raw(p, "<form method=post action=\"/admin\"><input type=hidden name=csrf value=\"");
	raw(p, a->csrf);
	rawf(p, "\"><input type=hidden name=action value=\"%s\"><input type=hidden name=server "
	     "value=\"", action);
	hexval(p, server);
	raw(p, "\"><input type=hidden name=tool value=\"");
	hexval(p, tool);
	raw(p, "\">");
	if (sha)
		rawf(p, "<input type=hidden name=sha value=\"%s\">", sha);
	rawf(p, "<button type=submit>%s</button></form> ", label);
}

static void upstreams(struct page *p, yyjson_mut_val *status)
{
	yyjson_mut_val *ups = yyjson_mut_obj_get(status, "upstreams"), *u;
	yyjson_mut_arr_iter it = yyjson_mut_arr_iter_with(ups);
	size_t rows = 0;

	raw(p, "<h2 id=upstreams>Upstreams</h2>\n<table><tr><th>Server</th><th>State</th>"
	    "<th>Tools</th><th>Note</th></tr>\n");
	while ((u = yyjson_mut_arr_iter_next(&it)) && rows++ < SL_ADMIN_ROWS) {
		const char *state = yyjson_mut_get_str(yyjson_mut_obj_get(u, "state"));
		raw(p, "<tr><td>");
		text(p, yyjson_mut_get_str(yyjson_mut_obj_get(u, "name")));
		rawf(p, "</td><td class=%s>", !state ? "bad" : !strcmp(state, "ready") ? "ok" :
		     !strcmp(state, "idle") ? "meta" : "bad");
		text(p, state);
		rawf(p, "</td><td>%llu</td><td>", (unsigned long long)yyjson_mut_get_uint(
			     yyjson_mut_obj_get(u, "tools")));
		text(p, yyjson_mut_get_str(yyjson_mut_obj_get(u, "error")));
		raw(p, "</td></tr>\n");
	}
	raw(p, "</table>\n");
	if (yyjson_mut_arr_size(ups) > SL_ADMIN_ROWS)
		rawf(p, "<p class=meta>and %zu more</p>\n", yyjson_mut_arr_size(ups) - SL_ADMIN_ROWS);
}

static const char *era_name(const struct sl_session *s)
{
	return s->era == SL_ERA_MODERN ? "2026-07-28" : s->era == SL_ERA_LEGACY ?
	       (s->version[0] ? s->version : "initializing") : "new";
}

static void sessions(struct page *p, struct sl_gateway *gw, yyjson_mut_val *status)
{
	yyjson_mut_val *prog = yyjson_mut_obj_get(status, "programs");
	size_t rows = 0, more = 0;
	const struct sl_list *n;

	rawf(p, "<h2 id=sessions>Sessions and programs</h2>\n<p>%llu sessions over HTTP, %llu "
	     "requests in flight. ", (unsigned long long)yyjson_mut_get_uint(
		     yyjson_mut_obj_get(status, "sessions")),
	     (unsigned long long)yyjson_mut_get_uint(yyjson_mut_obj_get(status, "requestsInFlight")));
	if (yyjson_mut_is_obj(prog))
		rawf(p, "Code mode: %llu programs running, %llu queued.</p>\n",
		     (unsigned long long)yyjson_mut_get_uint(yyjson_mut_obj_get(prog, "running")),
		     (unsigned long long)yyjson_mut_get_uint(yyjson_mut_obj_get(prog, "queued")));
	else
		raw(p, "Code mode is off.</p>\n");
	raw(p, "<table><tr><th>Session</th><th>Protocol</th><th>Caller</th><th>Profile</th>"
	    "<th>Requests</th></tr>\n");
	sl_list_each(n, &gw->sessions) {
		const struct sl_session *s = sl_list_entry(n, struct sl_session, link);
		if (rows++ >= SL_ADMIN_ROWS) {
			more++;
			continue;
		}
		rawf(p, "<tr><td>%llu</td><td>", (unsigned long long)s->id);
		text(p, era_name(s));
		raw(p, "</td><td>");
		text(p, s->caller ? s->caller->subject : NULL);
		raw(p, "</td><td>");
		text(p, s->caller ? s->caller->profile : NULL);
		rawf(p, "</td><td>%zu</td></tr>\n", s->calls.live);
	}
	raw(p, "</table>\n");
	if (more)
		rawf(p, "<p class=meta>and %zu more</p>\n", more);
}

static void pin_row(struct page *p, const struct sl_admin *a, struct sl_pinning *pg,
		    struct sl_pins *store, const struct sl_upstream *up, const char *key,
		    yyjson_val *def)
{
	const char *name = sl_json_str(def, "name");
	enum sl_pin_status st;
	enum sl_pin_hold hold;
	char hex[SL_PIN_HEX];
	yyjson_val *pin;

	st = sl_pinning_check(store, key, def, &pin);
	hold = sl_pinning_hold(pg, up, def);
	sl_pinning_hash(def, hex, NULL);
	raw(p, "<tr><td>");
	text(p, up->name);
	raw(p, "</td><td>");
	text(p, name);
	if (st != SL_PIN_OK) {
		/* What the person approves: the live description, and the
		 * pinned one it replaces. */
		const char *now = sl_json_str(def, "description");
		const char *was = sl_json_str(yyjson_obj_get(pin, "definition"), "description");
		raw(p, "<div class=desc>live: ");
		text(p, now);
		if (st == SL_PIN_CHANGED) {
			raw(p, "<br>pinned: ");
			text(p, was);
		}
		raw(p, "</div>");
	}
	rawf(p, "</td><td class=%s>%s%s</td><td>", st == SL_PIN_OK ? "ok" : "bad",
	     sl_pin_status_name(st), hold != SL_PIN_SHOWN ? " (hidden)" : "");
	text(p, sl_json_str(pin, "pinnedAt"));
	rawf(p, "</td><td><code>%.12s</code></td><td>", hex);
	if (st != SL_PIN_OK)
		button(p, a, "approve", "Approve", up->name, name, hex);
	if (pin)
		button(p, a, "reset", "Reset", up->name, name, NULL);
	raw(p, "</td></tr>\n");
}

static void pins(struct page *p, const struct sl_admin *a, struct sl_gateway *gw)
{
	struct sl_pinning *pg = sl_gen_state(gw->gen, &sl_stage_pinning);
	struct sl_pins *store = sl_pinning_store(pg);
	size_t rows = 0, more = 0;

	raw(p, "<h2 id=pins>Tool pins</h2>\n");
	if (!store) {
		raw(p, "<p>Pinning is off (sluice.pinning).</p>\n");
		return;
	}
	raw(p, "<p class=meta>Approve trusts a tool's live definition, as <code>sluice pins approve "
	    "server.tool</code> does; reset forgets its pin, as <code>sluice pins reset</code>.</p>\n"
	    "<table><tr><th>Server</th><th>Tool</th><th>Status</th><th>Pinned at</th>"
	    "<th>Live SHA-256</th><th></th></tr>\n");
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *up = gw->ups[i];
		struct sl_pin_review r;
		char *key;

		/* Picks up pins another process changed (sluice pins). */
		sl_pinning_review(pg, up, &r);
		if (up->state != SL_UP_READY) {
			raw(p, "<tr><td>");
			text(p, up->name);
			raw(p, "</td><td colspan=5 class=meta>not compared: the server is ");
			text(p, sl_upstream_state_name(up->state));
			raw(p, "</td></tr>\n");
			continue;
		}
		key = sl_pinning_key(up->cfg);
		for (size_t j = 0; j < up->tools.n; j++) {
			if (!sl_json_str(up->tools.items[j], "name"))
				continue;
			if (rows++ >= SL_ADMIN_ROWS) {
				more++;
				continue;
			}
			pin_row(p, a, pg, store, up, key, up->tools.items[j]);
		}
		free(key);
	}
	raw(p, "</table>\n");
	if (more)
		rawf(p, "<p class=meta>and %zu more</p>\n", more);
}

struct waits {
	struct page *p;
	size_t rows;
};

static void on_wait(void *ctx, const struct sl_call *c, const char *reason)
{
	struct waits *w = ctx;

	if (w->rows++ >= SL_ADMIN_ROWS)
		return;
	raw(w->p, "<tr><td>");
	text(w->p, c->up->name);
	raw(w->p, "</td><td>");
	text(w->p, c->tool);
	rawf(w->p, "</td><td>%llu</td><td>%llu s</td><td>", c->session ?
	     (unsigned long long)c->session->id : 0ULL,
	     (unsigned long long)((sl_now_us() - c->started_us) / 1000000));
	text(w->p, reason);
	raw(w->p, "</td></tr>\n");
}

static void confirmations(struct page *p, struct sl_gateway *gw)
{
	struct waits w = { p, 0 };

	raw(p, "<h2 id=confirmations>Waiting for confirmation</h2>\n<p class=meta>Calls a policy "
	    "rule holds until the person at the client confirms them. Shown only: the question is "
	    "theirs to answer, and approving it here would let whoever opens this page act for "
	    "them. 2026-07-28 clients hold their confirmations themselves (a sealed "
	    "requestState), so none of theirs are listed.</p>\n<table><tr><th>Server</th>"
	    "<th>Tool</th><th>Session</th><th>Waiting</th><th>Asked by</th></tr>\n");
	sl_policy_each_wait(sl_gen_state(gw->gen, &sl_stage_policy), on_wait, &w);
	raw(p, "</table>\n");
	if (w.rows > SL_ADMIN_ROWS)
		rawf(p, "<p class=meta>and %zu more</p>\n", w.rows - SL_ADMIN_ROWS);
}

static void audit_tail(struct page *p, struct sl_gateway *gw)
{
	struct sl_err err;
	char **lines;
	size_t n;

	rawf(p, "<h2 id=audit>Audit log, newest last</h2>\n");
	if (sl_audit_tail(gw->gen, SL_ADMIN_AUDIT_LINES, SL_ADMIN_AUDIT_LINE_MAX, &lines, &n,
			  &err) < 0) {
		raw(p, "<p class=bad>");
		text(p, err.msg);
		raw(p, "</p>\n");
		return;
	}
	if (!lines) {
		raw(p, "<p>The audit log is off (sluice.audit).</p>\n");
		return;
	}
	rawf(p, "<p class=meta>The last %zu lines (at most %d, each cut at %d bytes).</p>\n<pre>",
	     n, SL_ADMIN_AUDIT_LINES, SL_ADMIN_AUDIT_LINE_MAX);
	for (size_t i = 0; i < n; i++) {
		text_n(p, lines[i], strlen(lines[i]), SL_ADMIN_AUDIT_LINE_MAX);
		raw(p, "\n");
		free(lines[i]);
	}
	raw(p, "</pre>\n");
	free(lines);
}

char *sl_admin_page(struct sl_admin *a, uint32_t nsessions, const char *notice, size_t *len)
{
	struct sl_gateway *gw = a->gw;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *status;
	struct page p = { .rc = 0 };

	if (!d)
		sl_oom();
	status = sl_gateway_status_doc(gw, nsessions, d);
	sl_buf_init(&p.b, PAGE_MAX);
	raw(&p, "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
	    "<meta name=viewport content=\"width=device-width\"><title>sluice admin</title><style>");
	raw(&p, style);
	rawf(&p, "</style></head><body>\n<h1>sluice admin</h1>\n<p class=meta>sluice %s, up %llu s, "
	     "configuration generation %llu</p>\n", SL_VERSION,
	     (unsigned long long)yyjson_mut_get_uint(yyjson_mut_obj_get(status, "uptimeSeconds")),
	     (unsigned long long)yyjson_mut_get_uint(yyjson_mut_obj_get(status,
									  "configGeneration")));
	if (notice) {
		raw(&p, "<p class=note role=status>");
		text_n(&p, notice, strlen(notice), 1000);
		raw(&p, "</p>\n");
	}
	upstreams(&p, status);
	sessions(&p, gw, status);
	pins(&p, a, gw);
	confirmations(&p, gw);
	audit_tail(&p, gw);
	raw(&p, "</body></html>\n");
	yyjson_mut_doc_free(d);
	if (p.rc < 0) {
		sl_buf_dispose(&p.b);
		sl_buf_init(&p.b, 0);
		if (sl_buf_appends(&p.b, "<!doctype html>\n<title>sluice admin</title><p>The page is "
				   "over its bound; see GET /status.</p>\n") < 0)
			sl_oom();
	}
	return sl_buf_take(&p.b, len);
}

/* ---- the forms --------------------------------------------------------------------- */

bool sl_admin_same_origin(bool tls, const char *host, const char *origin, const char *fetch_site)
{
	const char *scheme = tls ? "https://" : "http://";
	size_t sl = strlen(scheme);

	if (!origin)
		return fetch_site && !strcmp(fetch_site, "same-origin");
	return host && !strncmp(origin, scheme, sl) && !strcmp(origin + sl, host);
}

void sl_admin_form_field(struct sl_admin_form *f, const char *key, const char *data, uint64_t off,
			 size_t size)
{
	char *field = !strcmp(key, "csrf") ? f->csrf : !strcmp(key, "action") ? f->action :
		      !strcmp(key, "server") ? f->server : !strcmp(key, "tool") ? f->tool :
		      !strcmp(key, "sha") ? f->sha : NULL;
	size_t cap = !field ? 0 : field == f->csrf ? sizeof(f->csrf) :
		     field == f->action ? sizeof(f->action) : field == f->server ?
		     sizeof(f->server) : field == f->tool ? sizeof(f->tool) : sizeof(f->sha);

	if (!field)
		return;
	/* A repeated key starts again at 0 over a filled field. */
	if ((off == 0 && field[0]) || off != strlen(field) || off + size >= cap) {
		f->bad = true;
		return;
	}
	memcpy(field + off, data, size);
	field[off + size] = '\0';
}

bool sl_admin_csrf_ok(const struct sl_admin *a, const char *token)
{
	/* The length is no secret: the page shows it. */
	return token && strlen(token) == SL_ADMIN_CSRF_HEX - 1 &&
	       memeql_sec(token, a->csrf, SL_ADMIN_CSRF_HEX - 1);
}

/* A name back from its hex; false for bad hex, an empty name or a NUL in
 * it. out holds (strlen(hex) + 1) / 2 + 1 bytes. */
static bool unhex(const char *hex, char *out)
{
	struct base16_decode_ctx ctx;
	size_t n = (strlen(hex) + 1) / 2;

	base16_decode_init(&ctx);
	if (!*hex || !base16_decode_update(&ctx, &n, (uint8_t *)out, strlen(hex), hex) ||
	    !base16_decode_final(&ctx) || memchr(out, '\0', n))
		return false;
	out[n] = '\0';
	return true;
}

static yyjson_val *live_def(const struct sl_upstream *up, const char *tool)
{
	for (size_t i = 0; i < up->tools.n; i++) {
		const char *n = sl_json_str(up->tools.items[i], "name");
		if (n && !strcmp(n, tool))
			return up->tools.items[i];
	}
	return NULL;
}

unsigned sl_admin_act(struct sl_admin *a, const struct sl_admin_form *f, const char *peer,
		      char *msg, size_t n)
{
	struct sl_gateway *gw = a->gw;
	struct sl_pinning *pg = sl_gen_state(gw->gen, &sl_stage_pinning);
	char server[sizeof(f->server) / 2 + 1], tool[sizeof(f->tool) / 2 + 1], hex[SL_PIN_HEX];
	bool approve = !strcmp(f->action, "approve"), reset = !strcmp(f->action, "reset");
	const char *action = approve ? "pins.approve" : "pins.reset";
	struct sl_upstream *up;
	struct sl_err err;
	unsigned status;
	size_t count;

	if (f->bad || (!approve && !reset) || !unhex(f->server, server) || !unhex(f->tool, tool)) {
		/* Not audited: nothing was asked that names anything. */
		snprintf(msg, n, "a bad form: reload the page and try again");
		return 400;
	}
	if (!pg) {
		snprintf(msg, n, "pinning is off (sluice.pinning)");
		status = 503;
		goto out;
	}
	up = sl_gateway_upstream(gw, server);
	if (approve) {
		yyjson_val *def = up && up->state == SL_UP_READY ? live_def(up, tool) : NULL;
		if (!up || (up->state == SL_UP_READY && !def)) {
			snprintf(msg, n, "%s.%s is not a live tool", server, tool);
			status = 404;
			goto out;
		}
		if (!def) {
			snprintf(msg, n, "%s is %s: its tools cannot be approved now", server,
				 sl_upstream_state_name(up->state));
			status = 409;
			goto out;
		}
		/* The person trusted the definition the page showed, not
		 * whatever the server swapped in since. */
		sl_pinning_hash(def, hex, NULL);
		if (strlen(f->sha) != SL_PIN_HEX - 1 || strcmp(f->sha, hex) != 0) {
			snprintf(msg, n, "%s.%s changed since the page showed it: nothing approved; "
				 "review it again", server, tool);
			status = 409;
			goto out;
		}
		if (sl_pinning_approve_live(sl_pinning_store(pg), up, tool, NULL, NULL, &count,
					    &err) < 0) {
			snprintf(msg, n, "%s", err.msg);
			status = 500;
			goto out;
		}
		snprintf(msg, n, "approved %s.%s (sha256:%.12s)", server, tool, hex);
	} else {
		if (sl_pinning_reset(sl_pinning_store(pg), gw->gen->cfg, server, tool, &count, &err) < 0) {
			snprintf(msg, n, "%s", err.msg);
			status = 500;
			goto out;
		}
		if (!count) {
			snprintf(msg, n, "%s.%s has no pin", server, tool);
			status = 404;
			goto out;
		}
		snprintf(msg, n, "forgot the pin of %s.%s", server, tool);
	}
	status = 200;
	/* Clients list again, and see what the stage now lets through. */
	sl_gateway_tools_changed(gw);
out:
	sl_audit_admin(gw->gen, action, server, tool, peer, status == 200 ? "ok" : "refused", msg);
	return status;
}

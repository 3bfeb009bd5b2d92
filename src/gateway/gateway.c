/* The gateway aggregate: upstreams, catalog and sessions; see gateway.h. */
#include "gateway/gateway.h"
#include "auth/caller.h"
#include "discovery/discovery.h"
#include "gateway/codemode.h"
#include "gateway/kept.h"
#include "gateway/listing.h"
#include "gateway/router.h"
#include "gateway/session_int.h"
#include "gateway/view.h"
#include "oauth/subject.h"
#include "core/log.h"
#include "proto/mcp.h"
#include "oauth/weblogin.h"
#include "sandbox/kernel.h"
#include "sandbox/sandbox.h"
#include "pipeline/call.h"
#include "stages/pinning.h"
#include "shared/fleet.h"
#include "shared/once.h"
#include "shared/redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STOP_POLL_MS 20

static void on_up_ready(void *ctx, struct sl_upstream *u);
static void on_up_down(void *ctx, struct sl_upstream *u);
static void on_up_notify(void *ctx, struct sl_upstream *u, struct sl_msg *m);
static void on_up_request(void *ctx, struct sl_upstream *u, struct sl_msg *m);
static char *on_up_login_url(void *ctx, struct sl_upstream *link);
static void on_up_idle(void *ctx, struct sl_upstream *u);

static const struct sl_upstream_ops up_ops = {
	.ready = on_up_ready,
	.down = on_up_down,
	.notify = on_up_notify,
	.request = on_up_request,
	.login_url = on_up_login_url,
	.idle = on_up_idle,
};

/* A caller's web login saved its record: that caller's link to the
 * server connects on its next request, not at its next look at the store. */
static void on_web_logged_in(void *ctx, const char *server_name, const char *user)
{
	struct sl_upstream *u = sl_gateway_upstream(ctx, server_name);

	if (u)
		sl_upstream_user_logged_in(u, user);
}

static void start_weblogin(struct sl_gateway *gw, const struct sl_config *cfg)
{
	gw->weblogin = sl_weblogin_new(gw->loop, cfg);
	sl_weblogin_set_done(gw->weblogin, on_web_logged_in, gw);
}

static void on_tools_changed(void *ctx)
{
	sl_gateway_tools_changed(ctx);
}

struct sl_gateway *sl_gateway_new(uv_loop_t *loop, struct sl_gen *gen)
{
	struct sl_gateway *gw = sl_alloc(sizeof(*gw));
	const struct sl_config *cfg = gen->cfg;

	gw->loop = loop;
	gw->started_ms = sl_now_ms();
	gw->gen = sl_gen_ref(gen);
	sl_list_init(&gw->waiters);
	sl_list_init(&gw->sessions);
	/* What the stages hear from and hand to the gateway, through the
	 * services every generation of this process shares. */
	gen->services->tools_changed = on_tools_changed;
	gen->services->tools_changed_ctx = gw;
	gen->services->keeper = &sl_kept_keeper;
	if (!gen->services->once)
		gen->services->once = sl_once_new(SL_ONCE_MAX);
	sl_oauth_subjects_configure(cfg);
	gw->nups = cfg->nservers;
	gw->ups = sl_alloc((gw->nups + 1) * sizeof(*gw->ups));
	for (size_t i = 0; i < gw->nups; i++)
		gw->ups[i] = sl_upstream_new(loop, &cfg->servers[i], cfg, &up_ops, gw);
	sl_catalog_init(&gw->catalog);
	gw->discovery = sl_discovery_cache_new();
	sl_map_init(&gw->tasks);
	sl_map_init(&gw->task_ups);
	sl_map_init(&gw->parks);
	gw->listing = sl_listing_new();
	gw->catalog.reserved = sl_router_reserved;
	sl_handles_init(&gw->handles);
	uv_timer_init(loop, &gw->timer);
	uv_timer_init(loop, &gw->wake);
	uv_timer_init(loop, &gw->retire);
	gw->timer.data = gw->wake.data = gw->retire.data = gw;
	sl_handles_add(&gw->handles, &gw->timer);
	sl_handles_add(&gw->handles, &gw->wake);
	sl_handles_add(&gw->handles, &gw->retire);
	if (cfg->http.public_url)
		start_weblogin(gw, cfg);
	return gw;
}

/* The log line that says which boundaries code mode really has: read off
 * a worker running `return 1`. */
static void on_probe_done(void *ctx, struct sl_program *p, struct sl_gen *gen)
{
	struct sl_gateway *gw = ctx;
	const struct sl_program_result *r = sl_program_result(p);
	char have[256], miss[256];

	if (r->cancelled) {
		sl_program_free(p);
		return;
	}
	sl_sandbox_describe(sl_sandbox_boundaries(gw->sandbox), have, sizeof(have));
	sl_sandbox_describe(SL_B_ALL & ~sl_sandbox_boundaries(gw->sandbox), miss, sizeof(miss));
	if (r->ok)
		sl_log(SL_LOG_INFO, "code mode ready; kernel boundaries: %s%s%s", have,
		       *miss ? "; missing: " : "", miss);
	else
		sl_log(SL_LOG_ERROR, "code mode failed its first program: %s: %s", r->kind, r->text);
	sl_program_free(p);
}

static void on_gw_closed(void *arg)
{
	struct sl_gateway *gw = arg;
	struct sl_services *svc = gw->gen->services;

	/* Calls may hold a generation longer: they find no link, and nobody
	 * listening (the keeper is code, not state: it stays). */
	svc->redis = NULL;
	svc->fleet = NULL;
	svc->tools_changed = NULL;
	svc->tools_changed_ctx = NULL;
	sl_once_free(svc->once);
	svc->once = NULL;
	sl_gen_unref(gw->gen);
	sl_fleet_free(gw->fleet);
	sl_redis_free(gw->redis); /* after the stages that listen to it */
	free(gw);
}

void sl_gateway_free(struct sl_gateway *gw)
{
	struct sl_list *n;

	sl_oauth_subjects_configure(NULL);
	for (size_t i = 0; i < gw->nups; i++)
		sl_upstream_free(gw->ups[i]);
	free(gw->ups);
	for (size_t i = 0; i < gw->nretired; i++)
		sl_upstream_free(gw->retired[i]);
	free(gw->retired);
	free(gw->retire_by);
	yyjson_doc_free(gw->caps);
	sl_tasks_dispose(gw);
	sl_listing_free(gw->listing);
	sl_weblogin_free(gw->weblogin);
	sl_park_stop_all(gw);
	sl_map_dispose(&gw->parks);
	sl_catalog_dispose(&gw->catalog);
	sl_discovery_cache_free(gw->discovery);
	while ((n = sl_list_first(&gw->waiters))) {
		sl_list_remove(n);
		free(sl_list_entry(n, struct sl_waiter, link));
	}
	sl_handles_close(&gw->handles, on_gw_closed, gw);
}

void sl_gateway_set_redis(struct sl_gateway *gw, struct sl_redis *r)
{
	gw->redis = r;
	gw->gen->services->redis = r;
	sl_once_share(gw->gen->services->once, r);
	sl_pinning_share(sl_gen_state(gw->gen, &sl_stage_pinning));
}

void sl_gateway_set_fleet(struct sl_gateway *gw, struct sl_fleet *f)
{
	gw->fleet = f;
	gw->gen->services->fleet = f;
}

struct sl_weblogin *sl_gateway_weblogin(struct sl_gateway *gw)
{
	return gw->weblogin;
}

struct sl_upstream *sl_gateway_upstream(struct sl_gateway *gw, const char *name)
{
	for (size_t i = 0; i < gw->nups; i++)
		if (strcmp(gw->ups[i]->name, name) == 0)
			return gw->ups[i];
	return NULL;
}

void sl_gateway_add_session(struct sl_gateway *gw, struct sl_session *s)
{
	sl_list_push_front(&gw->sessions, &s->link);
}

void sl_gateway_remove_session(struct sl_gateway *gw, struct sl_session *s)
{
	(void)gw;
	sl_list_remove(&s->link);
}

/* ---- settling: every upstream has had its first go -------------------- */

/* Runs the waiters there are now; those added meanwhile wait for the next
 * round. */
static void run_waiters(struct sl_gateway *gw)
{
	struct sl_list now, *n;

	/* now takes the place of the gateway's head: it holds them all. */
	sl_list_push_front(&gw->waiters, &now);
	sl_list_remove(&gw->waiters);
	while ((n = sl_list_first(&now))) {
		struct sl_waiter *w = sl_list_entry(n, struct sl_waiter, link);
		sl_list_remove(n);
		w->fn(w->ctx);
		free(w);
	}
}

static void check_settled(struct sl_gateway *gw)
{
	if (gw->settled || !gw->started)
		return;
	for (size_t i = 0; i < gw->nups; i++)
		if (gw->ups[i]->state == SL_UP_STARTING && gw->ups[i]->starts == 1)
			return;
	gw->settled = true;
	uv_timer_stop(&gw->timer);
	run_waiters(gw);
}

static void on_startup_deadline(uv_timer_t *t)
{
	struct sl_gateway *gw = t->data;
	if (!gw->settled) {
		sl_log(SL_LOG_WARN, "some servers are still starting after %llu ms; serving the others",
		       (unsigned long long)gw->gen->cfg->startup_timeout_ms);
		gw->settled = true;
		run_waiters(gw);
	}
}

static void on_settled_idle(uv_timer_t *t)
{
	struct sl_gateway *gw = t->data;
	if (gw->settled)
		run_waiters(gw);
}

void sl_gateway_when_settled(struct sl_gateway *gw, sl_gateway_fn fn, void *ctx)
{
	struct sl_waiter *w = sl_alloc(sizeof(*w));
	w->fn = fn;
	w->ctx = ctx;
	sl_list_push_back(&gw->waiters, &w->link);
	if (gw->settled)
		uv_timer_start(&gw->wake, on_settled_idle, 0, 0);
}

void sl_gateway_start(struct sl_gateway *gw, yyjson_val *caps)
{
	if (gw->started)
		return;
	gw->started = true;
	if (gw->shared) {
		/* Over HTTP the first client says nothing of the next: every
		 * upstream is declared what sluice can relay, and each request of
		 * a server goes to the one session that waits on it and declared
		 * the capability (on_up_request), else it gets an error. MCP
		 * 2025-11-25 elicitation names its modes; roots changes are
		 * passed on (session.c). MCP Apps' Views pass through to whoever
		 * renders them; a client that does not gets the tools' text
		 * (SEP-1865: a View's tool must answer meaningful content). */
		static const char relayable[] = "{\"roots\":{\"listChanged\":true},\"sampling\":{},"
						"\"elicitation\":{\"form\":{},\"url\":{}},"
						"\"extensions\":{\"" SL_MCP_UI_EXT "\":"
						"{\"mimeTypes\":[\"" SL_MCP_UI_MIME "\"]}}}";
		gw->caps = yyjson_read(relayable, sizeof(relayable) - 1, 0);
		caps = yyjson_doc_get_root(gw->caps);
	} else if (caps) {
		/* One client (stdio): what it declared, no more, so a server
		 * offers no tool that would fail for want of a capability. */
		yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
		yyjson_mut_doc_set_root(m, yyjson_val_mut_copy(m, caps));
		gw->caps = yyjson_mut_doc_imut_copy(m, NULL);
		yyjson_mut_doc_free(m);
	}
	if (gw->gen->cfg->code_enabled) {
		struct sl_err err;
		gw->sandbox = sl_sandbox_new(gw->loop, gw->gen->cfg, &err);
		if (gw->sandbox)
			sl_codemode_run(gw, NULL, "return 1", 8, on_probe_done, NULL, gw);
		else
			memcpy(gw->code_error, err.msg, sizeof(gw->code_error));
		if (!gw->sandbox)
			sl_log(SL_LOG_ERROR, "code mode is unavailable: %s", err.msg);
	}
	for (size_t i = 0; i < gw->nups; i++)
		sl_upstream_start(gw->ups[i], caps);
	uv_timer_start(&gw->timer, on_startup_deadline, gw->gen->cfg->startup_timeout_ms, 0);
	check_settled(gw);
}

/* ---- what upstreams report --------------------------------------------- */

static uint64_t lists_hash(struct sl_gateway *gw, bool prompts)
{
	uint64_t h = 0;
	for (size_t i = 0; i < gw->nups; i++) {
		struct sl_upstream *u = gw->ups[i];
		const struct sl_item_list *a = prompts ? &u->prompts : &u->resources;
		h = sl_hash64(&a->n, sizeof(a->n), h);
		h = sl_hash64(a->items ? (const void *)a->items : (const void *)"", a->n * sizeof(void *), h);
		if (!prompts)
			h = sl_hash64(u->templates.items ? (const void *)u->templates.items : (const void *)"",
				      u->templates.n * sizeof(void *), h);
	}
	return h;
}

static bool router_view(const struct sl_session *s)
{
	struct sl_view v;
	sl_view_of(s->gw, s->caller, &v);
	return v.exposure == SL_EXPOSE_ROUTER;
}

/* tools: the tools may have changed whatever the catalog says (a reload's
 * new policy); exposure: the exposure mode changed (of the gateway or of
 * a profile), so even a router client's list did. */
static void broadcast_changes(struct sl_gateway *gw, bool tools_maybe, bool exposure)
{
	bool tools = sl_catalog_rebuild(&gw->catalog, gw->ups, gw->nups) || tools_maybe;
	uint64_t rh = lists_hash(gw, false), ph = lists_hash(gw, true);
	bool resources = rh != gw->resources_hash, prompts = ph != gw->prompts_hash;
	struct sl_list *n, *next;

	/* The entries were made anew: no rendered listing names them. */
	sl_listing_catalog_changed(gw->listing);

	gw->resources_hash = rh;
	gw->prompts_hash = ph;
	if (tools)
		sl_view_warn(gw);
	if (!gw->settled)
		return; /* nobody has seen a list yet */
	sl_list_each_safe(n, next, &gw->sessions) {
		struct sl_session *s = sl_list_entry(n, struct sl_session, link);
		/* The router's own tools do not change with the catalog. Every
		 * session of a profile hears a change of the catalog, whether or
		 * not its part changed: a client asks once more, nothing worse. */
		if (tools && (exposure || !router_view(s)))
			sl_session_list_changed(s, "tools");
		if (resources)
			sl_session_list_changed(s, "resources");
		if (prompts)
			sl_session_list_changed(s, "prompts");
	}
}

void sl_gateway_tools_changed_for(struct sl_gateway *gw, const char *key)
{
	struct sl_list *n, *next;

	if (!gw->settled)
		return;
	sl_list_each_safe(n, next, &gw->sessions) {
		struct sl_session *s = sl_list_entry(n, struct sl_session, link);
		if (key && (!s->caller || strcmp(s->caller->key, key) != 0))
			continue;
		if (!router_view(s))
			sl_session_list_changed(s, "tools");
	}
}

void sl_gateway_tools_changed(struct sl_gateway *gw)
{
	sl_gateway_tools_changed_for(gw, NULL);
}

static void on_up_ready(void *ctx, struct sl_upstream *u)
{
	struct sl_gateway *gw = ctx;
	/* For the "ready" line, and one warning per change a person can act on. */
	u->tools_held = sl_pinning_announce(sl_gen_state(gw->gen, &sl_stage_pinning), u);
	broadcast_changes(gw, false, false);
	check_settled(gw);
}

static void on_up_down(void *ctx, struct sl_upstream *u)
{
	/* The last lists stay in the catalog while it restarts: clients keep
	 * their view, and calls fail with "restarting" until it is back. */
	check_settled(ctx);
}

/* A server's message on its way to the clients passes the peer hooks once
 * for every session: false if it is withheld (answer_withheld then says
 * so, for a request). *f is m with the params the hooks left, whose
 * document *doc the caller frees. */
static bool filter_params(struct sl_gateway *gw, struct sl_upstream *u, struct sl_msg *m,
			  enum sl_peer_kind kind, struct sl_msg *f, yyjson_doc **doc, char **withheld)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	struct sl_peer p;

	if (!d)
		sl_oom();
	*f = *m;
	*doc = NULL;
	sl_peer_init(&p, kind, m->method, u, d, yyjson_val_mut_copy(d, m->params));
	sl_stages_peer(gw->gen, &p);
	if (p.withheld) {
		*withheld = p.withheld;
		p.withheld = NULL;
	} else if (p.changed) {
		*doc = sl_peer_freeze(&p);
		f->params = yyjson_doc_get_root(*doc);
	}
	sl_peer_dispose(&p);
	yyjson_mut_doc_free(d);
	return !*withheld;
}

static void on_up_notify(void *ctx, struct sl_upstream *u, struct sl_msg *m)
{
	struct sl_gateway *gw = ctx;
	struct sl_msg f = *m;
	yyjson_doc *doc = NULL;
	char *withheld = NULL;
	struct sl_list *n, *next;

	/* A log message is the server's text (notifications/resources/updated
	 * carries only a URI, which subscriptions are matched on). */
	if (strcmp(m->method, "notifications/message") == 0 && m->params &&
	    !filter_params(gw, u, m, SL_PEER_NOTIFICATION, &f, &doc, &withheld)) {
		sl_log(SL_LOG_INFO, "a notifications/message was dropped: %s", withheld);
		free(withheld);
		return;
	}
	/* A user link speaks for its server, to its user's sessions alone. */
	sl_list_each_safe(n, next, &gw->sessions) {
		struct sl_session *s = sl_list_entry(n, struct sl_session, link);
		char key[65];
		if (u->user && (!sl_caller_user_key(s->caller, key) || strcmp(key, u->user)))
			continue;
		sl_session_notify(s, sl_upstream_server(u), &f);
	}
	yyjson_doc_free(doc);
}

/* A user link needs its user's login: a link to the gateway's web login
 * page for that user (oauth/weblogin.h), or NULL without a publicUrl. */
static char *on_up_login_url(void *ctx, struct sl_upstream *link)
{
	struct sl_gateway *gw = ctx;
	const struct sl_upstream *server = link->parent ? link->parent : link;

	if (!gw->weblogin || !link->user)
		return NULL;
	return sl_weblogin_url(gw->weblogin, server->cfg, link->user,
			       link->user_name ? link->user_name : link->user, NULL);
}

/* MCP 2025-11-25 client features, "Roots": roots are a client's, and a
 * roots/list no single client with roots can answer (outside any call, or
 * while several clients' calls wait on the server, or from the one call's
 * client that declared no roots) is answered with none: an empty list,
 * never an error, never another client's. The server is told the roots
 * changed before the next call of a client with roots (upstream/roots.c),
 * so it asks again within that call. asked: the one client waiting, or
 * NULL; waiting: how many are. */
static void answer_no_roots(struct sl_upstream *u, yyjson_val *id, struct sl_session *asked,
			    unsigned waiting)
{
	yyjson_doc *d = yyjson_read("{\"roots\":[]}", 12, 0);
	char key[80] = "";

	sl_log(SL_LOG_DEBUG, "server '%s' asked roots/list %s: answered with no roots", u->name,
	       !waiting ? "outside any call" : waiting > 1 ? "while several clients' calls wait on it" :
	       "during a call of a client that declared no roots");

	sl_upstream_respond(u, sl_upstream_generation(u), id, yyjson_doc_get_root(d), NULL);
	yyjson_doc_free(d);
	if (asked)
		sl_session_client_key(asked, key);
	sl_upstream_roots_given(u, key);
}

static void on_up_request(void *ctx, struct sl_upstream *u, struct sl_msg *m)
{
	struct sl_gateway *gw = ctx;
	char *msg = NULL;
	struct sl_msg f = *m;
	const struct sl_ureq *asker;
	struct sl_session *to = NULL, *asked = NULL;
	const char *why = NULL;
	unsigned waiting = 0;
	yyjson_doc *doc = NULL;
	int code = SL_RPC_METHOD_NOT_FOUND;
	struct sl_list *n, *next;

	/* An elicitation's message, a sampling request's messages and system
	 * prompt: the server's text, for a person or the person's model. */
	if (m->params && !filter_params(gw, u, m, SL_PEER_REQUEST, &f, &doc, &msg)) {
		code = SL_RPC_INTERNAL_ERROR;
		goto refuse;
	}
	/* A server asks on behalf of a call: only the session with a call in
	 * flight to it that declared the capability may hear the question,
	 * never another (sessions would see each other's). A 2026-07-28
	 * server's input request names its call (asker); a legacy server's
	 * does not, so when several sessions could be meant, none is. */
	asker = sl_upstream_asker(u, m->id);
	sl_list_each_safe(n, next, &gw->sessions) {
		struct sl_session *s = sl_list_entry(n, struct sl_session, link);
		switch (sl_session_answers(s, u, &f, asker, &why)) {
		case SL_ANSWER_YES:
			to = s;
			/* fall through */
		case SL_ANSWER_CANNOT:
			asked = s;
			waiting++;
			break;
		case SL_ANSWER_NONE:
			break;
		}
	}
	/* Outside any call (roots/list right after initialize, say) only a
	 * lone stdio client is surely the one meant; over HTTP nobody is. */
	n = sl_list_first(&gw->sessions);
	if (!waiting && !gw->shared && n && n == sl_list_last(&gw->sessions) &&
	    sl_list_entry(n, struct sl_session, link)->era == SL_ERA_LEGACY)
		to = sl_list_entry(n, struct sl_session, link), waiting = 1;
	/* Several sessions waiting: the question may be any one's, also one
	 * that cannot answer it, so the one that can is not asked either. */
	if (waiting == 1 && to && sl_session_relay(to, u, &f, asker)) {
		yyjson_doc_free(doc);
		return;
	}
	yyjson_doc_free(doc);
	if (!strcmp(m->method, "roots/list")) {
		answer_no_roots(u, m->id, waiting == 1 ? asked : NULL, waiting);
		return;
	}
	/* No client can answer it: say so rather than leave the server waiting. */
	code = SL_RPC_SERVER_ERROR;
	if (waiting > 1)
		msg = sl_printf("%s: %u clients of sluice have calls in flight to server '%s', and "
				"sluice cannot tell which one this request is for, so none is asked",
				m->method, waiting, u->name);
	else if (waiting && why)
		msg = sl_printf("%s: no client that can answer it is waiting on server '%s': %s",
				m->method, u->name, why);
	else
		msg = sl_printf("%s: no client that can answer it is waiting on server '%s'%s",
				m->method, u->name, gw->shared ? " (over HTTP, a server's requests "
				"reach only the session whose tool call it is answering)" : "");
refuse:
	sl_upstream_refuse(u, m->id, code, msg);
	free(msg);
}

/* ---- stopping ---------------------------------------------------------- */

static void on_stop_poll(uv_timer_t *t)
{
	struct sl_gateway *gw = t->data;
	for (size_t i = 0; i < gw->nups; i++)
		if (!sl_upstream_stopped(gw->ups[i]))
			return;
	for (size_t i = 0; i < gw->nretired; i++)
		if (!sl_upstream_stopped(gw->retired[i]))
			return;
	uv_timer_stop(t);
	if (gw->on_stopped)
		gw->on_stopped(gw->stopped_ctx);
}

void sl_gateway_stop(struct sl_gateway *gw, sl_gateway_fn fn, void *ctx)
{
	gw->stopping = true;
	if (gw->sandbox) {
		sl_sandbox_free(gw->sandbox);
		gw->sandbox = NULL;
	}
	gw->on_stopped = fn;
	gw->stopped_ctx = ctx;
	sl_park_stop_all(gw);
	uv_timer_stop(&gw->retire);
	for (size_t i = 0; i < gw->nups; i++)
		sl_upstream_stop(gw->ups[i]);
	for (size_t i = 0; i < gw->nretired; i++)
		sl_upstream_stop(gw->retired[i]);
	uv_timer_start(&gw->timer, on_stop_poll, 0, STOP_POLL_MS);
}

/* ---- reload ------------------------------------------------------------ */

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether a server's process would differ (then it is restarted). */
static bool kv_same(const struct sl_kv *a, size_t na, const struct sl_kv *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (!str_same(a[i].key, b[i].key) || !str_same(a[i].value, b[i].value))
			return false;
	return true;
}

static bool server_same(const struct sl_server_config *a, const struct sl_server_config *b)
{
	if (!str_same(a->command, b->command) || !str_same(a->cwd, b->cwd) ||
	    !str_same(a->error, b->error) || a->disabled != b->disabled ||
	    a->transport != b->transport || !str_same(a->url, b->url) ||
	    a->unprefixed != b->unprefixed || a->protocol != b->protocol ||
	    a->timeout_ms != b->timeout_ms || a->nargs != b->nargs ||
	    !kv_same(a->env, a->nenv, b->env, b->nenv) ||
	    !kv_same(a->headers, a->nheaders, b->headers, b->nheaders))
		return false;
	for (size_t i = 0; i < a->nargs; i++)
		if (!str_same(a->args[i], b->args[i]))
			return false;
	return true;
}

/* Stops the retired servers with nothing in flight or past their deadline,
 * then sleeps until the next deadline: a server's last answer wakes it
 * earlier (on_up_idle), so a reload's old process goes as soon as it is
 * idle, with no polling. */
static void on_retire(uv_timer_t *t)
{
	struct sl_gateway *gw = t->data;
	uint64_t now = sl_now_ms(), next = UINT64_MAX;

	for (size_t i = 0; i < gw->nretired; i++) {
		struct sl_upstream *u = gw->retired[i];
		if (u->state == SL_UP_STOPPING || u->state == SL_UP_STOPPED)
			continue;
		if (u->pending && now < gw->retire_by[i]) {
			next = gw->retire_by[i] < next ? gw->retire_by[i] : next;
			continue;
		}
		sl_log(SL_LOG_INFO, "server %s: stopping the process the config reload replaced", u->name);
		sl_upstream_stop(u);
	}
	if (next != UINT64_MAX)
		uv_timer_start(t, on_retire, next - now, 0);
}

/* A server answered its last request: if a reload retired it, it may go
 * now (from the loop: u is inside its answer's handling). */
static void on_up_idle(void *ctx, struct sl_upstream *u)
{
	struct sl_gateway *gw = ctx;

	if (gw->stopping)
		return;
	for (size_t i = 0; i < gw->nretired; i++)
		if (gw->retired[i] == u) {
			uv_timer_start(&gw->retire, on_retire, 0, 0);
			return;
		}
}

static void retire(struct sl_gateway *gw, struct sl_upstream *u)
{
	gw->retired = sl_realloc(gw->retired, (gw->nretired + 1) * sizeof(*gw->retired));
	gw->retire_by = sl_realloc(gw->retire_by, (gw->nretired + 1) * sizeof(*gw->retire_by));
	gw->retired[gw->nretired] = u;
	gw->retire_by[gw->nretired++] = sl_now_ms() + gw->gen->cfg->call_timeout_ms +
					(u->cfg->timeout_ms > gw->gen->cfg->call_timeout_ms ?
					 u->cfg->timeout_ms - gw->gen->cfg->call_timeout_ms : 0);
	uv_timer_start(&gw->retire, on_retire, 0, 0);
}

/* Whether a sluice.<key> section differs, its key skip aside (NULL: none). */
static bool section_changed(const struct sl_config *a, const struct sl_config *b, const char *key,
			    const char *skip)
{
	yyjson_val *x = a->sluice ? yyjson_obj_get(a->sluice, key) : NULL;
	yyjson_val *y = b->sluice ? yyjson_obj_get(b->sluice, key) : NULL;
	yyjson_obj_iter it;
	yyjson_val *k;
	size_t nx = 0, ny = 0;

	if (!skip || !yyjson_is_obj(x) || !yyjson_is_obj(y))
		return (x || y) && !(x && y && yyjson_equals(x, y));
	yyjson_obj_iter_init(x, &it);
	while ((k = yyjson_obj_iter_next(&it))) {
		yyjson_val *w = yyjson_obj_get(y, yyjson_get_str(k));
		if (!strcmp(yyjson_get_str(k), skip))
			continue;
		if (!w || !yyjson_equals(yyjson_obj_iter_get_val(k), w))
			return true;
		nx++;
	}
	yyjson_obj_iter_init(y, &it);
	while ((k = yyjson_obj_iter_next(&it)))
		ny += strcmp(yyjson_get_str(k), skip) != 0;
	return nx != ny;
}

int sl_gateway_reload(struct sl_gateway *gw, struct sl_gen *next, struct sl_err *err)
{
	const struct sl_config *old = gw->gen->cfg, *cfg = next->cfg;
	struct sl_upstream **ups;
	size_t added = 0, replaced = 0, removed = 0;
	char later[128] = "";
	bool exposure;

	if (gw->stopping || cfg->code_enabled != old->code_enabled) {
		sl_err_set(err, gw->stopping ? "the gateway is stopping" :
			   "turning code mode on or off (sluice.exposure \"code\", a profile's "
			   "exposure \"code\" or sluice.codeMode.enabled) needs a restart");
		return SL_ERR_INVALID;
	}

	/* What this gateway cannot change while it runs. sluice.http.tls is
	 * the transport's (sl_http_tls_load: a new certificate applies at once). */
	{
		static const char *const keys[] = { "http", "codeMode" };
		for (size_t i = 0; i < SL_COUNT(keys); i++)
			if (section_changed(old, cfg, keys[i], i == 0 ? "tls" : NULL))
				snprintf(later + strlen(later), sizeof(later) - strlen(later), "%ssluice.%s",
					 *later ? ", " : "", keys[i]);
		if (!str_same(old->log_file, cfg->log_file))
			snprintf(later + strlen(later), sizeof(later) - strlen(later), "%ssluice.logFile",
				 *later ? ", " : "");
		if (*later)
			sl_log(SL_LOG_WARN, "config reload: %s changed; that takes effect at restart", later);
	}
	sl_log_set_level(cfg->log_level);
	sl_oauth_subjects_configure(cfg);

	ups = sl_alloc((cfg->nservers + 1) * sizeof(*ups));
	for (size_t j = 0; j < cfg->nservers; j++) {
		const struct sl_server_config *sc = &cfg->servers[j];
		struct sl_upstream *u = NULL;
		for (size_t i = 0; i < gw->nups; i++)
			if (gw->ups[i] && strcmp(gw->ups[i]->name, sc->name) == 0) {
				u = gw->ups[i];
				gw->ups[i] = NULL;
				break;
			}
		if (u && server_same(u->cfg, sc)) {
			sl_upstream_reconfigure(u, sc, cfg);
			ups[j] = u;
			continue;
		}
		if (u) {
			retire(gw, u);
			replaced++;
		} else {
			added++;
		}
		ups[j] = sl_upstream_new(gw->loop, sc, cfg, &up_ops, gw);
	}
	for (size_t i = 0; i < gw->nups; i++)
		if (gw->ups[i]) {
			retire(gw, gw->ups[i]);
			removed++;
		}
	free(gw->ups);
	gw->ups = ups;
	gw->nups = cfg->nservers;
	/* A profile's servers, tools, names or mode: its sessions' lists. */
	exposure = cfg->exposure != old->exposure || section_changed(old, cfg, "profiles", NULL);
	/* From here on new calls take the new stages; the old generation
	 * stays with the calls and programs that hold it. */
	sl_listing_reload(gw->listing, gw->gen, next);
	sl_gen_unref(gw->gen);
	gw->gen = sl_gen_ref(next);
	sl_pinning_share(sl_gen_state(gw->gen, &sl_stage_pinning));
	/* Pending logins to a server the reload removed fail. */
	if (gw->weblogin)
		sl_weblogin_reconfigure(gw->weblogin, cfg);
	else if (cfg->http.public_url)
		start_weblogin(gw, cfg);
	sl_log(SL_LOG_INFO, "config reload: %zu servers (%zu added, %zu restarted, %zu removed), "
	       "%s mode", cfg->nservers, added, replaced, removed, sl_exposure_name(cfg->exposure));
	if (*next->restart_only)
		sl_log(SL_LOG_WARN, "config reload: sluice.%s changed; that takes effect at restart",
		       next->restart_only);
	sl_log(SL_LOG_INFO, "config reload: new settings for %zu stage%s", next->changed,
	       next->changed == 1 ? "" : "s");
	/* New processes start only once the gateway has (the first client
	 * brings the capabilities declared upstream). */
	if (gw->started)
		for (size_t j = 0; j < gw->nups; j++)
			if (gw->ups[j]->state == SL_UP_IDLE)
				sl_upstream_start(gw->ups[j], gw->caps ? yyjson_doc_get_root(gw->caps) : NULL);
	/* Policy and pinning decide which tools are visible. */
	broadcast_changes(gw, exposure || next->changed > 0, exposure);
	return SL_OK;
}

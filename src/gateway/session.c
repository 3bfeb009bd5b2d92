/*
 * MCP methods for one client session, in both eras: the method table,
 * dispatch, eras, sending and the session's lifecycle. The methods' work
 * lives by concern in calls.c, forward.c and relay.c (session_int.h).
 *
 * Session era (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): initialize fixes the
 * version and the client's capabilities for the connection.
 * 2026-07-28: no initialize; every request carries its version and the
 * client's capabilities in params._meta, every result has resultType, and
 * list results carry ttlMs and cacheScope.
 */
#include "gateway/session_int.h"
#include "auth/caller.h"
#include "core/digest.h"
#include "stages/results.h"
#include "gateway/view.h"
#include "core/buf.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sl_deferred {
	struct sl_list link;     /* in s->deferred */
	struct sl_caller *who;   /* its sender (a reference), or NULL */
	char *line;              /* a line not read yet (sl_session_input_from), or NULL */
	size_t len;
	yyjson_doc *doc;         /* else the message, read (owned) */
};

/* ---- sending ------------------------------------------------------------ */

void sl_out_join(struct sl_out *o)
{
	char *line;
	size_t n;

	if (!o->splice)
		return;
	n = o->len + o->splice_len;
	line = malloc(n + 1);
	if (!line)
		sl_oom();
	memcpy(line, o->line, o->splice_at);
	memcpy(line + o->splice_at, o->splice->data + o->splice_off, o->splice_len);
	memcpy(line + o->splice_at + o->splice_len, o->line + o->splice_at, o->len - o->splice_at);
	line[n] = '\0';
	free(o->line);
	sl_blob_unref(o->splice);
	o->splice = NULL;
	o->line = line;
	o->len = n;
}

void sl_session_send(struct sl_session *s, struct sl_out *o, yyjson_mut_doc *d)
{
	char *mark;

	if (s->closing) {
		sl_blob_unref(o->splice);
		return;
	}
	/* The one place a message takes the shape of the client's version
	 * (docs/internals/SESSIONS.md, "Older versions"). */
	if (s->era == SL_ERA_LEGACY)
		sl_mcp_era_map(d, yyjson_mut_doc_get_root(d), s->version);
	o->line = sl_json_write_line(d, &o->len);
	if (o->splice) {
		mark = memchr(o->line, SL_SESSION_SPLICE_MARK[0], o->len);
		if (!mark)
			abort(); /* the caller put the mark in d */
		o->splice_at = (size_t)(mark - o->line);
		memmove(mark, mark + 1, o->len - o->splice_at);
		o->len--;
	}
	s->io->send(s->io_ctx, o);
}

static void send_error(struct sl_session *s, yyjson_val *id, int code, const char *msg,
		       yyjson_mut_val *data)
{
	yyjson_mut_val *o;
	yyjson_mut_doc *d = sl_rpc_response_new(id, &o);
	sl_rpc_add_error(d, o, code, msg, data);
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = id, .error = true }, d);
	yyjson_mut_doc_free(d);
}

void sl_session_error(struct sl_session *s, yyjson_val *id, int code, const char *msg)
{
	send_error(s, id, code, msg, NULL);
}

void sl_session_seal(yyjson_mut_doc *d, yyjson_mut_val *result, bool modern, bool cacheable)
{
	const char *type = yyjson_mut_get_str(yyjson_mut_obj_get(result, "resultType"));
	if (!modern)
		return;
	/* An input_required result (MCP 2026-07-28 MRTR) keeps its type, and
	 * so does a task handle (the tasks extension). */
	if (type && (strcmp(type, "input_required") == 0 || strcmp(type, "task") == 0))
		return;
	yyjson_mut_obj_remove_key(result, "resultType");
	yyjson_mut_obj_add_str(d, result, "resultType", "complete");
	if (cacheable) {
		/* The catalog changes as upstreams come and go: clients must not
		 * cache it past a list_changed, and it may differ per principal. */
		yyjson_mut_obj_add_int(d, result, "ttlMs", 0);
		yyjson_mut_obj_add_str(d, result, "cacheScope", "private");
	}
}

void sl_session_answer_spliced(struct sl_session *s, struct sl_msg *m, bool modern,
			       bool cacheable, yyjson_mut_doc *d, yyjson_mut_val *result,
			       struct sl_blob *k, size_t off, size_t len)
{
	yyjson_mut_val *o;
	sl_session_seal(d, result, modern, cacheable);
	o = sl_rpc_envelope(d, yyjson_val_mut_copy(d, m->id), NULL);
	yyjson_mut_obj_add_val(d, o, "result", result);
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_RESPONSE, .id = m->id, .splice = k,
					     .splice_off = off, .splice_len = len }, d);
	yyjson_mut_doc_free(d);
}

void sl_session_answer(struct sl_session *s, struct sl_msg *m, bool modern, bool cacheable,
		       yyjson_mut_doc *d, yyjson_mut_val *result)
{
	sl_session_answer_spliced(s, m, modern, cacheable, d, result, NULL, 0, 0);
}

void sl_session_reply(struct sl_session *s, struct sl_msg *m, bool modern, yyjson_mut_doc *d,
		      yyjson_mut_val *result)
{
	sl_session_answer(s, m, modern, false, d, result);
}

yyjson_mut_doc *sl_session_doc(yyjson_mut_val **obj)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	*obj = yyjson_mut_obj(d);
	return d;
}

/* ---- lifecycle ---------------------------------------------------------- */

struct sl_session *sl_session_new(struct sl_gateway *gw, const struct sl_session_io *io, void *ctx)
{
	static uint64_t next_id = 1;
	struct sl_session *s = sl_alloc(sizeof(*s));
	s->id = next_id++;
	s->gw = gw;
	s->io = io;
	s->io_ctx = ctx;
	s->next_out_id = 1;
	sl_map_init(&s->calls);
	sl_map_init(&s->relays);
	sl_map_init(&s->subs);
	sl_list_init(&s->deferred);
	sl_list_init(&s->listens);
	sl_session_set_caller(s, NULL);
	sl_gateway_add_session(gw, s);
	return s;
}

void sl_session_client_key(const struct sl_session *s, char out[80])
{
	if (!s)
		snprintf(out, 80, "exec");
	else if (s->era == SL_ERA_MODERN)
		snprintf(out, 80, "c%s", s->cred);
	else
		snprintf(out, 80, "s%llu", (unsigned long long)s->id);
}

void sl_session_set_caller(struct sl_session *s, struct sl_caller *who)
{
	sl_caller_unref(s->caller);
	s->caller = sl_caller_ref(who);
	if (who)
		memcpy(s->cred, who->key, sizeof(s->cred));
	else
		sl_caller_identity_digest(NULL, NULL, NULL, NULL, s->cred);
}

static void pass_level(struct sl_session *s, const char *level);

void sl_session_changed(struct sl_session *s)
{
	if (s->io->changed && !s->closing)
		s->io->changed(s->io_ctx);
}

/* ---- adoption (another replica's session, shared/sessions.h) ---------------- */

/* Waits for the upstreams to settle on behalf of an adopted session, which
 * may be gone by then: it is looked up by its id, never held. */
struct adopted {
	struct sl_gateway *gw;
	uint64_t id;
};

static void resubscribe_one(const char *key, void *value, void *ctx)
{
	sl_forward_resubscribe(ctx, key);
}

static void on_adopted_settled(void *ctx)
{
	struct adopted *a = ctx;
	struct sl_session *s = NULL;
	struct sl_list *n;

	sl_list_each(n, &a->gw->sessions)
		if (sl_list_entry(n, struct sl_session, link)->id == a->id) {
			s = sl_list_entry(n, struct sl_session, link);
			break;
		}
	if (s && !s->closing) {
		sl_map_each(&s->subs, resubscribe_one, s);
		if (s->log_level[0])
			pass_level(s, s->log_level);
	}
	free(a);
}

void sl_session_adopt(struct sl_session *s, const char *version, yyjson_val *caps,
		      const char *log_level, const char *const *subs, size_t nsubs)
{
	struct adopted *a;

	snprintf(s->version, sizeof(s->version), "%s", version);
	s->era = SL_ERA_LEGACY;
	s->initialized = true;
	yyjson_doc_free(s->caps_doc);
	s->caps_doc = sl_mcp_era_caps(caps, s->version);
	s->caps = yyjson_doc_get_root(s->caps_doc);
	snprintf(s->log_level, sizeof(s->log_level), "%s", log_level ? log_level : "");
	for (size_t i = 0; i < nsubs; i++)
		sl_map_put(&s->subs, subs[i], s);
	sl_gateway_start(s->gw, s->caps);
	if (!nsubs && !s->log_level[0])
		return;
	a = sl_alloc(sizeof(*a));
	a->gw = s->gw;
	a->id = s->id;
	sl_gateway_when_settled(s->gw, on_adopted_settled, a);
}

bool sl_session_idle(const struct sl_session *s)
{
	return s->calls.live == 0 && sl_list_empty(&s->deferred);
}

static void cancel_pending(const char *key, void *value, void *ctx)
{
	sl_pending_cancel(value, "the client disconnected");
}

void sl_session_close(struct sl_session *s)
{
	if (s->closing)
		return;
	s->closing = true;
	/* Its listens end unanswered: the client is gone. */
	sl_listen_close_all(s);
	/* Cancel what is in flight: upstreams hear notifications/cancelled. */
	sl_map_each(&s->calls, cancel_pending, NULL);
	sl_tasks_session_end(s);
	/* Stages waiting for the human's answer hear that none will come. */
	sl_session_input_end(s);
	sl_gateway_remove_session(s->gw, s);
}

#define SHUTDOWN_WHY "sluice is shutting down: this request was not finished (what a server did " \
	"of it is unknown); send it again once sluice is back"

static void answer_shutdown(const char *key, void *value, void *ctx)
{
	struct sl_pending *p = value;
	sl_session_error(p->s, p->msg.id, SL_RPC_SERVER_ERROR, SHUTDOWN_WHY);
}

/* A request still waiting for the upstreams to settle, read or not. */
static void answer_deferred(struct sl_session *s, struct sl_deferred *d)
{
	yyjson_doc *doc = d->doc ? NULL : yyjson_read(d->line, d->len, SL_JSON_READ_FLAGS);
	yyjson_val *root = yyjson_doc_get_root(d->doc ? d->doc : doc);
	yyjson_val *id = yyjson_obj_get(root, "id");

	if (yyjson_is_str(yyjson_obj_get(root, "method")) && id && sl_rpc_valid_id(id))
		sl_session_error(s, id, SL_RPC_SERVER_ERROR, SHUTDOWN_WHY);
	yyjson_doc_free(doc);
}

void sl_session_shutdown_all(struct sl_gateway *gw)
{
	struct sl_list *n, *next, *dn;

	sl_list_each_safe(n, next, &gw->sessions) {
		struct sl_session *s = sl_list_entry(n, struct sl_session, link);
		if (s->closing)
			continue;
		/* MCP 2026-07-28 subscriptions: a listen ends gracefully, with
		 * its completion response. */
		sl_session_end_listens(s);
		sl_map_each(&s->calls, answer_shutdown, NULL);
		sl_list_each(dn, &s->deferred)
			answer_deferred(s, sl_list_entry(dn, struct sl_deferred, link));
		/* Closing now: no later answer follows the error (the calls are
		 * cancelled, their servers told). */
		sl_session_close(s);
	}
}

static void deferred_free(struct sl_deferred *d)
{
	sl_list_remove(&d->link);
	sl_caller_unref(d->who);
	free(d->line);
	yyjson_doc_free(d->doc);
	free(d);
}

void sl_session_free(struct sl_session *s)
{
	struct sl_list *n;

	sl_relay_dispose(s);
	sl_map_dispose(&s->subs);
	sl_map_dispose(&s->calls);
	while ((n = sl_list_first(&s->deferred)))
		deferred_free(sl_list_entry(n, struct sl_deferred, link));
	sl_results_free(s->results);
	yyjson_doc_free(s->caps_doc);
	sl_caller_unref(s->caller);
	free(s);
}

/* ---- ids ------------------------------------------------------------------ */

void sl_session_id_key(yyjson_val *id, char *out, size_t n)
{
	if (yyjson_is_str(id)) {
		const char *v = yyjson_get_str(id);
		size_t len = yyjson_get_len(id);
		if (len < n - 20)
			snprintf(out, n, "s:%s", v);
		else
			snprintf(out, n, "h:%016llx:%zu", (unsigned long long)sl_hash64(v, len, 0), len);
	} else {
		snprintf(out, n, "n:%lld", (long long)yyjson_get_sint(id));
	}
}

/* ---- era ------------------------------------------------------------------ */

yyjson_val *sl_session_meta(struct sl_msg *m)
{
	return m->params ? sl_json_obj(m->params, "_meta") : NULL;
}

/* Decides the era of a request. Returns false after answering an error. */
static bool request_era(struct sl_session *s, struct sl_msg *m, bool *modern)
{
	yyjson_val *meta = sl_session_meta(m);
	const char *v = meta ? sl_json_str(meta, SL_MCP_META_VERSION) : NULL;
	char msg[256];

	*modern = false;
	if (v) {
		if (strcmp(v, SL_MCP_MODERN) != 0) {
			/* MCP 2026-07-28: unsupported version -> -32022 with the list. */
			yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
			yyjson_mut_val *data = yyjson_mut_obj(d);
			yyjson_mut_obj_add_val(d, data, "supported", sl_mcp_versions(d));
			yyjson_mut_obj_add_strcpy(d, data, "requested", v);
			snprintf(msg, sizeof(msg), "Unsupported protocol version: %s", v);
			send_error(s, m->id, SL_MCP_UNSUPPORTED_VERSION, msg, data);
			yyjson_mut_doc_free(d);
			return false;
		}
		if (!sl_json_obj(meta, SL_MCP_META_CAPS)) {
			sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
				   "Invalid params: _meta[\"" SL_MCP_META_CAPS "\"] is required in 2026-07-28");
			return false;
		}
		*modern = true;
		if (s->era == SL_ERA_NONE)
			s->era = SL_ERA_MODERN;
		return true;
	}
	if (s->era == SL_ERA_LEGACY || strcmp(m->method, SL_MCP_INITIALIZE) == 0 ||
	    strcmp(m->method, "ping") == 0)
		return true;
	sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
		   "Invalid params: missing _meta[\"" SL_MCP_META_VERSION "\"]: send initialize first "
		   "(2025 protocol versions) or the 2026-07-28 _meta fields with every request");
	return false;
}


yyjson_val *sl_session_caps(struct sl_session *s, struct sl_msg *m, bool modern)
{
	return modern ? sl_json_obj(sl_session_meta(m), SL_MCP_META_CAPS) : s->caps;
}

/* ---- initialize, discover, ping, logging ----------------------------------- */

/* MCP Apps (SEP-1865): the io.modelcontextprotocol/ui extension's settings
 * (in d) when a server of the gateway has Views: the first that declares
 * the extension, else {} for a server whose tool names a View (the ext-apps
 * server SDK declares nothing), else, before the servers have answered
 * their handshake, {} (nobody knows yet, as for tasks); NULL when none has. */
static yyjson_mut_val *apps_ext(struct sl_gateway *gw, yyjson_mut_doc *d)
{
	for (size_t i = 0; i < gw->nups; i++) {
		yyjson_val *ui = sl_json_obj(sl_json_obj(gw->ups[i]->capabilities, "extensions"),
					     SL_MCP_UI_EXT);
		if (ui && gw->ups[i]->state == SL_UP_READY)
			return yyjson_val_mut_copy(d, ui);
	}
	for (size_t i = 0; i < gw->catalog.tools.n; i++)
		if (sl_mcp_tool_ui_uri(gw->catalog.tools.v[i].def))
			return yyjson_mut_obj(d);
	return gw->settled ? NULL : yyjson_mut_obj(d);
}

static yyjson_mut_val *server_caps(struct sl_gateway *gw, yyjson_mut_doc *d, bool modern)
{
	yyjson_mut_val *c = yyjson_mut_obj(d), *t, *ext = yyjson_mut_obj(d), *ui = apps_ext(gw, d);
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, t, "listChanged", true);
	yyjson_mut_obj_add_val(d, c, "tools", t);
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, t, "subscribe", true);
	yyjson_mut_obj_add_bool(d, t, "listChanged", true);
	yyjson_mut_obj_add_val(d, c, "resources", t);
	t = yyjson_mut_obj(d);
	yyjson_mut_obj_add_bool(d, t, "listChanged", true);
	yyjson_mut_obj_add_val(d, c, "prompts", t);
	yyjson_mut_obj_add_val(d, c, "completions", yyjson_mut_obj(d));
	yyjson_mut_obj_add_val(d, c, "logging", yyjson_mut_obj(d));
	/* MCP 2025-11-25 tasks: what the gateway relays (tools/call) and
	 * answers itself (list: the session's own; cancel: relayed). Before
	 * the servers have answered their handshake nobody knows whether one
	 * has tasks: declared then, and a server without them runs a task
	 * request plainly (docs/internals/TASKS.md). */
	if ((!gw->settled || sl_tasks_any(gw)) && modern) {
		/* The same, as the 2026-07-28 tasks extension. */
		yyjson_mut_obj_add_val(d, ext, "io.modelcontextprotocol/tasks", yyjson_mut_obj(d));
	} else if (!gw->settled || sl_tasks_any(gw)) {
		yyjson_mut_val *rq = yyjson_mut_obj(d), *tools = yyjson_mut_obj(d);
		t = yyjson_mut_obj(d);
		yyjson_mut_obj_add_val(d, t, "list", yyjson_mut_obj(d));
		yyjson_mut_obj_add_val(d, t, "cancel", yyjson_mut_obj(d));
		yyjson_mut_obj_add_val(d, tools, "call", yyjson_mut_obj(d));
		yyjson_mut_obj_add_val(d, rq, "tools", tools);
		yyjson_mut_obj_add_val(d, t, "requests", rq);
		yyjson_mut_obj_add_val(d, c, "tasks", t);
	}
	if (ui)
		yyjson_mut_obj_add_val(d, ext, SL_MCP_UI_EXT, ui);
	if (yyjson_mut_obj_size(ext))
		yyjson_mut_obj_add_val(d, c, "extensions", ext);
	return c;
}

static yyjson_mut_val *server_info(yyjson_mut_doc *d)
{
	yyjson_mut_val *i = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, i, "name", "sluice");
	yyjson_mut_obj_add_str(d, i, "version", SL_VERSION);
	return i;
}

/* What the profile of m's caller shows, in its mode. */
static char *instructions(struct sl_session *s, const struct sl_msg *m)
{
	struct sl_gateway *gw = s->gw;
	struct sl_view v;
	struct sl_buf b;
	size_t n = 0;

	sl_view_of(gw, m->who, &v);
	sl_buf_init(&b, 1u << 16);
	if (sl_buf_appends(&b, "sluice gateway over MCP servers:") < 0)
		return sl_buf_take(&b, NULL);
	for (size_t i = 0; i < gw->nups; i++)
		if (sl_view_server(&v, gw->ups[i]) &&
		    sl_buf_printf(&b, "%s %s", n++ ? "," : "", gw->ups[i]->name) < 0)
			break;
	switch (v.exposure) {
	case SL_EXPOSE_PASSTHROUGH:
	case SL_EXPOSE_HYBRID:
		(void)!sl_buf_appends(&b, ". Tools are named <server>__<tool>");
		for (size_t i = 0, k = 0; i < gw->nups; i++)
			if (gw->ups[i]->cfg->unprefixed && sl_view_server(&v, gw->ups[i]) &&
			    sl_buf_printf(&b, "%s%s", k++ ? ", " : ", except those of ", gw->ups[i]->name) < 0)
				break;
		(void)!sl_buf_appends(&b, ".");
		break;
	case SL_EXPOSE_ROUTER:
		(void)!sl_buf_appends(&b, ". Find tools with search_tools or list_tools, call them with invoke_tool.");
		break;
	case SL_EXPOSE_CODE:
		(void)!sl_buf_appends(&b, ". Find tools and their TypeScript signatures with search_tools (describe_tools: "
					 "a whole server), call them from a program with execute_code.");
		break;
	}
	return sl_buf_take(&b, NULL);
}

static void do_initialize(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *v = m->params ? sl_json_str(m->params, "protocolVersion") : NULL;
	yyjson_mut_val *r;
	yyjson_mut_doc *d;
	char *ins;

	if (s->era == SL_ERA_LEGACY) {
		sl_session_error(s, m->id, SL_RPC_INVALID_REQUEST, "Invalid Request: already initialized");
		return;
	}
	if (!v || !sl_json_obj(m->params, "capabilities")) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS,
			   "Invalid params: initialize needs protocolVersion and capabilities");
		return;
	}
	/* MCP 2025-11-25 lifecycle: echo a supported version, else our latest. */
	snprintf(s->version, sizeof(s->version), "%s",
		 sl_mcp_legacy_version(v) ? v : SL_MCP_LATEST_LEGACY);
	s->era = SL_ERA_LEGACY;
	/* Only what the client's version has: an older client that declares
	 * elicitation still gets none (nor do the servers on its behalf). */
	s->caps_doc = sl_mcp_era_caps(sl_json_obj(m->params, "capabilities"), s->version);
	s->caps = yyjson_doc_get_root(s->caps_doc);
	sl_gateway_start(s->gw, s->caps);

	d = sl_session_doc(&r);
	yyjson_mut_obj_add_strcpy(d, r, "protocolVersion", s->version);
	yyjson_mut_obj_add_val(d, r, "capabilities", server_caps(s->gw, d, false));
	yyjson_mut_obj_add_val(d, r, "serverInfo", server_info(d));
	ins = instructions(s, m);
	yyjson_mut_obj_add_strcpy(d, r, "instructions", ins);
	free(ins);
	sl_session_answer(s, m, false, false, d, r);
}

static void do_discover(struct sl_session *s, struct sl_msg *m, bool modern)
{
	yyjson_mut_val *r, *meta;
	yyjson_mut_doc *d = sl_session_doc(&r);
	char *ins;

	sl_gateway_start(s->gw, sl_session_caps(s, m, modern));
	yyjson_mut_obj_add_val(d, r, "supportedVersions", sl_mcp_versions(d));
	yyjson_mut_obj_add_val(d, r, "capabilities", server_caps(s->gw, d, modern));
	ins = instructions(s, m);
	yyjson_mut_obj_add_strcpy(d, r, "instructions", ins);
	free(ins);
	meta = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, meta, SL_MCP_META_SERVER, server_info(d));
	yyjson_mut_obj_add_val(d, r, "_meta", meta);
	sl_session_answer(s, m, true, true, d, r);
}

static void do_ping(struct sl_session *s, struct sl_msg *m, bool modern)
{
	yyjson_mut_val *r;
	yyjson_mut_doc *d = sl_session_doc(&r);
	sl_session_answer(s, m, modern, false, d, r);
}

static void do_set_level(struct sl_session *s, struct sl_msg *m, bool modern)
{
	const char *level = m->params ? sl_json_str(m->params, "level") : NULL;
	yyjson_mut_val *r;

	if (!level) {
		sl_session_error(s, m->id, SL_RPC_INVALID_PARAMS, "Invalid params: level is required");
		return;
	}
	pass_level(s, level);
	snprintf(s->log_level, sizeof(s->log_level), "%s", level);
	sl_session_changed(s);
	yyjson_mut_doc *d = sl_session_doc(&r);
	sl_session_answer(s, m, false, false, d, r);
}

/* Passes the level on to every server that logs; their answers do not
 * change ours. */
static void pass_level(struct sl_session *s, const char *level)
{
	for (size_t i = 0; i < s->gw->nups; i++) {
		struct sl_upstream *u = s->gw->ups[i];
		if (u->state == SL_UP_READY && sl_upstream_has_cap(u, "logging")) {
			yyjson_mut_doc *fd = yyjson_mut_doc_new(NULL);
			yyjson_mut_val *params = yyjson_mut_obj(fd);
			struct sl_err err;
			yyjson_mut_obj_add_strcpy(fd, params, "level", level);
			if (!sl_upstream_request(u, "logging/setLevel", fd, params,
						 s->gw->gen->cfg->call_timeout_ms, NULL, NULL, NULL, &err))
				sl_log(SL_LOG_DEBUG, "%s", err.msg);
			yyjson_mut_doc_free(fd);
		}
	}
}

/* ---- the method table ------------------------------------------------------- */

#define ERA_LEGACY 1u
#define ERA_MODERN 2u

/* Sorted by name (bsearch). eras: the eras that have the method; elsewhere
 * it is -32601, with wrong_era as the message when the method has one.
 * needs_upstreams: it waits until every upstream had its first handshake.
 * waits: it may stay in flight, waiting on a server or a program, and so
 * takes one of sluice.limits.maxRequestsInFlight (the others are answered
 * at once from what the gateway holds, and are never refused as busy). */
static const struct method {
	const char *name;
	unsigned eras;
	bool needs_upstreams;
	bool waits;
	sl_method_fn fn;
	const char *wrong_era;
} methods[] = {
	{ "completion/complete", ERA_LEGACY | ERA_MODERN, true, true, sl_forward_complete, NULL },
	{ SL_MCP_INITIALIZE, ERA_LEGACY, false, false, do_initialize,
	  "Method not found: 2026-07-28 has no initialize" },
	{ "logging/setLevel", ERA_LEGACY, true, false, do_set_level,
	  "Method not found: 2026-07-28 has no logging/setLevel" },
	/* MCP 2026-07-28 removed ping (a request's own answer says the
	 * server is there). */
	{ "ping", ERA_LEGACY, false, false, do_ping,
	  "Method not found: 2026-07-28 has no ping" },
	{ "prompts/get", ERA_LEGACY | ERA_MODERN, true, true, sl_forward_prompts_get, NULL },
	{ "prompts/list", ERA_LEGACY | ERA_MODERN, true, false, sl_forward_prompts_list, NULL },
	{ "resources/list", ERA_LEGACY | ERA_MODERN, true, false, sl_forward_resources_list, NULL },
	{ "resources/read", ERA_LEGACY | ERA_MODERN, true, true, sl_forward_resources_read, NULL },
	{ "resources/subscribe", ERA_LEGACY, true, true, sl_forward_subscribe,
	  "Method not found: 2026-07-28 has no resources/subscribe: subscriptions/listen watches "
	  "resources" },
	{ "resources/templates/list", ERA_LEGACY | ERA_MODERN, true, false, sl_forward_templates_list,
	  NULL },
	{ "resources/unsubscribe", ERA_LEGACY, true, true, sl_forward_unsubscribe,
	  "Method not found: 2026-07-28 has no resources/unsubscribe: end the subscriptions/listen" },
	{ "server/discover", ERA_LEGACY | ERA_MODERN, false, false, do_discover, NULL },
	/* Long-lived, so not a request in flight: sluice.limits.maxListens. */
	{ SL_MCP_LISTEN, ERA_MODERN, true, false, sl_listen_open,
	  "Method not found: subscriptions/listen is 2026-07-28's; in this protocol version list "
	  "changes come on the GET stream (HTTP) or at any time (stdio), and resources/subscribe "
	  "watches a resource" },
	{ "tasks/cancel", ERA_LEGACY | ERA_MODERN, true, true, sl_tasks_cancel, NULL },
	{ "tasks/get", ERA_LEGACY | ERA_MODERN, true, true, sl_tasks_get, NULL },
	{ "tasks/list", ERA_LEGACY, true, false, sl_tasks_list,
	  "Method not found: the 2026-07-28 tasks extension has no tasks/list" },
	{ "tasks/result", ERA_LEGACY, true, true, sl_tasks_result,
	  "Method not found: the 2026-07-28 tasks extension has no tasks/result: poll tasks/get" },
	{ "tasks/update", ERA_MODERN, true, false, sl_tasks_update,
	  "Method not found: tasks/update is of the 2026-07-28 tasks extension" },
	{ "tools/call", ERA_LEGACY | ERA_MODERN, true, true, sl_calls_tools_call, NULL },
	{ "tools/list", ERA_LEGACY | ERA_MODERN, true, false, sl_calls_tools_list, NULL },
};

static int method_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct method *)elem)->name);
}

static const struct method *method_find(const char *name)
{
	return bsearch(name, methods, SL_COUNT(methods), sizeof(methods[0]), method_cmp);
}

const char *sl_session_method_name(const char *name)
{
	const struct method *e = method_find(name);
	return e ? e->name : name;
}

bool sl_session_has_method(const char *name, bool modern, char *why, size_t n)
{
	const struct method *e = method_find(name);

	if (e && (e->eras & (modern ? ERA_MODERN : ERA_LEGACY)))
		return true;
	if (e && e->wrong_era)
		snprintf(why, n, "%s", e->wrong_era);
	else
		snprintf(why, n, "Method not found: %.100s", name);
	return false;
}

/* An unknown method waits like a known one that needs upstreams: its
 * error then comes in its turn, after what the client sent before it. */
static bool needs_upstreams(const struct method *e)
{
	return !e || e->needs_upstreams;
}

static void handle_request(struct sl_session *s, struct sl_msg *m, const struct method *e)
{
	bool modern;
	char msg[200];

	if (!request_era(s, m, &modern))
		return;
	if (e && (e->eras & (modern ? ERA_MODERN : ERA_LEGACY))) {
		if (e->waits && s->gw->requests >= s->gw->gen->cfg->limits.max_requests) {
			/* Every request of every session passes here, whatever its
			 * transport or era: the gateway's one count. */
			snprintf(msg, sizeof(msg), "Server busy: %u requests are in flight, the limit "
				 "(sluice.limits.maxRequestsInFlight); try again later",
				 s->gw->requests);
			sl_session_error(s, m->id, SL_RPC_SERVER_ERROR, msg);
			return;
		}
		e->fn(s, m, modern);
		return;
	}
	(void)sl_session_has_method(m->method, modern, msg, sizeof(msg));
	sl_session_error(s, m->id, SL_RPC_METHOD_NOT_FOUND, msg);
}

static void handle_notification(struct sl_session *s, struct sl_msg *m)
{
	if (strcmp(m->method, SL_MCP_INITIALIZED) == 0) {
		s->initialized = true;
	} else if (strcmp(m->method, SL_MCP_CANCELLED) == 0) {
		yyjson_val *id = m->params ? yyjson_obj_get(m->params, "requestId") : NULL;
		const char *why = m->params ? sl_json_str(m->params, "reason") : NULL;
		char key[80];
		struct sl_pending *p;
		if (!id || !(yyjson_is_str(id) || yyjson_is_int(id)))
			return;
		sl_session_id_key(id, key, sizeof(key));
		/* MCP 2026-07-28 subscriptions: how a stdio client ends a listen. */
		if (sl_listen_cancel(s, key))
			return;
		p = sl_map_get(&s->calls, key);
		if (!p)
			return; /* already answered: MCP says ignore */
		sl_pending_cancel(p, why ? why : "cancelled by the client");
	} else if (strcmp(m->method, SL_MCP_ROOTS_CHANGED) == 0) {
		for (size_t i = 0; i < s->gw->nups; i++) {
			struct sl_upstream *u = s->gw->ups[i];
			/* Upstreams that asked for roots will ask again. */
			if (u->state == SL_UP_READY)
				sl_upstream_notify(u, m->method);
		}
	}
}

static void defer_doc(struct sl_session *s, struct sl_caller *who, yyjson_doc *doc);

/* One message from who, m as sl_msg_parse or sl_msg_take left it (rc,
 * code, err their result); m is disposed, or its document kept when it
 * waits. */
static void process_msg(struct sl_session *s, struct sl_caller *who, struct sl_msg *mp, int rc,
			int code, const struct sl_err *err)
{
	struct sl_msg m = *mp;
	const struct method *e;

	if (rc < 0) {
		sl_session_error(s, m.id, code, err->msg);
		sl_msg_dispose(&m);
		return;
	}
	m.who = who;
	switch (m.kind) {
	case SL_MSG_REQUEST:
		e = method_find(m.method);
		if (needs_upstreams(e) && !s->gw->started) {
			bool modern;
			/* A 2026-07-28 client's first request that needs them starts
			 * the upstreams (one that only pinged has not: it must not
			 * wait for a start that never comes). */
			if (request_era(s, &m, &modern) && modern) {
				sl_gateway_start(s->gw, sl_session_caps(s, &m, true));
				defer_doc(s, who, m.doc);
				m.doc = NULL;
			}
			break;
		}
		/* Until every upstream has had its first handshake, requests that
		 * need the catalog wait (bounded by startupTimeoutMs). */
		if (needs_upstreams(e) && !s->gw->settled &&
		    (s->era != SL_ERA_NONE ||
		     (sl_session_meta(&m) &&
		      sl_json_str(sl_session_meta(&m), SL_MCP_META_VERSION)))) {
			/* A fresh session's 2026-07-28 request (over HTTP, every
			 * request has a fresh session) waits like any other. */
			defer_doc(s, who, m.doc);
			m.doc = NULL;
			break;
		}
		handle_request(s, &m, e);
		break;
	case SL_MSG_NOTIFICATION:
		handle_notification(s, &m);
		break;
	case SL_MSG_RESPONSE:
		sl_relay_response(s, &m);
		break;
	}
	sl_msg_dispose(&m);
}

static void process(struct sl_session *s, struct sl_caller *who, const char *line, size_t len)
{
	struct sl_msg m;
	struct sl_err err;
	int code, rc = sl_msg_parse(&m, line, len, &code, &err);

	process_msg(s, who, &m, rc, code, &err);
}

static void process_doc(struct sl_session *s, struct sl_caller *who, yyjson_doc *doc)
{
	struct sl_msg m;
	struct sl_err err;
	int code, rc = sl_msg_take(&m, doc, &code, &err);

	process_msg(s, who, &m, rc, code, &err);
}

static void on_settled(void *ctx)
{
	struct sl_session *s = ctx;
	struct sl_list *n;

	while (!s->closing && (n = sl_list_first(&s->deferred))) {
		struct sl_deferred *d = sl_list_entry(n, struct sl_deferred, link);
		sl_list_remove(n);
		if (d->doc) {
			process_doc(s, d->who, d->doc);
			d->doc = NULL; /* taken */
		} else {
			process(s, d->who, d->line, d->len);
		}
		deferred_free(d);
	}
}

static void defer_entry(struct sl_session *s, struct sl_deferred *d)
{
	bool first = sl_list_empty(&s->deferred);
	sl_list_push_back(&s->deferred, &d->link);
	if (first)
		sl_gateway_when_settled(s->gw, on_settled, s);
}

static void defer(struct sl_session *s, struct sl_caller *who, const char *line, size_t len)
{
	struct sl_deferred *d = sl_alloc(sizeof(*d));
	d->who = sl_caller_ref(who);
	d->line = sl_strndup(line, len);
	d->len = len;
	defer_entry(s, d);
}

static void defer_doc(struct sl_session *s, struct sl_caller *who, yyjson_doc *doc)
{
	struct sl_deferred *d = sl_alloc(sizeof(*d));
	d->who = sl_caller_ref(who);
	d->doc = doc;
	defer_entry(s, d);
}

/* The session speaks with the rights of the latest credential it was sent
 * with, never more: what no request asks for (a notification, a relayed
 * question, the end of its tasks) is decided with the claims of the most
 * recent request, so that a token down-scoped or stripped of a group at
 * its identity provider takes effect at once. The transport admits a
 * request into a session only for the identity that opened it (another is
 * refused as an unknown session), so this changes claims, never who. */
static void latest_caller(struct sl_session *s, struct sl_caller *who)
{
	if (who && who != s->caller && sl_caller_same(who, s->caller))
		sl_session_set_caller(s, who);
}

void sl_session_input_from(struct sl_session *s, struct sl_caller *who, const char *line,
			   size_t len)
{
	if (s->closing)
		return;
	latest_caller(s, who);
	/* Keep order: once something waits, everything after it waits too. */
	if (!sl_list_empty(&s->deferred)) {
		defer(s, who, line, len);
		return;
	}
	process(s, who, line, len);
}

void sl_session_input_doc(struct sl_session *s, struct sl_caller *who, yyjson_doc *doc)
{
	if (s->closing) {
		yyjson_doc_free(doc);
		return;
	}
	latest_caller(s, who);
	if (!sl_list_empty(&s->deferred)) {
		defer_doc(s, who, doc);
		return;
	}
	process_doc(s, who, doc);
}

void sl_session_input(struct sl_session *s, const char *line, size_t len)
{
	sl_session_input_from(s, s->caller, line, len);
}

void sl_session_oversize(struct sl_session *s, const char *head, size_t hl, const char *tail,
			 size_t tl, size_t total, size_t max)
{
	char msg[200];
	yyjson_doc *id = sl_rpc_find_id(head, hl, tail, tl);
	snprintf(msg, sizeof(msg),
		 "Invalid Request: message of %zu bytes exceeds the limit of %zu (sluice.maxRequestBytes)",
		 total, max);
	sl_session_error(s, id ? yyjson_doc_get_root(id) : NULL, SL_RPC_INVALID_REQUEST, msg);
	yyjson_doc_free(id);
}

/* ---- from the gateway -------------------------------------------------------- */

static void send_notification(struct sl_session *s, yyjson_mut_doc *d)
{
	sl_session_send(s, &(struct sl_out){ .kind = SL_OUT_NOTIFICATION }, d);
	yyjson_mut_doc_free(d);
}

void sl_session_list_changed(struct sl_session *s, const char *what)
{
	char method[64];
	yyjson_mut_doc *d;

	/* 2026-07-28 clients hear it on the listens that opted in (the
	 * gateway decides whether the router's list changed). */
	if (s->era != SL_ERA_LEGACY) {
		sl_listen_list_changed(s, what);
		return;
	}
	snprintf(method, sizeof(method), "notifications/%s/list_changed", what);
	d = yyjson_mut_doc_new(NULL);
	sl_rpc_envelope(d, NULL, method);
	send_notification(s, d);
}

void sl_session_notify(struct sl_session *s, struct sl_upstream *u, struct sl_msg *m)
{
	const char *field, *value = NULL;
	yyjson_mut_val *params;
	yyjson_mut_doc *d;
	char *ours;

	struct sl_view v;

	sl_view_of(s->gw, s->caller, &v);
	/* A server outside the session's profile says nothing to it. */
	if (!m->params || !sl_view_server(&v, u))
		return;
	if (s->era != SL_ERA_LEGACY) {
		/* 2026-07-28: only resource updates, and only on listens that
		 * watch the URI; log messages belong to a request's stream. */
		if (!sl_list_empty(&s->listens) && strcmp(m->method, "notifications/resources/updated") == 0 &&
		    (value = sl_json_str(m->params, "uri"))) {
			ours = sl_catalog_expose_uri(&s->gw->catalog, u, value);
			sl_listen_updated(s, u, m->params, ours);
			free(ours);
		}
		return;
	}
	if (strcmp(m->method, "notifications/tasks/status") == 0) {
		sl_tasks_status(s, u, m);
		return;
	}
	if (strcmp(m->method, "notifications/message") == 0) {
		/* The logger names its server. */
		const char *logger = sl_json_str(m->params, "logger");
		field = "logger";
		ours = logger ? sl_printf("%s/%s", u->name, logger) : sl_strdup(u->name);
	} else if (strcmp(m->method, "notifications/resources/updated") == 0 &&
		   (value = sl_json_str(m->params, "uri"))) {
		field = "uri";
		ours = sl_catalog_expose_uri(&s->gw->catalog, u, value);
		if (!sl_map_get(&s->subs, ours)) {
			free(ours);
			return; /* MCP 2025-11-25 resources: updates go to subscribers */
		}
	} else {
		return;
	}
	d = yyjson_mut_doc_new(NULL);
	params = yyjson_val_mut_copy(d, m->params);
	yyjson_mut_obj_remove_key(params, field);
	yyjson_mut_obj_add_strcpy(d, params, field, ours);
	free(ours);
	yyjson_mut_obj_add_val(d, sl_rpc_envelope(d, NULL, m->method), "params", params);
	send_notification(s, d);
}

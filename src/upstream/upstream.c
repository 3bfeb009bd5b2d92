/*
 * Upstreams: lifecycle and restarts, the legacy-era handshake, list
 * fetching with pagination, and request multiplexing by integer id, over
 * whichever link the server's config calls for (link.h).
 *
 * A link is separate from its upstream so that a dying one can finish
 * closing its handles while a new one starts: when the upstream gives a
 * link up it detaches it, and the link frees itself once it is done.
 */
#include "upstream/link.h"
#include "core/log.h"
#include "oauth/client.h"
#include "proto/mcp.h"
#include "proto/mcpparam.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BACKOFF_MIN_MS 250
#define STABLE_MS 30000        /* up this long: the next crash starts backoff afresh */
#define LIST_MAX_PAGES 100
#define PROBE_TIMEOUT_MS 5000  /* for the server/discover probe */
#define MRTR_MAX_ROUNDS 8      /* input_required answers to one request */
#define MRTR_MAX_INPUTS 16     /* input requests in one answer */
#define MRTR_ID_PREFIX "sluice-mrtr:"
#define LOGIN_POLL_MS 2000     /* waiting for a login: how often the record's file is looked at */

struct sl_ureq {
	struct sl_list link;    /* in u->requests */
	struct sl_upstream *u;
	int64_t id;
	const char *method;     /* static string, for messages */
	sl_reply_fn cb;
	sl_progress_fn progress;
	void *ctx;
	uv_timer_t timer;
	/* 2026-07-28 only: the params as sent, to retry with the client's
	 * input when the server answers input_required (MRTR). */
	yyjson_mut_doc *sent;
	yyjson_mut_doc *held;   /* a user link's request kept until it is up: its params */
	struct mrtr *mrtr;
	unsigned rounds;        /* input_required answers so far */
	bool items;             /* a list fetch: its callback gates each item itself */
};

/* A request whose server asked for input: the client's answers being
 * collected, one per input request, before the request is sent again. */
struct mrtr {
	yyjson_doc *asked;       /* the input_required result */
	yyjson_mut_doc *answers; /* root: {key: result} */
	char **keys;
	size_t nkeys, waiting;
};

enum list_kind { LIST_TOOLS, LIST_RESOURCES, LIST_TEMPLATES, LIST_PROMPTS, LIST_N };

static const struct {
	const char *method, *key, *cap, *changed, *noun;
} lists[LIST_N] = {
	[LIST_TOOLS] = { "tools/list", "tools", "tools", "notifications/tools/list_changed", "tool" },
	[LIST_RESOURCES] = { "resources/list", "resources", "resources",
			     "notifications/resources/list_changed", "resource" },
	[LIST_TEMPLATES] = { "resources/templates/list", "resourceTemplates", "resources",
			     "notifications/resources/list_changed", "resource template" },
	[LIST_PROMPTS] = { "prompts/list", "prompts", "prompts", "notifications/prompts/list_changed",
			   "prompt" },
};

struct list_fetch {
	struct sl_upstream *u;
	enum list_kind kind;
	struct sl_item_list acc;
	int pages;
};

static unsigned next_gen = 1;

unsigned sl_link_next_gen(void)
{
	return next_gen++;
}

static void start_link(struct sl_upstream *u);
static void on_initialized(void *ctx, struct sl_reply *r);
static void mrtr_answer(struct sl_upstream *u, int64_t rid, size_t i, yyjson_val *result,
			const char *failed);
static void lose_link(struct sl_upstream *u, const char *why);
static void fetch_list(struct sl_upstream *u, enum list_kind k);
static void fetch_lists(struct sl_upstream *u);
static void listen_open(struct sl_upstream *u);
static void user_login_message(struct sl_upstream *u);

static struct sl_item_list *list_of(struct sl_upstream *u, enum list_kind k)
{
	switch (k) {
	case LIST_TOOLS: return &u->tools;
	case LIST_RESOURCES: return &u->resources;
	case LIST_TEMPLATES: return &u->templates;
	default: return &u->prompts;
	}
}

static void item_list_dispose(struct sl_item_list *l)
{
	for (size_t i = 0; i < l->ndocs; i++)
		yyjson_doc_free(l->docs[i]);
	free(l->docs);
	free(l->items);
	memset(l, 0, sizeof(*l));
}

const char *sl_upstream_state_name(enum sl_upstream_state s)
{
	static const char *n[] = { "idle", "starting", "ready", "restarting", "disabled",
				   "stopping", "stopped", "failed", "needs login" };
	return n[s];
}

static void set_error(struct sl_upstream *u, const char *why)
{
	free(u->error);
	u->error = why ? sl_strdup(why) : NULL;
}

/* ---- writing ----------------------------------------------------------- */

/* Takes line. Returns false if the server's input is backed up or closed. */
static bool send_line(struct sl_upstream *u, char *line, size_t len)
{
	if (!u->link) {
		free(line);
		return false;
	}
	return u->link->ops->send(u->link, line, len);
}

static void send_doc(struct sl_upstream *u, yyjson_mut_doc *d)
{
	size_t len;
	char *line = sl_json_write_line(d, &len);
	send_line(u, line, len);
}

/* ---- requests ---------------------------------------------------------- */

static void on_ureq_closed(uv_handle_t *h)
{
	free(h->data);
}

static void mrtr_free(struct mrtr *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nkeys; i++)
		free(x->keys[i]);
	free(x->keys);
	yyjson_doc_free(x->asked);
	yyjson_mut_doc_free(x->answers);
	free(x);
}

static void ureq_free(struct sl_ureq *r)
{
	struct sl_upstream *u = r->u;
	mrtr_free(r->mrtr);
	yyjson_mut_doc_free(r->sent);
	yyjson_mut_doc_free(r->held);
	sl_list_remove(&r->link);
	uv_close((uv_handle_t *)&r->timer, on_ureq_closed);
	if (--u->pending == 0 && u->ops->idle)
		u->ops->idle(u->ctx, u);
}

static struct sl_ureq *ureq_find(struct sl_upstream *u, int64_t id)
{
	struct sl_list *n;

	sl_list_each(n, &u->requests) {
		struct sl_ureq *r = sl_list_entry(n, struct sl_ureq, link);
		if (r->id == id)
			return r;
	}
	return NULL;
}

static void ureq_fail(struct sl_ureq *r, const char *why)
{
	struct sl_reply rep = { .kind = SL_REPLY_FAILED, .why = why };
	sl_reply_fn cb = r->cb;
	void *ctx = r->ctx;
	ureq_free(r);
	if (cb)
		cb(ctx, &rep);
}

static void send_cancel(struct sl_upstream *u, int64_t id, const char *reason)
{
	yyjson_mut_val *params;
	yyjson_mut_doc *d = sl_rpc_request_new("notifications/cancelled", -1, &params);
	/* MCP 2025-11-25 cancellation: requestId and an optional reason. */
	yyjson_mut_obj_add_int(d, params, "requestId", id);
	yyjson_mut_obj_add_strcpy(d, params, "reason", reason);
	send_doc(u, d);
	yyjson_mut_doc_free(d);
}

static void on_ureq_timeout(uv_timer_t *t)
{
	struct sl_ureq *r = t->data;
	struct sl_upstream *u = r->u;
	char why[256];
	uint64_t ms = uv_timer_get_repeat(t);

	if (r->held && u->parent && u->state != SL_UP_READY) {
		snprintf(why, sizeof(why), "server '%s': %s's link to it did not come up within %llu ms",
			 u->name, u->user_name, (unsigned long long)ms);
		ureq_fail(r, why);
		return;
	}
	snprintf(why, sizeof(why), "server '%s' did not answer %s within %llu ms", u->name,
		 r->method, (unsigned long long)ms);
	if (!r->held) /* a request held for roots was never sent */
		send_cancel(u, r->id, "timed out");
	ureq_fail(r, why);
}

/* Whether an elicitation capability takes mode: a session-era "{}" means
 * form mode (2025-11-25); otherwise the modes it names. */
static bool elicit_mode(yyjson_mut_val *el, const char *mode)
{
	if (yyjson_mut_obj_size(el) == 0)
		return !strcmp(mode, "form");
	return yyjson_mut_obj_get(el, mode) != NULL;
}

/* The client capabilities a 2026-07-28 request declares (a new value in
 * d). asked: the caller's own, which whoever made the request put in its
 * _meta (a 2026-07-28 client declares them per request; a session-era
 * one in its initialize), or NULL for the gateway's own requests (the
 * probe, the lists, its listen). The caller's are cut to what this gateway
 * relays (u->caps_doc: roots, sampling, elicitation and its modes), so a
 * server never asks a question no one can answer, and answers -32021 when
 * it needs one the caller lacks. Elicitation names its modes, as this era
 * does. */
static yyjson_mut_val *declared_caps(struct sl_upstream *u, yyjson_mut_doc *d, yyjson_mut_val *asked)
{
	yyjson_mut_val *ours = yyjson_mut_doc_get_root(u->caps_doc), *out, *key, *val, *el;
	static const char *modes[] = { "form", "url" };
	size_t i, n;

	if (!asked)
		out = yyjson_mut_val_mut_copy(d, ours);
	else {
		out = yyjson_mut_obj(d);
		yyjson_mut_obj_foreach(ours, i, n, key, val) {
			const char *k = yyjson_mut_get_str(key);
			yyjson_mut_val *theirs = yyjson_mut_obj_get(asked, k);
			if (!yyjson_mut_is_obj(theirs) || !yyjson_mut_is_obj(val))
				continue;
			if (strcmp(k, "extensions") == 0) {
				/* The extensions relayed (MCP Apps'), as the caller has them. */
				yyjson_mut_val *ext = yyjson_mut_obj(d), *ek, *ev;
				size_t ei, en;
				yyjson_mut_obj_foreach(val, ei, en, ek, ev) {
					yyjson_mut_val *t = yyjson_mut_obj_get(theirs, yyjson_mut_get_str(ek));
					if (yyjson_mut_is_obj(t))
						yyjson_mut_obj_add_val(d, ext, yyjson_mut_get_str(ek),
								       yyjson_mut_val_mut_copy(d, t));
				}
				if (yyjson_mut_obj_size(ext))
					yyjson_mut_obj_add_val(d, out, k, ext);
				continue;
			}
			if (strcmp(k, "elicitation") != 0) {
				yyjson_mut_obj_add_val(d, out, k, yyjson_mut_val_mut_copy(d, theirs));
				continue;
			}
			el = yyjson_mut_obj(d);
			for (size_t m = 0; m < SL_COUNT(modes); m++)
				if (elicit_mode(theirs, modes[m]) && elicit_mode(val, modes[m]))
					yyjson_mut_obj_add_val(d, el, modes[m], yyjson_mut_obj(d));
			if (yyjson_mut_obj_size(el))
				yyjson_mut_obj_add_val(d, out, k, el);
		}
	}
	el = yyjson_mut_obj_get(out, "elicitation");
	if (yyjson_mut_is_obj(el) && yyjson_mut_obj_size(el) == 0)
		yyjson_mut_obj_add_val(d, el, "form", yyjson_mut_obj(d));
	return out;
}

/* A session-era server is not told the caller's capabilities per request
 * (its initialize said what it may ask): the key is dropped, and _meta
 * with it when nothing else is left. */
static void drop_caller_caps(yyjson_mut_val *params)
{
	yyjson_mut_val *meta = yyjson_mut_obj_get(params, "_meta");

	if (!yyjson_mut_is_obj(meta) || !yyjson_mut_obj_get(meta, SL_MCP_META_CAPS))
		return;
	yyjson_mut_obj_remove_key(meta, SL_MCP_META_CAPS);
	if (yyjson_mut_obj_size(meta) == 0)
		yyjson_mut_obj_remove_key(params, "_meta");
}

/* MCP 2026-07-28: every request names the version and the client's
 * capabilities (and who the client is) in params._meta. */
static void add_modern_meta(struct sl_upstream *u, yyjson_mut_doc *d, yyjson_mut_val *params)
{
	yyjson_mut_val *meta = yyjson_mut_obj_get(params, "_meta"), *info, *caps, *asked;

	if (!yyjson_mut_is_obj(meta)) {
		yyjson_mut_obj_remove_key(params, "_meta");
		meta = yyjson_mut_obj(d);
		yyjson_mut_obj_add_val(d, params, "_meta", meta);
	}
	asked = yyjson_mut_obj_get(meta, SL_MCP_META_CAPS);
	caps = declared_caps(u, d, yyjson_mut_is_obj(asked) ? asked : NULL);
	yyjson_mut_obj_remove_key(meta, SL_MCP_META_VERSION);
	yyjson_mut_obj_remove_key(meta, SL_MCP_META_CAPS);
	yyjson_mut_obj_remove_key(meta, SL_MCP_META_CLIENT);
	yyjson_mut_obj_add_str(d, meta, SL_MCP_META_VERSION, SL_MCP_MODERN);
	yyjson_mut_obj_add_val(d, meta, SL_MCP_META_CAPS, caps);
	info = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, info, "name", "sluice");
	yyjson_mut_obj_add_str(d, info, "version", SL_VERSION);
	yyjson_mut_obj_add_val(d, meta, SL_MCP_META_CLIENT, info);
}

/* Sends r (its params in d, which gets the envelope): progress token,
 * the 2026-07-28 meta, then the line. False with err set if the server is
 * not reading. */
static bool transmit(struct sl_upstream *u, struct sl_ureq *r, yyjson_mut_doc *d,
		     yyjson_mut_val *params, struct sl_err *err)
{
	yyjson_mut_val *env, *meta;
	size_t len;
	char *line;

	if (r->progress) {
		meta = yyjson_mut_obj_get(params, "_meta");
		if (!yyjson_mut_is_obj(meta)) {
			yyjson_mut_obj_remove_key(params, "_meta");
			meta = yyjson_mut_obj(d);
			yyjson_mut_obj_add_val(d, params, "_meta", meta);
		}
		yyjson_mut_obj_remove_key(meta, "progressToken");
		yyjson_mut_obj_add_int(d, meta, "progressToken", r->id);
	}
	if (!u->modern && strcmp(r->method, "server/discover") != 0) /* the probe has its own */
		drop_caller_caps(params);
	if (u->modern) {
		add_modern_meta(u, d, params);
		r->sent = yyjson_mut_doc_new(NULL);
		yyjson_mut_doc_set_root(r->sent, yyjson_mut_val_mut_copy(r->sent, params));
	}
	env = sl_rpc_envelope(d, yyjson_mut_sint(d, r->id), r->method);
	yyjson_mut_obj_add_val(d, env, "params", params);
	line = sl_json_write_line(d, &len);
	if (!send_line(u, line, len)) {
		sl_err_set(err, "server '%s' is not reading its input", u->name);
		yyjson_mut_doc_free(r->sent);
		r->sent = NULL;
		return false;
	}
	return true;
}

static struct sl_ureq *ureq_new(struct sl_upstream *u, const char *method, uint64_t timeout_ms,
				sl_reply_fn cb, sl_progress_fn progress, void *ctx)
{
	struct sl_ureq *r = sl_alloc(sizeof(*r));

	r->u = u;
	r->id = u->next_id++;
	r->method = method;
	r->cb = cb;
	r->progress = progress;
	r->ctx = ctx;
	sl_list_push_front(&u->requests, &r->link);
	u->pending++;
	uv_timer_init(u->loop, &r->timer);
	r->timer.data = r;
	/* 0: no deadline (a listen lives as long as its stream). */
	if (timeout_ms)
		uv_timer_start(&r->timer, on_ureq_timeout, timeout_ms, timeout_ms);
	return r;
}

static void unavailable(const struct sl_upstream *u, struct sl_err *err)
{
	if (u->state == SL_UP_BACKOFF || u->state == SL_UP_STARTING)
		sl_err_set(err, "server '%s' is restarting (last error: %s)", u->name,
			   u->error ? u->error : "none");
	else if (u->state == SL_UP_NEEDS_LOGIN)
		sl_err_set(err, "server '%s' %s", u->name, u->error);
	else
		sl_err_set(err, "server '%s' is not available (%s%s%s)", u->name,
			   sl_upstream_state_name(u->state), u->error ? ": " : "",
			   u->error ? u->error : "");
}

/* The upstream's own requests, and those of a link that is up. */
static struct sl_ureq *request(struct sl_upstream *u, const char *method, yyjson_mut_doc *d,
			       yyjson_mut_val *params, uint64_t timeout_ms, sl_reply_fn cb,
			       sl_progress_fn progress, void *ctx, struct sl_err *err)
{
	struct sl_ureq *r;
	bool handshake = strcmp(method, "initialize") == 0 || u->state == SL_UP_STARTING;

	if (!u->link || (u->state != SL_UP_READY && !handshake)) {
		unavailable(u, err);
		return NULL;
	}
	r = ureq_new(u, method, timeout_ms, cb, progress, ctx);
	if (u->roots_hold && !handshake) {
		/* roots.c: until the server has been told its caller's roots. */
		r->held = yyjson_mut_doc_new(NULL);
		yyjson_mut_doc_set_root(r->held, yyjson_mut_val_mut_copy(r->held, params));
		return r;
	}
	if (!transmit(u, r, d, params, err)) {
		r->cb = NULL;
		ureq_free(r);
		return NULL;
	}
	return r;
}

/* A user link that is connecting keeps the request (a copy of its params)
 * until it is up, within sluice.oauth.maxHeldRequests and the request's
 * own deadline; a closed one is opened. */
static struct sl_ureq *hold(struct sl_upstream *u, const char *method, yyjson_mut_val *params,
			    uint64_t timeout_ms, sl_reply_fn cb, sl_progress_fn progress, void *ctx,
			    struct sl_err *err)
{
	struct sl_ureq *r;
	struct sl_list *l;
	size_t n = 0;

	if (u->state == SL_UP_IDLE)
		start_link(u);
	else if (u->state == SL_UP_NEEDS_LOGIN)
		user_login_message(u);
	if (u->state != SL_UP_STARTING) {
		unavailable(u, err);
		return NULL;
	}
	sl_list_each(l, &u->requests)
		n += sl_list_entry(l, struct sl_ureq, link)->held != NULL;
	if (n >= u->gcfg->oauth.max_held) {
		sl_err_set(err, "server '%s': too many requests (%zu) waiting for %s's link to it",
			   u->name, n, u->user_name);
		return NULL;
	}
	r = ureq_new(u, method, timeout_ms, cb, progress, ctx);
	r->held = yyjson_mut_doc_new(NULL);
	yyjson_mut_doc_set_root(r->held, yyjson_mut_val_mut_copy(r->held, params));
	return r;
}

/* A user link is up, or a roots wait is over: what it held goes out, in
 * the order it came. */
void sl_upstream_send_held(struct sl_upstream *u)
{
	struct sl_list *n, *prev;
	struct sl_err err;

	/* From the last (the oldest) back to the first. */
	for (n = u->requests.prev; n != &u->requests; n = prev) {
		struct sl_ureq *r = sl_list_entry(n, struct sl_ureq, link);
		prev = n->prev;
		if (r->held) {
			yyjson_mut_doc *d = r->held;
			r->held = NULL;
			if (!transmit(u, r, d, yyjson_mut_doc_get_root(d), &err))
				ureq_fail(r, err.msg);
			yyjson_mut_doc_free(d);
		}
	}
}

static void fail_held(struct sl_upstream *u, const char *why)
{
	struct sl_list *n, *next;

	sl_list_each_safe(n, next, &u->requests) {
		struct sl_ureq *r = sl_list_entry(n, struct sl_ureq, link);
		if (r->held)
			ureq_fail(r, why);
	}
}

struct sl_ureq *sl_upstream_request(struct sl_upstream *u, const char *method,
				    yyjson_mut_doc *d, yyjson_mut_val *params,
				    uint64_t timeout_ms, sl_reply_fn cb, sl_progress_fn progress,
				    void *ctx, struct sl_err *err)
{
	if (u->parent) {
		u->used_ms = sl_now_ms();
		if (u->state != SL_UP_READY)
			return hold(u, method, params, timeout_ms, cb, progress, ctx, err);
	}
	return request(u, method, d, params, timeout_ms, cb, progress, ctx, err);
}

void sl_upstream_cancel(struct sl_ureq *r, const char *reason)
{
	if (!r->held)
		send_cancel(r->u, r->id, reason);
	ureq_free(r);
}

void sl_upstream_rebind(struct sl_ureq *r, sl_reply_fn cb, void *ctx)
{
	r->cb = cb;
	r->ctx = ctx;
}

void sl_upstream_notify(struct sl_upstream *u, const char *method)
{
	yyjson_mut_val *params;
	yyjson_mut_doc *d = sl_rpc_request_new(method, -1, &params);
	send_doc(u, d);
	yyjson_mut_doc_free(d);
}

unsigned sl_upstream_generation(const struct sl_upstream *u)
{
	return u->link ? u->link->gen : 0;
}

void sl_upstream_respond(struct sl_upstream *u, unsigned gen, yyjson_val *id,
			 yyjson_val *result, yyjson_val *error)
{
	yyjson_mut_val *o;
	yyjson_mut_doc *d;

	if (!u->link || u->link->gen != gen)
		return;
	if (yyjson_is_str(id) && !strncmp(yyjson_get_str(id), MRTR_ID_PREFIX, strlen(MRTR_ID_PREFIX))) {
		long long rid;
		size_t i;
		if (sscanf(yyjson_get_str(id) + strlen(MRTR_ID_PREFIX), "%lld:%zu", &rid, &i) == 2)
			mrtr_answer(u, rid, i, result,
				    error ? (sl_json_str(error, "message") ? sl_json_str(error, "message") : "an error") : NULL);
		return;
	}
	d = sl_rpc_response_new(id, &o);
	yyjson_mut_obj_add_val(d, o, result ? "result" : "error",
			       yyjson_val_mut_copy(d, result ? result : error));
	/* A client's answer (a sampling result with audio) in the server's
	 * version. */
	sl_mcp_era_map(d, o, u->protocol_version);
	send_doc(u, d);
	yyjson_mut_doc_free(d);
}

const struct sl_ureq *sl_upstream_asker(struct sl_upstream *u, yyjson_val *id)
{
	long long rid;
	size_t i;

	if (!yyjson_is_str(id) || strncmp(yyjson_get_str(id), MRTR_ID_PREFIX, strlen(MRTR_ID_PREFIX)) ||
	    sscanf(yyjson_get_str(id) + strlen(MRTR_ID_PREFIX), "%lld:%zu", &rid, &i) != 2)
		return NULL;
	return ureq_find(u, rid);
}

const char *sl_upstream_input_key(struct sl_upstream *u, yyjson_val *id)
{
	const struct sl_ureq *r = sl_upstream_asker(u, id);
	long long rid;
	size_t i;

	if (!r || !r->mrtr ||
	    sscanf(yyjson_get_str(id) + strlen(MRTR_ID_PREFIX), "%lld:%zu", &rid, &i) != 2 ||
	    i >= r->mrtr->nkeys || !r->mrtr->keys[i][0])
		return NULL;
	return r->mrtr->keys[i];
}

void sl_upstream_refuse(struct sl_upstream *u, yyjson_val *id, int code, const char *message)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *err = yyjson_mut_obj(d);
	yyjson_doc *imm;

	yyjson_mut_obj_add_int(d, err, "code", code);
	yyjson_mut_obj_add_strcpy(d, err, "message", message);
	yyjson_mut_doc_set_root(d, err);
	/* sl_upstream_respond takes immutable values: round-trip once. */
	imm = yyjson_mut_doc_imut_copy(d, NULL);
	sl_upstream_respond(u, sl_upstream_generation(u), id, NULL, yyjson_doc_get_root(imm));
	yyjson_doc_free(imm);
	yyjson_mut_doc_free(d);
}

/* ---- lifecycle --------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

/* The upstream is not up: a server tells its owner; a user link fails
 * what it held (its server's state is the owner's concern, not its own). */
static void report_down(struct sl_upstream *u)
{
	char *msg;

	if (!u->parent) {
		u->ops->down(u->ctx, u);
		return;
	}
	msg = sl_printf("server '%s' %s", u->name, u->error ? u->error : "is not up");
	fail_held(u, msg);
	free(msg);
}

static void fail_all(struct sl_upstream *u, const char *why)
{
	char *msg = sl_printf("server '%s' %s", u->name, why);
	struct sl_list *n;

	while ((n = sl_list_first(&u->requests)))
		ureq_fail(sl_list_entry(n, struct sl_ureq, link), msg);
	free(msg);
}

static void on_login_file(uv_fs_poll_t *h, int status, const uv_stat_t *prev,
			  const uv_stat_t *curr)
{
	struct sl_upstream *u = h->data;
	bool refetch = u->state == SL_UP_READY && u->scope_refused;

	if ((u->state != SL_UP_NEEDS_LOGIN && !refetch) || !sl_oauth_client_reload(u->oauth))
		return;
	if (refetch) {
		/* The link is up: its lists are asked for again, with the new token. */
		sl_log(SL_LOG_INFO, "server '%s': a login was saved; fetching its lists again", u->name);
		if (u->lists_loading)
			u->lists_dirty = true;
		else
			fetch_lists(u);
		return;
	}
	uv_fs_poll_stop(&u->login_watch);
	sl_log(SL_LOG_INFO, "server '%s': a login was saved; connecting", u->name);
	u->backoff_ms = BACKOFF_MIN_MS;
	start_link(u);
}

/* A user link's login is the user's own, through the gateway: its error,
 * which a model and a person read, says where (a link for this user
 * alone; asked again each time, since a pending login expires). */
static void user_login_message(struct sl_upstream *u)
{
	struct sl_upstream *s = u->parent;
	char *msg;

	free(u->login_url);
	u->login_url = s->ops->login_url ? s->ops->login_url(s->ctx, u) : NULL;
	msg = u->login_url ?
		sl_printf("needs its caller's own login: open %s (a link for %s alone, valid for 10 "
			  "minutes), then call again", u->login_url, u->user_name) :
		sl_printf("needs its caller's own login (for %s), and this gateway has nowhere to "
			  "receive it (no sluice.http.publicUrl): ask its operator", u->user_name);
	set_error(u, msg);
	free(msg);
}

/* Nothing works until a person logs in: no restarts (each would be refused
 * the same way); the record's file is watched instead, and the link starts
 * again when a login saves a token there. Logged once, not per attempt. */
static void needs_login(struct sl_upstream *u, const char *why)
{
	if (u->parent) {
		user_login_message(u);
		if (!u->login_logged)
			sl_log(SL_LOG_INFO, "server '%s': %s has no login of its own yet", u->name,
			       u->user_name);
	} else {
		if (!u->login_logged)
			sl_log(SL_LOG_WARN, "server '%s' %s", u->name, why);
		set_error(u, why);
	}
	u->login_logged = true;
	u->state = SL_UP_NEEDS_LOGIN;
	uv_fs_poll_start(&u->login_watch, on_login_file, sl_oauth_client_path(u->oauth), LOGIN_POLL_MS);
	report_down(u);
}

/* The process is gone (or being given up on): fail its calls, then either
 * finish stopping or schedule a restart. */
static void lose_link(struct sl_upstream *u, const char *why)
{
	struct sl_link *l = u->link;
	bool was_ready = u->state == SL_UP_READY;
	bool login = u->state != SL_UP_FAILED && u->state != SL_UP_STOPPING && u->oauth &&
		     sl_oauth_client_needs_login(u->oauth);

	if (!l)
		return;
	u->link = NULL;
	l->ops->detach(l);
	if (login && u->parent) {
		/* Its calls fail with where its user logs in, not with the
		 * operator's command. */
		uv_timer_stop(&u->timer);
		needs_login(u, why);
		fail_all(u, u->error);
		return;
	}
	fail_all(u, why);
	uv_timer_stop(&u->timer);
	if (u->state == SL_UP_FAILED)
		return; /* the end of the link fail_final stopped */
	if (u->state == SL_UP_STOPPING) {
		u->state = u->idling ? SL_UP_IDLE : SL_UP_STOPPED;
		u->idling = false;
		return;
	}
	if (login) {
		needs_login(u, why);
		return;
	}
	set_error(u, why);
	if (was_ready && sl_now_ms() - u->ready_at >= STABLE_MS)
		u->backoff_ms = BACKOFF_MIN_MS;
	sl_log(SL_LOG_WARN, "server '%s' %s; restarting in %llu ms", u->name, why,
	       (unsigned long long)u->backoff_ms);
	u->state = SL_UP_BACKOFF;
	uv_timer_start(&u->timer, on_timer, u->backoff_ms, 0);
	u->backoff_ms *= 2;
	if (u->backoff_ms > u->gcfg->restart_max_backoff_ms)
		u->backoff_ms = u->gcfg->restart_max_backoff_ms;
	report_down(u);
}

/* A server no restart would help (it speaks no version sluice does):
 * fail its calls, end the link gracefully, and stay failed, with why for
 * `sluice check` and list_servers, until a config reload replaces it. */
static void fail_final(struct sl_upstream *u, const char *why)
{
	uv_timer_stop(&u->timer);
	set_error(u, why);
	sl_log(SL_LOG_ERROR, "server '%s' %s", u->name, why);
	u->state = SL_UP_FAILED;
	fail_all(u, why);
	if (u->link)
		u->link->ops->stop(u->link);
	report_down(u);
}

static void on_timer(uv_timer_t *t)
{
	struct sl_upstream *u = t->data;
	char why[128];

	switch (u->state) {
	case SL_UP_BACKOFF:
		start_link(u);
		break;
	case SL_UP_STARTING:
		snprintf(why, sizeof(why), "did not finish its handshake within %llu ms",
			 (unsigned long long)u->gcfg->startup_timeout_ms);
		lose_link(u, why);
		break;
	default:
		break;
	}
}

/* A list refused for a scope (u->scope_refused): the record's file is
 * watched while it lasts, as in NEEDS_LOGIN, and the note goes when every
 * list is had. */
static void scope_wait(struct sl_upstream *u)
{
	if (u->scope_refused) {
		uv_fs_poll_start(&u->login_watch, on_login_file, sl_oauth_client_path(u->oauth),
				 LOGIN_POLL_MS);
		return;
	}
	if (uv_is_active((uv_handle_t *)&u->login_watch)) {
		uv_fs_poll_stop(&u->login_watch);
		set_error(u, NULL);
	}
}

static void become_ready(struct sl_upstream *u)
{
	bool first = u->state == SL_UP_STARTING;

	if (first) {
		uv_timer_stop(&u->timer);
		u->state = SL_UP_READY;
		u->ready_at = sl_now_ms();
		u->login_logged = false;
		if (!u->scope_refused)
			set_error(u, NULL);
	}
	if (u->state != SL_UP_READY)
		return;
	if (u->parent) {
		free(u->login_url);
		u->login_url = NULL;
		if (first)
			sl_log(SL_LOG_DEBUG, "server '%s': %s's own link is up (%s)", u->name,
			       u->user_name, u->protocol_version ? u->protocol_version : "?");
		sl_upstream_send_held(u);
		return;
	}
	scope_wait(u);
	u->tools_held = 0;
	u->ops->ready(u->ctx, u); /* counts the tools pinning holds back */
	if (!first)
		return;
	if (u->tools_held)
		sl_log(SL_LOG_INFO, "server '%s' ready: %zu tools exposed, %zu hidden by pinning, "
		       "%zu resources, %zu prompts (%s)", u->name, u->tools.n - u->tools_held,
		       u->tools_held, u->resources.n, u->prompts.n,
		       u->protocol_version ? u->protocol_version : "?");
	else
		sl_log(SL_LOG_INFO, "server '%s' ready: %zu tools, %zu resources, %zu prompts (%s)",
		       u->name, u->tools.n, u->resources.n, u->prompts.n,
		       u->protocol_version ? u->protocol_version : "?");
	listen_open(u);
}

static bool valid_item(enum list_kind k, yyjson_val *it)
{
	if (!yyjson_is_obj(it))
		return false;
	switch (k) {
	case LIST_TOOLS:
		return sl_json_str(it, "name") && *sl_json_str(it, "name") &&
		       sl_json_obj(it, "inputSchema");
	case LIST_RESOURCES:
		return sl_json_str(it, "uri") && sl_json_str(it, "name");
	case LIST_TEMPLATES:
		return sl_json_str(it, "uriTemplate") && sl_json_str(it, "name");
	default:
		return sl_json_str(it, "name") != NULL;
	}
}

static void fetch_done(struct list_fetch *f)
{
	struct sl_upstream *u = f->u;
	struct sl_item_list *l = list_of(u, f->kind);

	static uint64_t lists_received;

	item_list_dispose(l);
	*l = f->acc;
	l->version = ++lists_received;
	free(f);
	if (--u->lists_loading == 0) {
		if (u->lists_dirty) {
			u->lists_dirty = false;
			for (int k = 0; k < LIST_N; k++)
				if (sl_upstream_has_cap(u, lists[k].cap))
					fetch_list(u, (enum list_kind)k);
			return;
		}
		become_ready(u);
	}
}

static void fetch_page(struct list_fetch *f, yyjson_val *cursor);

static void on_list_page(void *ctx, struct sl_reply *r)
{
	struct list_fetch *f = ctx;
	struct sl_upstream *u = f->u;
	yyjson_val *arr, *it, *cursor;
	size_t i, n;
	char bad[200];

	if (r->kind != SL_REPLY_RESULT) {
		int64_t code = 0;
		/* A server whose list fails still serves the rest. One that
		 * declared resources or prompts but has no templates or prompts
		 * method (-32601) simply has none: no warning for that. */
		enum sl_log_level level =
			f->kind != LIST_TOOLS && r->kind == SL_REPLY_ERROR &&
			sl_json_int(r->msg->error, "code", &code) && code == SL_RPC_METHOD_NOT_FOUND ?
			SL_LOG_DEBUG : SL_LOG_WARN;
		const char *why = r->kind == SL_REPLY_FAILED ? r->why :
				  sl_json_str(r->msg->error, "message") ? sl_json_str(r->msg->error, "message") : "error";
		const char *scope = u->oauth ? sl_oauth_client_wants_scope(u->oauth) : NULL;
		sl_log(level, "server '%s': %s failed: %s", u->name, lists[f->kind].method, why);
		/* Refused for a scope a login grants (the OAuth client's own
		 * words, through the link): wait for that login. */
		if (scope && why && strstr(why, scope)) {
			u->scope_refused |= 1u << f->kind;
			set_error(u, scope);
		}
		if (r->kind == SL_REPLY_FAILED && !u->link) {
			/* The process is gone: lose_process already rescheduled. */
			item_list_dispose(&f->acc);
			free(f);
			u->lists_loading--;
			return;
		}
		fetch_done(f);
		return;
	}
	f->acc.docs = sl_realloc(f->acc.docs, (f->acc.ndocs + 1) * sizeof(yyjson_doc *));
	f->acc.docs[f->acc.ndocs++] = r->msg->doc;
	r->msg->doc = NULL;
	arr = sl_json_arr(r->msg->result, lists[f->kind].key);
	n = yyjson_arr_size(arr);
	f->acc.items = sl_realloc(f->acc.items, (f->acc.n + n + 1) * sizeof(yyjson_val *));
	yyjson_arr_foreach(arr, i, n, it) {
		if (f->acc.n >= u->gcfg->max_tools) {
			sl_log(SL_LOG_WARN, "server '%s': more than %zu %s; the rest are ignored",
			       u->name, u->gcfg->max_tools, lists[f->kind].key);
			break;
		}
		if (!valid_item(f->kind, it)) {
			sl_log(SL_LOG_WARN, "server '%s': ignoring an invalid entry in %s", u->name,
			       lists[f->kind].method);
			continue;
		}
		/* The page may be over the depth limit (sl_upstream_link_message):
		 * one entry too deep is left out, not the whole list. */
		if (!sl_json_depth_ok(it)) {
			sl_log(SL_LOG_WARN, "server '%s': %s '%s' left out: its definition is %s",
			       u->name, lists[f->kind].noun, sl_json_str(it, "name"), SL_JSON_DEPTH_WHY);
			continue;
		}
		/* MCP 2026-07-28 tools "x-mcp-header": a client over HTTP leaves
		 * out a tool whose declarations break the rules, and sluice serves
		 * its tools over HTTP whatever the server's transport. */
		if (f->kind == LIST_TOOLS &&
		    !sl_mcpparam_check(sl_json_obj(it, "inputSchema"), bad, sizeof(bad))) {
			sl_log(SL_LOG_WARN, "server '%s': tool '%s' left out: %s", u->name,
			       sl_json_str(it, "name"), bad);
			continue;
		}
		f->acc.items[f->acc.n++] = it;
	}
	cursor = yyjson_obj_get(r->msg->result, "nextCursor");
	if (yyjson_is_str(cursor) && f->acc.n < u->gcfg->max_tools && ++f->pages < LIST_MAX_PAGES) {
		fetch_page(f, cursor);
		return;
	}
	fetch_done(f);
}

static void fetch_page(struct list_fetch *f, yyjson_val *cursor)
{
	struct sl_upstream *u = f->u;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *params = yyjson_mut_obj(d);
	struct sl_ureq *r;
	struct sl_err err;

	yyjson_mut_doc_set_root(d, params);
	if (cursor)
		yyjson_mut_obj_add_val(d, params, "cursor", yyjson_val_mut_copy(d, cursor));
	r = request(u, lists[f->kind].method, d, params, u->gcfg->call_timeout_ms,
				on_list_page, NULL, f, &err);
	if (r) {
		r->items = true;
	} else {
		sl_log(SL_LOG_WARN, "%s", err.msg);
		yyjson_mut_doc_free(d);
		item_list_dispose(&f->acc);
		free(f);
		u->lists_loading--;
		return;
	}
	yyjson_mut_doc_free(d);
}

static void fetch_list(struct sl_upstream *u, enum list_kind k)
{
	struct list_fetch *f = sl_alloc(sizeof(*f));
	f->u = u;
	f->kind = k;
	u->scope_refused &= ~(1u << k);
	u->lists_loading++;
	fetch_page(f, NULL);
}

static void fetch_lists(struct sl_upstream *u)
{
	if (u->parent) { /* its server's lists make the catalog */
		become_ready(u);
		return;
	}
	u->lists_loading++; /* hold: no ready before every fetch is issued */
	for (int k = 0; k < LIST_N; k++)
		if (sl_upstream_has_cap(u, lists[k].cap))
			fetch_list(u, (enum list_kind)k);
	if (--u->lists_loading == 0)
		become_ready(u);
}

/* The lists a list_changed notification names (changed) are fetched again,
 * then reported as after the handshake; a fetch under way is redone when it
 * ends. */
static void relist(struct sl_upstream *u, const char *changed)
{
	if (u->state != SL_UP_READY && u->state != SL_UP_STARTING)
		return;
	if (u->lists_loading) {
		u->lists_dirty = true;
		return;
	}
	u->lists_loading++;
	for (int j = 0; j < LIST_N; j++)
		if (strcmp(changed, lists[j].changed) == 0 && sl_upstream_has_cap(u, lists[j].cap))
			fetch_list(u, (enum list_kind)j);
	if (--u->lists_loading == 0)
		become_ready(u);
}

bool sl_upstream_tools_await_login(const struct sl_upstream *u)
{
	return u->error && (u->state == SL_UP_NEEDS_LOGIN ||
			    (u->state == SL_UP_READY && (u->scope_refused & (1u << LIST_TOOLS))));
}

bool sl_upstream_has_cap(const struct sl_upstream *u, const char *cap)
{
	return u->capabilities && yyjson_obj_get(u->capabilities, cap) != NULL;
}

/* A server that does not answer the probe soon is a session-era one that
 * ignores unknown methods: it gets initialize without waiting for the
 * whole start-up timeout (and auto's initialize after a 2026-07-28 answer
 * is as short: a 2026-07-28-only server may ignore it). */
static uint64_t probe_timeout(const struct sl_upstream *u)
{
	if (u->cfg->protocol == SL_PROTOCOL_2026_07_28)
		return u->gcfg->startup_timeout_ms; /* pinned: no era to fall back to */
	return u->gcfg->startup_timeout_ms < PROBE_TIMEOUT_MS ? u->gcfg->startup_timeout_ms :
								  PROBE_TIMEOUT_MS;
}

/* The session-era handshake: initialize, then notifications/initialized.
 * The version offered is the entry's pin, else the newest sluice speaks. */
static void send_initialize(struct sl_upstream *u)
{
	struct sl_err err;
	const char *pin = sl_protocol_pin_version(u->cfg->protocol);
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *params = yyjson_mut_obj(d), *info;

	yyjson_mut_doc_set_root(d, params);
	yyjson_mut_obj_add_str(d, params, "protocolVersion", pin ? pin : SL_MCP_LATEST_LEGACY);
	yyjson_mut_obj_add_val(d, params, "capabilities",
			       yyjson_mut_val_mut_copy(d, yyjson_mut_doc_get_root(u->caps_doc)));
	info = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, info, "name", "sluice");
	yyjson_mut_obj_add_str(d, info, "version", SL_VERSION);
	yyjson_mut_obj_add_val(d, params, "clientInfo", info);
	if (!request(u, "initialize", d, params,
		     u->asking_both ? probe_timeout(u) : u->gcfg->startup_timeout_ms,
		     on_initialized, NULL, u, &err))
		lose_link(u, err.msg);
	yyjson_mut_doc_free(d);
}

/* The entry pins a version the server refuses: a restart would be refused
 * the same way, so this is final, and names the pin. */
static void pin_refused(struct sl_upstream *u, const char *how)
{
	char why[512];

	snprintf(why, sizeof(why), "%.300s, but its entry pins \"protocol\": \"%s\"; not restarting "
		 "it: pin a version the server speaks, or \"auto\"", how,
		 sl_protocol_pin_version(u->cfg->protocol));
	fail_final(u, why);
}

static bool speaks_modern(yyjson_val *res)
{
	yyjson_val *v, *versions = sl_json_arr(res, "supportedVersions");
	size_t i, n;

	yyjson_arr_foreach(versions, i, n, v)
		if (yyjson_is_str(v) && !strcmp(yyjson_get_str(v), SL_MCP_MODERN))
			return true;
	return false;
}

/* A version a server named, fit for a message: cut to 40 characters,
 * anything but visible ASCII replaced. */
static void clean_version(char out[41], const char *p)
{
	size_t i;

	for (i = 0; p[i] && i < 40; i++)
		out[i] = p[i] > ' ' && p[i] < 0x7f ? p[i] : '?';
	out[i] = 0;
}

static void send_discover(struct sl_upstream *u);

/* MCP 2026-07-28 versioning: -32022 (UnsupportedProtocolVersionError) to
 * the probe is a modern server's answer, not a session-era one's: a
 * version both speak from its data.supported is used instead (stdio
 * transport, "Backward Compatibility": do not fall back to initialize).
 * Returns true when handled: the probe sent again (once per link) with
 * the newest modern version both speak, or the server failed for good
 * (it shares no version with sluice). False: initialize (the list names
 * only session-era versions sluice speaks, or the probe was retried). */
static bool unsupported_version(struct sl_upstream *u, struct sl_reply *r)
{
	yyjson_val *data, *supported, *v;
	int64_t code = 0;
	bool modern = false, legacy = false;
	char list[200] = "", one[41], why[512];
	size_t i, n, len = 0;

	if (r->kind != SL_REPLY_ERROR || !sl_json_int(r->msg->error, "code", &code) ||
	    code != SL_MCP_UNSUPPORTED_VERSION)
		return false;
	data = sl_json_obj(r->msg->error, "data");
	supported = data ? sl_json_arr(data, "supported") : NULL;
	if (!supported)
		return false;
	yyjson_arr_foreach(supported, i, n, v) {
		if (!yyjson_is_str(v))
			continue;
		/* sluice speaks one modern version: the newest both speak, if listed. */
		modern |= !strcmp(yyjson_get_str(v), SL_MCP_MODERN);
		legacy |= sl_mcp_legacy_version(yyjson_get_str(v));
		clean_version(one, yyjson_get_str(v));
		if (len < sizeof(list) - 1)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "", one);
	}
	if (modern && u->probes < 2) {
		sl_log(SL_LOG_INFO, "server '%s' refused protocol version %s in server/discover but "
		       "lists it as supported; asking once more", u->name, SL_MCP_MODERN);
		send_discover(u);
		return true;
	}
	if (modern || legacy)
		return false;
	snprintf(why, sizeof(why), "speaks only protocol versions %s, which sluice does not speak "
		 "(sluice speaks %s); not restarting it: upgrade the server or sluice",
		 list[0] ? list : "(none listed)", sl_mcp_versions_text());
	fail_final(u, why);
	return true;
}

/* Speaks 2026-07-28 with the server whose server/discover answer is
 * u->init_doc: no initialize, every request self-describing. */
static void speak_modern(struct sl_upstream *u)
{
	yyjson_val *res = sl_json_obj(yyjson_doc_get_root(u->init_doc), "result");

	u->asking_both = false;
	u->modern = true;
	u->protocol_version = SL_MCP_MODERN;
	u->capabilities = sl_json_obj(res, "capabilities");
	u->server_info = sl_json_obj(sl_json_obj(res, "_meta"), SL_MCP_META_SERVER);
	if (!u->server_info)
		u->server_info = sl_json_obj(res, "serverInfo");
	u->instructions = sl_json_str(res, "instructions");
	if (u->link->ops->established)
		u->link->ops->established(u->link, u->protocol_version);
	fetch_lists(u);
}

/* "Choosing the era" (UPSTREAMS.md), auto: a 2026-07-28 face that declares
 * resources without subscribe may be poorer than the server's session-era
 * face, where a session-era client subscribes; the server is asked
 * initialize as well before its era is chosen. */
static bool ask_session_era_too(const struct sl_upstream *u, yyjson_val *res)
{
	yyjson_val *resources = sl_json_obj(sl_json_obj(res, "capabilities"), "resources");

	if (u->cfg->protocol != SL_PROTOCOL_AUTO || !resources)
		return false;
	return !yyjson_is_true(yyjson_obj_get(resources, "subscribe"));
}

/* The answer to the server/discover probe (MCP 2026-07-28). A server that
 * answers it and lists 2026-07-28 is spoken to in that era (speak_modern),
 * unless auto asks its session era too (ask_session_era_too). -32022 is a
 * modern server's answer (unsupported_version). Any other answer (-32601
 * from a session-era server, an HTTP 400 for a request without a session)
 * means the session era, unless the entry pins 2026-07-28. */
static void on_discovered(void *ctx, struct sl_reply *r)
{
	struct sl_upstream *u = ctx;
	bool pinned = u->cfg->protocol == SL_PROTOCOL_2026_07_28;
	const char *msg;
	char how[256];

	if (!u->link)
		return;
	if (unsupported_version(u, r))
		return;
	if (r->kind != SL_REPLY_RESULT || !yyjson_is_obj(r->msg->result) ||
	    !speaks_modern(r->msg->result)) {
		if (!pinned) {
			send_initialize(u);
			return;
		}
		if (r->kind == SL_REPLY_FAILED) {
			lose_link(u, r->why); /* no answer: a restart may get one */
			return;
		}
		msg = r->kind == SL_REPLY_ERROR ? sl_json_str(r->msg->error, "message") : NULL;
		snprintf(how, sizeof(how), "did not answer server/discover with %s (%.120s)",
			 SL_MCP_MODERN, msg ? msg : "its answer lists other versions");
		pin_refused(u, how);
		return;
	}
	yyjson_doc_free(u->init_doc);
	u->init_doc = r->msg->doc;
	r->msg->doc = NULL;
	if (ask_session_era_too(u, r->msg->result)) {
		u->asking_both = true;
		send_initialize(u);
		return;
	}
	speak_modern(u);
}

static void on_initialized(void *ctx, struct sl_reply *r)
{
	struct sl_upstream *u = ctx;
	yyjson_val *res = r->kind == SL_REPLY_RESULT ? r->msg->result : NULL;
	char why[512];

	if (u->asking_both && u->link &&
	    !(yyjson_is_obj(res) && sl_mcp_legacy_version(sl_json_str(res, "protocolVersion")))) {
		/* No session era there (refused, or no answer in time): the
		 * 2026-07-28 answer held stands. */
		speak_modern(u);
		return;
	}
	u->asking_both = false;
	if (r->kind == SL_REPLY_ERROR && u->cfg->protocol != SL_PROTOCOL_AUTO && u->link) {
		const char *msg = sl_json_str(r->msg->error, "message");
		snprintf(why, sizeof(why), "refused initialize with protocol version %s (%.120s)",
			 sl_protocol_pin_version(u->cfg->protocol), msg ? msg : "error");
		pin_refused(u, why);
		return;
	}
	if (r->kind != SL_REPLY_RESULT) {
		snprintf(why, sizeof(why), "failed its initialize handshake: %s",
			 r->kind == SL_REPLY_FAILED ? r->why :
			 sl_json_str(r->msg->error, "message") ? sl_json_str(r->msg->error, "message") : "error");
		if (u->link)
			lose_link(u, why);
		return;
	}
	if (!yyjson_is_obj(res) || !sl_json_str(res, "protocolVersion")) {
		lose_link(u, "answered initialize without a protocolVersion");
		return;
	}
	if (!sl_mcp_legacy_version(sl_json_str(res, "protocolVersion"))) {
		/* MCP 2025-11-25 lifecycle: a client that does not support the
		 * server's version SHOULD disconnect. Restarting would get the
		 * same answer, so this is final, and says what to do. */
		char v[41];
		clean_version(v, sl_json_str(res, "protocolVersion"));
		snprintf(why, sizeof(why),
			 "offered protocol version %s, which sluice does not speak (sluice speaks %s); "
			 "not restarting it: upgrade the server to a release that speaks one of these, "
			 "or, if %s is a published MCP version, report it to sluice's authors",
			 v, sl_mcp_versions_text(), v);
		fail_final(u, why);
		return;
	}
	if (u->cfg->protocol != SL_PROTOCOL_AUTO &&
	    strcmp(sl_json_str(res, "protocolVersion"), sl_protocol_pin_version(u->cfg->protocol))) {
		snprintf(why, sizeof(why), "answered initialize with protocol version %s",
			 sl_json_str(res, "protocolVersion"));
		pin_refused(u, why);
		return;
	}
	yyjson_doc_free(u->init_doc);
	u->init_doc = r->msg->doc;
	r->msg->doc = NULL;
	u->protocol_version = sl_json_str(res, "protocolVersion");
	u->capabilities = sl_json_obj(res, "capabilities");
	u->server_info = sl_json_obj(res, "serverInfo");
	u->instructions = sl_json_str(res, "instructions");

	/* MCP 2025-11-25 lifecycle: initialized before any other request. */
	yyjson_mut_val *params;
	yyjson_mut_doc *d = sl_rpc_request_new("notifications/initialized", -1, &params);
	send_doc(u, d);
	yyjson_mut_doc_free(d);
	if (u->link->ops->established)
		u->link->ops->established(u->link, u->protocol_version);
	fetch_lists(u);
}

static void start_link(struct sl_upstream *u)
{
	struct sl_err err;

	u->starts++;
	u->state = SL_UP_STARTING;
	u->scope_refused = 0;
	uv_fs_poll_stop(&u->login_watch);
	u->link = u->cfg->url ? sl_remote_link_start(u, &err) : sl_stdio_link_start(u, &err);
	if (!u->link) {
		/* Nothing to reap: go straight to backoff. */
		set_error(u, err.msg);
		sl_log(SL_LOG_WARN, "server '%s': %s; retrying in %llu ms", u->name, err.msg,
		       (unsigned long long)u->backoff_ms);
		u->state = SL_UP_BACKOFF;
		uv_timer_start(&u->timer, on_timer, u->backoff_ms, 0);
		u->backoff_ms = u->backoff_ms * 2 > u->gcfg->restart_max_backoff_ms ?
				u->gcfg->restart_max_backoff_ms : u->backoff_ms * 2;
		report_down(u);
		return;
	}
	uv_timer_start(&u->timer, on_timer, u->gcfg->startup_timeout_ms, 0);
	u->modern = false;
	u->probes = 0;
	u->asking_both = false;
	u->roots_asked = u->roots_hold = u->roots_deaf = false;
	u->roots_for[0] = '\0';
	uv_timer_stop(&u->roots_timer);
	if (sl_protocol_pin_version(u->cfg->protocol) && u->cfg->protocol != SL_PROTOCOL_2026_07_28)
		send_initialize(u); /* a session-era pin: no probe */
	else
		send_discover(u);
}

/* The era probe: server/discover with sluice's own capabilities. */
static void send_discover(struct sl_upstream *u)
{
	struct sl_err err;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *params = yyjson_mut_obj(d);

	u->probes++;
	yyjson_mut_doc_set_root(d, params);
	add_modern_meta(u, d, params);
	if (!request(u, "server/discover", d, params, probe_timeout(u), on_discovered,
				 NULL, u, &err))
		lose_link(u, err.msg);
	yyjson_mut_doc_free(d);
}

/* A remote server gets an OAuth client unless its config sends an
 * Authorization header of its own (a static token wins). */
static bool wants_oauth(const struct sl_server_config *cfg)
{
	if (!cfg->url || cfg->disabled || cfg->error)
		return false;
	for (size_t i = 0; i < cfg->nheaders; i++)
		if (!strcasecmp(cfg->headers[i].key, "Authorization"))
			return false;
	return true;
}

struct sl_upstream *sl_upstream_make(uv_loop_t *loop, const struct sl_server_config *cfg,
				     const struct sl_config *gcfg, const struct sl_upstream_ops *ops,
				     void *ctx, const char *user)
{
	struct sl_upstream *u = sl_alloc(sizeof(*u));
	u->name = sl_strdup(cfg->name);
	u->cfg = cfg;
	u->gcfg = sl_config_ref(gcfg);
	u->ops = ops;
	u->ctx = ctx;
	u->loop = loop;
	u->next_id = 1;
	sl_list_init(&u->requests);
	u->backoff_ms = BACKOFF_MIN_MS;
	uv_timer_init(loop, &u->timer);
	u->timer.data = u;
	uv_timer_init(loop, &u->notes_timer);
	u->notes_timer.data = u;
	uv_timer_init(loop, &u->listen_timer);
	u->listen_timer.data = u;
	u->listen_backoff_ms = BACKOFF_MIN_MS;
	uv_fs_poll_init(loop, &u->login_watch);
	u->login_watch.data = u;
	uv_timer_init(loop, &u->idle_timer);
	u->idle_timer.data = u;
	uv_timer_init(loop, &u->roots_timer);
	u->roots_timer.data = u;
	if (wants_oauth(cfg))
		u->oauth = sl_oauth_client_new(loop, gcfg, cfg, user ? user : "");
	sl_map_init(&u->watched);
	sl_upstream_users_init(u);
	u->caps_doc = yyjson_mut_doc_new(NULL);
	yyjson_mut_doc_set_root(u->caps_doc, yyjson_mut_obj(u->caps_doc));
	if (cfg->disabled) {
		u->state = SL_UP_DISABLED;
		set_error(u, "disabled in the config");
	} else if (cfg->error) {
		u->state = SL_UP_DISABLED;
		set_error(u, cfg->error);
	}
	return u;
}

struct sl_upstream *sl_upstream_new(uv_loop_t *loop, const struct sl_server_config *cfg,
				    const struct sl_config *gcfg,
				    const struct sl_upstream_ops *ops, void *ctx)
{
	return sl_upstream_make(loop, cfg, gcfg, ops, ctx, NULL);
}

void sl_upstream_start(struct sl_upstream *u, yyjson_val *caps)
{
	static const char *relayed[] = { "roots", "sampling", "elicitation" };
	yyjson_mut_val *root = yyjson_mut_doc_get_root(u->caps_doc);
	yyjson_val *ui;

	if (u->state != SL_UP_IDLE)
		return;
	/* Declare upstream only what the gateway relays to its client. */
	for (size_t i = 0; caps && i < SL_COUNT(relayed); i++) {
		yyjson_val *v = sl_json_obj(caps, relayed[i]);
		if (v)
			yyjson_mut_obj_add_val(u->caps_doc, root, relayed[i],
					       yyjson_val_mut_copy(u->caps_doc, v));
	}
	/* MCP Apps: a server may offer its Views' tools only to a host that
	 * renders them (SEP-1865 capability negotiation), and the gateway
	 * passes Views through. */
	if ((ui = sl_json_obj(sl_json_obj(caps, "extensions"), SL_MCP_UI_EXT))) {
		yyjson_mut_val *ext = yyjson_mut_obj(u->caps_doc);
		yyjson_mut_obj_add_val(u->caps_doc, ext, SL_MCP_UI_EXT, yyjson_val_mut_copy(u->caps_doc, ui));
		yyjson_mut_obj_add_val(u->caps_doc, root, "extensions", ext);
	}
	start_link(u);
}

void sl_upstream_stop(struct sl_upstream *u)
{
	sl_upstream_users_stop(u);
	uv_timer_stop(&u->listen_timer);
	uv_fs_poll_stop(&u->login_watch);
	if (u->listen && u->link && (u->state == SL_UP_READY || u->state == SL_UP_STARTING)) {
		struct sl_ureq *l = u->listen;
		u->listen = NULL;
		sl_upstream_cancel(l, "the gateway is stopping");
	}
	switch (u->state) {
	case SL_UP_STOPPING:
	case SL_UP_STOPPED:
		return;
	case SL_UP_STARTING:
	case SL_UP_READY:
	case SL_UP_FAILED: /* its link may still be ending */
		if (u->link) {
			u->state = SL_UP_STOPPING;
			uv_timer_stop(&u->timer);
			u->link->ops->stop(u->link);
			return;
		}
		break;
	default:
		break;
	}
	uv_timer_stop(&u->timer);
	u->state = SL_UP_STOPPED;
}

bool sl_upstream_stopped(const struct sl_upstream *u)
{
	return u->state == SL_UP_STOPPED && sl_upstream_users_stopped(u);
}

static void on_upstream_timer_closed(uv_handle_t *h)
{
	struct sl_upstream *u = h->data;
	if (--u->handles > 0)
		return;
	for (int k = 0; k < LIST_N; k++)
		item_list_dispose(list_of(u, (enum list_kind)k));
	yyjson_doc_free(u->init_doc);
	yyjson_mut_doc_free(u->caps_doc);
	sl_map_dispose(&u->watched);
	free(u->user);
	free(u->user_name);
	free(u->login_url);
	free(u->error);
	free(u->name);
	sl_config_unref(u->gcfg);
	free(u);
}

void sl_upstream_reconfigure(struct sl_upstream *u, const struct sl_server_config *cfg,
			     const struct sl_config *gcfg)
{
	sl_config_ref(gcfg);
	if (u->oauth)
		sl_oauth_client_reconfigure(u->oauth, gcfg, cfg);
	sl_config_unref(u->gcfg);
	u->cfg = cfg;
	u->gcfg = gcfg;
	sl_upstream_users_reconfigure(u);
	/* Switched to client credentials: no person needed any more. */
	if (u->state == SL_UP_NEEDS_LOGIN && !sl_oauth_client_needs_login(u->oauth)) {
		uv_fs_poll_stop(&u->login_watch);
		start_link(u);
	}
}

void sl_upstream_free(struct sl_upstream *u)
{
	struct sl_list *n;

	sl_upstream_users_free(u);
	if (u->link)
		u->link->ops->detach(u->link);
	u->link = NULL;
	while ((n = sl_list_first(&u->requests)))
		ureq_free(sl_list_entry(n, struct sl_ureq, link));
	u->listen = NULL;
	/* After the link: it forgets what it had waiting on the client. */
	sl_oauth_client_free(u->oauth);
	u->oauth = NULL;
	u->handles = 6;
	uv_close((uv_handle_t *)&u->roots_timer, on_upstream_timer_closed);
	uv_close((uv_handle_t *)&u->idle_timer, on_upstream_timer_closed);
	uv_close((uv_handle_t *)&u->login_watch, on_upstream_timer_closed);
	uv_close((uv_handle_t *)&u->timer, on_upstream_timer_closed);
	uv_close((uv_handle_t *)&u->notes_timer, on_upstream_timer_closed);
	uv_close((uv_handle_t *)&u->listen_timer, on_upstream_timer_closed);
}

/* ---- our own listen (MCP 2026-07-28 subscriptions) ----------------------- */

static bool cap_flag(const struct sl_upstream *u, const char *cap, const char *flag)
{
	yyjson_val *c = u->capabilities ? sl_json_obj(u->capabilities, cap) : NULL;
	return c && yyjson_is_true(yyjson_obj_get(c, flag));
}

static void on_listen_timer(uv_timer_t *t)
{
	listen_open(t->data);
}

static void listen_later(struct sl_upstream *u)
{
	uv_timer_start(&u->listen_timer, on_listen_timer, u->listen_backoff_ms, 0);
	u->listen_backoff_ms *= 2;
	if (u->listen_backoff_ms > u->gcfg->restart_max_backoff_ms)
		u->listen_backoff_ms = u->gcfg->restart_max_backoff_ms;
}

/* The listen's answer: it ended (gracefully, refused, or its stream
 * closed). While the server is up it is reopened after a backoff; when
 * the link is gone the next incarnation opens its own once ready. */
static void on_listen_reply(void *ctx, struct sl_reply *r)
{
	struct sl_upstream *u = ctx;

	u->listen = NULL;
	if (!u->link || u->state != SL_UP_READY)
		return;
	if (r->kind == SL_REPLY_ERROR)
		sl_log(SL_LOG_INFO, "server '%s' refused subscriptions/listen: %s; retrying in %llu ms",
		       u->name, sl_json_str(r->msg->error, "message") ?
		       sl_json_str(r->msg->error, "message") : "an error",
		       (unsigned long long)u->listen_backoff_ms);
	else
		sl_log(SL_LOG_DEBUG, "server '%s': its listen ended (%s); reopening in %llu ms",
		       u->name, r->kind == SL_REPLY_FAILED ? r->why : "gracefully",
		       (unsigned long long)u->listen_backoff_ms);
	listen_later(u);
}

static void add_watched(const char *key, void *value, void *ctx)
{
	struct { yyjson_mut_doc *d; yyjson_mut_val *arr; } *a = ctx;
	yyjson_mut_arr_add_strcpy(a->d, a->arr, key);
}

/* Opens the server's listen for what it can tell us: its list changes
 * (re-listed as for a session-era server's list_changed) and the resources
 * clients watch. */
static void listen_open(struct sl_upstream *u)
{
	if (u->parent)
		return; /* its server listens for the lists */
	bool tools = cap_flag(u, "tools", "listChanged"), prompts = cap_flag(u, "prompts", "listChanged");
	bool resources = cap_flag(u, "resources", "listChanged");
	bool subs = cap_flag(u, "resources", "subscribe") && u->watched.live;
	yyjson_mut_doc *d;
	yyjson_mut_val *params, *f;
	struct sl_err err;

	if (!u->modern || u->state != SL_UP_READY || !u->link || u->listen)
		return;
	if (!tools && !prompts && !resources && !subs)
		return;
	d = yyjson_mut_doc_new(NULL);
	params = yyjson_mut_obj(d);
	yyjson_mut_doc_set_root(d, params);
	f = yyjson_mut_obj(d);
	if (tools)
		yyjson_mut_obj_add_bool(d, f, "toolsListChanged", true);
	if (prompts)
		yyjson_mut_obj_add_bool(d, f, "promptsListChanged", true);
	if (resources)
		yyjson_mut_obj_add_bool(d, f, "resourcesListChanged", true);
	if (subs) {
		struct { yyjson_mut_doc *d; yyjson_mut_val *arr; } a = { d, yyjson_mut_arr(d) };
		sl_map_each(&u->watched, add_watched, &a);
		yyjson_mut_obj_add_val(d, f, "resourceSubscriptions", a.arr);
	}
	yyjson_mut_obj_add_val(d, params, "notifications", f);
	u->listen = request(u, SL_MCP_LISTEN, d, params, 0, on_listen_reply, NULL, u, &err);
	yyjson_mut_doc_free(d);
	if (!u->listen) {
		sl_log(SL_LOG_DEBUG, "%s", err.msg);
		listen_later(u);
	}
}

void sl_upstream_watch(struct sl_upstream *u, const char *uri, bool on)
{
	if (on == (sl_map_get(&u->watched, uri) != NULL))
		return;
	if (on)
		sl_map_put(&u->watched, uri, u);
	else
		sl_map_del(&u->watched, uri);
	/* A listen's filter is fixed when it opens: reopen with the new set. */
	if (u->listen) {
		struct sl_ureq *l = u->listen;
		u->listen = NULL;
		sl_upstream_cancel(l, "its resource subscriptions changed");
	}
	if (!uv_is_active((uv_handle_t *)&u->listen_timer))
		listen_open(u);
}

/* ---- reading ----------------------------------------------------------- */

static void handle_progress(struct sl_upstream *u, yyjson_val *params)
{
	int64_t token;
	struct sl_ureq *r;

	/* Progress for a call that has answered (or was cancelled) is dropped:
	 * its request is no longer pending. */
	if (!sl_json_int(params, "progressToken", &token))
		return;
	r = ureq_find(u, token);
	if (r && r->progress)
		r->progress(r->ctx, params);
}

/* Logs how many notifications the window that just ended dropped. */
static void notes_report(struct sl_upstream *u)
{
	if (u->notes.refused == 0)
		return;
	sl_log(SL_LOG_WARN, "server '%s': %u notifications dropped in one second, over the limit "
	       "of %u (sluice.limits.notificationsPerSecond)", u->name, u->notes.refused,
	       u->gcfg->limits.notifications_per_second);
	u->notes.refused = 0;
}

static void on_notes_timer(uv_timer_t *t)
{
	notes_report(t->data);
}

/* sluice.limits.notificationsPerSecond, over every notification (progress
 * and list changes too: each costs the gateway work and the client a
 * message); one log line at the end of each second that dropped some. */
static bool notification_admit(struct sl_upstream *u)
{
	uint64_t now = sl_now_ms();
	if (u->notes.refused && now - u->notes.start_ms >= 1000) {
		/* The window is over before its timer ran (the loop's clock lags). */
		uv_timer_stop(&u->notes_timer);
		notes_report(u);
	}
	if (sl_rate_admit(&u->notes, 1000, u->gcfg->limits.notifications_per_second))
		return true;
	if (u->notes.refused == 1)
		uv_timer_start(&u->notes_timer, on_notes_timer,
			       u->notes.start_ms + 1000 > now ? u->notes.start_ms + 1000 - now : 0, 0);
	return false;
}

static void handle_notification(struct sl_upstream *u, struct sl_msg *m)
{
	if (!notification_admit(u))
		return;
	if (strcmp(m->method, SL_MCP_SUBSCRIPTIONS_ACK) == 0) {
		/* Our listen is up: the next failure backs off from the start. */
		u->listen_backoff_ms = BACKOFF_MIN_MS;
		return;
	}
	if (strcmp(m->method, "notifications/progress") == 0) {
		handle_progress(u, m->params);
		return;
	}
	for (int k = 0; k < LIST_N; k++) {
		if (strcmp(m->method, lists[k].changed) == 0) {
			relist(u, m->method);
			return;
		}
	}
	u->ops->notify(u->ctx, u, m);
}

void sl_upstream_relist_tools(struct sl_upstream *u)
{
	relist(u, lists[LIST_TOOLS].changed);
}

/* ---- multi-round-trip requests (MCP 2026-07-28) ------------------------- */

/* Sends r again with the client's answers and the server's requestState. */
static void mrtr_retry(struct sl_upstream *u, struct sl_ureq *r)
{
	struct mrtr *x = r->mrtr;
	yyjson_mut_doc *d = r->sent;
	yyjson_mut_val *params = yyjson_mut_doc_get_root(d), *env;
	/* MCP 2026-07-28 MRTR: the state is the result's, echoed exactly. */
	yyjson_val *state = yyjson_obj_get(sl_json_obj(yyjson_doc_get_root(x->asked), "result"),
					   "requestState");
	char *line;
	size_t len;

	yyjson_mut_obj_remove_key(params, "inputResponses");
	yyjson_mut_obj_remove_key(params, "requestState");
	if (x->nkeys)
		yyjson_mut_obj_add_val(d, params, "inputResponses",
				       yyjson_mut_val_mut_copy(d, yyjson_mut_doc_get_root(x->answers)));
	if (state)
		yyjson_mut_obj_add_val(d, params, "requestState", yyjson_val_mut_copy(d, state));
	r->mrtr = NULL;
	r->id = u->next_id++;
	env = sl_rpc_envelope(d, yyjson_mut_sint(d, r->id), r->method);
	yyjson_mut_obj_add_val(d, env, "params", params);
	line = sl_json_write_line(d, &len);
	/* Keep params alone at the root for a further round. */
	yyjson_mut_doc_set_root(d, params);
	mrtr_free(x);
	if (!send_line(u, line, len))
		ureq_fail(r, "the server is not reading its input");
}

/* The server answered r with input_required: relay each of its input
 * requests to the client as the server-to-client request it embeds, under
 * an id that brings the answer back here (sl_upstream_respond). Returns
 * NULL when under way, else why it cannot be. */
static const char *mrtr_start(struct sl_upstream *u, struct sl_ureq *r, struct sl_msg *m)
{
	yyjson_val *reqs = sl_json_obj(m->result, "inputRequests"), *k, *v;
	yyjson_obj_iter it;
	struct mrtr *x;
	unsigned gen = sl_upstream_generation(u);
	int64_t rid = r->id;

	bool state = yyjson_is_str(yyjson_obj_get(m->result, "requestState"));

	/* MCP 2026-07-28 MRTR: at least one of inputRequests and requestState;
	 * with only a state, the client may retry at once. */
	if (!r->sent || (!state && (!yyjson_is_obj(reqs) || yyjson_obj_size(reqs) == 0)))
		return "input_required without input requests";
	if (yyjson_obj_size(reqs) > MRTR_MAX_INPUTS)
		return "too many input requests at once";
	if (r->rounds >= MRTR_MAX_ROUNDS)
		return "too many rounds of input requests";
	x = sl_alloc(sizeof(*x));
	x->asked = m->doc;
	m->doc = NULL;
	x->answers = yyjson_mut_doc_new(NULL);
	yyjson_mut_doc_set_root(x->answers, yyjson_mut_obj(x->answers));
	x->keys = sl_alloc((yyjson_obj_size(reqs) + 1) * sizeof(char *));
	mrtr_free(r->mrtr);
	r->mrtr = x;
	r->rounds++;
	if (yyjson_obj_size(reqs) == 0) {
		mrtr_retry(u, r);
		return NULL;
	}
	yyjson_obj_iter_init(reqs, &it);
	while ((k = yyjson_obj_iter_next(&it)))
		x->keys[x->nkeys++] = sl_strdup(yyjson_get_str(k));
	x->waiting = x->nkeys;
	/* Relaying may answer at once (no client can): re-find r each time. */
	for (size_t i = 0, n = x->nkeys; i < n; i++) {
		struct sl_msg req;
		struct sl_err err;
		int code;
		char *line;
		size_t len;
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		yyjson_mut_val *o;
		struct sl_ureq *cur = ureq_find(u, rid);
		char id[64];

		if (!cur || cur->mrtr != x || sl_upstream_generation(u) != gen) {
			yyjson_mut_doc_free(d);
			break;
		}
		v = yyjson_obj_get(reqs, x->keys[i]);
		snprintf(id, sizeof(id), MRTR_ID_PREFIX "%lld:%zu", (long long)rid, i);
		o = sl_rpc_envelope(d, yyjson_mut_strcpy(d, id), NULL);
		yyjson_mut_obj_add_val(d, o, "method",
				       yyjson_val_mut_copy(d, yyjson_obj_get(v, "method")));
		yyjson_mut_obj_add_val(d, o, "params", yyjson_val_mut_copy(d, yyjson_obj_get(v, "params")));
		line = sl_json_write_line(d, &len);
		yyjson_mut_doc_free(d);
		if (sl_msg_parse(&req, line, len, &code, &err) < 0 || req.kind != SL_MSG_REQUEST) {
			sl_msg_dispose(&req);
			free(line);
			/* Answer it as failed, which fails the whole request. */
			mrtr_answer(u, rid, i, NULL, "an input request that is not a request");
			break;
		}
		u->ops->request(u->ctx, u, &req);
		sl_msg_dispose(&req);
		free(line);
	}
	return NULL;
}

/* The client's answer to input request i of request rid (or why none). */
static void mrtr_answer(struct sl_upstream *u, int64_t rid, size_t i, yyjson_val *result,
			const char *failed)
{
	struct sl_ureq *r = ureq_find(u, rid);
	struct mrtr *x = r ? r->mrtr : NULL;
	yyjson_mut_val *answers;
	char why[300];

	if (!x || i >= x->nkeys || !x->keys[i][0])
		return; /* given up on, or answered twice */
	if (failed) {
		snprintf(why, sizeof(why), "server '%s' asked for input the client could not give: %s",
			 u->name, failed);
		ureq_fail(r, why);
		return;
	}
	answers = yyjson_mut_doc_get_root(x->answers);
	yyjson_mut_obj_add(answers, yyjson_mut_strcpy(x->answers, x->keys[i]),
			   yyjson_val_mut_copy(x->answers, result));
	x->keys[i][0] = '\0'; /* answered */
	if (--x->waiting == 0)
		mrtr_retry(u, r);
}

static void handle_response(struct sl_upstream *u, struct sl_msg *m)
{
	struct sl_reply rep = { .msg = m };
	struct sl_ureq *r;
	sl_reply_fn cb;
	void *ctx;
	char why[256];

	if (!yyjson_is_int(m->id) || !(r = ureq_find(u, yyjson_get_sint(m->id)))) {
		sl_log(SL_LOG_DEBUG, "server '%s': answer to an unknown request dropped", u->name);
		return;
	}
	rep.kind = m->error ? SL_REPLY_ERROR : SL_REPLY_RESULT;
	if (u->modern && !m->error && sl_json_str(m->result, "resultType") &&
	    !strcmp(sl_json_str(m->result, "resultType"), "input_required")) {
		const char *bad = mrtr_start(u, r, m);
		if (!bad)
			return; /* asking the client; the request goes again once it answers */
		snprintf(why, sizeof(why), "server '%s' asked for input: %s", u->name, bad);
		rep.kind = SL_REPLY_FAILED;
		rep.why = why;
	}
	cb = r->cb;
	ctx = r->ctx;
	ureq_free(r);
	if (cb)
		cb(ctx, &rep);
}

static void handle_request(struct sl_upstream *u, struct sl_msg *m)
{
	/* A server of an older version asks nothing its version lacks
	 * (elicitation before 2025-06-18), whatever sluice declared in
	 * initialize before it knew the version. */
	if (!sl_mcp_has_method(u->protocol_version, m->method)) {
		char msg[160];
		snprintf(msg, sizeof(msg), "Method not found: %s is not part of protocol %s",
			 m->method, u->protocol_version);
		sl_upstream_refuse(u, m->id, SL_RPC_METHOD_NOT_FOUND, msg);
		return;
	}
	if (strcmp(m->method, "ping") == 0) {
		yyjson_mut_val *o;
		yyjson_mut_doc *d = sl_rpc_response_new(m->id, &o);
		yyjson_mut_obj_add_val(d, o, "result", yyjson_mut_obj(d));
		send_doc(u, d);
		yyjson_mut_doc_free(d);
		return;
	}
	if (strcmp(m->method, "roots/list") == 0)
		u->roots_reasked = true; /* roots.c: it does ask again */
	u->ops->request(u->ctx, u, m);
}

void sl_upstream_link_lost(struct sl_upstream *u, const char *why)
{
	lose_link(u, why);
}

/* A message over the depth limit fails alone: the call it answers (a list
 * page is kept, its callback leaves out the entries too deep), the request
 * it makes (answered with the error), or the notification (dropped). */
static void handle_deep(struct sl_upstream *u, struct sl_msg *m, int code, const char *msg)
{
	struct sl_ureq *r = NULL;
	char why[256];

	snprintf(why, sizeof(why), "server '%s' sent a message %s", u->name, SL_JSON_DEPTH_WHY);
	if (m->kind == SL_MSG_RESPONSE && yyjson_is_int(m->id))
		r = ureq_find(u, yyjson_get_sint(m->id));
	if (r && r->items) {
		handle_response(u, m);
		return;
	}
	sl_log(SL_LOG_WARN, "%s", why);
	if (r) {
		ureq_fail(r, why);
	} else if (m->kind == SL_MSG_REQUEST) {
		size_t n;
		char *line = sl_rpc_error_line(m->id, code, msg, &n);
		send_line(u, line, n);
	}
}

void sl_upstream_link_message(struct sl_upstream *u, const char *line, size_t len)
{
	struct sl_msg m;
	struct sl_err err;
	int code;

	if (len == 0)
		return;
	if (sl_msg_parse(&m, line, len, &code, &err) < 0) {
		if (m.deep) {
			handle_deep(u, &m, code, err.msg);
			sl_msg_dispose(&m);
			return;
		}
		sl_log(SL_LOG_WARN, "server '%s' wrote something that is not MCP (%s): %.*s",
		       u->name, err.msg, (int)(len < 80 ? len : 80), line);
		sl_msg_dispose(&m);
		return;
	}
	switch (m.kind) {
	case SL_MSG_RESPONSE:
		handle_response(u, &m);
		break;
	case SL_MSG_NOTIFICATION:
		handle_notification(u, &m);
		break;
	case SL_MSG_REQUEST:
		handle_request(u, &m);
		break;
	}
	sl_msg_dispose(&m);
}

void sl_upstream_link_oversize(struct sl_upstream *u, const char *head, size_t hl,
			      const char *tail, size_t tl, size_t total)
{
	char why[256];
	yyjson_doc *id = sl_rpc_find_id(head, hl, tail, tl);
	struct sl_ureq *r = NULL;

	snprintf(why, sizeof(why),
		 "server '%s' sent a message of %zu bytes, over the limit of %zu (sluice.maxUpstreamMessageBytes)",
		 u->name, total, u->gcfg->max_upstream_message_bytes);
	sl_log(SL_LOG_WARN, "%s", why);
	if (id && yyjson_is_int(yyjson_doc_get_root(id)))
		r = ureq_find(u, yyjson_get_sint(yyjson_doc_get_root(id)));
	yyjson_doc_free(id);
	if (r)
		ureq_fail(r, why);
}

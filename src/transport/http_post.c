/*
 * A POST to /mcp: its body checked (size, budget, one JSON object, id,
 * depth), its session found or opened (or, in 2026-07-28, a session of its
 * own), the message handed to the session (sl_session_input_doc, the one path
 * from an HTTP request to a session), and its answer as JSON or as an SSE
 * stream (http_settle()).
 */
#include "transport/http_int.h"
#include "core/json.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "gateway/session.h"
#include "gateway/view.h"
#include "pipeline/call.h"
#include "proto/mcp.h"
#include "proto/mcpparam.h"

#include <stdlib.h>
#include <string.h>

#define WAIT_MS 50 /* a POST's answer this quick comes as JSON (http_settle()) */

/* ---- POST ------------------------------------------------------------------------ */

/* A header's value without the whitespace around it (RFC 9110, 5.5: it is
 * not part of the value), as a copy; NULL for none. */
static char *field_value(struct MHD_Connection *c, const char *name)
{
	const char *v = http_header(c, name);
	size_t n;

	if (!v)
		return NULL;
	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return sl_strndup(v, n);
}

/* MCP 2026-07-28 HTTP: Mcp-Method always, Mcp-Name for the methods that
 * name a thing, both equal to the body's. NULL if they match, else why. */
static const char *modern_headers(struct MHD_Connection *c, yyjson_val *root)
{
	const char *m = yyjson_get_str(yyjson_obj_get(root, "method"));
	const char *field = NULL, *why = NULL;
	char *hm, *hn, *got;
	yyjson_val *nv;
	size_t len = 0;

	if (!m)
		return NULL; /* a response: nothing to name */
	if (!strcmp(m, "tools/call") || !strcmp(m, "prompts/get"))
		field = "name";
	else if (!strcmp(m, "resources/read"))
		field = "uri";
	else if (!strcmp(m, "tasks/get") || !strcmp(m, "tasks/update") || !strcmp(m, "tasks/cancel"))
		field = "taskId"; /* SEP-2663: Mcp-Name carries the task id */
	hm = field_value(c, SL_MCP_HDR_METHOD);
	hn = field_value(c, SL_MCP_HDR_NAME);
	nv = yyjson_obj_get(yyjson_obj_get(root, "params"), field ? field : "");
	if (!hm)
		why = "the Mcp-Method header is missing";
	else if (strcmp(hm, m) != 0)
		why = "the Mcp-Method header does not match the body's method";
	else if (field && !hn)
		why = "the Mcp-Name header is missing";
	else if (field) {
		/* "Value Encoding": a name that is not header-safe comes as
		 * =?base64?...?=, decoded before it is compared. */
		got = sl_mcpparam_decode(hn, &len);
		if (!got || !yyjson_is_str(nv) || len != yyjson_get_len(nv) ||
		    memcmp(got, yyjson_get_str(nv), len))
			why = "the Mcp-Name header does not match the body";
		free(got);
	}
	free(hm);
	free(hn);
	return why;
}

/* MCP 2026-07-28 HTTP "Custom Headers from Tool Parameters" (SEP-2243):
 * a tools/call mirrors into Mcp-Param-<Name> headers the arguments its
 * tool declares with x-mcp-header, in the definition this caller is
 * served (its view: profile, renames, prefixes; a tool keeps its
 * declarations under any name). NULL when they agree (or the tool is not
 * one the view lists, or not one this caller may see), else why, in buf. */
static const char *param_header(void *ctx, const char *name)
{
	char h[sizeof(SL_MCPPARAM_PREFIX) + SL_MCPPARAM_NAME_MAX];

	snprintf(h, sizeof(h), SL_MCPPARAM_PREFIX "%s", name);
	return http_header(ctx, h);
}

static const char *param_headers(struct sl_http *h, struct MHD_Connection *c, yyjson_val *root,
				 struct sl_caller *who, char *buf, size_t n)
{
	yyjson_val *params = yyjson_obj_get(root, "params");
	const char *name = yyjson_get_str(yyjson_obj_get(params, "name"));
	const struct sl_entry *e;
	struct sl_view v;

	if (!name || !yyjson_equals_str(yyjson_obj_get(root, "method"), "tools/call"))
		return NULL;
	sl_view_of(h->gw, who, &v);
	/* A tool this caller is not shown answers as unknown later, never
	 * with what its schema declares. */
	if (!(e = sl_view_tool(&v, name)) || !sl_view_exposed(&v, e) ||
	    !sl_stages_visible(h->gw->gen, who, e->up, e->def))
		return NULL;
	return sl_mcpparam_mismatch(sl_json_obj(e->def, "inputSchema"),
				    yyjson_obj_get(params, "arguments"), param_header, c, buf, n);
}

/* MCP 2026-07-28 HTTP "Protocol Version Header": the version a POST names
 * in MCP-Protocol-Version and in its body's _meta are the same (else 400,
 * -32020), one sluice speaks (else 400, -32022 with the versions it does),
 * and a 2026-07-28 request carries its _meta's version and capabilities
 * (else 400, -32602). A
 * session-era POST without _meta has only its header to say. True when
 * refused: *ret is the answer. */
/* A peer's version text as an answer may quote it: printable ASCII, at
 * most 60 bytes, anything else as '?' (a header may hold any byte, and
 * invalid UTF-8 cannot be written as JSON). */
static const char *shown_version(const char *v, char out[64])
{
	size_t i = 0;

	for (; v[i] && i < 60; i++)
		out[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
	out[i] = '\0';
	return out;
}

static bool version_refused(struct MHD_Connection *c, yyjson_val *root, const char *pv,
			    enum MHD_Result *ret)
{
	yyjson_val *id = yyjson_obj_get(root, "id");
	yyjson_val *meta = yyjson_obj_get(yyjson_obj_get(root, "params"), "_meta");
	yyjson_val *mvv = yyjson_obj_get(meta, SL_MCP_META_VERSION);
	const char *mv = yyjson_get_str(mvv), *v;
	char msg[300], spv[64], smv[64];

	if (mvv && !mv) {
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_PARAMS, id,
				 "Invalid params: _meta[\"" SL_MCP_META_VERSION "\"] must be a string");
		return true;
	}
	if (mv && (!pv || strcmp(pv, mv) != 0)) {
		if (pv)
			snprintf(msg, sizeof(msg), "Header mismatch: the MCP-Protocol-Version header "
				 "(%s) does not match the body's _meta protocol version (%s)",
				 shown_version(pv, spv), shown_version(mv, smv));
		else
			snprintf(msg, sizeof(msg), "Header mismatch: the MCP-Protocol-Version header is "
				 "missing (the body's _meta names protocol version %s)",
				 shown_version(mv, smv));
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_HEADER_MISMATCH, id, msg);
		return true;
	}
	v = pv ? pv : mv;
	if (v && strcmp(v, SL_MCP_MODERN) != 0 && !sl_mcp_legacy_version(v)) {
		yyjson_mut_val *o, *data;
		yyjson_mut_doc *d = sl_rpc_response_new(id, &o);
		size_t len;
		char *line;
		data = yyjson_mut_obj(d);
		yyjson_mut_obj_add_val(d, data, "supported", sl_mcp_versions(d));
		yyjson_mut_obj_add_strcpy(d, data, "requested", shown_version(v, spv));
		snprintf(msg, sizeof(msg), "Unsupported protocol version: %s", spv);
		sl_rpc_add_error(d, o, SL_MCP_UNSUPPORTED_VERSION, msg, data);
		line = sl_json_write_line(d, &len);
		yyjson_mut_doc_free(d);
		*ret = http_respond(c, MHD_HTTP_BAD_REQUEST, "application/json", line, len - 1, NULL,
				    false);
		free(line);
		return true;
	}
	if (pv && !strcmp(pv, SL_MCP_MODERN) && id && yyjson_obj_get(root, "method") &&
	    (!mv || !yyjson_is_obj(yyjson_obj_get(meta, SL_MCP_META_CAPS)))) {
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_PARAMS, id, mv ?
				 "Invalid params: _meta[\"" SL_MCP_META_CAPS "\"] is required in 2026-07-28" :
				 "Invalid params: _meta[\"" SL_MCP_META_VERSION "\"] is required in 2026-07-28");
		return true;
	}
	return false;
}

/* A cancelled request is never answered (MCP: cancellation): its stream
 * ends now rather than when the client gives up on it. key: its id as
 * JSON (taken), or NULL. */
static void end_cancelled(struct hsess *hs, char *key)
{
	struct sl_list *sn;
	sl_list_each(sn, &hs->streams) {
		struct stream *st = sl_list_entry(sn, struct stream, link);
		if (key && !st->is_get && !st->answered && st->key && !strcmp(st->key, key)) {
			st->answered = true;
			http_stream_end(st);
			break;
		}
	}
	free(key);
}

/* MCP 2026-07-28 HTTP: an error answer that names the client's own fault
 * gets a 4xx status rather than 200. -32021 (the request needs a client
 * capability its _meta did not declare) is 400, whoever answered it: sluice
 * or a server behind it. Read for error answers only. */
static unsigned int error_status(const struct line *l, size_t len)
{
	yyjson_doc *doc = yyjson_read(l->data, len, 0);
	yyjson_val *code = yyjson_obj_get(yyjson_obj_get(yyjson_doc_get_root(doc), "error"), "code");
	bool missing_cap = yyjson_is_int(code) && yyjson_get_sint(code) == SL_MCP_MISSING_CAPABILITY;

	yyjson_doc_free(doc);
	return missing_cap ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_OK;
}

/* The rule (docs/internals/HTTP.md): JSON when the answer is the first
 * line for the request and no progress was asked for; SSE otherwise, with
 * what is queued so far framed as events and the rest streamed. */
static enum MHD_Result answer(struct MHD_Connection *c, struct req *r, struct stream *st)
{
	struct hsess *hs = st->hs;
	struct line *old;
	enum MHD_Result ret;

	if (st->answered && st->head && !st->head->next && !st->token) {
		struct line *l = st->head;
		size_t len = l->len;
		while (len && l->data[len - 1] == '\n')
			len--;
		ret = st->retry_after ? http_too_many(c, l->data, len, hs, st->retry_after) :
		      http_respond(c, st->failed ? error_status(l, len) : MHD_HTTP_OK, "application/json",
				   l->data, len, hs, false);
		http_stream_free(st);
		return ret;
	}
	old = st->head;
	st->head = NULL;
	st->tail = &st->head;
	st->sse = true;
	if (hs && hs->listen)
		http_watch_peer(st);
	http_prime(st);
	/* Already within the budget: framed, they cost a few bytes more. */
	for (struct line *l = old; l; l = l->next)
		http_stream_push(st, http_sse_frame(st, l->data, l->len), true);
	http_lines_release(st, old);
	if (st->answered)
		st->done = true;
	return http_open_sse(c, st, hs, r);
}

/* A POST that waited resumes: something was routed to it, its session
 * ended, or it waited WAIT_MS and streams from now on (a slow call's stream
 * starts with its priming event, so a client cut off later can resume). */
enum MHD_Result http_settle(struct MHD_Connection *c, struct req *r)
{
	struct stream *st = r->st;
	r->waiting = false;
	r->st = NULL;
	st->req = NULL;
	return answer(c, r, st);
}

/* How long a POST waits for its answer alone before it streams. A
 * session's stream starts early, with its priming event, so that a slow
 * call stays resumable. A 2026-07-28 request has no stream to resume (no
 * GET): it waits for its answer, whose status then follows it (400 for
 * -32021), until something else is sent for it (progress, a question) or
 * the heartbeat interval passes, when it streams and heartbeats keep the
 * connection alive through proxies. */
static uint64_t wait_ms(const struct sl_http *h, const struct hsess *hs)
{
	return hs->ephemeral && !hs->listen ? h->cfg->heartbeat_ms : WAIT_MS;
}

static void on_wait(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	uint64_t now = sl_now_ms();
	bool more = false;
	struct sl_list *n, *next;
	sl_list_each_safe(n, next, &h->sessions) {
		struct hsess *hs = sl_list_entry(n, struct hsess, link);
		struct sl_list *sn;
		sl_list_each(sn, &hs->streams) {
			struct stream *st = sl_list_entry(sn, struct stream, link);
			if (!st->sse && st->req && st->req->waiting) {
				if (now - st->req->since_ms >= wait_ms(h, hs))
					http_wake(st);
				else
					more = true;
			}
		}
	}
	if (!more)
		uv_timer_stop(t);
}

/* The 2026-07-28 requests in flight of one identity (without
 * authentication, all of them): one session's worth. */
static uint32_t ephemeral_with(const struct sl_http *h, const struct sl_caller *who)
{
	uint32_t n = 0;
	const struct sl_list *ln;
	sl_list_each(ln, &h->sessions) {
		const struct hsess *x = sl_list_entry(ln, struct hsess, link);
		n += x->ephemeral && !x->listen && sl_caller_same(x->who, who);
	}
	return n;
}

/* The listens open of one identity (sluice.limits.maxListensPerSession). */
static uint32_t listens_with(const struct sl_http *h, const struct sl_caller *who)
{
	uint32_t n = 0;
	const struct sl_list *ln;
	sl_list_each(ln, &h->sessions) {
		const struct hsess *x = sl_list_entry(ln, struct hsess, link);
		n += x->listen && sl_caller_same(x->who, who);
	}
	return n;
}

/* The checks every POST body passes before a session sees it (its size,
 * the budget, one JSON object, its id, its depth). NULL: refused, *ret is
 * the answer; else the parsed body, owned by the caller. */
yyjson_doc *http_checked_body(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      enum MHD_Result *ret)
{
	yyjson_doc *doc;
	yyjson_val *root, *id;

	if (r->over) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the request body is over sluice.http.maxBodyBytes (%zu bytes)",
			 h->cfg->max_body_bytes);
		*ret = http_fail(c, MHD_HTTP_CONTENT_TOO_LARGE, SL_RPC_INVALID_REQUEST, NULL, msg);
		return NULL;
	}
	if (r->busy) {
		char *why = http_busy_why(h, OVER_ALL);
		*ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		return NULL;
	}
	/* Read as the session reads a message: it takes this document. */
	doc = yyjson_read(r->body.data ? r->body.data : "", r->body.len, SL_JSON_READ_FLAGS);
	root = yyjson_doc_get_root(doc);
	if (!doc) {
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_PARSE_ERROR, NULL, "Parse error: the body is not JSON");
		return NULL;
	}
	if (!yyjson_is_obj(root)) {
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL,
				 "Invalid Request: one JSON-RPC message per POST (no batches)");
		goto fail;
	}
	id = yyjson_obj_get(root, "id");
	/* Answered here: the session would answer with a null id, which no
	 * stream waits for, and the POST would hold its slot for good. */
	if (id && !sl_rpc_valid_id(id)) {
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL, SL_RPC_BAD_ID_WHY);
		goto fail;
	}
	/* The depth gate (core/json.h), before anything walks the body. */
	if (!sl_json_depth_ok(root)) {
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, id,
				 "Invalid Request: " SL_JSON_DEPTH_WHY);
		goto fail;
	}
	return doc;
fail:
	yyjson_doc_free(doc);
	return NULL;
}

enum MHD_Result http_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			  struct sl_caller *who, bool modern)
{
	const char *pv = http_header(c, SL_MCP_HDR_VERSION);
	const char *sid = http_header(c, SL_MCP_HDR_SESSION);
	yyjson_doc *doc = NULL;
	yyjson_val *root, *id, *method, *meta;
	struct hsess *hs = NULL;
	struct stream *st;
	enum MHD_Result ret;
	enum bound b;
	bool is_init;
	char *cancelled, *info;
	const char *full;

	if (!(doc = http_checked_body(h, c, r, &ret)))
		return ret;
	root = yyjson_doc_get_root(doc);
	id = yyjson_obj_get(root, "id");
	method = yyjson_obj_get(root, "method");
	is_init = method && id && yyjson_equals_str(method, SL_MCP_INITIALIZE);

	if (version_refused(c, root, pv, &ret))
		goto out;
	if (modern) {
		char msg[200], pmsg[200];
		const char *why = modern_headers(c, root);
		if (!why)
			why = param_headers(h, c, root, who, pmsg, sizeof(pmsg));
		if (why) {
			ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_HEADER_MISMATCH, id, why);
			goto out;
		}
		/* MCP 2026-07-28 HTTP: a method the server does not implement
		 * (also one that era removed) is 404 with -32601. */
		if (method && id && yyjson_is_str(method) &&
		    !sl_session_has_method(yyjson_get_str(method), true, msg, sizeof(msg))) {
			ret = http_fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_METHOD_NOT_FOUND, id, msg);
			goto out;
		}
		if (!method || !id) {
			/* No session to tell: a notification or response has nowhere to go. */
			ret = http_respond(c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL, false);
			goto out;
		}
		/* A listen is long-lived: it has bounds of its own
		 * (sluice.limits.maxListens* and the memory budget), and is
		 * neither a session nor a request in flight. */
		if (yyjson_equals_str(method, SL_MCP_LISTEN)) {
			if (listens_with(h, who) >= h->lim->max_listens_per_session) {
				ret = http_fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
						"too many subscriptions/listen streams open with this "
						"credential (sluice.limits.maxListensPerSession)");
				goto out;
			}
			hs = http_session_new(h, true, who);
			h->nephemeral--;
			h->nlistens++;
			hs->listen = true;
			goto opened;
		}
		/* In flight, it is a live session (maxSessions), and the requests
		 * of one credential are one session's (maxRequestsPerSession). */
		if (ephemeral_with(h, who) >= h->cfg->max_requests) {
			ret = http_fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
					"too many 2026-07-28 requests in flight with this credential "
					"(sluice.http.maxRequestsPerSession)");
			goto out;
		}
		if (!http_session_room(h, who, &full)) {
			ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id, full);
			goto out;
		}
		hs = http_session_new(h, true, who);
	} else if (is_init) {
		if (!http_session_room(h, who, &full)) {
			ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id, full);
			goto out;
		}
		hs = http_session_new(h, false, who);
	} else {
		/* MCP 2025-11-25 transports: after initialize, the session id is
		 * required (400 without it, 404 when unknown or ended). */
		if (!sid) {
			ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
					"Bad Request: Mcp-Session-Id header is required");
			goto out;
		}
		hs = sl_map_get(&h->by_id, sid);
		/* A session answers only the credential that opened it, and
		 * only on its own transport. */
		if (!hs || hs->sse || !sl_caller_same(hs->who, who)) {
			ret = http_fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, id, "Session not found");
			goto out;
		}
		http_touch(hs);
	}
opened:

	if (method && id && !hs->ephemeral) {
		uint32_t n = 0;
		struct sl_list *sn;
		sl_list_each(sn, &hs->streams)
			n += !sl_list_entry(sn, struct stream, link)->is_get && !sl_list_entry(sn, struct stream, link)->answered;
		if (n >= h->cfg->max_requests) {
			ret = http_fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
					"too many requests in flight in this session "
					"(sluice.http.maxRequestsPerSession)");
			goto out;
		}
	}

	if (!method || !id) {
		/* A notification or a response: 202, no body. What is read of it
		 * is read before the session takes it. */
		cancelled = method && yyjson_equals_str(method, SL_MCP_CANCELLED) ?
			    http_json_key(yyjson_obj_get(yyjson_obj_get(root, "params"), "requestId")) :
			    NULL;
		sl_session_input_doc(hs->s, who, doc);
		doc = NULL;
		end_cancelled(hs, cancelled);
		ret = http_respond(c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL, false);
		goto out;
	}

	meta = yyjson_obj_get(yyjson_obj_get(root, "params"), "_meta");
	st = http_stream_new(h, hs, c, http_json_key(id), http_json_key(yyjson_obj_get(meta, "progressToken")), &b);
	/* A listen's session keeps its filter for as long as it is open:
	 * the stream carries that cost (at most the body) in the budget. */
	if (st && hs->listen && (b = http_reserve(h, NULL, st, r->body.len)) != FITS) {
		http_stream_free(st); /* ends the session too */
		st = NULL;
		hs = NULL;
	}
	if (!st) {
		/* Refused before any work: the memory budget is spent. */
		char *why = http_busy_why(h, b);
		if (hs && (hs->ephemeral || is_init))
			http_session_end(hs);
		ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id, why);
		free(why);
		goto out;
	}
	/* The body is parsed once: the session takes the document. */
	info = is_init ? http_client_info(h, root) : NULL;
	sl_session_input_doc(hs->s, who, doc);
	doc = NULL;
	if (is_init)
		http_remember_init(hs, info);

	if (!st->head && !st->token) {
		/* Nothing yet: wait for the first line routed to this request
		 * before choosing JSON or SSE (http_settle()). */
		st->req = r;
		r->st = st;
		r->waiting = true;
		r->since_ms = sl_now_ms();
		st->suspended = true;
		MHD_suspend_connection(c);
		if (!uv_is_active((uv_handle_t *)&h->wait))
			uv_timer_start(&h->wait, on_wait, WAIT_MS / 2, WAIT_MS / 2);
		ret = MHD_YES;
		goto out;
	}
	if (is_init && st->answered && st->failed) {
		ret = answer(c, r, st);
		http_session_end(hs); /* a failed initialize opens no session */
		goto out;
	}
	ret = answer(c, r, st);
out:
	yyjson_doc_free(doc);
	return ret;
}

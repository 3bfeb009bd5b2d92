/*
 * The HTTP+SSE transport (MCP 2024-11-05 transports) for clients that
 * speak only that: GET /sse opens a session and its one stream, POST
 * /messages?sessionId= carries each message, and everything the session
 * sends is an event of that stream; its requests in flight are counted as
 * /mcp's are.
 */
#include "transport/http_int.h"
#include "core/log.h"
#include "proto/mcp.h"

#include <stdlib.h>
#include <string.h>

/* ---- HTTP+SSE: requests in flight ------------------------------------------ */

/* What a request in flight costs the budget: its id and its slot. */
static size_t inflight_cost(const char *key)
{
	return strlen(key) + 1 + sizeof(char *);
}

/* Records a request of an HTTP+SSE session (key, taken) as in flight, so
 * that sluice.http.maxRequestsPerSession bounds them as it bounds POSTs
 * waiting on /mcp; at a bound of the memory budget, charges nothing. */
static enum bound inflight_add(struct hsess *hs, char *key)
{
	enum bound b = http_reserve(hs->h, hs, NULL, inflight_cost(key));
	if (b != FITS) {
		free(key);
		return b;
	}
	hs->inflight = sl_realloc(hs->inflight, (hs->ninflight + 1) * sizeof(*hs->inflight));
	hs->inflight[hs->ninflight++] = key;
	hs->inflight_bytes += inflight_cost(key);
	return FITS;
}

/* The request whose id is key (JSON) is answered, or cancelled (and so
 * never answered). */
static void inflight_del(struct hsess *hs, const char *key)
{
	for (uint32_t i = 0; key && i < hs->ninflight; i++)
		if (!strcmp(hs->inflight[i], key)) {
			http_release(hs->h, hs, NULL, inflight_cost(key));
			hs->inflight_bytes -= inflight_cost(key);
			free(hs->inflight[i]);
			hs->inflight[i] = hs->inflight[--hs->ninflight];
			return;
		}
}

void http_inflight_clear(struct hsess *hs)
{
	while (hs->ninflight)
		inflight_del(hs, hs->inflight[hs->ninflight - 1]);
	free(hs->inflight);
	hs->inflight = NULL;
}

/* MCP 2024-11-05 transports (HTTP+SSE): every message the session sends
 * is an event of its one stream, in the order sent. At a bound of the
 * budget, an answer while nothing waits to be written (its client reads,
 * the answer alone is too big) becomes a JSON-RPC error naming the bound;
 * anything else means the client stopped reading, and the stream ends, as
 * a GET stream's does, and its session with it. */
void http_sse_send(struct hsess *hs, struct sl_out *o)
{
	struct stream *st = hs->get;
	char *key, *why, *e;
	enum bound b;
	size_t len;

	if (o->kind == SL_OUT_RESPONSE) {
		key = http_json_key(o->id);
		inflight_del(hs, key);
		free(key);
	}
	if (!st) { /* only while the session ends */
		free(o->line);
		return;
	}
	b = http_stream_push(st, http_sse_frame(st, o->line, o->len), false);
	free(o->line);
	if (b == FITS)
		return;
	if (o->kind != SL_OUT_RESPONSE || st->head) {
		http_kill_stream(st, b);
		return;
	}
	why = http_busy_why(hs->h, b);
	sl_log(SL_LOG_WARN, "http: session %.8s…: an answer became an error (%s)", hs->id, why);
	e = sl_rpc_error_line(o->id, SL_RPC_SERVER_ERROR, why, &len);
	http_stream_push(st, http_sse_frame(st, e, len), true);
	free(e);
	free(why);
}

/* ---- HTTP+SSE (MCP 2024-11-05 transports) ------------------------------------------------- */

#define SSE_ERA_WHY                                                                                \
	"the HTTP+SSE transport (GET /sse) serves the session era only (2024-11-05 to "            \
	"2025-11-25, after initialize): a 2026-07-28 client uses POST /mcp"

/* GET /sse: a session of its own and its one stream, whose first event
 * names where to POST (MCP 2024-11-05 transports: "the server MUST send an
 * endpoint event containing a URI for the client to use for sending
 * messages"). The session lives as long as the stream (http_stream_free). */
enum MHD_Result http_sse_open(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      struct sl_caller *who)
{
	struct hsess *hs;
	struct stream *st;
	struct line *l;
	enum bound b;
	const char *full;

	if (!http_session_room(h, who, &full))
		return http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, full);
	hs = http_session_new(h, false, who);
	hs->sse = true;
	if (!(st = http_stream_new(h, hs, c, NULL, NULL, &b))) {
		char *why = http_busy_why(h, b);
		enum MHD_Result ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, NULL, why);
		free(why);
		http_session_end(hs);
		return ret;
	}
	st->is_get = st->sse = true;
	hs->get = st;
	l = http_line_new(sl_printf("event: endpoint\ndata: /messages?sessionId=%s\n\n", hs->id), 0);
	l->len = strlen(l->data);
	http_stream_push(st, l, true);
	/* Its client closing the stream ends the session at once, not at
	 * the next heartbeat (a suspended connection is not read). */
	http_watch_peer(st);
	sl_log(SL_LOG_DEBUG, "http: session %.8s… opened over HTTP+SSE", hs->id);
	return http_open_sse(c, st, NULL, r);
}

/* POST /messages?sessionId=: one message for an HTTP+SSE session, 202 at
 * once; whatever the session sends goes on its stream. */
enum MHD_Result http_sse_post(struct sl_http *h, struct MHD_Connection *c, struct req *r,
			      const struct sl_caller *who)
{
	const char *sid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sessionId");
	const char *pv = http_header(c, SL_MCP_HDR_VERSION);
	yyjson_doc *doc;
	yyjson_val *root, *id, *method, *meta;
	struct hsess *hs;
	enum MHD_Result ret;
	enum bound b;
	char *cancelled = NULL;

	if (!(doc = http_checked_body(h, c, r, &ret)))
		return ret;
	root = yyjson_doc_get_root(doc);
	id = yyjson_obj_get(root, "id");
	method = yyjson_obj_get(root, "method");
	meta = yyjson_obj_get(yyjson_obj_get(root, "params"), "_meta");
	if (!sid) {
		ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
				"Bad Request: the sessionId query parameter is required");
		goto out;
	}
	hs = sl_map_get(&h->by_id, sid);
	/* Its stream gone, the session is gone; one opened with another
	 * credential, or on /mcp, is not found either. */
	if (!hs || !hs->sse || !sl_caller_same(hs->who, who)) {
		ret = http_fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, id, "Session not found");
		goto out;
	}
	if ((pv && !strcmp(pv, SL_MCP_MODERN)) || yyjson_obj_get(meta, SL_MCP_META_VERSION)) {
		ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, id,
				"Invalid Request: " SSE_ERA_WHY);
		goto out;
	}
	if (pv && !sl_mcp_legacy_version(pv)) {
		ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, id,
				"Bad Request: unsupported MCP-Protocol-Version");
		goto out;
	}
	if (method && id) {
		if (hs->ninflight >= h->cfg->max_requests) {
			ret = http_fail(c, MHD_HTTP_TOO_MANY_REQUESTS, SL_RPC_SERVER_ERROR, id,
					"too many requests in flight in this session "
					"(sluice.http.maxRequestsPerSession)");
			goto out;
		}
		/* Before the session sees it: it may answer at once. */
		if ((b = inflight_add(hs, http_json_key(id))) != FITS) {
			char *why = http_busy_why(h, b);
			ret = http_fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, SL_RPC_SERVER_ERROR, id, why);
			free(why);
			goto out;
		}
	}
	/* A cancelled request is never answered: no longer in flight once the
	 * session has the cancellation (read before it takes the body). */
	if (method && !id && yyjson_equals_str(method, SL_MCP_CANCELLED))
		cancelled = http_json_key(yyjson_obj_get(yyjson_obj_get(root, "params"), "requestId"));
	hs->last_ms = sl_now_ms();
	sl_session_input_doc(hs->s, r->who, doc);
	doc = NULL;
	if (cancelled && !hs->ended)
		inflight_del(hs, cancelled);
	free(cancelled);
	ret = http_respond(c, MHD_HTTP_ACCEPTED, "text/plain", "Accepted", 8, NULL, false);
out:
	yyjson_doc_free(doc);
	return ret;
}

/* The HTTP+SSE endpoints (MCP 2024-11-05 transports), after Host, Origin
 * and token: GET /sse (Accept must allow the stream), POST /messages
 * (Content-Type and the body cap as on /mcp; its client, which reads
 * every answer on its stream, need not send Accept). */
bool http_admit_sse(struct sl_http *h, struct MHD_Connection *c, const char *url,
		    const char *method, bool modern, enum MHD_Result *ret)
{
	bool stream = !strcmp(url, "/sse");
	if (strcmp(method, stream ? "GET" : "POST") != 0) {
		*ret = http_refuse_method(c, stream ? "GET" : "POST");
		return false;
	}
	if (modern) {
		*ret = http_error_response(c, MHD_HTTP_BAD_REQUEST, SL_RPC_INVALID_REQUEST, NULL,
					   "Invalid Request: " SSE_ERA_WHY, true);
		return false;
	}
	if (stream && !http_accepts(http_header(c, "Accept"), "text/event-stream")) {
		*ret = http_refuse(c, MHD_HTTP_NOT_ACCEPTABLE, "Not Acceptable: Accept must allow text/event-stream");
		return false;
	}
	if (!stream && (!http_header(c, "Content-Type") ||
			strncasecmp(http_header(c, "Content-Type"), "application/json", 16) != 0)) {
		*ret = http_refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
		return false;
	}
	return stream || !http_over_body_cap(h, c, ret);
}

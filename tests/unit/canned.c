/* The canned servers of canned.h. */
#include "canned.h"
#include "unit.h"

#include "core/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct canned_conn {
	uv_tcp_t tcp;
	struct canned *s;
	char buf[8192];
	size_t len;
	uv_write_t w;
	char *out;
	bool hung;               /* read on, answered nothing: closed when the client gives up */
};

static void canned_closed(uv_handle_t *h)
{
	struct canned_conn *k = h->data;
	free(k->out);
	free(k);
}

static void canned_written(uv_write_t *w, int status)
{
	struct canned_conn *k = w->data;
	uv_close((uv_handle_t *)&k->tcp, canned_closed);
}

static void canned_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct canned_conn *k = h->data;
	*b = uv_buf_init(k->buf + k->len, (unsigned)(sizeof(k->buf) - 1 - k->len));
}

static void canned_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct canned_conn *k = st->data;
	struct canned *s = k->s;
	char *end, *cl, *sid, *rpc, *ver, body[600];
	const char *status = "200 OK", *type = "application/json";
	char extra[300] = "";
	size_t want;
	uv_buf_t out;

	if (n < 0) {
		uv_close((uv_handle_t *)&k->tcp, canned_closed);
		return;
	}
	if (k->hung)
		return;
	k->len += (size_t)n;
	k->buf[k->len] = '\0';
	if (!(end = strstr(k->buf, "\r\n\r\n")))
		return;
	cl = strcasestr(k->buf, "\r\ncontent-length:");
	want = (size_t)(end + 4 - k->buf) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
	if (k->len < want)
		return;
	if ((sid = strcasestr(k->buf, "\r\nmcp-session-id:")))
		sid += 17 + strspn(sid + 17, " ");
	if ((rpc = strstr(end, "\"method\":\"")))
		rpc += 10;
	if (rpc && !strncmp(rpc, "tools/list\"", 11) &&
	    (ver = strcasestr(k->buf, "\r\nmcp-protocol-version:"))) {
		ver += 23 + strspn(ver + 23, " ");
		snprintf(s->list_version, sizeof(s->list_version), "%.*s", (int)strcspn(ver, "\r"), ver);
		if ((ver = strcasestr(k->buf, "\r\nmcp-method:"))) {
			ver += 13 + strspn(ver + 13, " ");
			snprintf(s->list_method, sizeof(s->list_method), "%.*s", (int)strcspn(ver, "\r"), ver);
		}
	}
	if (s->nseen < 8)
		snprintf(s->seen[s->nseen++], sizeof(s->seen[0]), "%.*s|%.*s|%.*s",
			 (int)strcspn(k->buf, " "), k->buf,
			 sid ? (int)strcspn(sid, "\r") : 0, sid ? sid : "",
			 rpc ? (int)strcspn(rpc, "\"") : 0, rpc ? rpc : "");
	if (!strncmp(k->buf, "DELETE ", 7) && s->delete_hangs) {
		k->hung = true;
		return;
	}
	uv_read_stop(st);
	if (!strncmp(k->buf, "DELETE ", 7)) {
		status = "405 Method Not Allowed";
		snprintf(body, sizeof(body), "{}");
	} else if (strstr(k->buf, "\"server/discover\"") && s->modern) {
		snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":"
			 "\"complete\",\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{\"tools\":{}}}}");
	} else if (strstr(k->buf, "\"server/discover\"") || (strstr(k->buf, "\"initialize\"") && s->modern)) {
		status = "400 Bad Request"; /* an era it does not speak */
		snprintf(body, sizeof(body), "{}");
	} else if (strstr(k->buf, "\"notifications/initialized\"")) {
		status = "202 Accepted";
		body[0] = '\0';
	} else if (strstr(k->buf, "\"initialize\"")) {
		snprintf(extra, sizeof(extra), "Mcp-Session-Id: sess-7\r\n");
		if (s->sse_init) {
			type = "text/event-stream";
			snprintf(body, sizeof(body), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,"
				 "\"result\":{\"protocolVersion\":\"2025-06-18\"}}\n\n");
		} else {
			snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
		}
	} else if (strstr(k->buf, "\"tools/list\"") && s->list_status == 200) {
		snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[]}}");
	} else if (strstr(k->buf, "\"tools/list\"") && s->list_status) {
		status = "400 Bad Request"; /* not initialized, say */
		snprintf(body, sizeof(body), "{}");
	} else if (strstr(k->buf, "\"tools/list\"")) {
		status = "401 Unauthorized";
		snprintf(body, sizeof(body), "{}");
		snprintf(extra, sizeof(extra), "WWW-Authenticate: Bearer scope=\"mcp:basic\", "
			 "resource_metadata=\"http://127.0.0.1:%d/prm\"\r\n", s->port);
	} else if (!strncmp(k->buf, "POST /token ", 12) && s->token_error) {
		snprintf(s->token_body, sizeof(s->token_body), "%s", end + 4);
		status = "400 Bad Request";
		snprintf(body, sizeof(body), "{\"error\":\"%s\"}", s->token_error);
	} else if (!strncmp(k->buf, "POST /token ", 12)) {
		snprintf(s->token_body, sizeof(s->token_body), "%s", end + 4);
		/* RFC 6749 5.1: a token answer that names no scope. */
		snprintf(body, sizeof(body), "{\"access_token\":\"t2\",\"token_type\":\"Bearer\","
			 "\"expires_in\":3600}");
	} else if (!strncmp(k->buf, "GET /prm ", 9)) {
		snprintf(body, sizeof(body), "{\"resource\":\"http://127.0.0.1:%d/mcp\","
			 "\"authorization_servers\":[\"http://127.0.0.1:%d\"]}", s->port, s->port);
	} else if (!strncmp(k->buf, "GET /.well-known/oauth-authorization-server ", 44)) {
		snprintf(body, sizeof(body), "{\"issuer\":\"http://127.0.0.1:%d%s\",\"authorization_endpoint\":"
			 "\"http://127.0.0.1:%d/authorize\",\"token_endpoint\":\"http://127.0.0.1:%d/token\"}",
			 s->port, s->meta_issuer_slash ? "/" : "", s->port, s->port);
	} else {
		status = "404 Not Found";
		snprintf(body, sizeof(body), "{}");
	}
	k->out = sl_printf("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			   "Connection: close\r\n\r\n%s", status, type, strlen(body), extra, body);
	out = uv_buf_init(k->out, (unsigned)strlen(k->out));
	k->w.data = k;
	if (uv_write(&k->w, st, &out, 1, canned_written) < 0)
		uv_close((uv_handle_t *)&k->tcp, canned_closed);
}

static void on_canned_conn(uv_stream_t *server, int status)
{
	struct canned *s = server->data;
	struct canned_conn *k = sl_alloc(sizeof(*k));

	k->s = s;
	uv_tcp_init(server->loop, &k->tcp);
	k->tcp.data = k;
	if (status < 0 || uv_accept(server, (uv_stream_t *)&k->tcp) < 0 ||
	    uv_read_start((uv_stream_t *)&k->tcp, canned_alloc, canned_read) < 0)
		uv_close((uv_handle_t *)&k->tcp, canned_closed);
}

void t_canned_listen(uv_loop_t *loop, struct canned *s)
{
	struct sockaddr_in a;
	struct sockaddr_storage got;
	int len = sizeof(got);

	uv_tcp_init(loop, &s->tcp);
	s->tcp.data = s;
	uv_ip4_addr("127.0.0.1", 0, &a);
	CHECK_INT(uv_tcp_bind(&s->tcp, (const struct sockaddr *)&a, 0), 0);
	CHECK_INT(uv_listen((uv_stream_t *)&s->tcp, 8, on_canned_conn), 0);
	uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &len);
	s->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
}

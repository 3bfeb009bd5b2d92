/*
 * httpbench: small tools/call requests over MCP Streamable HTTP from C
 * concurrent clients, so that the client is never the bottleneck.
 *
 *   httpbench -u URL [-c 8] [-n 2000] [-w 200] [-t echo] [-a ARGS_JSON]
 *             [-H "Authorization: Bearer ..."] [-C CA_FILE]
 *
 * Each client is one keep-alive connection and one MCP session of its own
 * (initialize, notifications/initialized, then w warm-up calls and n
 * measured tools/call requests, one at a time, with Accept: application/json,
 * text/event-stream; the answer may be JSON or an SSE stream). All clients
 * run at once on one libcurl multi handle. Prints one line:
 * "p50_us p99_us calls_per_second" over the measured calls of every client,
 * and exits non-zero if any call failed. -H adds a header to every request
 * (a credential); -C names the CA that an https:// URL's certificate must
 * chain to. Used by bench/http.sh.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bench.h"

#define MAX_BODY (1u << 20)

enum step { S_INIT, S_INITIALIZED, S_CALL, S_DONE };

struct client {
	CURL *h;
	struct curl_slist *hdrs;
	enum step step;
	int calls;               /* calls sent so far, warm-up included */
	char session[256];
	char *body;
	size_t len;
	double started;
	char req[4096];
};

static int nclients = 8, ncalls = 2000, nwarm = 200;
static const char *url, *tool = "echo", *args = "{\"message\":\"hi\"}", *extra, *cafile;
static double *lat;
static size_t nlat;
static double t_first, t_last;
static int failures;


static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct client *c = ud;
	size_t k = sz * n;
	if (c->len + k > MAX_BODY)
		return 0; /* fails the transfer: bounded */
	c->body = realloc(c->body, c->len + k + 1);
	if (!c->body)
		abort();
	memcpy(c->body + c->len, p, k);
	c->len += k;
	c->body[c->len] = '\0';
	return k;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct client *c = ud;
	size_t k = sz * n;
	if (k > 15 && strncasecmp(p, "mcp-session-id:", 15) == 0) {
		const char *v = p + 15;
		size_t l;
		while (*v == ' ')
			v++;
		l = strcspn(v, "\r\n");
		if (l < sizeof(c->session)) {
			memcpy(c->session, v, l);
			c->session[l] = '\0';
		}
	}
	return k;
}

/* Queues the client's next request on m. */
static void send_next(CURLM *m, struct client *c)
{
	char hv[300];

	curl_slist_free_all(c->hdrs);
	c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	c->hdrs = curl_slist_append(c->hdrs, "Accept: application/json, text/event-stream");
	if (extra)
		c->hdrs = curl_slist_append(c->hdrs, extra);
	if (c->session[0]) {
		snprintf(hv, sizeof(hv), "Mcp-Session-Id: %s", c->session);
		c->hdrs = curl_slist_append(c->hdrs, hv);
		c->hdrs = curl_slist_append(c->hdrs, "MCP-Protocol-Version: 2025-11-25");
	}
	switch (c->step) {
	case S_INIT:
		snprintf(c->req, sizeof(c->req), "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
			 "\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
			 "\"clientInfo\":{\"name\":\"httpbench\",\"version\":\"1\"}}}");
		break;
	case S_INITIALIZED:
		snprintf(c->req, sizeof(c->req),
			 "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
		break;
	default:
		snprintf(c->req, sizeof(c->req), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
			 "\"params\":{\"name\":\"%s\",\"arguments\":%s}}", c->calls + 1, tool, args);
		break;
	}
	c->len = 0;
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, c->req);
	c->started = now_us();
	curl_multi_add_handle(m, c->h);
}

/* The answer to request id is in the body (JSON, or an SSE event's data). */
static int answered(struct client *c, int id)
{
	char want[32];
	if (!c->body)
		return 0;
	snprintf(want, sizeof(want), "\"id\":%d", id);
	return strstr(c->body, want) && strstr(c->body, "\"result\"") &&
	       !strstr(c->body, "\"isError\":true");
}

static void finished(CURLM *m, struct client *c, CURLcode rc)
{
	double t = now_us();
	long status = 0;

	curl_multi_remove_handle(m, c->h);
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK || status >= 300) {
		fprintf(stderr, "httpbench: step %d: %s, HTTP %ld: %.300s\n", c->step,
			curl_easy_strerror(rc), status, c->body ? c->body : "");
		failures++;
		c->step = S_DONE;
		return;
	}
	switch (c->step) {
	case S_INIT:
		if (!c->session[0] || !answered(c, 0)) {
			fprintf(stderr, "httpbench: initialize failed: %.300s\n", c->body ? c->body : "");
			failures++;
			c->step = S_DONE;
			return;
		}
		c->step = S_INITIALIZED;
		break;
	case S_INITIALIZED:
		c->step = S_CALL;
		break;
	case S_CALL:
		if (!answered(c, c->calls + 1)) {
			fprintf(stderr, "httpbench: call %d failed: %.300s\n", c->calls + 1, c->body ? c->body : "");
			failures++;
		}
		if (c->calls >= nwarm) {
			lat[nlat++] = t - c->started;
			if (!t_first || c->started < t_first)
				t_first = c->started;
			t_last = t;
		}
		if (++c->calls >= nwarm + ncalls) {
			c->step = S_DONE;
			return;
		}
		break;
	case S_DONE:
		return;
	}
	send_next(m, c);
}

int main(int argc, char **argv)
{
	struct client *cl;
	CURLM *m;
	int running = 1;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-u") && a + 1 < argc)
			url = argv[++a];
		else if (!strcmp(argv[a], "-c") && a + 1 < argc)
			nclients = atoi(argv[++a]);
		else if (!strcmp(argv[a], "-n") && a + 1 < argc)
			ncalls = atoi(argv[++a]);
		else if (!strcmp(argv[a], "-w") && a + 1 < argc)
			nwarm = atoi(argv[++a]);
		else if (!strcmp(argv[a], "-t") && a + 1 < argc)
			tool = argv[++a];
		else if (!strcmp(argv[a], "-a") && a + 1 < argc)
			args = argv[++a];
		else if (!strcmp(argv[a], "-H") && a + 1 < argc)
			extra = argv[++a];
		else if (!strcmp(argv[a], "-C") && a + 1 < argc)
			cafile = argv[++a];
		else
			url = NULL, a = argc;
	}
	if (!url || nclients < 1 || ncalls < 1 || nwarm < 0 || strlen(args) > 3000) {
		fprintf(stderr, "usage: httpbench -u URL [-c clients] [-n calls] [-w warmup] [-t tool] "
			"[-a args] [-H header] [-C cafile]\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)nclients);
	lat = calloc((size_t)nclients * (size_t)ncalls, sizeof(*lat));
	cl = calloc((size_t)nclients, sizeof(*cl));
	if (!lat || !cl)
		abort();
	for (int i = 0; i < nclients; i++) {
		struct client *c = &cl[i];
		c->h = curl_easy_init();
		curl_easy_setopt(c->h, CURLOPT_URL, url);
		curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
		curl_easy_setopt(c->h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(c->h, CURLOPT_HEADERDATA, c);
		curl_easy_setopt(c->h, CURLOPT_PRIVATE, c);
		curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
		curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 30000L);
		/* No "Expect: 100-continue" round trip on small bodies. */
		curl_easy_setopt(c->h, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
		if (cafile)
			curl_easy_setopt(c->h, CURLOPT_CAINFO, cafile);
		send_next(m, c);
	}
	while (running) {
		CURLMsg *msg;
		int left;
		curl_multi_perform(m, &running);
		while ((msg = curl_multi_info_read(m, &left))) {
			struct client *c;
			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			finished(m, c, msg->data.result);
		}
		curl_multi_perform(m, &running);
		if (running)
			curl_multi_poll(m, NULL, 0, 100, NULL);
		else
			for (int i = 0; i < nclients; i++)
				if (cl[i].step != S_DONE)
					running = 1;
		if (running && failures > 0) {
			int busy = 0;
			for (int i = 0; i < nclients; i++)
				busy += cl[i].step != S_DONE;
			if (!busy)
				break;
		}
	}
	if (nlat == 0) {
		fprintf(stderr, "httpbench: no call finished\n");
		return 1;
	}
	sort_latencies(lat, nlat);
	printf("%.0f %.0f %.0f\n", lat[nlat / 2], lat[nlat * 99 / 100],
	       nlat / ((t_last - t_first) / 1e6));
	for (int i = 0; i < nclients; i++) {
		curl_easy_cleanup(cl[i].h);
		curl_slist_free_all(cl[i].hdrs);
		free(cl[i].body);
	}
	curl_multi_cleanup(m);
	curl_global_cleanup();
	free(cl);
	free(lat);
	return failures ? 1 : 0;
}

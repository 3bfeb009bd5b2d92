/*
 * Fuzz target: HTTP request handling (src/transport/http.c over
 * libmicrohttpd, and the sessions behind it), through a real loopback TCP
 * connection to the front end started in-process, once, with a gateway
 * that has no upstreams.
 *
 * Input: the raw bytes a client sends on one connection (one request or
 * several, pipelined). Two tokens are replaced first, since no fuzzer can
 * guess them: "{P}" by the port (the Host check wants it) and "{S}" by the
 * id of a live session-era session the harness keeps.
 *
 * Each run: connect, write, turn the loop until the server has been quiet
 * for a few milliseconds, shut our writing side (an incomplete request is
 * then given up by the server), turn the loop until the server closes or
 * 200 ms pass, close with a reset (SO_LINGER 0: no TIME_WAIT, which would
 * use up the ephemeral ports at this rate).
 *
 * Invariants checked:
 *   - the process survives (ASan, UBSan, LeakSanitizer at exit);
 *   - whatever the server sends starts as an HTTP/1.x status line;
 *   - the server keeps answering: every 256 runs, an initialize and a ping
 *     in that session, each on a new connection, get "200" within 2 s.
 *
 * fuzz-flags: -max_len=8192 -dict=tests/fuzz/http.dict
 */
#include "fuzz.h"

#include "config/config.h"
#include "core/buf.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "pipeline/call.h"
#include "transport/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define QUIET_MS 3
#define CLOSE_WAIT_MS 200

/* Sessions the fuzzer opens idle out fast (swept every second), and there
 * is room for all of them: the harness's own initialize must never meet
 * the session cap. */
static const char config_json[] =
	"{\"mcpServers\":{},\"sluice\":{\"logLevel\":\"error\",\"http\":{"
	"\"maxBodyBytes\":65536,\"maxSessions\":100000,\"maxRequestsPerSession\":8,"
	"\"idleSessionTimeoutMs\":500,\"heartbeatMs\":1000}}}";

static struct {
	uv_loop_t *loop;
	struct sl_config *cfg;
	struct sl_gen *gen;       /* the config and its stages, for the life of the process */
	struct sl_gateway *gw;
	struct sl_http *http;
	uint16_t port;
	char sid[128];     /* the kept session, "" when it must be made again */
	uint64_t sid_used; /* ms */
	unsigned runs;
} F;

static uint16_t free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	ASSERT(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* After connect failed with err: true if that was an interruption and the
 * connection has been made since (errno says why not, else). */
static bool connected_after(int fd, int err)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(err);
	int r;

	if (err != EINTR)
		return false;
	while ((r = poll(&p, 1, 5000)) < 0 && errno == EINTR)
		;
	if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		return false;
	errno = err;
	return err == 0;
}

static int dial(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(F.port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	/* Closed with a reset, not a FIN: an orderly close leaves the pair of
	 * ports in TIME_WAIT for a minute, and at a few hundred runs a second
	 * (on a machine whose earlier tests left their own) the ephemeral
	 * ports run out and connect fails with EADDRNOTAVAIL. */
	struct linger rst = { .l_onoff = 1, .l_linger = 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT(fd >= 0);
	ASSERT(setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof(rst)) == 0);
	/* The kernel completes the handshake from the listen backlog. A
	 * signal (libFuzzer's timers) may interrupt the call: the connection
	 * then goes on by itself, and is waited for (connect(2), EINTR). */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && !connected_after(fd, errno)) {
		fprintf(stderr, "connect to the front end: %s\n", strerror(errno));
		abort();
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

/* Turns the loop and reads what the server sends into resp until the
 * server closes (returns true), or it has been quiet for quiet_ms, or
 * max_ms have passed. */
static bool pump(int fd, struct sl_buf *resp, int quiet_ms, int max_ms)
{
	uint64_t start = sl_now_ms(), last = start;
	char buf[4096];

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		uint64_t now;
		ssize_t k;

		uv_run(F.loop, UV_RUN_NOWAIT);
		poll(&pf, 1, 1);
		while ((k = read(fd, buf, sizeof(buf))) > 0) {
			if (sl_buf_append(resp, buf, (size_t)k) < 0) /* an endless stream: enough */
				return false;
			last = sl_now_ms();
		}
		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
			return true;
		now = sl_now_ms();
		if (now - last >= (uint64_t)quiet_ms || now - start >= (uint64_t)max_ms)
			return false;
	}
}

static void write_all(int fd, const char *p, size_t n)
{
	uint64_t end = sl_now_ms() + 2000;
	while (n > 0 && sl_now_ms() < end) {
		ssize_t k = write(fd, p, n);
		if (k > 0) {
			p += k;
			n -= (size_t)k;
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			return; /* the server closed on us: fine */
		} else {
			uv_run(F.loop, UV_RUN_NOWAIT);
		}
	}
}

/* One exchange on a new connection; the response is in resp. */
static void exchange(const char *req, size_t n, struct sl_buf *resp, int quiet_ms)
{
	int fd = dial();
	write_all(fd, req, n);
	if (!pump(fd, resp, quiet_ms, 2000)) {
		shutdown(fd, SHUT_WR);
		pump(fd, resp, CLOSE_WAIT_MS, CLOSE_WAIT_MS);
	}
	close(fd);
	if (resp->len)
		ASSERT(resp->len >= 9 && memcmp(resp->data, "HTTP/1.", 7) == 0);
}

static const char init_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"fuzz\",\"version\":\"1\"}}}";

/* A request the server must answer with 200; returns the response. */
static void must_answer(const char *method_json, const char *sid, struct sl_buf *resp)
{
	char *req = sl_printf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
			      "Content-Type: application/json\r\n"
			      "Accept: application/json, text/event-stream\r\n"
			      "%s%s%s"
			      "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
			      F.port, sid ? "Mcp-Session-Id: " : "", sid ? sid : "",
			      sid ? "\r\nMCP-Protocol-Version: 2025-11-25\r\n" : "",
			      strlen(method_json), method_json);
	exchange(req, strlen(req), resp, 1000);
	free(req);
	if (resp->len < 12 || memcmp(resp->data + 9, "200", 3) != 0) {
		fprintf(stderr, "the server no longer answers: %.*s\n", (int)resp->len,
			resp->data ? resp->data : "");
		abort();
	}
}

static void new_session(void)
{
	struct sl_buf resp;
	const char *h;
	size_t n;

	sl_buf_init(&resp, 1 << 20);
	must_answer(init_body, NULL, &resp);
	h = strcasestr(resp.data, "\r\nMcp-Session-Id: ");
	ASSERT(h);
	h += 18;
	n = strcspn(h, "\r\n");
	ASSERT(n > 0 && n < sizeof(F.sid));
	memcpy(F.sid, h, n);
	F.sid[n] = '\0';
	sl_buf_dispose(&resp);
	F.sid_used = sl_now_ms();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sl_err err;
	char state[] = "/tmp/sluice-fuzz-http-XXXXXX";

	signal(SIGPIPE, SIG_IGN);
	/* The pinning stage keeps its state under $XDG_STATE_HOME. */
	ASSERT(mkdtemp(state));
	setenv("XDG_STATE_HOME", state, 1);
	ASSERT(sl_config_parse("fuzz.json", config_json, sizeof(config_json) - 1, &F.cfg, &err) == 0);
	sl_log_set_level(SL_LOG_ERROR);
	if (sl_gen_new(F.cfg, NULL, sl_stages, sl_nstages, &F.gen, &err) < 0) {
		fprintf(stderr, "stages: %s\n", err.msg);
		abort();
	}
	F.loop = uv_default_loop();
	F.gw = sl_gateway_new(F.loop, F.gen);
	F.port = free_port();
	char *listen = sl_printf("127.0.0.1:%u", F.port);
	if (sl_http_start(F.loop, F.gw, F.cfg, listen, &F.http, &err) < 0) {
		fprintf(stderr, "http: %s\n", err.msg);
		abort();
	}
	free(listen);
	return 0;
}

/* The input with {P} and {S} replaced. */
static char *expand(const char *in, size_t n, size_t *outlen)
{
	struct sl_buf b;
	char port[8];
	size_t i = 0;

	snprintf(port, sizeof(port), "%u", F.port);
	sl_buf_init(&b, 2 * n + 4096);
	while (i < n) {
		const char *rep = NULL;
		if (i + 3 <= n && in[i] == '{' && in[i + 2] == '}')
			rep = in[i + 1] == 'P' ? port : in[i + 1] == 'S' ? F.sid : NULL;
		if (rep) {
			ASSERT(sl_buf_appends(&b, rep) == 0);
			i += 3;
		} else {
			ASSERT(sl_buf_append(&b, in + i, 1) == 0);
			i++;
		}
	}
	return sl_buf_take(&b, outlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sl_buf resp;
	size_t n;
	char *req;

	/* The kept session may have been deleted or have idled out. */
	if (memmem(data, size, "{S}", 3) &&
	    (!F.sid[0] || sl_now_ms() - F.sid_used > F.cfg->http.idle_timeout_ms / 2))
		new_session();
	req = expand((const char *)data, size, &n);
	if (memmem(data, size, "{S}", 3)) {
		F.sid_used = sl_now_ms();
		if (memmem(data, size, "DELETE", 6))
			F.sid[0] = '\0';
	}
	sl_buf_init(&resp, 1 << 20);
	exchange(req, n, &resp, QUIET_MS);
	sl_buf_dispose(&resp);
	free(req);

	if (++F.runs % 256 == 0) {
		new_session();
		sl_buf_init(&resp, 1 << 20);
		must_answer("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", F.sid, &resp);
		sl_buf_dispose(&resp);
	}
	return 0;
}

/* Unit tests of the gateway side of the sandbox protocol: frame headers
 * (src/sandbox/frame.c), sl_code_ident (src/sandbox/sandbox.c), and the
 * real program code (src/sandbox/program.c) driven with forged frames.
 *
 * No zygote runs: a hand-built struct sl_sandbox holds one prepared
 * worker slot whose fd is one end of a socketpair, and the test plays the
 * worker on the other end. requested = SL_POOL_MAX keeps request_workers
 * from touching the (absent, -1) control socket. No gateway either: the
 * program's host is a fake (below) that knows the servers in
 * harness.servers, refuses the tool "missing" and every other server, and
 * keeps each call it starts for the test to answer (the tool "now" is
 * answered inside the host's call, as a stage that denies at once does). */
#include "unit.h"

#include "core/common.h"
#include "core/json.h"
#include "sandbox/frame.h"
#include "sandbox/internal.h"
#include "sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ---- frame headers ------------------------------------------------------------ */

TEST(sandbox_frame_header_roundtrip)
{
	static const uint32_t kinds[] = { SL_FRAME_RUN, SL_FRAME_CALL, SL_FRAME_RESULT,
					  SL_FRAME_DONE, SL_FRAME_READY };
	static const uint32_t lens[] = { 0, 1, 255, 256, 0x01020304u, 1u << 20 };
	unsigned char h[SL_FRAME_HEADER];
	uint32_t kind, len;

	for (size_t i = 0; i < SL_COUNT(kinds); i++)
		for (size_t j = 0; j < SL_COUNT(lens); j++) {
			sl_frame_header(h, kinds[i], lens[j]);
			kind = len = 0xdeadbeef;
			CHECK(sl_frame_parse_header(h, &kind, &len, UINT32_MAX));
			CHECK_INT(kind, kinds[i]);
			CHECK_INT(len, lens[j]);
			/* exactly at the cap is allowed */
			CHECK(sl_frame_parse_header(h, &kind, &len, lens[j]));
		}
	/* little endian on the wire, whatever the host */
	sl_frame_header(h, SL_FRAME_DONE, 0x01020304u);
	CHECK(h[0] == 4 && h[1] == 0 && h[2] == 0 && h[3] == 0);
	CHECK(h[4] == 4 && h[5] == 3 && h[6] == 2 && h[7] == 1);
}

TEST(sandbox_frame_header_refuses)
{
	static const uint32_t bad[] = { 0, 6, 7, 0x100, 0xffffffffu };
	unsigned char h[SL_FRAME_HEADER];
	uint32_t kind, len;

	for (size_t i = 0; i < SL_COUNT(bad); i++) {
		sl_frame_header(h, bad[i], 2);
		CHECK(!sl_frame_parse_header(h, &kind, &len, UINT32_MAX));
	}
	/* over the cap by one, and far over */
	sl_frame_header(h, SL_FRAME_CALL, 257);
	CHECK(!sl_frame_parse_header(h, &kind, &len, 256));
	sl_frame_header(h, SL_FRAME_CALL, 100u << 20);
	CHECK(!sl_frame_parse_header(h, &kind, &len, 1u << 20));
	sl_frame_header(h, SL_FRAME_READY, 0xffffffffu);
	CHECK(!sl_frame_parse_header(h, &kind, &len, 256));
	CHECK(!sl_frame_parse_header(h, &kind, &len, 0));
	sl_frame_header(h, SL_FRAME_READY, 0);
	CHECK(sl_frame_parse_header(h, &kind, &len, 0));
}

/* ---- identifiers ------------------------------------------------------------- */

static bool ident_is(const char *name, const char *want)
{
	char out[64];
	sl_code_ident(name, out);
	if (strcmp(out, want) != 0) {
		printf("  sl_code_ident(\"%s\") = \"%s\", want \"%s\"\n", name, out, want);
		return false;
	}
	return true;
}

TEST(sandbox_code_ident)
{
	CHECK(ident_is("git-hub", "git_hub"));
	CHECK(ident_is("get-sum", "get_sum"));
	CHECK(ident_is("1password", "_1password"));
	CHECK(ident_is("class", "_class"));
	CHECK(ident_is("a.b", "a_b"));
	CHECK(ident_is("$ok_1", "$ok_1"));
	CHECK(ident_is("", "_"));
	/* more of the same rules */
	CHECK(ident_is("return", "_return"));
	CHECK(ident_is("classes", "classes"));
	CHECK(ident_is("9", "_9"));
	CHECK(ident_is("caf\xc3\xa9", "caf__"));
	CHECK(ident_is("a b/c", "a_b_c"));
}

/* ---- the program against a forged worker ------------------------------------------ */

/* ---- the fake host ------------------------------------------------------------------ */

#define FAKE_CALLS 8

/* A call the fake host started. */
struct sl_sandbox_call {
	struct sl_program *p;
	uint32_t id;
	char server[64], tool[64];
	char *args;        /* as JSON */
	bool cancelled;
};

struct harness {
	uv_loop_t loop;
	struct sl_sandbox sb;
	struct sl_sandbox_host host;
	const char *servers[4];  /* the fake host's servers, NULL-terminated */
	struct sl_sandbox_call *calls[FAKE_CALLS];
	int ncalls, cancels;
	int steps;
	char step_name[130]; /* server.tool of the last step */
	struct sl_program *p;
	int peer;          /* the worker's end; -1 once closed */
	int done_runs;
	struct sl_program *done_p;
	uint64_t done_at;  /* sl_now_us() when done ran */
	char *in;          /* bytes read from the gateway */
	size_t in_len;
};

static const char *fake_server(void *ctx, size_t i)
{
	struct harness *h = ctx;
	return i < SL_COUNT(h->servers) ? h->servers[i] : NULL;
}

/* git-hub lists two tools and, past the frame's budget, a flood of long
 * names; 1password lists none. */
static void fake_tools(void *ctx, const char *server, yyjson_mut_doc *d, yyjson_mut_val *keys)
{
	char name[201];
	if (strcmp(server, "git-hub") != 0)
		return;
	yyjson_mut_arr_add_str(d, keys, "get_x");
	yyjson_mut_arr_add_str(d, keys, "dup-name");
	memset(name, 'n', sizeof(name) - 1);
	name[200] = '\0';
	for (size_t i = 0; i < 1000; i++)
		yyjson_mut_arr_add_strcpy(d, keys, name);
}

static int fake_resolve(void *ctx, const char *server, const char *tool,
			struct sl_sandbox_tool *out, struct sl_err *err)
{
	struct harness *h = ctx;
	for (size_t i = 0; i < SL_COUNT(h->servers) && h->servers[i]; i++) {
		if (strcmp(h->servers[i], server) != 0)
			continue;
		if (strcmp(tool, "missing") == 0) {
			sl_err_set(err, "server '%s' has no tool '%s'", server, tool);
			return SL_ERR_NOT_FOUND;
		}
		out->server = h;
		out->server_name = h->servers[i];
		out->tool = tool;
		return SL_OK;
	}
	sl_err_set(err, "unknown server '%.100s'", server);
	return SL_ERR_NOT_FOUND;
}

/* Answers call c with the JSON value json (NULL: with error). */
static void fake_answer(struct sl_sandbox_call *c, const char *json, const char *error)
{
	yyjson_mut_doc *d = NULL;
	yyjson_mut_val *v = NULL;
	if (json) {
		yyjson_doc *j = yyjson_read(json, strlen(json), 0);
		d = yyjson_mut_doc_new(NULL);
		v = yyjson_val_mut_copy(d, yyjson_doc_get_root(j));
		yyjson_doc_free(j);
	}
	sl_program_call_done(c->p, c->id, d, v, error, error ? strlen(error) : 0);
}

static void fake_call(void *ctx, struct sl_program *p, uint32_t id, const struct sl_sandbox_tool *t,
		      yyjson_mut_doc *args, struct sl_sandbox_call **handle)
{
	struct harness *h = ctx;
	struct sl_sandbox_call *c = calloc(1, sizeof(*c));

	CHECK(t->server == h);
	CHECK(h->ncalls < FAKE_CALLS);
	c->p = p;
	c->id = id;
	snprintf(c->server, sizeof(c->server), "%s", t->server_name);
	snprintf(c->tool, sizeof(c->tool), "%s", t->tool);
	c->args = sl_json_write_mut_val(yyjson_mut_doc_get_root(args), NULL);
	yyjson_mut_doc_free(args);
	h->calls[h->ncalls++] = c;
	*handle = c;
	if (strcmp(t->tool, "now") == 0)
		fake_answer(c, "\"at once\"", NULL);
}

static void fake_cancel(void *ctx, struct sl_sandbox_call *c)
{
	struct harness *h = ctx;
	CHECK(!c->cancelled);
	c->cancelled = true;
	h->cancels++;
}

static void on_step(void *ctx, struct sl_program *p, const char *server, const char *tool)
{
	struct harness *h = ctx;
	h->steps++;
	snprintf(h->step_name, sizeof(h->step_name), "%s.%s", server, tool);
}

static void on_done(void *ctx, struct sl_program *p)
{
	struct harness *h = ctx;
	h->done_runs++;
	h->done_p = p;
	h->done_at = sl_now_us();
}

static void limits(struct sl_code_limits *l, uint64_t timeout_ms)
{
	sl_code_limits_default(l);
	l->timeout_ms = timeout_ms;
}

/* Starts a program with one forged worker slot; l may be NULL (defaults, 2 s). */
/* The first program of one of the sandbox's lists, or NULL. */
static struct sl_program *first(struct sl_list *l)
{
	return sl_program_of(sl_list_first(l));
}

static struct harness *h_start(const struct sl_code_limits *l)
{
	struct harness *h = calloc(1, sizeof(*h));
	int sv[2];

	signal(SIGPIPE, SIG_IGN);
	if (uv_loop_init(&h->loop) != 0)
		abort();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	h->peer = sv[1];
	fcntl(h->peer, F_SETFL, fcntl(h->peer, F_GETFL) | O_NONBLOCK);

	h->sb.loop = &h->loop;
	sl_list_init(&h->sb.queued);
	sl_list_init(&h->sb.waiting);
	sl_list_init(&h->sb.running);
	sl_map_init(&h->sb.owners);
	if (l)
		h->sb.lim = *l;
	else
		limits(&h->sb.lim, 2000);
	h->sb.ctl = -1;
	h->sb.zygote = -1;
	h->sb.ctl_open = true;
	h->sb.pool = 1;
	h->sb.max_running = 1;
	h->sb.max_queued = 1;
	h->sb.requested = SL_POOL_MAX; /* request_workers sends nothing */
	h->sb.next_id = 1;
	h->sb.nready = 1;
	h->sb.ready[0].fd = sv[0];
	h->sb.ready[0].pidfd = -1;
	h->sb.ready[0].pid = 0;

	h->servers[0] = "git-hub";
	h->servers[1] = "1password";
	h->host = (struct sl_sandbox_host){ h, fake_server, fake_resolve, fake_call, fake_cancel,
					    NULL, fake_tools };

	h->p = sl_program_start(&h->sb, &h->host, "return 1", 8, on_done, on_step, h);
	CHECK(h->p != NULL);
	/* The slot was handed out, nothing was asked of the (absent) zygote. */
	CHECK_INT(h->sb.nready, 0);
	CHECK_INT(h->sb.requested, SL_POOL_MAX);
	CHECK(first(&h->sb.running) == h->p);
	CHECK(sl_list_empty(&h->sb.waiting));
	return h;
}

/* Runs the loop without blocking for about ms; stops early once done ran
 * if until_done. */
static void pump(struct harness *h, int ms, bool until_done)
{
	uint64_t end = sl_now_us() + (uint64_t)ms * 1000;
	while (sl_now_us() < end) {
		uv_run(&h->loop, UV_RUN_NOWAIT);
		if (until_done && h->done_runs)
			return;
		poll(NULL, 0, 2);
	}
}

static void wait_done(struct harness *h, int ms)
{
	pump(h, ms, true);
}

static void put(struct harness *h, const void *data, size_t n)
{
	const char *c = data;
	uint64_t end = sl_now_us() + 2000000;
	while (n > 0 && sl_now_us() < end) {
		ssize_t k = write(h->peer, c, n);
		if (k > 0) {
			c += k;
			n -= (size_t)k;
		} else if (k < 0 && errno != EAGAIN && errno != EINTR) {
			break;
		} else {
			uv_run(&h->loop, UV_RUN_NOWAIT);
		}
	}
	CHECK_INT(n, 0);
}

static void send_raw(struct harness *h, uint32_t kind, uint32_t len, const char *payload,
		     size_t n)
{
	unsigned char hdr[SL_FRAME_HEADER];
	sl_frame_header(hdr, kind, len);
	put(h, hdr, sizeof(hdr));
	if (n)
		put(h, payload, n);
}

static void send_json(struct harness *h, uint32_t kind, const char *json)
{
	send_raw(h, kind, (uint32_t)strlen(json), json, strlen(json));
}

/* Sends CALL id of tool server.tool with no arguments. */
static void send_call(struct harness *h, int id, const char *server, const char *tool)
{
	char *json = sl_printf("{\"id\":%d,\"server\":\"%s\",\"tool\":\"%s\",\"args\":{}}", id,
			       server, tool);
	send_json(h, SL_FRAME_CALL, json);
	free(json);
}

/* Reads one frame the gateway sent within ms; the payload is malloc'd
 * (NUL-terminated), NULL if none came. */
static char *recv_frame(struct harness *h, uint32_t *kind, int ms)
{
	uint64_t end = sl_now_us() + (uint64_t)ms * 1000;
	for (;;) {
		if (h->in_len >= SL_FRAME_HEADER) {
			uint32_t len;
			if (!sl_frame_parse_header((unsigned char *)h->in, kind, &len, 64u << 20))
				return NULL;
			if (h->in_len >= SL_FRAME_HEADER + (size_t)len) {
				char *json = malloc((size_t)len + 1);
				memcpy(json, h->in + SL_FRAME_HEADER, len);
				json[len] = '\0';
				h->in_len -= SL_FRAME_HEADER + (size_t)len;
				memmove(h->in, h->in + SL_FRAME_HEADER + len, h->in_len);
				return json;
			}
		}
		if (sl_now_us() >= end || h->peer < 0)
			return NULL;
		uv_run(&h->loop, UV_RUN_NOWAIT);
		char buf[4096];
		ssize_t k = read(h->peer, buf, sizeof(buf));
		if (k > 0) {
			h->in = realloc(h->in, h->in_len + (size_t)k);
			memcpy(h->in + h->in_len, buf, (size_t)k);
			h->in_len += (size_t)k;
		} else if (k == 0) {
			return NULL;
		} else {
			poll(NULL, 0, 2);
		}
	}
}

/* Plays READY and reads the RUN frame; returns it parsed (caller frees). */
static yyjson_doc *greet(struct harness *h)
{
	uint32_t kind = 0;
	char *json;
	yyjson_doc *d = NULL;

	send_json(h, SL_FRAME_READY, "{\"boundaries\":0}");
	json = recv_frame(h, &kind, 2000);
	CHECK(json != NULL);
	if (json) {
		CHECK_INT(kind, SL_FRAME_RUN);
		d = yyjson_read(json, strlen(json), 0);
		CHECK(d != NULL);
	}
	free(json);
	CHECK_INT(h->done_runs, 0);
	return d;
}

static void greet_only(struct harness *h)
{
	yyjson_doc_free(greet(h));
}

static bool text_has(struct harness *h, const char *needle)
{
	const struct sl_program_result *r = sl_program_result(h->p);
	if (!r->text || !strstr(r->text, needle)) {
		printf("  result text \"%s\" lacks \"%s\"\n", r->text ? r->text : "(null)", needle);
		return false;
	}
	return true;
}

static bool kind_is(struct harness *h, const char *kind)
{
	const struct sl_program_result *r = sl_program_result(h->p);
	if (!r->kind || strcmp(r->kind, kind) != 0) {
		printf("  result kind %s, want %s (text \"%s\")\n", r->kind ? r->kind : "(null)",
		       kind, r->text ? r->text : "(null)");
		return false;
	}
	return true;
}

/* Checks done ran exactly once (also after more loop turns), frees the
 * program and everything else, and checks every handle was closed. */
static void h_end(struct harness *h)
{
	uint64_t end;
	if (h->done_runs)
		pump(h, 20, false);
	CHECK_INT(h->done_runs, 1);
	CHECK(h->done_p == h->p);
	if (!h->done_runs)
		sl_program_cancel(h->p);
	CHECK(sl_list_empty(&h->sb.running));
	sl_program_free(h->p);
	end = sl_now_us() + 2000000;
	while (uv_loop_alive(&h->loop) && sl_now_us() < end)
		uv_run(&h->loop, UV_RUN_NOWAIT);
	CHECK(!uv_loop_alive(&h->loop));
	if (h->peer >= 0)
		close(h->peer);
	for (int i = 0; i < h->ncalls; i++) {
		free(h->calls[i]->args);
		free(h->calls[i]);
	}
	CHECK_INT(uv_loop_close(&h->loop), 0);
	CHECK_INT(h->sb.owners.live, 0); /* each program's end let its caller go */
	sl_map_dispose(&h->sb.owners);
	free(h->in);
	free(h);
}

static void assert_crash(struct harness *h, const char *needle)
{
	const struct sl_program_result *r = sl_program_result(h->p);
	CHECK_INT(h->done_runs, 1);
	CHECK(!r->ok);
	CHECK(kind_is(h, "crash"));
	CHECK(text_has(h, needle));
}

TEST(sandbox_program_ok)
{
	struct harness *h = h_start(NULL);
	yyjson_doc *run = greet(h);
	yyjson_val *root = yyjson_doc_get_root(run), *servers, *seed, *v, *pair;
	int64_t ver = 0;
	size_t i, n;

	CHECK(yyjson_is_obj(root));
	CHECK(sl_json_int(root, "v", &ver) && ver == 1);
	CHECK_STR(sl_json_str(root, "code"), "return 1");
	/* the host's servers, as [raw, identifier, tools] */
	servers = sl_json_arr(root, "servers");
	CHECK(servers != NULL && yyjson_arr_size(servers) == 2);
	pair = yyjson_arr_get(servers, 0);
	CHECK(yyjson_arr_size(pair) == 3);
	CHECK_STR(yyjson_get_str(yyjson_arr_get(pair, 0)), "git-hub");
	CHECK_STR(yyjson_get_str(yyjson_arr_get(pair, 1)), "git_hub");
	v = yyjson_arr_get(pair, 2);
	CHECK_STR(yyjson_get_str(yyjson_arr_get(v, 0)), "get_x");
	CHECK_STR(yyjson_get_str(yyjson_arr_get(v, 1)), "dup-name");
	/* the flood stops at the frame's budget (each name counted at 6x + 3) */
	CHECK(yyjson_arr_size(v) == 2 + (SL_FRAME_KEYS_MAX - (5 * 6 + 3) - (8 * 6 + 3)) / (200 * 6 + 3));
	pair = yyjson_arr_get(servers, 1);
	CHECK_STR(yyjson_get_str(yyjson_arr_get(pair, 0)), "1password");
	CHECK_STR(yyjson_get_str(yyjson_arr_get(pair, 1)), "_1password");
	CHECK(yyjson_arr_size(yyjson_arr_get(pair, 2)) == 0);
	seed = sl_json_arr(root, "seed");
	CHECK(seed != NULL && yyjson_arr_size(seed) == 4);
	yyjson_arr_foreach(seed, i, n, v)
		CHECK(yyjson_is_uint(v) && yyjson_get_uint(v) <= UINT32_MAX);
	yyjson_doc_free(run);
	CHECK_INT(h->sb.boundaries, 0);

	send_json(h, SL_FRAME_DONE, "{\"ok\":true,\"value\":\"2\",\"console\":\"\"}");
	wait_done(h, 2000);
	CHECK_INT(h->done_runs, 1);
	if (h->done_runs) {
		const struct sl_program_result *r = sl_program_result(h->p);
		CHECK(r->ok);
		CHECK_STR(r->text, "2");
		CHECK_STR(r->console, "");
		CHECK(!r->console_cut);
		CHECK(!r->cancelled);
		CHECK_INT(r->calls, 0);
	}
	h_end(h);
}

/* The same exchange, READY and DONE in one write, then one byte at a time. */
TEST(sandbox_program_frames_split_and_joined)
{
	static const char ready[] = "{\"boundaries\":0}";
	static const char done[] = "{\"ok\":true,\"value\":\"joined\",\"console\":\"c\"}";
	unsigned char buf[256];
	size_t n = 0;
	struct harness *h = h_start(NULL);

	sl_frame_header(buf, SL_FRAME_READY, sizeof(ready) - 1);
	memcpy(buf + SL_FRAME_HEADER, ready, sizeof(ready) - 1);
	n = SL_FRAME_HEADER + sizeof(ready) - 1;
	sl_frame_header(buf + n, SL_FRAME_DONE, sizeof(done) - 1);
	memcpy(buf + n + SL_FRAME_HEADER, done, sizeof(done) - 1);
	n += SL_FRAME_HEADER + sizeof(done) - 1;
	put(h, buf, n);
	wait_done(h, 2000);
	CHECK(sl_program_result(h->p)->ok);
	CHECK_STR(sl_program_result(h->p)->text, "joined");
	CHECK_STR(sl_program_result(h->p)->console, "c");
	h_end(h);

	h = h_start(NULL);
	for (size_t i = 0; i < n; i++) {
		put(h, buf + i, 1);
		pump(h, 1, false);
	}
	wait_done(h, 2000);
	CHECK(sl_program_result(h->p)->ok);
	CHECK_STR(sl_program_result(h->p)->text, "joined");
	h_end(h);
}

TEST(sandbox_program_unknown_kind)
{
	struct harness *h = h_start(NULL);
	greet_only(h);
	send_json(h, 6, "{}");
	wait_done(h, 2000);
	assert_crash(h, "killed");
	h_end(h);

	/* kind 0 and 0xffffffff, before READY */
	h = h_start(NULL);
	send_json(h, 0, "{}");
	wait_done(h, 2000);
	assert_crash(h, "unknown kind");
	h_end(h);

	h = h_start(NULL);
	send_json(h, 0xffffffffu, "{}");
	wait_done(h, 2000);
	assert_crash(h, "unknown kind");
	h_end(h);
}

/* Kinds the gateway sends (RUN, RESULT) are out of turn from a worker. */
TEST(sandbox_program_gateway_kinds_from_worker)
{
	struct harness *h = h_start(NULL);
	greet_only(h);
	send_json(h, SL_FRAME_RESULT, "{\"id\":0,\"ok\":true,\"value\":1}");
	wait_done(h, 2000);
	assert_crash(h, "killed");
	h_end(h);

	h = h_start(NULL);
	greet_only(h);
	send_raw(h, SL_FRAME_RUN, 0, NULL, 0);
	wait_done(h, 2000);
	assert_crash(h, "killed");
	h_end(h);
}

TEST(sandbox_program_oversized_header)
{
	struct harness *h = h_start(NULL);
	uint64_t t0;
	greet_only(h);
	t0 = sl_now_us();
	/* a CALL of 100 MiB: only the header is ever sent */
	send_raw(h, SL_FRAME_CALL, 100u << 20, NULL, 0);
	wait_done(h, 3000);
	assert_crash(h, "size limit");
	CHECK(h->done_runs == 0 || h->done_at - t0 < 500000);
	h_end(h);

	/* a READY over its 256-byte cap */
	h = h_start(NULL);
	t0 = sl_now_us();
	send_raw(h, SL_FRAME_READY, 257, NULL, 0);
	wait_done(h, 3000);
	assert_crash(h, "size limit");
	CHECK(h->done_runs == 0 || h->done_at - t0 < 500000);
	h_end(h);

	/* a DONE one byte over (max_output + max_console) * 6 + 8192 */
	h = h_start(NULL);
	greet_only(h);
	send_raw(h, SL_FRAME_DONE,
		 (uint32_t)((h->sb.lim.max_output + h->sb.lim.max_console) * 6 + 8192 + 1), NULL, 0);
	wait_done(h, 3000);
	assert_crash(h, "size limit");
	h_end(h);
}

TEST(sandbox_program_done_before_ready)
{
	struct harness *h = h_start(NULL);
	uint32_t kind;
	send_json(h, SL_FRAME_DONE, "{\"ok\":true,\"value\":\"2\",\"console\":\"\"}");
	wait_done(h, 2000);
	assert_crash(h, "out of turn");
	/* no RUN was sent to a worker that never greeted */
	char *f = recv_frame(h, &kind, 50);
	CHECK(f == NULL);
	free(f);
	h_end(h);

	/* a CALL before READY too */
	h = h_start(NULL);
	send_json(h, SL_FRAME_CALL, "{\"id\":0,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}");
	wait_done(h, 2000);
	assert_crash(h, "out of turn");
	h_end(h);

	/* a second READY */
	h = h_start(NULL);
	greet_only(h);
	send_json(h, SL_FRAME_READY, "{\"boundaries\":0}");
	wait_done(h, 2000);
	assert_crash(h, "out of turn");
	h_end(h);
}

TEST(sandbox_program_malformed_json)
{
	static const char *bad_done[] = {
		"{not json",
		"",
		"[]",
		"{\"ok\":true,\"console\":\"\"}",                 /* no value */
		"{\"ok\":true,\"value\":2,\"console\":\"\"}",     /* value not text */
		"{\"ok\":true,\"value\":\"2\"}",                  /* no console */
		"{\"ok\":false,\"kind\":\"error\",\"console\":\"\"}", /* no error */
	};
	for (size_t i = 0; i < SL_COUNT(bad_done); i++) {
		struct harness *h = h_start(NULL);
		greet_only(h);
		send_json(h, SL_FRAME_DONE, bad_done[i]);
		wait_done(h, 2000);
		if (h->done_runs != 1 || !kind_is(h, "crash"))
			printf("  DONE payload #%zu: %s\n", i, bad_done[i]);
		assert_crash(h, "malformed answer");
		h_end(h);
	}

	/* a READY that is not JSON, or has no boundaries */
	struct harness *h = h_start(NULL);
	send_json(h, SL_FRAME_READY, "{\"boundaries\":");
	wait_done(h, 2000);
	assert_crash(h, "malformed greeting");
	h_end(h);

	h = h_start(NULL);
	send_json(h, SL_FRAME_READY, "{}");
	wait_done(h, 2000);
	assert_crash(h, "malformed greeting");
	h_end(h);
}

TEST(sandbox_program_call_out_of_sequence)
{
	static const char *bad_call[] = {
		"{\"id\":5,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}",
		"{\"id\":-1,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}",
		"{\"id\":1,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}",
		"{\"id\":\"0\",\"server\":\"s\",\"tool\":\"t\",\"args\":{}}",
		"{\"server\":\"s\",\"tool\":\"t\",\"args\":{}}",
		"{\"id\":0,\"tool\":\"t\",\"args\":{}}",          /* no server */
		"{\"id\":0,\"server\":\"s\",\"args\":{}}",        /* no tool */
		"{\"id\":0,\"server\":\"s\",\"tool\":\"t\",\"args\":[]}", /* args not an object */
		"{\"id\":0,\"server\":\"s\",\"tool\":\"t\",\"args\":{}",  /* not JSON */
	};
	for (size_t i = 0; i < SL_COUNT(bad_call); i++) {
		struct harness *h = h_start(NULL);
		greet_only(h);
		send_json(h, SL_FRAME_CALL, bad_call[i]);
		wait_done(h, 2000);
		if (h->done_runs != 1 || !kind_is(h, "crash"))
			printf("  CALL payload #%zu: %s\n", i, bad_call[i]);
		assert_crash(h, "malformed call");
		h_end(h);
	}
}

/* Expects a RESULT frame refusing call id with an error containing needle. */
static void expect_refusal(struct harness *h, int64_t id, const char *needle)
{
	uint32_t kind = 0;
	char *json = recv_frame(h, &kind, 2000);
	CHECK(json != NULL);
	if (!json)
		return;
	CHECK_INT(kind, SL_FRAME_RESULT);
	yyjson_doc *d = yyjson_read(json, strlen(json), 0);
	yyjson_val *root = yyjson_doc_get_root(d);
	int64_t got = -1;
	const char *err = sl_json_str(root, "error");
	CHECK(d != NULL);
	CHECK(sl_json_int(root, "id", &got) && got == id);
	CHECK(yyjson_is_false(yyjson_obj_get(root, "ok")));
	CHECK(err != NULL && strstr(err, needle) != NULL);
	if (!err || !strstr(err, needle))
		printf("  RESULT %s lacks \"%s\"\n", json, needle);
	yyjson_doc_free(d);
	free(json);
}

TEST(sandbox_program_call_unknown_server)
{
	struct harness *h = h_start(NULL);
	greet_only(h);
	send_json(h, SL_FRAME_CALL, "{\"id\":0,\"server\":\"nope\",\"tool\":\"t\",\"args\":{}}");
	expect_refusal(h, 0, "nope");
	pump(h, 20, false);
	CHECK_INT(h->done_runs, 0);
	/* the next id is 1, and it is refused the same way */
	send_json(h, SL_FRAME_CALL, "{\"id\":1,\"server\":\"also-nope\",\"tool\":\"t\",\"args\":{\"x\":1}}");
	expect_refusal(h, 1, "also-nope");
	pump(h, 20, false);
	CHECK_INT(h->done_runs, 0);

	send_json(h, SL_FRAME_DONE, "{\"ok\":true,\"value\":\"after\",\"console\":\"\"}");
	wait_done(h, 2000);
	CHECK_INT(h->done_runs, 1);
	CHECK(sl_program_result(h->p)->ok);
	CHECK_STR(sl_program_result(h->p)->text, "after");
	CHECK_INT(sl_program_result(h->p)->calls, 2);
	h_end(h);
}

/* Calls to server "s" are refused at once, so they never stay in
 * flight: the in-flight limit is reached first with max_inflight = 0 (the
 * first call is one too many), then with calls the host keeps. */
TEST(sandbox_program_call_limits)
{
	struct sl_code_limits l;
	struct harness *h;

	limits(&l, 2000);
	l.max_inflight = 0;
	h = h_start(&l);
	greet_only(h);
	send_json(h, SL_FRAME_CALL, "{\"id\":0,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}");
	wait_done(h, 2000);
	assert_crash(h, "call limits");
	h_end(h);

	/* max_calls = 2: the third call breaks the limit */
	limits(&l, 2000);
	l.max_calls = 2;
	h = h_start(&l);
	greet_only(h);
	send_json(h, SL_FRAME_CALL, "{\"id\":0,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}");
	expect_refusal(h, 0, "unknown server");
	send_json(h, SL_FRAME_CALL, "{\"id\":1,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}");
	expect_refusal(h, 1, "unknown server");
	pump(h, 20, false);
	CHECK_INT(h->done_runs, 0);
	send_json(h, SL_FRAME_CALL, "{\"id\":2,\"server\":\"s\",\"tool\":\"t\",\"args\":{}}");
	wait_done(h, 2000);
	assert_crash(h, "call limits");
	CHECK_INT(sl_program_result(h->p)->calls, 2);
	h_end(h);

	/* max_inflight = 2 with two calls the host keeps in flight: the third
	 * breaks the limit, and the two are cancelled */
	limits(&l, 2000);
	l.max_inflight = 2;
	h = h_start(&l);
	greet_only(h);
	for (int id = 0; id < 3; id++) {
		CHECK_INT(h->done_runs, 0);
		send_call(h, id, "git-hub", "held");
		pump(h, 20, false);
	}
	CHECK_INT(h->ncalls, 2);
	wait_done(h, 2000);
	assert_crash(h, "call limits");
	CHECK_INT(h->cancels, 2);
	h_end(h);
}

TEST(sandbox_program_worker_closes)
{
	struct harness *h = h_start(NULL);
	uint64_t t0;
	greet_only(h);
	t0 = sl_now_us();
	close(h->peer);
	h->peer = -1;
	wait_done(h, 3000);
	assert_crash(h, "without an answer");
	/* the gateway waited for the zygote's report (about 1 s), then gave up */
	CHECK(h->done_runs == 0 || (h->done_at - t0 >= 900000 && h->done_at - t0 < 1800000));
	h_end(h);

	/* closed before READY */
	h = h_start(NULL);
	close(h->peer);
	h->peer = -1;
	wait_done(h, 3000);
	assert_crash(h, "without an answer");
	h_end(h);

	/* the zygote's report arrives while waiting: classified by status */
	h = h_start(NULL);
	greet_only(h);
	close(h->peer);
	h->peer = -1;
	pump(h, 50, false);
	CHECK_INT(h->done_runs, 0);
	sl_program_exited(h->p, 9); /* killed by SIGKILL, as waitpid reports it */
	CHECK_INT(h->done_runs, 1);
	assert_crash(h, "signal 9");
	h_end(h);
}

TEST(sandbox_program_done_kinds)
{
	static const struct {
		const char *kind_json;
		const char *want;
	} cases[] = {
		{ "\"bogus\"", "error" },
		{ "\"\"", "error" },
		{ "5", "error" },
		{ "null", "error" },
		{ NULL, "error" },          /* no kind at all */
		{ "\"ok\"", "error" },
		{ "\"cancelled\"", "error" }, /* the gateway's own kind, not the worker's */
		{ "\"syntax\"", "syntax" },
		{ "\"memory\"", "memory" },
		{ "\"crash\"", "crash" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		struct harness *h = h_start(NULL);
		char *json = cases[i].kind_json
			? sl_printf("{\"ok\":false,\"kind\":%s,\"error\":\"boom\",\"console\":\"log\"}",
				    cases[i].kind_json)
			: sl_strdup("{\"ok\":false,\"error\":\"boom\",\"console\":\"log\"}");
		greet_only(h);
		send_json(h, SL_FRAME_DONE, json);
		wait_done(h, 2000);
		CHECK_INT(h->done_runs, 1);
		if (!kind_is(h, cases[i].want))
			printf("  DONE: %s\n", json);
		CHECK(!sl_program_result(h->p)->ok);
		CHECK_STR(sl_program_result(h->p)->text, "boom");
		CHECK_STR(sl_program_result(h->p)->console, "log");
		free(json);
		h_end(h);
	}
}

TEST(sandbox_program_deadline)
{
	struct sl_code_limits l;
	struct harness *h;
	uint64_t t0;

	limits(&l, 300);
	t0 = sl_now_us();
	h = h_start(&l);
	greet_only(h);
	wait_done(h, 3000);
	CHECK_INT(h->done_runs, 1);
	CHECK(kind_is(h, "timeout"));
	CHECK(text_has(h, "300 ms"));
	/* the worker's own deadline gets a grace of 250 ms before the kill */
	CHECK(h->done_runs == 0 || (h->done_at - t0 >= 300000 && h->done_at - t0 < 1500000));
	h_end(h);

	/* also when the worker never says READY */
	t0 = sl_now_us();
	h = h_start(&l);
	wait_done(h, 3000);
	CHECK_INT(h->done_runs, 1);
	CHECK(kind_is(h, "timeout"));
	CHECK(h->done_runs == 0 || h->done_at - t0 < 1500000);
	h_end(h);
}

TEST(sandbox_program_cancel)
{
	struct harness *h = h_start(NULL);
	greet_only(h);
	sl_program_cancel(h->p);
	CHECK_INT(h->done_runs, 1);
	CHECK(kind_is(h, "cancelled"));
	CHECK(sl_program_result(h->p)->cancelled);
	/* a late DONE changes nothing (the gateway's end is closed: the write
	 * may fail, which is fine) */
	{
		unsigned char hdr[SL_FRAME_HEADER];
		sl_frame_header(hdr, SL_FRAME_DONE, 2);
		(void)!write(h->peer, hdr, sizeof(hdr));
		(void)!write(h->peer, "{}", 2);
	}
	pump(h, 50, false);
	sl_program_cancel(h->p);
	CHECK(kind_is(h, "cancelled"));
	h_end(h);
}

/* A program started besides the harness's own. */
struct other {
	struct sl_program *p;
	int done_runs;
	uint64_t done_at;
};

static void on_other_done(void *ctx, struct sl_program *p)
{
	struct other *o = ctx;
	o->done_runs++;
	o->done_at = sl_now_us();
}

static void other_start(struct harness *h, struct other *o)
{
	memset(o, 0, sizeof(*o));
	o->p = sl_program_start(&h->sb, &h->host, "return 2", 8, on_other_done, NULL, o);
}

/* A program of caller owner. */
static void owned_start(struct harness *h, struct other *o, const char *owner)
{
	struct sl_sandbox_host host = h->host;
	char copy[16];
	memset(o, 0, sizeof(*o));
	snprintf(copy, sizeof(copy), "%s", owner);
	host.owner = copy; /* borrowed only by the start */
	o->p = sl_program_start(&h->sb, &host, "return 2", 8, on_other_done, NULL, o);
}

static bool queued_is(struct harness *h, struct sl_program *const *want, size_t n)
{
	struct sl_list *l;
	size_t i = 0;
	sl_list_each(l, &h->sb.queued)
		if (i >= n || sl_program_of(l) != want[i++])
			return false;
	return i == n;
}

/* Issue 32, finding 12: codeMode.maxConcurrentPerCaller 1 and
 * maxQueuedPerCaller 2, 3 slots and 4 places in the queue. A caller at its
 * share waits though a slot is free, one more of its programs is refused as
 * busy naming the per-caller limit, another caller's program runs at once,
 * and a freed slot goes to the caller holding the fewest. */
TEST(sandbox_admission_per_caller)
{
	struct sl_code_limits l;
	struct harness *h;
	struct other a1, a2, a3, a4, b1, b2;
	const struct sl_program_result *r;

	limits(&l, 20000);
	h = h_start(&l); /* its own program (no caller) holds a slot */
	h->sb.max_running = 3;
	h->sb.max_queued = 4;
	h->sb.caller_running = 1;
	h->sb.caller_queued = 2;
	greet_only(h);

	owned_start(h, &a1, "alice");
	CHECK_INT(h->sb.nslots, 2);
	owned_start(h, &a2, "alice");
	owned_start(h, &a3, "alice");
	CHECK_INT(h->sb.nslots, 2); /* a slot is free, but not for alice */
	CHECK(queued_is(h, (struct sl_program *[]){ a2.p, a3.p }, 2));
	owned_start(h, &a4, "alice");
	pump(h, 20, false);
	CHECK_INT(a4.done_runs, 1);
	r = sl_program_result(a4.p);
	CHECK_STR(r->kind, "busy");
	CHECK(strstr(r->text, "full for this caller: 1 of its programs running "
			      "(sluice.codeMode.maxConcurrentPerCaller) and 2 waiting "
			      "(sluice.codeMode.maxQueuedPerCaller)") != NULL);

	/* bob is under his share: the free slot is his at once */
	owned_start(h, &b1, "bob");
	CHECK_INT(h->sb.nslots, 3);
	owned_start(h, &b2, "bob");
	CHECK(queued_is(h, (struct sl_program *[]){ a2.p, a3.p, b2.p }, 3));

	/* alice's slot comes free: her oldest waiter takes it */
	sl_program_cancel(a1.p);
	CHECK(queued_is(h, (struct sl_program *[]){ a3.p, b2.p }, 2));
	CHECK_INT(h->sb.nslots, 3);
	/* the caller-less program ends: both callers are at their share, the
	 * slot stays free */
	sl_program_cancel(h->p);
	CHECK_INT(h->sb.nslots, 2);
	CHECK(queued_is(h, (struct sl_program *[]){ a3.p, b2.p }, 2));
	/* bob's ends: his waiter goes */
	sl_program_cancel(b1.p);
	CHECK(queued_is(h, (struct sl_program *[]){ a3.p }, 1));
	CHECK_INT(h->sb.nslots, 2);

	sl_program_cancel(a2.p);
	sl_program_cancel(b2.p);
	CHECK_INT(h->sb.nslots, 1); /* a3 */
	sl_program_cancel(a3.p);
	CHECK_INT(h->sb.nslots, 0);
	CHECK_INT(h->sb.nqueued, 0);
	CHECK_INT(h->sb.owners.live, 0);
	sl_program_free(a1.p);
	sl_program_free(a2.p);
	sl_program_free(a3.p);
	sl_program_free(a4.p);
	sl_program_free(b1.p);
	sl_program_free(b2.p);
	h_end(h);
}

/* codeMode.maxConcurrent 1, maxQueued 3: one runs, three wait (without a
 * clock), the next is refused as busy at once; cancelled waiters leave the
 * queue (from its middle and its tail); each end admits the oldest waiter,
 * whose own clock starts then. */
TEST(sandbox_admission_queue)
{
	struct sl_code_limits l;
	struct harness *h;
	struct other a, b, c, busy, e;
	const struct sl_program_result *r;
	uint64_t t0;

	limits(&l, 300);
	t0 = sl_now_us();
	h = h_start(&l);
	h->sb.max_queued = 3;
	greet_only(h);

	other_start(h, &a);
	other_start(h, &b);
	other_start(h, &c);
	CHECK(first(&h->sb.queued) == a.p);
	CHECK_INT(h->sb.nqueued, 3);
	CHECK_INT(h->sb.nslots, 1);
	other_start(h, &busy);
	CHECK_INT(busy.done_runs, 0); /* never inside sl_program_start */
	pump(h, 20, false);
	CHECK_INT(busy.done_runs, 1);
	r = sl_program_result(busy.p);
	CHECK(!r->ok);
	CHECK_STR(r->kind, "busy");
	CHECK(strstr(r->text, "1 programs running (sluice.codeMode.maxConcurrent) and 3 waiting "
			      "(sluice.codeMode.maxQueued)") != NULL);
	CHECK_INT(h->sb.nqueued, 3);
	CHECK_INT(a.done_runs + b.done_runs + c.done_runs, 0);

	/* cancelled while queued, from the middle and then the tail: they leave
	 * the queue, and a new one goes behind the oldest */
	sl_program_cancel(b.p);
	sl_program_cancel(c.p);
	CHECK_INT(b.done_runs + c.done_runs, 2);
	CHECK(sl_program_result(b.p)->cancelled && sl_program_result(c.p)->cancelled);
	CHECK_INT(h->sb.nqueued, 1);
	other_start(h, &e);
	CHECK(first(&h->sb.queued) == a.p &&
	      sl_list_first(&h->sb.queued)->next == sl_list_last(&h->sb.queued) &&
	      sl_program_of(sl_list_last(&h->sb.queued)) == e.p);
	CHECK_INT(h->sb.nqueued, 2);

	/* the running one times out; a gets the slot (no worker is ready: it
	 * waits for the zygote's) and its clock starts only now */
	wait_done(h, 3000);
	CHECK(kind_is(h, "timeout"));
	CHECK(first(&h->sb.queued) == e.p);
	CHECK(first(&h->sb.waiting) == a.p);
	CHECK_INT(h->sb.nslots, 1);
	CHECK_INT(a.done_runs, 0);
	while ((a.done_runs == 0 || e.done_runs == 0) && sl_now_us() - t0 < 5000000)
		pump(h, 20, false);
	CHECK_INT(a.done_runs, 1);
	CHECK_STR(sl_program_result(a.p)->kind, "timeout");
	CHECK(a.done_at - h->done_at >= 300000);
	/* then e, after a */
	CHECK_INT(e.done_runs, 1);
	CHECK_STR(sl_program_result(e.p)->kind, "timeout");
	CHECK(e.done_at - a.done_at >= 300000);
	CHECK_INT(h->sb.nslots, 0);
	CHECK_INT(h->sb.nqueued, 0);
	CHECK(sl_list_empty(&h->sb.waiting) && sl_list_empty(&h->sb.queued));

	sl_program_free(a.p);
	sl_program_free(b.p);
	sl_program_free(c.p);
	sl_program_free(busy.p);
	sl_program_free(e.p);
	h_end(h);
}

TEST(sandbox_program_require_boundaries)
{
	struct harness *h = h_start(NULL);
	uint32_t kind;
	h->sb.require = 1; /* the lowest boundary bit; the worker reports none */
	send_json(h, SL_FRAME_READY, "{\"boundaries\":0}");
	wait_done(h, 2000);
	CHECK_INT(h->done_runs, 1);
	CHECK(kind_is(h, "crash"));
	CHECK(text_has(h, "requires boundaries"));
	char *f = recv_frame(h, &kind, 50);
	CHECK(f == NULL); /* no RUN to a worker without the boundary */
	free(f);
	h_end(h);
}


/* ---- the host interface ---------------------------------------------------------- */

/* A program with limits l (NULL: defaults) past READY and RUN. */
static struct harness *h_running(const struct sl_code_limits *l)
{
	struct harness *h = h_start(l);
	greet_only(h);
	return h;
}

/* Reads one RESULT frame; returns it parsed (caller frees), checking its id. */
static yyjson_doc *recv_result(struct harness *h, int64_t id)
{
	uint32_t kind = 0;
	char *json = recv_frame(h, &kind, 2000);
	yyjson_doc *d;
	int64_t got = -1;

	CHECK(json != NULL);
	if (!json)
		return NULL;
	CHECK_INT(kind, SL_FRAME_RESULT);
	d = yyjson_read(json, strlen(json), 0);
	CHECK(d != NULL);
	CHECK(sl_json_int(yyjson_doc_get_root(d), "id", &got) && got == id);
	free(json);
	return d;
}

static void finish_ok(struct harness *h, uint32_t calls)
{
	send_json(h, SL_FRAME_DONE, "{\"ok\":true,\"value\":\"end\",\"console\":\"\"}");
	wait_done(h, 2000);
	CHECK_INT(h->done_runs, 1);
	CHECK(sl_program_result(h->p)->ok);
	CHECK_INT(sl_program_result(h->p)->calls, calls);
}

/* A call the host answers later, one it answers inside its call, and one
 * it answers with an error: the program sees each as the RESULT of its id,
 * and every end is a progress step with the raw names the host resolved. */
TEST(sandbox_host_answers)
{
	struct harness *h = h_start(NULL);
	yyjson_doc *r;
	yyjson_val *root;

	greet_only(h);
	send_json(h, SL_FRAME_CALL,
		  "{\"id\":0,\"server\":\"git_hub\",\"tool\":\"get\",\"args\":{\"q\":1}}");
	pump(h, 20, false);
	/* resolved by identifier here too: the fake knows only raw names */
	CHECK_INT(h->ncalls, 0);
	r = recv_result(h, 0);
	CHECK(yyjson_is_false(yyjson_obj_get(yyjson_doc_get_root(r), "ok")));
	CHECK_STR(sl_json_str(yyjson_doc_get_root(r), "error"), "unknown server 'git_hub'");
	yyjson_doc_free(r);

	send_json(h, SL_FRAME_CALL,
		  "{\"id\":1,\"server\":\"git-hub\",\"tool\":\"get\",\"args\":{\"q\":1}}");
	pump(h, 20, false);
	CHECK_INT(h->ncalls, 1);
	if (h->ncalls != 1) {
		h_end(h);
		return;
	}
	CHECK_INT(h->calls[0]->id, 1);
	CHECK(h->calls[0]->p == h->p);
	CHECK_STR(h->calls[0]->server, "git-hub");
	CHECK_STR(h->calls[0]->tool, "get");
	CHECK_STR(h->calls[0]->args, "{\"q\":1}");
	CHECK_INT(h->steps, 0);
	fake_answer(h->calls[0], "{\"rows\":[1,2]}", NULL);
	CHECK_INT(h->steps, 1);
	CHECK_STR(h->step_name, "git-hub.get");
	r = recv_result(h, 1);
	root = yyjson_doc_get_root(r);
	CHECK(yyjson_is_true(yyjson_obj_get(root, "ok")));
	CHECK_INT(yyjson_arr_size(yyjson_obj_get(sl_json_obj(root, "value"), "rows")), 2);
	CHECK(yyjson_obj_get(root, "pausedMs") == NULL);
	yyjson_doc_free(r);

	/* answered before the host's call returned */
	send_call(h, 2, "1password", "now");
	r = recv_result(h, 2);
	CHECK_STR(sl_json_str(yyjson_doc_get_root(r), "value"), "at once");
	yyjson_doc_free(r);
	CHECK_INT(h->steps, 2);
	CHECK_STR(h->step_name, "1password.now");

	/* a failed tool: the program's await throws the host's message */
	send_call(h, 3, "git-hub", "put");
	pump(h, 20, false);
	CHECK_INT(h->ncalls, 3);
	if (h->ncalls == 3)
		fake_answer(h->calls[2], NULL, "denied by policy");
	expect_refusal(h, 3, "denied by policy");
	CHECK_INT(h->steps, 3);

	finish_ok(h, 4);
	CHECK_INT(h->cancels, 0);
	h_end(h);
}

/* resolve refuses: the program sees the host's message; nothing is called,
 * and a refusal is no step. */
TEST(sandbox_host_refuses)
{
	struct harness *h = h_running(NULL);
	send_call(h, 0, "git-hub", "missing");
	expect_refusal(h, 0, "server 'git-hub' has no tool 'missing'");
	send_call(h, 1, "GIT-HUB", "get");
	expect_refusal(h, 1, "unknown server 'GIT-HUB'");
	pump(h, 20, false);
	CHECK_INT(h->ncalls, 0);
	CHECK_INT(h->steps, 0);
	CHECK_INT(h->done_runs, 0);
	finish_ok(h, 2);
	h_end(h);
}

/* A cancelled program cancels its calls through the host, once each, and
 * only those still in flight; done runs at once. The same when the program
 * ends otherwise (its deadline) with a call in flight. */
TEST(sandbox_host_cancel_mid_call)
{
	struct sl_code_limits l;
	struct harness *h = h_running(NULL);

	send_call(h, 0, "git-hub", "a");
	send_call(h, 1, "git-hub", "b");
	pump(h, 20, false);
	CHECK_INT(h->ncalls, 2);
	if (h->ncalls == 2)
		fake_answer(h->calls[0], "1", NULL);
	sl_program_cancel(h->p);
	CHECK_INT(h->done_runs, 1);
	CHECK(sl_program_result(h->p)->cancelled);
	CHECK_INT(h->cancels, 1);
	CHECK(h->ncalls == 2 && !h->calls[0]->cancelled && h->calls[1]->cancelled);
	CHECK_INT(h->steps, 1);
	h_end(h);

	limits(&l, 300);
	h = h_running(&l);
	send_call(h, 0, "git-hub", "slow");
	wait_done(h, 3000);
	CHECK(kind_is(h, "timeout"));
	CHECK_INT(h->cancels, 1);
	CHECK(h->ncalls == 1 && h->calls[0]->cancelled);
	h_end(h);
}

/* While a call waits for a person the wall clock stops: a 300 ms program
 * whose call waited 500 ms is still running, and the next RESULT tells the
 * worker how long the pause was. */
TEST(sandbox_host_human_wait)
{
	struct sl_code_limits l;
	struct harness *h;
	yyjson_doc *r;
	int64_t paused = 0;

	limits(&l, 300);
	h = h_running(&l);
	send_call(h, 0, "git-hub", "ask");
	pump(h, 20, false);
	CHECK_INT(h->ncalls, 1);
	sl_program_call_human(h->p, true);
	pump(h, 500, false);
	CHECK_INT(h->done_runs, 0);
	sl_program_call_human(h->p, false);
	if (h->ncalls == 1)
		fake_answer(h->calls[0], "true", NULL);
	r = recv_result(h, 0);
	CHECK(sl_json_int(yyjson_doc_get_root(r), "pausedMs", &paused) && paused >= 450);
	yyjson_doc_free(r);
	finish_ok(h, 1);
	h_end(h);
}

/* A value over maxResultBytes reaches the program as a too_large error
 * naming the tool, never cut. */
TEST(sandbox_host_result_too_large)
{
	struct sl_code_limits l;
	struct harness *h;
	char *big;

	limits(&l, 2000);
	l.max_result = 100;
	h = h_running(&l);
	send_call(h, 0, "git-hub", "dump");
	pump(h, 20, false);
	CHECK_INT(h->ncalls, 1);
	big = calloc(1, 300);
	big[0] = '"';
	memset(big + 1, 'x', 200);
	big[201] = '"';
	if (h->ncalls == 1)
		fake_answer(h->calls[0], big, NULL);
	free(big);
	expect_refusal(h, 0, "too_large: the result of git-hub.dump");
	finish_ok(h, 1);
	h_end(h);
}

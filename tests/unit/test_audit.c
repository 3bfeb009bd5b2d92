/* Unit tests of src/stages/audit.c: canonical JSON, the argument hash, the
 * call and program lines, and the file the stage writes. */
#include "unit.h"
#include "fixture.h"
#include "core/digest.h"

#include "core/json.h"
#include "pipeline/call.h"
#include "stages/audit.h"
#include "stages/audit_sink.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <uv.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

extern const struct sl_stage sl_stage_audit;

static yyjson_mut_doc *mdoc(const char *json)
{
	yyjson_doc *d = yyjson_read(json, strlen(json), 0);
	yyjson_mut_doc *m = yyjson_doc_mut_copy(d, NULL);
	yyjson_doc_free(d);
	return m;
}

static char *canon_of(const char *json)
{
	yyjson_mut_doc *m = mdoc(json);
	char *s = sl_json_canonical(yyjson_mut_doc_get_root(m), NULL);
	yyjson_mut_doc_free(m);
	return s;
}

TEST(audit_canonical_sorts_keys_deeply)
{
	char *a = canon_of("{ \"b\": 1, \"a\": {\"z\": [3, {\"y\": 1, \"x\": 2}], \"c\": null} }");
	CHECK_STR(a, "{\"a\":{\"c\":null,\"z\":[3,{\"x\":2,\"y\":1}]},\"b\":1}");
	free(a);
	/* Prefix keys sort first; bytewise, so upper case before lower. */
	a = canon_of("{\"ab\":1,\"a\":2,\"B\":3}");
	CHECK_STR(a, "{\"B\":3,\"a\":2,\"ab\":1}");
	free(a);
	a = canon_of("{}");
	CHECK_STR(a, "{}");
	free(a);
}

TEST(audit_sha256_known_vector)
{
	char hex[65];
	sl_sha256_hex("abc", 3, hex);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static struct sl_upstream up_named = { .name = (char *)"github" };

static struct sl_call *call_with(const char *args_json, enum sl_origin origin)
{
	struct sl_call *c = sl_call_new(t_gen_bare(), origin, &up_named, "create_issue",
					mdoc(args_json), 1000, NULL, NULL, NULL);
	c->started_us = 1000000;
	c->finished_us = 1012345;
	return c;
}

static yyjson_doc *line_doc(char *line, size_t len)
{
	CHECK(len > 0 && line[len - 1] == '\n');
	CHECK(memchr(line, '\n', len - 1) == NULL);
	yyjson_doc *d = yyjson_read(line, len, 0);
	CHECK(d != NULL);
	return d;
}

TEST(audit_call_line_format_and_no_arguments)
{
	struct timespec ts = { .tv_sec = 1798761600, .tv_nsec = 987654321 }; /* 2027-01-01 */
	const char *res = "{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}";
	struct sl_call *c = call_with("{\"title\":\"SECRET-ARG-VALUE\",\"n\":1}", SL_ORIGIN_CODE);
	size_t len;
	char *line, canon_hash[65];
	yyjson_doc *d;
	yyjson_val *o;

	c->parent = 7;
	c->outcome = SL_OUTCOME_OK;
	c->result_doc = yyjson_read(res, strlen(res), 0);
	c->result = yyjson_doc_get_root(c->result_doc);
	line = sl_audit_call_line(c, &ts, &len);
	CHECK(strstr(line, "SECRET-ARG-VALUE") == NULL);
	CHECK(strstr(line, "hello") == NULL);
	d = line_doc(line, len);
	o = yyjson_doc_get_root(d);
	CHECK_STR(sl_json_str(o, "type"), "call");
	CHECK_STR(sl_json_str(o, "time"), "2027-01-01T00:00:00.987Z");
	CHECK(yyjson_is_null(yyjson_obj_get(o, "session")));
	CHECK_STR(sl_json_str(o, "server"), "github");
	CHECK_STR(sl_json_str(o, "tool"), "create_issue");
	CHECK_STR(sl_json_str(o, "origin"), "code");
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "program")), 7);
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "call")), c->id);
	CHECK(yyjson_get_real(yyjson_obj_get(o, "duration_ms")) == 12.345);
	CHECK_STR(sl_json_str(o, "outcome"), "ok");
	CHECK(yyjson_is_false(yyjson_obj_get(o, "is_error")));
	CHECK(yyjson_is_false(yyjson_obj_get(o, "cache_hit")));
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "bytes_in")), strlen("{\"n\":1,\"title\":\"SECRET-ARG-VALUE\"}"));
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "bytes_out")), strlen(res));
	sl_sha256_hex("{\"n\":1,\"title\":\"SECRET-ARG-VALUE\"}",
			    strlen("{\"n\":1,\"title\":\"SECRET-ARG-VALUE\"}"), canon_hash);
	CHECK_STR(sl_json_str(o, "args_sha256"), canon_hash);
	CHECK(yyjson_is_null(yyjson_obj_get(o, "subject")));
	CHECK(yyjson_is_null(yyjson_obj_get(o, "profile")));
	/* Never dispatched to a link of sluice's OAuth client: nobody's token. */
	CHECK(yyjson_is_null(yyjson_obj_get(o, "upstream_token")));
	CHECK_INT(yyjson_obj_size(o), 19);
	yyjson_doc_free(d);
	free(line);
	sl_call_free(c);
}

TEST(audit_call_hash_stable_across_key_order)
{
	struct timespec ts = { 0 };
	struct sl_call *a = call_with("{\"x\":{\"q\":[1,2],\"p\":\"v\"},\"a\":true}", SL_ORIGIN_DIRECT);
	struct sl_call *b = call_with("{\"a\":true,\"x\":{\"p\":\"v\",\"q\":[1,2]}}", SL_ORIGIN_ROUTER);
	struct sl_call *c = call_with("{\"a\":true,\"x\":{\"p\":\"w\",\"q\":[1,2]}}", SL_ORIGIN_ROUTER);
	size_t la, lb, lc;
	char *sa, *sb, *sc;
	yyjson_doc *da, *db, *dc;

	a->outcome = b->outcome = c->outcome = SL_OUTCOME_DENIED;
	sa = sl_audit_call_line(a, &ts, &la);
	sb = sl_audit_call_line(b, &ts, &lb);
	sc = sl_audit_call_line(c, &ts, &lc);
	da = line_doc(sa, la);
	db = line_doc(sb, lb);
	dc = line_doc(sc, lc);
	CHECK_STR(sl_json_str(yyjson_doc_get_root(da), "args_sha256"),
		  sl_json_str(yyjson_doc_get_root(db), "args_sha256"));
	CHECK(strcmp(sl_json_str(yyjson_doc_get_root(da), "args_sha256"),
		     sl_json_str(yyjson_doc_get_root(dc), "args_sha256")) != 0);
	CHECK(yyjson_is_null(yyjson_obj_get(yyjson_doc_get_root(da), "program")));
	CHECK_STR(sl_json_str(yyjson_doc_get_root(da), "origin"), "direct");
	CHECK_STR(sl_json_str(yyjson_doc_get_root(db), "origin"), "router");
	CHECK_STR(sl_json_str(yyjson_doc_get_root(da), "outcome"), "denied");
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(yyjson_doc_get_root(da), "bytes_out")), 0);
	CHECK_STR(sl_json_str(yyjson_doc_get_root(da), "time"), "1970-01-01T00:00:00.000Z");
	yyjson_doc_free(da);
	yyjson_doc_free(db);
	yyjson_doc_free(dc);
	free(sa);
	free(sb);
	free(sc);
	sl_call_free(a);
	sl_call_free(b);
	sl_call_free(c);
}

TEST(audit_program_line_format)
{
	struct timespec ts = { .tv_sec = 1798761600, .tv_nsec = 5000000 };
	size_t len;
	char *line = sl_audit_program_line(3, 9, NULL, "timeout", 4, 1500.25, 0, &ts, &len);
	yyjson_doc *d = line_doc(line, len);
	yyjson_val *o = yyjson_doc_get_root(d);
	CHECK_STR(sl_json_str(o, "type"), "program");
	CHECK_STR(sl_json_str(o, "time"), "2027-01-01T00:00:00.005Z");
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "session")), 9);
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "program")), 3);
	CHECK_STR(sl_json_str(o, "outcome"), "timeout");
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "calls")), 4);
	CHECK(yyjson_get_real(yyjson_obj_get(o, "duration_ms")) == 1500.25);
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "output_bytes")), 0);
	yyjson_doc_free(d);
	free(line);
}

TEST(audit_skill_line_format)
{
	struct timespec ts = { .tv_sec = 1798761600, .tv_nsec = 5000000 };
	size_t len;
	char *line = sl_audit_skill_line(7, 3, 9, NULL, "echo_twice", NULL, "ok", 2, 12.5, 11, &ts, &len);
	yyjson_doc *d = line_doc(line, len);
	yyjson_val *o = yyjson_doc_get_root(d);
	CHECK_STR(sl_json_str(o, "type"), "skill");
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "session")), 9);
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "program")), 7);
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "parent")), 3);
	CHECK_STR(sl_json_str(o, "skill"), "echo_twice");
	CHECK(yyjson_is_null(yyjson_obj_get(o, "owner")));
	CHECK_STR(sl_json_str(o, "outcome"), "ok");
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "calls")), 2);
	CHECK(yyjson_get_real(yyjson_obj_get(o, "duration_ms")) == 12.5);
	CHECK_INT(yyjson_get_uint(yyjson_obj_get(o, "output_bytes")), 11);
	yyjson_doc_free(d);
	free(line);
}

static yyjson_doc *section(const char *json)
{
	return yyjson_read(json, strlen(json), 0);
}

TEST(audit_writes_file_and_rejects_bad_config)
{
	char dir[] = "/tmp/sluice-audit-XXXXXX", path[128], buf[4096], *cfgjson;
	struct sl_err err = { 0 };
	struct sl_call *c = call_with("{\"k\":\"v\"}", SL_ORIGIN_DIRECT);
	struct sl_output prog = { .program = 1, .session_id = 2, .outcome = "ok", .calls = 1,
				  .duration_ms = 3.5, .output_bytes = 10 };
	void *st = NULL;
	yyjson_doc *s;
	FILE *f;
	size_t n;
	int lines = 0;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	cfgjson = sl_printf("{\"file\":\"%s\"}", path);
	s = section(cfgjson);
	CHECK(sl_stage_audit.init(NULL, NULL, yyjson_doc_get_root(s), &st, &err) == 0);
	c->outcome = SL_OUTCOME_FAILED;
	sl_stage_audit.finish(st, c);
	sl_stage_audit.output(st, &prog);
	sl_stage_audit.fini(st);
	st = NULL;
	f = fopen(path, "r");
	CHECK(f != NULL);
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	for (size_t i = 0; i < n; i++)
		lines += buf[i] == '\n';
	CHECK_INT(lines, 2);
	CHECK(strstr(buf, "\"type\":\"call\"") != NULL);
	CHECK(strstr(buf, "\"outcome\":\"failed\"") != NULL);
	CHECK(strstr(buf, "\"type\":\"program\"") != NULL);
	yyjson_doc_free(s);
	free(cfgjson);

	/* A file that cannot be opened is an init error. */
	s = section("{\"file\":\"/nonexistent-dir/x/audit.jsonl\"}");
	CHECK(sl_stage_audit.init(NULL, NULL, yyjson_doc_get_root(s), &st, &err) < 0);
	CHECK(strstr(err.msg, "cannot open") != NULL);
	yyjson_doc_free(s);
	s = section("{\"enabled\":\"yes\"}");
	CHECK(sl_stage_audit.init(NULL, NULL, yyjson_doc_get_root(s), &st, &err) < 0);
	yyjson_doc_free(s);
	s = section("{\"fiel\":\"x\"}");
	CHECK(sl_stage_audit.init(NULL, NULL, yyjson_doc_get_root(s), &st, &err) < 0);
	CHECK(strstr(err.msg, "fiel") != NULL);
	yyjson_doc_free(s);
	CHECK(st == NULL);
	/* Disabled: no state, so no line and no file. */
	s = section("{\"enabled\":false,\"file\":\"/nonexistent-dir/x\"}");
	CHECK(sl_stage_audit.init(NULL, NULL, yyjson_doc_get_root(s), &st, &err) == 0);
	CHECK(st == NULL);
	yyjson_doc_free(s);
	unlink(path);
	rmdir(dir);
	sl_call_free(c);
}

/* Without sluice.audit.file the lines go to audit.jsonl in the state
 * directory, never to stderr, where log lines are. */
TEST(audit_default_file_in_state_dir)
{
	char dir[] = "/tmp/sluice-unit-audit-XXXXXX";
	char *xdg = getenv("XDG_STATE_HOME") ? sl_strdup(getenv("XDG_STATE_HOME")) : NULL;
	char *home = getenv("HOME") ? sl_strdup(getenv("HOME")) : NULL;
	struct sl_err err;
	struct stat st;
	void *state = NULL;
	char *file;

	CHECK(mkdtemp(dir) != NULL);
	file = sl_printf("%s/sluice/audit.jsonl", dir);
	setenv("XDG_STATE_HOME", dir, 1);
	CHECK_INT(sl_stage_audit.init(NULL, NULL, NULL, &state, &err), 0);
	CHECK(state != NULL);
	CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0600);
	if (state)
		sl_stage_audit.fini(state);

	/* No state directory: a start-up error naming the way out. */
	state = NULL;
	unsetenv("XDG_STATE_HOME");
	unsetenv("HOME");
	CHECK(sl_stage_audit.init(NULL, NULL, NULL, &state, &err) < 0);
	CHECK(strstr(err.msg, "set sluice.audit.file") != NULL);
	CHECK(state == NULL);

	if (xdg)
		setenv("XDG_STATE_HOME", xdg, 1);
	if (home)
		setenv("HOME", home, 1);
	unlink(file);
	free(file);
	file = sl_printf("%s/sluice", dir);
	rmdir(file);
	rmdir(dir);
	free(file);
	free(xdg);
	free(home);
}

/* ---- the network sinks (stages/audit_sink.h) --------------------------------------- */

/* Bounded by records and by bytes; what does not fit counts as dropped,
 * what is taken off as sent or dropped, and the gauge follows. */
TEST(audit_queue_bounds_and_counts)
{
	struct sl_metrics *m = sl_metrics_new(10);
	struct audit_queue q;

	audit_queue_init(&q, SL_METRICS_SYSLOG, 2, 10);
	CHECK(audit_queue_put(&q, m, "abcd", 4));
	CHECK(audit_queue_put(&q, m, "efgh", 4));
	CHECK(!audit_queue_put(&q, m, "x", 1));          /* 2 records */
	CHECK_INT(m->audit_queued[SL_METRICS_SYSLOG], 2);
	CHECK_INT(m->audit_dropped[SL_METRICS_SYSLOG], 1);
	CHECK(memcmp(audit_queue_head(&q)->data, "abcd", 4) == 0);
	audit_queue_take(&q, true);
	CHECK(!audit_queue_put(&q, m, "1234567", 7));    /* 4 + 7 bytes > 10 */
	CHECK(audit_queue_put(&q, m, "123456", 6));      /* exactly 10 */
	CHECK_INT(q.bytes, 10);
	audit_queue_take(&q, false);
	CHECK(memcmp(audit_queue_head(&q)->data, "123456", 6) == 0);
	CHECK_INT(m->audit_sent[SL_METRICS_SYSLOG], 1);
	CHECK_INT(m->audit_dropped[SL_METRICS_SYSLOG], 3);
	CHECK_INT(m->audit_queued[SL_METRICS_SYSLOG], 1);
	CHECK_INT(m->audit_sent[SL_METRICS_OTLP] + m->audit_dropped[SL_METRICS_OTLP], 0);
	audit_queue_dispose(&q);
	CHECK_INT(q.n, 0);
	sl_metrics_unref(m);
}

static void on_keepalive(uv_timer_t *t)
{
}

/* Runs the loop until fd is readable (bounded: 500 turns of at most 10 ms).
 * The sinks' handles are unreferenced (they never keep sluice running), so
 * a referenced timer keeps the loop turning, as a gateway's listeners do. */
static bool loop_until_readable(int fd)
{
	uv_timer_t keep;
	bool ready = false;

	uv_timer_init(uv_default_loop(), &keep);
	uv_timer_start(&keep, on_keepalive, 10000, 0);
	for (int i = 0; i < 500 && !ready; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uv_run(uv_default_loop(), UV_RUN_NOWAIT);
		ready = poll(&p, 1, 10) > 0;
	}
	uv_close((uv_handle_t *)&keep, NULL);
	uv_run(uv_default_loop(), UV_RUN_NOWAIT);
	return ready;
}

/* One call through a stage whose syslog copy goes to url (the test's own
 * socket): the file's line, and what the socket got (into got). */
static void syslog_one(const char *url, int listen_fd, bool stream, char *got, size_t cap,
		       char *line, size_t line_cap)
{
	char dir[] = "/tmp/sluice-audit-XXXXXX", path[128], *cfg;
	struct sl_err err = { 0 };
	struct sl_call *c = call_with("{\"k\":\"v\"}", SL_ORIGIN_DIRECT);
	void *st = NULL;
	yyjson_doc *s;
	FILE *f;
	ssize_t n = 0;
	size_t ln;
	int fd = listen_fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	cfg = sl_printf("{\"file\":\"%s\",\"syslog\":{\"url\":\"%s\",\"facility\":\"local0\","
			"\"hostname\":\"h \\u0007x\"}}", path, url);
	s = section(cfg);
	CHECK(sl_stage_audit.init(NULL, NULL, yyjson_doc_get_root(s), &st, &err) == 0);
	c->outcome = SL_OUTCOME_OK;
	sl_stage_audit.finish(st, c);
	CHECK(loop_until_readable(listen_fd));
	if (stream)
		fd = accept(listen_fd, NULL, NULL);
	CHECK(fd >= 0);
	if (fd >= 0 && (!stream || loop_until_readable(fd)))
		n = recv(fd, got, cap - 1, MSG_DONTWAIT);
	got[n > 0 ? n : 0] = '\0';
	if (stream && fd >= 0)
		close(fd);
	sl_stage_audit.fini(st);
	f = fopen(path, "r");
	CHECK(f != NULL);
	ln = f ? fread(line, 1, line_cap - 1, f) : 0;
	line[ln] = '\0';
	if (f)
		fclose(f);
	yyjson_doc_free(s);
	free(cfg);
	unlink(path);
	rmdir(dir);
	sl_call_free(c);
}

static int loopback_socket(int type, int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(type == SOCK_DGRAM || listen(fd, 4) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &l) == 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* RFC 5424 over UDP: one datagram, <PRI>1 TIME HOST APP PROCID MSGID - MSG,
 * the header's HOSTNAME cut to printable ASCII, the MSG the file's line. */
TEST(audit_syslog_udp_message)
{
	char got[8192], line[8192], url[64], head[128];
	int port, fd = loopback_socket(SOCK_DGRAM, &port);
	const char *msg;

	snprintf(url, sizeof(url), "udp://127.0.0.1:%d", port);
	syslog_one(url, fd, false, got, sizeof(got), line, sizeof(line));
	close(fd);
	CHECK(strncmp(got, "<134>1 ", 7) == 0);         /* local0 (16) * 8 + informational (6) */
	snprintf(head, sizeof(head), " h__x sluice %d call - {", (int)getpid());
	CHECK(strstr(got, head) != NULL);
	msg = strstr(got, " call - ");
	CHECK(msg != NULL);
	/* The record's time is the header's TIMESTAMP. */
	CHECK(strncmp(got + 7, strstr(line, "\"time\":\"") + 8, 24) == 0);
	CHECK(msg && strlen(line) > 0 && strlen(msg + 8) == strlen(line) - 1 &&
	      strncmp(msg + 8, line, strlen(line) - 1) == 0);
}

/* Over TCP: RFC 6587 octet counting, "LEN SP MSG" with LEN the MSG's bytes. */
TEST(audit_syslog_tcp_octet_counting)
{
	char got[8192], line[8192], url[64], *sp;
	int port, fd = loopback_socket(SOCK_STREAM, &port);
	unsigned long len;

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", port);
	syslog_one(url, fd, true, got, sizeof(got), line, sizeof(line));
	close(fd);
	len = strtoul(got, &sp, 10);
	CHECK(*sp == ' ');
	CHECK_INT(len, strlen(sp + 1));
	CHECK(strncmp(sp + 1, "<134>1 ", 7) == 0);
	CHECK(strlen(sp + 1) > strlen(line));
	CHECK(strncmp(sp + 1 + strlen(sp + 1) - (strlen(line) - 1), line, strlen(line) - 1) == 0);
}

/* The stamp's second is formatted once per second: a later millisecond of
 * the same second, a new second and an earlier one all come out right. */
TEST(audit_stamp_each_millisecond_and_second)
{
	char out[40];

	audit_stamp(&(struct timespec){ 1764915461, 123456789 }, out);
	CHECK_STR(out, "2025-12-05T06:17:41.123Z");
	audit_stamp(&(struct timespec){ 1764915461, 7000000 }, out);
	CHECK_STR(out, "2025-12-05T06:17:41.007Z");
	audit_stamp(&(struct timespec){ 1764915462, 999999999 }, out);
	CHECK_STR(out, "2025-12-05T06:17:42.999Z");
	audit_stamp(&(struct timespec){ 0, 0 }, out);
	CHECK_STR(out, "1970-01-01T00:00:00.000Z");
}

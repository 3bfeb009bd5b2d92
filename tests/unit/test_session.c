/* Unit tests of the session's dispatch (src/gateway/session.c): a session
 * driven through a fake io (no sockets) over a gateway with no upstreams.
 * Each message the session sends is kept as the struct sl_out it came in,
 * so the tests see the kind, id and progress token a transport routes by. */
#include "unit.h"
#include "fixture.h"

#include "auth/caller.h"
#include "config/config.h"
#include "gateway/session.h"
#include "proto/mcp.h"
#include "stages/audit.h"

#include <stdio.h>
#include <stdlib.h>

#define MODERN_META "\"_meta\":{\"" SL_MCP_META_VERSION "\":\"" SL_MCP_MODERN "\",\"" \
	SL_MCP_META_CAPS "\":{}}"

struct sent {
	enum sl_out_kind kind;
	char id[32];          /* the id as JSON ("" for none) */
	bool error;
	yyjson_doc *doc;      /* the line, parsed */
};

struct fake {
	struct sent out[8];
	int n;
};

static void fake_send(void *ctx, struct sl_out *o)
{
	struct fake *f = ctx;
	struct sent *s = &f->out[f->n < 8 ? f->n++ : 7];
	char *id = o->id ? yyjson_val_write(o->id, 0, NULL) : NULL;
	yyjson_doc_free(s->doc);
	s->kind = o->kind;
	snprintf(s->id, sizeof(s->id), "%s", id ? id : "");
	s->error = o->error;
	sl_out_join(o);
	s->doc = yyjson_read(o->line, o->len, 0);
	free(id);
	free(o->line);
}

static const struct sl_session_io fake_io = { .send = fake_send };

/* A message with spliced bytes becomes the one line they make, and the
 * reference it held is dropped. */
TEST(session_out_join_makes_one_line)
{
	struct sl_blob *k = sl_blob_new(sl_strdup("[1,2,3]"), 7);
	struct sl_out o = { .line = sl_strdup("{\"a\":,\"b\":0}\n"), .len = 13,
			    .splice = sl_blob_ref(k), .splice_at = 5, .splice_off = 1,
			    .splice_len = 5 };

	sl_out_join(&o);
	CHECK(o.splice == NULL);
	CHECK_INT(k->refs, 1);
	CHECK_INT(o.len, 18);
	CHECK_STR(o.line, "{\"a\":1,2,3,\"b\":0}\n");
	sl_out_join(&o); /* nothing spliced: unchanged */
	CHECK_INT(o.len, 18);
	free(o.line);
	sl_blob_unref(k);
}

struct rig {
	uv_loop_t loop;
	struct sl_gen *gen;
	struct sl_gateway *gw;
	struct sl_session *s;
	struct fake f;
};

static void rig_init(struct rig *r)
{
	struct sl_err err;
	memset(r, 0, sizeof(*r));
	uv_loop_init(&r->loop);
	r->gen = t_gen("{\"mcpServers\":{}}", &err);
	CHECK(r->gen != NULL);
	r->gw = sl_gateway_new(&r->loop, r->gen);
	r->s = sl_session_new(r->gw, &fake_io, &r->f);
}

static void rig_dispose(struct rig *r)
{
	sl_session_close(r->s);
	sl_session_free(r->s);
	sl_gateway_free(r->gw);
	uv_run(&r->loop, UV_RUN_DEFAULT);
	uv_loop_close(&r->loop);
	sl_gen_unref(r->gen);
	for (int i = 0; i < 8; i++)
		yyjson_doc_free(r->f.out[i].doc);
}

/* Feeds one line and runs the loop until the session has answered. */
static struct sent *rig_send(struct rig *r, const char *line)
{
	int before = r->f.n;
	sl_session_input(r->s, line, strlen(line));
	for (int i = 0; i < 100 && r->f.n == before; i++)
		uv_run(&r->loop, UV_RUN_NOWAIT);
	return r->f.n > before ? &r->f.out[r->f.n - 1] : NULL;
}

static int64_t error_code(struct sent *s)
{
	yyjson_val *e = yyjson_obj_get(yyjson_doc_get_root(s->doc), "error");
	return e ? yyjson_get_sint(yyjson_obj_get(e, "code")) : 0;
}

/* s is an error response with code and, unless NULL, message. */
static void check_error(struct sent *s, int code, const char *message)
{
	CHECK(s && s->error);
	if (!s)
		return;
	CHECK_INT(error_code(s), code);
	if (message)
		CHECK_STR(sl_json_str(yyjson_obj_get(yyjson_doc_get_root(s->doc), "error"), "message"),
			  message);
}

static yyjson_val *result(struct sent *s)
{
	return yyjson_obj_get(yyjson_doc_get_root(s->doc), "result");
}

static void initialize(struct rig *r)
{
	struct sent *s = rig_send(r, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
				  "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}");
	CHECK(s && result(s));
	CHECK_STR(sl_json_str(result(s), "protocolVersion"), "2025-06-18");
}

TEST(session_request_before_initialize)
{
	struct rig r;
	rig_init(&r);
	struct sent *s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	CHECK(s != NULL);
	CHECK_INT(s->kind, SL_OUT_RESPONSE);
	CHECK_STR(s->id, "1");
	CHECK(s->error);
	CHECK_INT(error_code(s), SL_RPC_INVALID_PARAMS);
	rig_dispose(&r);
}

/* ping is the session era's: MCP 2026-07-28 removed it. */
TEST(session_ping_session_era_only)
{
	struct rig r;
	char why[200];
	rig_init(&r);
	/* ping needs no initialize. */
	struct sent *s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
	CHECK(s && result(s) && !s->error);
	CHECK_STR(s->id, "\"p\"");
	s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{" MODERN_META "}}");
	check_error(s, SL_RPC_METHOD_NOT_FOUND, "Method not found: 2026-07-28 has no ping");
	CHECK(sl_session_has_method("ping", false, why, sizeof(why)));
	CHECK(!sl_session_has_method("ping", true, why, sizeof(why)));
	CHECK_STR(why, "Method not found: 2026-07-28 has no ping");
	CHECK(!sl_session_has_method("no/such", true, why, sizeof(why)));
	CHECK_STR(why, "Method not found: no/such");
	CHECK(sl_session_has_method("tools/call", true, why, sizeof(why)));
	rig_dispose(&r);
}

TEST(session_unknown_method)
{
	struct rig r;
	rig_init(&r);
	initialize(&r);
	struct sent *s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no/such\"}");
	check_error(s, SL_RPC_METHOD_NOT_FOUND, "Method not found: no/such");
	rig_dispose(&r);
}

/* The table's eras: no method is 2026-07-28 only today; the session-era
 * methods are -32601 in a 2026-07-28 request, and initialize says why. */
TEST(session_wrong_era)
{
	struct rig r;
	rig_init(&r);
	struct sent *s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{"
				  MODERN_META ",\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}");
	check_error(s, SL_RPC_METHOD_NOT_FOUND, "Method not found: 2026-07-28 has no initialize");
	rig_dispose(&r);

	rig_init(&r);
	s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"logging/setLevel\",\"params\":{"
		     MODERN_META ",\"level\":\"info\"}}");
	check_error(s, SL_RPC_METHOD_NOT_FOUND, "Method not found: 2026-07-28 has no logging/setLevel");
	rig_dispose(&r);

	/* The reverse: a session-era session has logging/setLevel, and
	 * server/discover is served in both eras. */
	rig_init(&r);
	initialize(&r);
	s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"logging/setLevel\",\"params\":"
		     "{\"level\":\"info\"}}");
	CHECK(s && result(s) && !s->error);
	s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"server/discover\"}");
	CHECK(s && result(s) && yyjson_is_arr(yyjson_obj_get(result(s), "supportedVersions")));
	s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{}}}");
	check_error(s, SL_RPC_INVALID_REQUEST, NULL);
	rig_dispose(&r);
}

TEST(session_tools_list_empty)
{
	struct rig r;
	rig_init(&r);
	initialize(&r);
	struct sent *s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}");
	CHECK(s && result(s));
	CHECK_INT(s->kind, SL_OUT_RESPONSE);
	CHECK_STR(s->id, "9");
	/* No server's tool; only the gateway's own (the governor's read_result). */
	yyjson_val *tools = yyjson_obj_get(result(s), "tools"), *t;
	size_t i, n;
	CHECK(yyjson_is_arr(tools));
	yyjson_arr_foreach(tools, i, n, t)
		CHECK_STR(sl_json_str(t, "name"), "read_result");
	/* 2026-07-28: a list result is cacheable for no time. */
	s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/list\",\"params\":{"
		     MODERN_META "}}");
	CHECK(s && result(s));
	CHECK_INT(yyjson_get_sint(yyjson_obj_get(result(s), "ttlMs")), 0);
	rig_dispose(&r);
}

/* A 2026-07-28 client on one session (stdio) whose first request was a
 * ping (-32601: that era has none): its first tools/list starts the
 * upstreams and is answered (it used to wait for a start that never came). */
TEST(session_modern_ping_then_tools_list)
{
	struct rig r;
	rig_init(&r);
	struct sent *s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{"
				  MODERN_META "}}");
	check_error(s, SL_RPC_METHOD_NOT_FOUND, NULL);
	CHECK(!r.gw->started);
	s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{"
		     MODERN_META "}}");
	CHECK(s && result(s));
	CHECK(s && strcmp(s->id, "2") == 0);
	CHECK(r.gw->started);
	rig_dispose(&r);
}

/* What a transport routes by: the id as the client wrote it (a big number
 * too), a null id for what cannot be parsed, notifications apart. */
TEST(session_out_kinds_and_ids)
{
	struct rig r;
	rig_init(&r);
	struct sent *s = rig_send(&r, "{\"jsonrpc\":\"2.0\",\"id\":12345678901234567,\"method\":\"ping\"}");
	CHECK(s && s->kind == SL_OUT_RESPONSE);
	CHECK_STR(s->id, "12345678901234567");
	s = rig_send(&r, "{not json");
	CHECK(s && s->kind == SL_OUT_RESPONSE && s->error);
	CHECK_STR(s->id, "");
	CHECK_INT(error_code(s), SL_RPC_PARSE_ERROR);
	initialize(&r);
	sl_session_list_changed(r.s, "tools");
	s = &r.f.out[r.f.n - 1];
	CHECK_INT(s->kind, SL_OUT_NOTIFICATION);
	CHECK_STR(s->id, "");
	CHECK_STR(sl_json_str(yyjson_doc_get_root(s->doc), "method"), "notifications/tools/list_changed");
	/* A notification from the client gets no answer. */
	int n = r.f.n;
	sl_session_input(r.s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 54);
	CHECK_INT(r.f.n, n);
	rig_dispose(&r);
}

/* Issue 31: every request is decided with its own caller. A session that
 * alice opened carries calls of requests admitted on other credentials (as
 * the HTTP transport admits each request on its own): the engine's stages
 * (here the policy, whose rule names bob) decide with the call's caller,
 * c->who, and the records name it; the session's caller plays no part. */
static void on_who_done(void *ctx, struct sl_call *c)
{
	*(enum sl_outcome *)ctx = c->outcome;
}

TEST(session_call_is_decided_with_the_requests_caller)
{
	static const struct sl_stage *const table[] = { &sl_stage_policy };
	static const char text[] = "{\"mcpServers\":{},\"sluice\":{\"policy\":{\"rules\":["
				   "{\"match\":\"db.drop\",\"who\":[\"sub:bob\"],\"action\":\"deny\"}]}}}";
	static const struct sl_config gcfg = { .call_timeout_ms = 100 };
	struct sl_upstream up = { .name = (char *)"db", .gcfg = &gcfg };
	struct sl_caller *alice = sl_caller_new("jwt"), *bob = sl_caller_new("jwt");
	yyjson_doc *tools = yyjson_read("{\"name\":\"drop\"}", 15, 0);
	yyjson_val *def = yyjson_doc_get_root(tools);
	struct sl_config *cfg = NULL;
	struct sl_gen *g = NULL;
	struct sl_err err;
	struct rig r;

	rig_init(&r);
	CHECK_INT(sl_config_parse("unit.json", text, strlen(text), &cfg, &err), SL_OK);
	CHECK_INT(sl_gen_new(cfg, NULL, table, SL_COUNT(table), &g, &err), SL_OK);
	sl_caller_set_subject(alice, "https://idp.example", "alice");
	sl_caller_set_subject(bob, "https://idp.example", "bob");
	sl_session_set_caller(r.s, alice);
	up.loop = &r.loop;
	up.tools.items = &def;
	up.tools.n = 1;

	for (int i = 0; i < 2; i++) {
		struct sl_caller *who = i == 0 ? bob : alice;
		enum sl_outcome outcome = SL_OUTCOME_PENDING;
		struct sl_call *c = sl_call_new(g, SL_ORIGIN_DIRECT, &up, "drop", NULL, 100, on_who_done,
						NULL, &outcome);
		struct timespec now = { 0 };
		size_t len;
		char *line, *subject;

		c->who = sl_caller_ref(who);
		sl_session_bind_call(r.s, c);
		sl_call_run(c);
		/* bob's request is denied in alice's session; alice's passes the
		 * policy (and fails at the server, which is not running). */
		CHECK_INT(outcome, i == 0 ? SL_OUTCOME_DENIED : SL_OUTCOME_FAILED);
		if (i == 0)
			CHECK(c->why && strstr(c->why, "denied by rule 1") != NULL);
		line = sl_audit_call_line(c, &now, &len);
		subject = sl_printf("\"subject\":\"%s\"", who->subject);
		CHECK(strstr(line, subject) != NULL);
		free(subject);
		free(line);
		CHECK(c->session_id == r.s->id);
		sl_call_free(c);
	}
	sl_gen_unref(g);
	sl_config_unref(cfg);
	yyjson_doc_free(tools);
	sl_caller_unref(alice);
	sl_caller_unref(bob);
	rig_dispose(&r);
}

/* What no request asks (notifications, relayed questions) is decided with
 * the session's caller: that is its latest request's, never more rights
 * than the latest credential (issue 32, finding 4); a caller of another
 * identity (which the transport refuses before) never replaces it. */
TEST(session_caller_is_its_latest_requests)
{
	static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	struct sl_caller *sre = sl_caller_new("jwt"), *plain = sl_caller_new("jwt");
	struct sl_caller *bob = sl_caller_new("jwt");
	char cred[SL_SHA256_HEX];
	struct rig r;

	rig_init(&r);
	sl_caller_set_subject(sre, "https://idp.example", "alice");
	sl_caller_add_group(sre, "sre");
	sl_caller_set_subject(plain, "https://idp.example", "alice");
	sl_caller_set_subject(bob, "https://idp.example", "bob");
	sl_caller_add_group(bob, "sre");
	sl_session_set_caller(r.s, sre);
	memcpy(cred, r.s->cred, sizeof(cred));
	CHECK(sl_caller_in_group(r.s->caller, "sre"));
	sl_session_input_from(r.s, plain, ping, strlen(ping));
	CHECK(r.s->caller == plain && !sl_caller_in_group(r.s->caller, "sre"));
	CHECK_STR(r.s->cred, cred);
	sl_session_input_from(r.s, bob, ping, strlen(ping));
	CHECK(r.s->caller == plain);
	sl_session_input_from(r.s, sre, ping, strlen(ping));
	CHECK(r.s->caller == sre);
	sl_caller_unref(sre);
	sl_caller_unref(plain);
	sl_caller_unref(bob);
	rig_dispose(&r);
}

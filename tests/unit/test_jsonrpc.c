/* Unit tests of src/proto/jsonrpc.c: classification, error codes, builders. */
#include "unit.h"

#include "proto/jsonrpc.h"

#include <stdio.h>
#include <stdlib.h>

/* Parses s; returns sl_msg_parse's result, with *code set (0 if unset). */
static int parse(struct sl_msg *m, const char *s, int *code, struct sl_err *e)
{
	*code = 0;
	e->msg[0] = '\0';
	return sl_msg_parse(m, s, strlen(s), code, e);
}

TEST(jsonrpc_request)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{\"a\":1}}",
			&code, &e), SL_OK);
	CHECK_INT(m.kind, SL_MSG_REQUEST);
	CHECK_STR(m.method, "tools/list");
	CHECK(yyjson_is_int(m.id) && yyjson_get_sint(m.id) == 7);
	CHECK(yyjson_is_obj(m.params));
	CHECK(m.result == NULL && m.error == NULL);
	sl_msg_dispose(&m);

	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\"}", &code, &e), SL_OK);
	CHECK_INT(m.kind, SL_MSG_REQUEST);
	CHECK_STR(yyjson_get_str(m.id), "abc");
	CHECK(m.params == NULL);
	sl_msg_dispose(&m);

	/* Negative and zero ids are integers too. */
	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"ping\"}", &code, &e), SL_OK);
	CHECK_INT(m.kind, SL_MSG_REQUEST);
	sl_msg_dispose(&m);
	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}", &code, &e), SL_OK);
	CHECK_INT(m.kind, SL_MSG_REQUEST);
	sl_msg_dispose(&m);
}

TEST(jsonrpc_notification)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &code, &e),
		  SL_OK);
	CHECK_INT(m.kind, SL_MSG_NOTIFICATION);
	CHECK_STR(m.method, "notifications/initialized");
	CHECK(m.id == NULL);
	sl_msg_dispose(&m);
}

TEST(jsonrpc_response)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}", &code, &e), SL_OK);
	CHECK_INT(m.kind, SL_MSG_RESPONSE);
	CHECK(yyjson_is_obj(m.result));
	CHECK(m.error == NULL);
	CHECK(m.method == NULL);
	sl_msg_dispose(&m);

	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32601,\"message\":\"no\"}}",
			&code, &e), SL_OK);
	CHECK_INT(m.kind, SL_MSG_RESPONSE);
	CHECK(yyjson_is_obj(m.error));
	CHECK(m.result == NULL);
	sl_msg_dispose(&m);

	/* A result may be any JSON value, even null. */
	CHECK_INT(parse(&m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":null}", &code, &e), SL_OK);
	CHECK_INT(m.kind, SL_MSG_RESPONSE);
	sl_msg_dispose(&m);
}

/* Expects failure with code; returns whether m.id was left set. */
static bool fails(const char *s, int want, const char *msg_part)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	bool has_id;
	CHECK_INT(parse(&m, s, &code, &e), SL_ERR_INVALID);
	CHECK_INT(code, want);
	CHECK(e.msg[0] != '\0');
	if (msg_part && !strstr(e.msg, msg_part)) {
		printf("  message \"%s\" lacks \"%s\"\n", e.msg, msg_part);
		CHECK(0);
	}
	has_id = m.id != NULL;
	sl_msg_dispose(&m);
	return has_id;
}

TEST(jsonrpc_invalid_json_is_parse_error)
{
	CHECK(!fails("{\"jsonrpc\":\"2.0\",", SL_RPC_PARSE_ERROR, "Parse error"));
	CHECK(!fails("not json", SL_RPC_PARSE_ERROR, NULL));
	CHECK(!fails("", SL_RPC_PARSE_ERROR, NULL));
	CHECK(!fails("{\"a\":1} trailing", SL_RPC_PARSE_ERROR, NULL));
}

TEST(jsonrpc_batch_and_non_object_invalid_request)
{
	CHECK(!fails("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", SL_RPC_INVALID_REQUEST,
		     "batch"));
	CHECK(!fails("[]", SL_RPC_INVALID_REQUEST, NULL));
	CHECK(!fails("42", SL_RPC_INVALID_REQUEST, NULL));
	CHECK(!fails("\"str\"", SL_RPC_INVALID_REQUEST, NULL));
	CHECK(!fails("null", SL_RPC_INVALID_REQUEST, NULL));
}

TEST(jsonrpc_wrong_version)
{
	/* The id is kept so the error can be answered to it. */
	CHECK(fails("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST,
		    "jsonrpc"));
	CHECK(fails("{\"id\":1,\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, "jsonrpc"));
	CHECK(fails("{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, NULL));
	CHECK(!fails("{\"jsonrpc\":\"2.0 \",\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, NULL));
}

TEST(jsonrpc_bad_ids)
{
	/* The bad id is not echoed back: m.id is NULL (answer with null). */
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, "id"));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, "id"));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, "id"));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST,
		     "id"));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, "id"));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", SL_RPC_INVALID_REQUEST, "id"));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}", SL_RPC_INVALID_REQUEST, NULL));
}

TEST(jsonrpc_bad_method_and_params)
{
	CHECK(fails("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", SL_RPC_INVALID_REQUEST, "method"));
	CHECK(fails("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":[1,2]}",
		    SL_RPC_INVALID_PARAMS, "params"));
	CHECK(fails("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":\"s\"}",
		    SL_RPC_INVALID_PARAMS, "params"));
	CHECK(fails("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":null}",
		    SL_RPC_INVALID_PARAMS, "params"));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":7}", SL_RPC_INVALID_PARAMS, NULL));
}

TEST(jsonrpc_bad_responses)
{
	CHECK(fails("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}",
		    SL_RPC_INVALID_REQUEST, NULL));
	CHECK(fails("{\"jsonrpc\":\"2.0\",\"id\":1}", SL_RPC_INVALID_REQUEST, NULL));
	CHECK(fails("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"oops\"}", SL_RPC_INVALID_REQUEST, NULL));
	CHECK(!fails("{\"jsonrpc\":\"2.0\",\"result\":{}}", SL_RPC_INVALID_REQUEST, NULL));
	CHECK(!fails("{\"jsonrpc\":\"2.0\"}", SL_RPC_INVALID_REQUEST, NULL));
}

static void check_error_line(yyjson_val *id, const char *want_id)
{
	size_t len = 0;
	char *s = sl_rpc_error_line(id, SL_RPC_METHOD_NOT_FOUND, "Method \"x\"\nnot found", &len);
	yyjson_doc *d;
	yyjson_val *r, *err;
	char *idtxt;

	CHECK(s != NULL);
	CHECK_INT(len, strlen(s));
	CHECK(len > 0 && s[len - 1] == '\n');
	CHECK(strchr(s, '\n') == s + len - 1); /* one line */
	d = yyjson_read(s, len, 0);
	CHECK(d != NULL);
	r = yyjson_doc_get_root(d);
	CHECK_STR(sl_json_str(r, "jsonrpc"), "2.0");
	idtxt = sl_json_write_val(yyjson_obj_get(r, "id"), NULL);
	CHECK_STR(idtxt, want_id);
	free(idtxt);
	err = sl_json_obj(r, "error");
	CHECK(err != NULL);
	CHECK(yyjson_get_sint(yyjson_obj_get(err, "code")) == SL_RPC_METHOD_NOT_FOUND);
	CHECK_STR(sl_json_str(err, "message"), "Method \"x\"\nnot found");
	CHECK(yyjson_obj_get(r, "result") == NULL);
	yyjson_doc_free(d);
	free(s);
}

TEST(jsonrpc_error_line)
{
	yyjson_doc *d = yyjson_read("[\"req-1\", 42, 9007199254740993]", 31, 0);
	yyjson_val *a = yyjson_doc_get_root(d);
	check_error_line(yyjson_arr_get(a, 0), "\"req-1\"");
	check_error_line(yyjson_arr_get(a, 1), "42");
	check_error_line(yyjson_arr_get(a, 2), "9007199254740993");
	check_error_line(NULL, "null");
	yyjson_doc_free(d);
}

TEST(jsonrpc_error_line_for_parsed_request)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	char *s;
	CHECK_INT(parse(&m, "{\"jsonrpc\":\"1.0\",\"id\":\"q\",\"method\":\"m\"}", &code, &e),
		  SL_ERR_INVALID);
	s = sl_rpc_error_line(m.id, code, e.msg, NULL);
	CHECK(strstr(s, "\"id\":\"q\"") != NULL);
	CHECK(strstr(s, "-32600") != NULL);
	free(s);
	sl_msg_dispose(&m);
}

TEST(jsonrpc_response_and_request_builders)
{
	yyjson_doc *d = yyjson_read("\"id-9\"", 6, 0);
	yyjson_mut_val *o, *params;
	yyjson_mut_doc *md = sl_rpc_response_new(yyjson_doc_get_root(d), &o);
	char *s;

	yyjson_mut_obj_add_val(md, o, "result", yyjson_mut_obj(md));
	s = sl_json_write_line(md, NULL);
	CHECK_STR(s, "{\"jsonrpc\":\"2.0\",\"id\":\"id-9\",\"result\":{}}\n");
	free(s);
	yyjson_mut_doc_free(md);
	yyjson_doc_free(d);

	md = sl_rpc_request_new("tools/call", 5, &params);
	yyjson_mut_obj_add_str(md, params, "name", "t");
	s = sl_json_write_line(md, NULL);
	CHECK_STR(s, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}\n");
	free(s);
	yyjson_mut_doc_free(md);

	md = sl_rpc_request_new("notifications/initialized", -1, &params);
	s = sl_json_write_line(md, NULL);
	CHECK_STR(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{}}\n");
	free(s);
	yyjson_mut_doc_free(md);

	md = sl_rpc_request_new("ping", 0, &params);
	s = sl_json_write_line(md, NULL);
	CHECK(strstr(s, "\"id\":0") != NULL);
	free(s);
	yyjson_mut_doc_free(md);
}

TEST(jsonrpc_big_integers_preserved)
{
	const char *in = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
			 "{\"n\":123456789012345678901234567890,\"u\":18446744073709551616,"
			 "\"neg\":-98765432109876543210}}";
	struct sl_msg m;
	struct sl_err e;
	int code;
	yyjson_mut_doc *md;
	yyjson_mut_val *o;
	char *s;

	CHECK_INT(parse(&m, in, &code, &e), SL_OK);
	/* Copied into a response and written out: the digits survive. */
	md = sl_rpc_response_new(m.id, &o);
	yyjson_mut_obj_add_val(md, o, "result", yyjson_val_mut_copy(md, m.params));
	s = sl_json_write_line(md, NULL);
	CHECK(strstr(s, "123456789012345678901234567890") != NULL);
	CHECK(strstr(s, "18446744073709551616") != NULL);
	CHECK(strstr(s, "-98765432109876543210") != NULL);
	free(s);
	yyjson_mut_doc_free(md);
	s = sl_json_write_val(m.params, NULL);
	CHECK(strstr(s, "\"n\":123456789012345678901234567890") != NULL);
	free(s);
	sl_msg_dispose(&m);
}

TEST(jsonrpc_dispose_twice_safe)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	CHECK_INT(parse(&m, "garbage", &code, &e), SL_ERR_INVALID);
	sl_msg_dispose(&m);
	sl_msg_dispose(&m);
	CHECK(m.doc == NULL);
}

/* sl_rpc_find_id: the id of a message too large to parse, from its edges. */
static const char *found_id(const char *head, const char *tail, char *buf, size_t n)
{
	yyjson_doc *d = sl_rpc_find_id(head, strlen(head), tail, strlen(tail));
	if (!d)
		return NULL;
	size_t len;
	char *s = sl_json_write_val(yyjson_doc_get_root(d), &len);
	snprintf(buf, n, "%s", s);
	free(s);
	yyjson_doc_free(d);
	return buf;
}

TEST(jsonrpc_find_id_edges)
{
	char b[64];
	/* The SDK writes the id last. */
	CHECK_STR(found_id("{\"method\":\"tools/call\",\"params\":{\"a\":\"xx",
			   "xx\"}},\"jsonrpc\":\"2.0\",\"id\":17}", b, sizeof(b)), "17");
	/* Others write it first. */
	CHECK_STR(found_id("{\"jsonrpc\":\"2.0\",\"id\":\"req-9\",\"method\":\"x\",\"params\":{\"a",
			   "aaaa\"}}", b, sizeof(b)), "\"req-9\"");
	/* An "id" nested in the arguments is not the message's id. */
	CHECK(found_id("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"arguments\":{\"id\":3",
		       "\"arguments\":{\"id\":7}}}", b, sizeof(b)) == NULL);
	CHECK(found_id("garbage", "more garbage", b, sizeof(b)) == NULL);
}

static void check_written(yyjson_mut_doc *d, const char *want)
{
	size_t len;
	char *s = yyjson_mut_write(d, 0, &len);
	CHECK_STR(s, want);
	free(s);
	yyjson_mut_doc_free(d);
}

/* The one envelope builder: any id type, written as it came. */
TEST(jsonrpc_envelope_ids)
{
	yyjson_doc *big = yyjson_read_opts((char *)"123456789012345678901234567890", 30,
					   SL_JSON_READ_FLAGS, NULL, NULL);
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;

	yyjson_mut_obj_add_str(d, sl_rpc_envelope(d, yyjson_mut_sint(d, 7), NULL), "result", "x");
	check_written(d, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"x\"}");
	d = yyjson_mut_doc_new(NULL);
	sl_rpc_envelope(d, yyjson_mut_str(d, "a-1"), "ping");
	check_written(d, "{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"method\":\"ping\"}");
	d = yyjson_mut_doc_new(NULL);
	sl_rpc_envelope(d, NULL, "notifications/initialized");
	check_written(d, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	d = sl_rpc_response_new(yyjson_doc_get_root(big), &o);
	sl_rpc_add_error(d, o, SL_RPC_INTERNAL_ERROR, "no", NULL);
	check_written(d, "{\"jsonrpc\":\"2.0\",\"id\":123456789012345678901234567890,"
			 "\"error\":{\"code\":-32603,\"message\":\"no\"}}");
	yyjson_doc_free(big);
}

/* A request whose params.arguments nest n arrays. */
static char *deep_request(size_t n)
{
	static const char pre[] = "{\"jsonrpc\":\"2.0\",\"id\":\"d1\",\"method\":\"tools/call\","
				  "\"params\":{\"name\":\"x\",\"arguments\":{\"a\":";
	size_t pl = sizeof(pre) - 1;
	char *s = malloc(pl + 2 * n + 4);
	memcpy(s, pre, pl);
	memset(s + pl, '[', n);
	memset(s + pl + n, ']', n);
	memcpy(s + pl + 2 * n, "}}}", 4);
	return s;
}

TEST(jsonrpc_depth_gate)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	/* root, params, arguments: three levels around the arrays. */
	char *at = deep_request(SL_JSON_DEPTH_MAX - 3), *over = deep_request(SL_JSON_DEPTH_MAX - 2);
	char *huge = deep_request(300000);

	CHECK_INT(parse(&m, at, &code, &e), SL_OK);
	CHECK(!m.deep);
	sl_msg_dispose(&m);
	for (int i = 0; i < 2; i++) {
		CHECK_INT(parse(&m, i ? huge : over, &code, &e), SL_ERR_INVALID);
		CHECK_INT(code, SL_RPC_INVALID_REQUEST);
		CHECK(m.deep);
		CHECK(strstr(e.msg, "128") != NULL);
		/* The id is kept, to answer the request it belongs to. */
		CHECK_STR(yyjson_get_str(m.id), "d1");
		CHECK_INT(m.kind, SL_MSG_REQUEST);
		sl_msg_dispose(&m);
	}
	free(at);
	free(over);
	free(huge);
}

TEST(jsonrpc_id_object_or_array_is_invalid)
{
	struct sl_msg m;
	struct sl_err e;
	int code;
	const char *bad[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
	};
	for (size_t i = 0; i < SL_COUNT(bad); i++) {
		CHECK_INT(parse(&m, bad[i], &code, &e), SL_ERR_INVALID);
		CHECK_INT(code, SL_RPC_INVALID_REQUEST);
		CHECK(m.id == NULL);
		sl_msg_dispose(&m);
	}
}

/* sl_msg_take: a document read once by a transport classifies and fails as
 * sl_msg_parse would, and m owns the document either way. */
TEST(jsonrpc_take_matches_parse)
{
	static const char *const lines[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{\"a\":1}}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}",
		"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[]}",
		"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
	};
	for (size_t i = 0; i < SL_COUNT(lines); i++) {
		struct sl_msg a, b;
		struct sl_err ea, eb;
		int ca = 0, cb = 0;
		yyjson_doc *doc = yyjson_read(lines[i], strlen(lines[i]), SL_JSON_READ_FLAGS);
		int ra = sl_msg_parse(&a, lines[i], strlen(lines[i]), &ca, &ea);
		int rb = sl_msg_take(&b, doc, &cb, &eb);

		CHECK_INT(rb, ra);
		CHECK(b.doc == doc);
		if (ra == SL_OK) {
			CHECK_INT(b.kind, a.kind);
		} else {
			CHECK_INT(cb, ca);
			CHECK_STR(eb.msg, ea.msg);
		}
		CHECK((a.id == NULL) == (b.id == NULL));
		sl_msg_dispose(&a);
		sl_msg_dispose(&b);
	}
}

/* proto/trace.h: W3C trace context in _meta (SEP-414), as hostile input. */
#include "proto/trace.h"
#include "unit.h"

#include <stdio.h>
#include <string.h>

#define TP "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

static bool parses(const char *s)
{
	struct sl_trace t;
	return sl_trace_parse(s, strlen(s), &t);
}

TEST(trace_parse_and_format_round_trip)
{
	struct sl_trace t = { 0 };
	char out[SL_TRACEPARENT_LEN + 1];

	CHECK(sl_trace_parse(TP, strlen(TP), &t));
	CHECK(t.valid);
	CHECK_INT(t.trace_id[0], 0x0a);
	CHECK_INT(t.trace_id[15], 0x9c);
	CHECK_INT(t.span_id[0], 0xb7);
	CHECK_INT(t.span_id[7], 0x31);
	CHECK_INT(t.flags, 1);
	sl_trace_format(&t, out);
	CHECK_STR(out, TP);
}

TEST(trace_parse_refuses_what_w3c_refuses)
{
	CHECK(!parses(""));
	CHECK(!parses("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0"));   /* short */
	CHECK(!parses(TP "-x"));                                                     /* 00 is exact */
	CHECK(!parses("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"));  /* uppercase */
	CHECK(!parses("00-00000000000000000000000000000000-b7ad6b7169203331-01"));  /* zero trace */
	CHECK(!parses("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"));  /* zero span */
	CHECK(!parses("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));  /* version ff */
	CHECK(!parses("00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));  /* separator */
	CHECK(!parses("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0g"));
	CHECK(!parses("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nX: y"));
	/* A later version: its first four fields, more after a dash. */
	CHECK(parses("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
	CHECK(parses("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-next"));
	CHECK(!parses("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01what"));
}

TEST(tracestate_bounds_and_grammar)
{
	char big[600], *p = big;

	CHECK(sl_tracestate_valid("congo=t61rcWkgMzE", 17));
	CHECK(sl_tracestate_valid("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE", 40));
	CHECK(sl_tracestate_valid("fw529a3039@dt=aGVsbG8", 21));
	CHECK(sl_tracestate_valid("a=1,,b=2", 8)); /* empty members are allowed */
	CHECK(!sl_tracestate_valid("Congo=x", 7));  /* keys are lowercase */
	CHECK(!sl_tracestate_valid("congo", 5));
	CHECK(!sl_tracestate_valid("congo=a=b", 9));
	CHECK(!sl_tracestate_valid("congo=x\ny=z", 11));
	CHECK(sl_tracestate_valid("congo=x ", 8)); /* OWS around a member is not its value */
	/* 32 members, and one too many. */
	for (int i = 0; i < 33; i++)
		p += sprintf(p, "%sk%d=v", i ? "," : "", i);
	CHECK(!sl_tracestate_valid(big, strlen(big)));
	CHECK(sl_tracestate_valid(big, (size_t)(strrchr(big, ',') - big)));
	/* Over 512 characters. */
	memset(big, 'a', sizeof(big));
	big[0] = 'k';
	big[1] = '=';
	CHECK(!sl_tracestate_valid(big, 513));
}

TEST(baggage_bounds_and_grammar)
{
	static char big[SL_BAGGAGE_MAX_BYTES + 2];

	CHECK(sl_baggage_valid("userId=alice", 12));
	CHECK(sl_baggage_valid("userId=alice,serverNode=DF%2028,isProduction=false", 50));
	CHECK(sl_baggage_valid("key1=value1;property1;property2, key2 = value2", 46));
	CHECK(!sl_baggage_valid("", 0));
	CHECK(!sl_baggage_valid("novalue", 7));
	CHECK(!sl_baggage_valid("a=1,", 4));
	CHECK(!sl_baggage_valid("a=1\r\nX-Forged: 1", 16));
	CHECK(!sl_baggage_valid("a=caf\xc3\xa9", 6));
	memset(big, 'v', sizeof(big) - 1);
	big[0] = 'k';
	big[1] = '=';
	CHECK(sl_baggage_valid(big, SL_BAGGAGE_MAX_BYTES));
	CHECK(!sl_baggage_valid(big, SL_BAGGAGE_MAX_BYTES + 1));
}

TEST(trace_ctx_from_meta_and_toward_upstream)
{
	static const char in_json[] = "{\"traceparent\":\"" TP "\",\"tracestate\":\"congo=t61\","
				      "\"baggage\":\"a=1\",\"other\":1}";
	static const char bad_json[] = "{\"traceparent\":\"00-zz\",\"tracestate\":\"congo=t61\"}";
	yyjson_doc *in = yyjson_read(in_json, sizeof(in_json) - 1, 0);
	yyjson_doc *bad = yyjson_read(bad_json, sizeof(bad_json) - 1, 0);
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *meta = yyjson_mut_obj(d);
	struct sl_trace_ctx t, copy;
	struct sl_trace ours;

	CHECK(in && bad);
	sl_trace_ctx_from_meta(&t, yyjson_doc_get_root(in));
	CHECK(t.parent.valid);
	CHECK_STR(t.tracestate, "congo=t61");
	CHECK_STR(t.baggage, "a=1");

	/* No span of sluice's: the client's context as it came. */
	sl_trace_ctx_to_meta(&t, NULL, d, meta);
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(meta, "traceparent")), TP);
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(meta, "tracestate")), "congo=t61");

	/* sluice's span: same trace, its span as the parent, replacing. */
	ours = t.parent;
	memset(ours.span_id, 0x11, 8);
	sl_trace_ctx_to_meta(&t, &ours, d, meta);
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(meta, "traceparent")),
		  "00-0af7651916cd43dd8448eb211c80319c-1111111111111111-01");
	CHECK_INT(yyjson_mut_obj_size(meta), 3);

	sl_trace_ctx_copy(&copy, &t);
	CHECK_STR(copy.baggage, "a=1");
	sl_trace_ctx_dispose(&copy);
	sl_trace_ctx_dispose(&t);

	/* An invalid traceparent is ignored, and its tracestate with it. */
	sl_trace_ctx_from_meta(&t, yyjson_doc_get_root(bad));
	CHECK(!t.parent.valid);
	CHECK(t.tracestate == NULL);
	CHECK(!sl_trace_ctx_any(&t, NULL));
	sl_trace_ctx_from_meta(&t, NULL);
	CHECK(!t.parent.valid);

	yyjson_doc_free(in);
	yyjson_doc_free(bad);
	yyjson_mut_doc_free(d);
}

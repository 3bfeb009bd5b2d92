/* Unit tests of src/pipeline/metrics.c: counting, the series bound, the
 * text format's escaping of names that come from upstreams, histogram
 * buckets, and the registry surviving a reload. */
#include "unit.h"

#include "fixture.h"
#include "pipeline/metrics.h"

#include <stdio.h>
#include <stdlib.h>

static char *render(const struct sl_metrics *m)
{
	struct sl_buf b;
	size_t len;
	sl_buf_init(&b, SIZE_MAX);
	sl_metrics_render(m, &b);
	return sl_buf_take(&b, &len);
}

static char *label(const char *v, size_t n)
{
	struct sl_buf b;
	size_t len;
	sl_buf_init(&b, SIZE_MAX);
	sl_metrics_label(&b, "tool", v, n);
	return sl_buf_take(&b, &len);
}

/* A finished call of server's tool, secs long; the server advertises the
 * tool (its list holds it for the call) unless listed is false. */
static void call_of(struct sl_metrics *m, struct sl_upstream *up, const char *tool,
		    enum sl_origin origin, enum sl_outcome outcome, double secs, bool listed)
{
	struct sl_call c = { .up = up, .tool = (char *)tool, .origin = origin, .outcome = outcome,
			     .started_us = 1000, .finished_us = 1000 + (uint64_t)(secs * 1e6) };
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *def = yyjson_mut_obj(d);
	yyjson_doc *doc;
	yyjson_val *item;

	yyjson_mut_obj_add_str(d, def, "name", tool);
	yyjson_mut_doc_set_root(d, def);
	doc = yyjson_mut_doc_imut_copy(d, NULL);
	item = yyjson_doc_get_root(doc);
	up->tools = (struct sl_item_list){ .items = listed ? &item : NULL, .n = listed };
	sl_metrics_call(m, &c);
	up->tools = (struct sl_item_list){ 0 };
	yyjson_doc_free(doc);
	yyjson_mut_doc_free(d);
}

static void call(struct sl_metrics *m, struct sl_upstream *up, const char *tool,
		 enum sl_origin origin, enum sl_outcome outcome, double secs)
{
	call_of(m, up, tool, origin, outcome, secs, true);
}

TEST(metrics_label_escapes_what_the_text_format_asks)
{
	char *s;

	s = label("a\"b\\c\nd", 7);
	CHECK_STR(s, "tool=\"a\\\"b\\\\c\\nd\"");
	free(s);
	/* Invalid UTF-8, a control character and a NUL: U+FFFD each. */
	s = label("x\xff\x01y\0z", 6);
	CHECK_STR(s, "tool=\"x\xEF\xBF\xBD\xEF\xBF\xBDy\xEF\xBF\xBDz\"");
	free(s);
	/* Valid sequences pass; an overlong form and a surrogate do not. */
	s = label("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9);
	CHECK_STR(s, "tool=\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
	free(s);
	s = label("\xC0\xAF\xED\xA0\x80", 5);
	CHECK(strncmp(s, "tool=\"\xEF\xBF\xBD", 9) == 0);
	CHECK(strstr(s, "\xC0") == NULL && strstr(s, "\xED") == NULL);
	free(s);
	/* A sequence cut by the end of the value. */
	s = label("ok\xE2\x82", 4);
	CHECK_STR(s, "tool=\"ok\xEF\xBF\xBD\xEF\xBF\xBD\"");
	free(s);
}

TEST(metrics_calls_counted_by_pair_origin_outcome)
{
	struct sl_metrics *m = sl_metrics_new(100);
	struct sl_upstream gh = { .name = "github" }, db = { .name = "db" };
	char *s;

	call(m, &gh, "echo", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	call(m, &gh, "echo", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	call(m, &gh, "echo", SL_ORIGIN_CODE, SL_OUTCOME_DENIED, 0.001);
	call(m, &db, "q", SL_ORIGIN_ROUTER, SL_OUTCOME_RPC_ERROR, 0.001);
	CHECK_INT(m->npairs, 2);
	CHECK_INT(m->nservers, 2);
	s = render(m);
	CHECK(strstr(s, "sluice_tool_calls_total{server=\"github\",tool=\"echo\",origin=\"direct\","
			"outcome=\"ok\"} 2\n") != NULL);
	CHECK(strstr(s, "sluice_tool_calls_total{server=\"github\",tool=\"echo\",origin=\"code\","
			"outcome=\"denied\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_tool_calls_total{server=\"db\",tool=\"q\",origin=\"router\","
			"outcome=\"rpc_error\"} 1\n") != NULL);
	/* Cells never counted are not written. */
	CHECK(strstr(s, "origin=\"router\",outcome=\"ok\"") == NULL);
	CHECK(strstr(s, "# TYPE sluice_tool_calls_total counter\n") != NULL);
	free(s);
	sl_metrics_unref(m);
}

TEST(metrics_series_bound_folds_into_other)
{
	struct sl_metrics *m = sl_metrics_new(10);
	struct sl_upstream up = { .name = "s" };
	char tool[32], name[32];
	char *s;

	for (int i = 0; i < 10; i++) {
		snprintf(tool, sizeof(tool), "t%d", i);
		call(m, &up, tool, SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	}
	CHECK_INT(m->npairs, 10);
	/* Past the bound: every new tool of s counts under s/_other. */
	call(m, &up, "new1", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	call(m, &up, "new2", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	CHECK_INT(m->npairs, 11);
	/* A pair made before the bound keeps counting apart. */
	call(m, &up, "t3", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	s = render(m);
	CHECK(strstr(s, "{server=\"s\",tool=\"_other\",origin=\"direct\",outcome=\"ok\"} 2\n") != NULL);
	CHECK(strstr(s, "{server=\"s\",tool=\"t3\",origin=\"direct\",outcome=\"ok\"} 2\n") != NULL);
	CHECK(strstr(s, "new1") == NULL);
	free(s);
	/* Many servers past the bound: SL_METRICS_OTHER_MAX get an _other of
	 * their own, the rest share _other/_other. */
	for (int i = 0; i < 2 * SL_METRICS_OTHER_MAX; i++) {
		struct sl_upstream u = { .name = name };
		snprintf(name, sizeof(name), "srv%d", i);
		call(m, &u, "x", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
		call(m, &u, "y", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	}
	CHECK_INT(m->npairs, 10 + SL_METRICS_OTHER_MAX + 1);
	s = render(m);
	/* s took one of the SL_METRICS_OTHER_MAX: srv0..srv62 have theirs,
	 * the other 65 servers' two calls each are in the last one. */
	snprintf(name, sizeof(name), "} %d\n", (2 * SL_METRICS_OTHER_MAX - (SL_METRICS_OTHER_MAX - 1)) * 2);
	CHECK(strstr(s, "{server=\"_other\",tool=\"_other\",origin=\"direct\",outcome=\"ok\"") != NULL);
	CHECK(strstr(strstr(s, "{server=\"_other\",tool=\"_other\""), name) != NULL);
	CHECK(strstr(s, "{server=\"srv62\",tool=\"_other\",origin=\"direct\",outcome=\"ok\"} 2\n") != NULL);
	CHECK(strstr(s, "sluice_tool_calls_total{server=\"srv63\"") == NULL);
	free(s);
	sl_metrics_unref(m);
}

TEST(metrics_names_no_server_advertised_take_no_series)
{
	struct sl_metrics *m = sl_metrics_new(10);
	struct sl_upstream up = { .name = "s" };
	char tool[32];
	char *s;

	/* 200 made-up names, as invoke_tool or a program may send: all under
	 * s/_other, and the bound is still free for the real tools. */
	for (int i = 0; i < 200; i++) {
		snprintf(tool, sizeof(tool), "made_up_%d", i);
		call_of(m, &up, tool, SL_ORIGIN_ROUTER, SL_OUTCOME_DENIED, 0.001, false);
	}
	CHECK_INT(m->npairs, 1);
	for (int i = 0; i < 10; i++) {
		snprintf(tool, sizeof(tool), "t%d", i);
		call(m, &up, tool, SL_ORIGIN_ROUTER, SL_OUTCOME_OK, 0.001);
	}
	CHECK_INT(m->npairs, 11);
	s = render(m);
	CHECK(strstr(s, "{server=\"s\",tool=\"_other\",origin=\"router\",outcome=\"denied\"} 200\n") != NULL);
	CHECK(strstr(s, "{server=\"s\",tool=\"t9\",origin=\"router\",outcome=\"ok\"} 1\n") != NULL);
	CHECK(strstr(s, "made_up") == NULL);
	free(s);
	sl_metrics_unref(m);
}

TEST(metrics_long_names_are_cut_at_a_character)
{
	struct sl_metrics *m = sl_metrics_new(100);
	struct sl_upstream up = { .name = "s" };
	char tool[400];

	/* 127 ASCII bytes then a two-byte character across the cut. */
	memset(tool, 'a', 127);
	strcpy(tool + 127, "\xC3\xA9 and more after it");
	call(m, &up, tool, SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	CHECK_INT(strlen(m->pairs[0].tool), 127);
	/* Another tool with the same 128-byte start shares its series. */
	strcpy(tool + 127, "\xC3\xA9 else");
	call(m, &up, tool, SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.001);
	CHECK_INT(m->npairs, 1);
	CHECK_INT(m->pairs[0].calls[SL_ORIGIN_DIRECT][SL_OUTCOME_OK], 2);
	sl_metrics_unref(m);
}

TEST(metrics_histogram_buckets_and_text)
{
	struct sl_metrics *m = sl_metrics_new(100);
	struct sl_upstream up = { .name = "s" };
	char *s;

	call(m, &up, "t", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.0001); /* on a bound: in it */
	call(m, &up, "t", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 0.0002);
	call(m, &up, "t", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 2);
	call(m, &up, "t", SL_ORIGIN_DIRECT, SL_OUTCOME_OK, 31); /* past the last bound */
	CHECK_INT(m->servers[0].latency.n[0], 1);
	CHECK_INT(m->servers[0].latency.n[1], 1);
	CHECK_INT(m->servers[0].latency.n[13], 1);
	CHECK_INT(m->servers[0].latency.n[SL_METRICS_NBOUNDS], 1);
	s = render(m);
	CHECK(strstr(s, "sluice_tool_call_duration_seconds_bucket{server=\"s\",le=\"0.0001\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_tool_call_duration_seconds_bucket{server=\"s\",le=\"0.00025\"} 2\n") != NULL);
	CHECK(strstr(s, "sluice_tool_call_duration_seconds_bucket{server=\"s\",le=\"2.5\"} 3\n") != NULL);
	CHECK(strstr(s, "sluice_tool_call_duration_seconds_bucket{server=\"s\",le=\"30\"} 3\n") != NULL);
	CHECK(strstr(s, "sluice_tool_call_duration_seconds_bucket{server=\"s\",le=\"+Inf\"} 4\n") != NULL);
	CHECK(strstr(s, "sluice_tool_call_duration_seconds_count{server=\"s\"} 4\n") != NULL);
	CHECK(strstr(s, "sluice_tool_call_duration_seconds_sum{server=\"s\"} 33.0003\n") != NULL);
	free(s);
	sl_metrics_unref(m);
}

TEST(metrics_programs_cache_redaction_guard)
{
	struct sl_metrics *m = sl_metrics_new(100);
	struct sl_output o = { .outcome = "timeout", .duration_ms = 1500 };
	struct sl_upstream up = { .name = "s" };
	struct sl_call c = { .up = &up, .tool = "t", .outcome = SL_OUTCOME_OK, .cache_lookup = true };
	char *s;

	sl_metrics_program(m, &o);
	o.outcome = "ok";
	sl_metrics_program(m, &o);
	o.outcome = NULL; /* no kind: an error */
	sl_metrics_program(m, &o);
	o.outcome = "something new";
	sl_metrics_program(m, &o);
	sl_metrics_call(m, &c);
	c.cache_hit = true;
	sl_metrics_call(m, &c);
	c.cache_hit = c.cache_lookup = false; /* not looked up: neither */
	sl_metrics_call(m, &c);
	sl_metrics_redacted(m, SL_METRICS_ARGUMENTS, 3);
	sl_metrics_redacted(m, SL_METRICS_PEER, 0);
	sl_metrics_guard(m, SL_METRICS_RESULT, true);
	sl_metrics_guard(m, SL_METRICS_OUTPUT, false);
	s = render(m);
	CHECK(strstr(s, "sluice_programs_total{outcome=\"failed\",failure=\"timeout\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_programs_total{outcome=\"ok\",failure=\"none\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_programs_total{outcome=\"failed\",failure=\"error\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_programs_total{outcome=\"failed\",failure=\"other\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_program_duration_seconds_bucket{le=\"2.5\"} 4\n") != NULL);
	CHECK(strstr(s, "sluice_program_duration_seconds_bucket{le=\"1\"} 0\n") != NULL);
	CHECK(strstr(s, "sluice_cache_lookups_total{result=\"hit\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_cache_lookups_total{result=\"miss\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_redactions_total{where=\"arguments\"} 3\n") != NULL);
	CHECK(strstr(s, "sluice_redactions_total{where=\"peer\"} 0\n") != NULL);
	CHECK(strstr(s, "sluice_guard_flags_total{where=\"result\",action=\"withheld\"} 1\n") != NULL);
	CHECK(strstr(s, "sluice_guard_flags_total{where=\"output\",action=\"warned\"} 1\n") != NULL);
	free(s);
	/* A NULL registry counts nothing and does not crash. */
	sl_metrics_call(NULL, &c);
	sl_metrics_program(NULL, &o);
	sl_metrics_guard(NULL, SL_METRICS_PEER, false);
	sl_metrics_unref(m);
}

TEST(metrics_registry_outlives_a_reload)
{
	struct sl_err err;
	struct sl_gen *a = t_gen_sluice("{\"limits\": {\"maxMetricSeries\": 50}}", &err), *b = NULL;
	struct sl_config *cfg;
	const char *text = "{\"mcpServers\":{},\"sluice\":{\"limits\":{\"maxMetricSeries\":60}}}";

	CHECK(a != NULL && a->metrics != NULL);
	if (!a)
		return;
	CHECK_INT(a->metrics->max_series, 50);
	CHECK_INT(sl_config_parse("unit.json", text, strlen(text), &cfg, &err), 0);
	CHECK_INT(sl_gen_new(cfg, a, sl_stages, sl_nstages, &b, &err), 0);
	sl_config_unref(cfg);
	/* The same counters, and the new bound waits for a restart. */
	CHECK(b->metrics == a->metrics);
	CHECK_INT(b->metrics->max_series, 50);
	CHECK(strstr(b->restart_only, "limits.maxMetricSeries") != NULL);
	sl_gen_unref(a);
	/* The registry lives on with b alone. */
	b->metrics->cache_hits++;
	CHECK_INT(b->metrics->cache_hits, 1);
	sl_gen_unref(b);
}

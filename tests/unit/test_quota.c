/* Unit tests of src/stages/quota_store.c and quota.c: the bucket's refill,
 * burst and day rollover on a clock the test drives; the store's
 * all-or-nothing admission and its cap on subjects (no eviction that
 * would reset a day quota); the stage's section and its refusal. */
#include "unit.h"

#include "auth/caller.h"
#include "core/json.h"
#include "pipeline/call.h"
#include "stages/quota.h"

#include <stdio.h>
#include <stdlib.h>

#include "fixture.h"

/* 2026-03-02 00:00:00 UTC, a day boundary. */
#define T0 (20514ull * SL_DAY_MS)

TEST(quota_bucket_burst_then_refill)
{
	struct sl_quota_limits l = { .per_minute = 60, .burst = 3 };
	struct sl_bucket b;
	uint64_t retry = 0;

	sl_bucket_init(&b, &l, T0);
	for (int i = 0; i < 3; i++) {
		CHECK_INT(sl_bucket_check(&b, &l, T0, &retry), SL_QUOTA_OK);
		sl_bucket_take(&b, &l);
	}
	/* The fourth call at once: one token comes every 1000 ms. */
	CHECK_INT(sl_bucket_check(&b, &l, T0, &retry), SL_QUOTA_MINUTE);
	CHECK_INT(retry, 1000);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 999, &retry), SL_QUOTA_MINUTE);
	CHECK_INT(retry, 1);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 1000, &retry), SL_QUOTA_OK);
	sl_bucket_take(&b, &l);
	CHECK_INT(sl_bucket_tokens(&b), 0);
	/* Long idle: full, never over the burst. */
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 3600000, &retry), SL_QUOTA_OK);
	CHECK_INT(sl_bucket_tokens(&b), 3);
	/* Years idle: no overflow. */
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 100ull * 365 * SL_DAY_MS, &retry), SL_QUOTA_OK);
	CHECK_INT(sl_bucket_tokens(&b), 3);
}

TEST(quota_bucket_slow_rate_and_default_burst)
{
	/* 1 call a minute, burst defaults to callsPerMinute. */
	struct sl_quota_limits l = { .per_minute = 1 };
	struct sl_bucket b;
	uint64_t retry = 0;

	CHECK_INT(sl_bucket_size(&l), 1);
	sl_bucket_init(&b, &l, T0);
	sl_bucket_take(&b, &l);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 1, &retry), SL_QUOTA_MINUTE);
	CHECK_INT(retry, 59999);
	/* Exact whole-number refill: many small steps add up to one token. */
	for (uint64_t t = T0 + 1; t < T0 + 60000; t += 7)
		CHECK_INT(sl_bucket_check(&b, &l, t, &retry), SL_QUOTA_MINUTE);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 60000, &retry), SL_QUOTA_OK);
}

TEST(quota_bucket_day_rolls_over_at_utc_midnight)
{
	struct sl_quota_limits l = { .per_day = 5 };
	struct sl_bucket b;
	uint64_t late = T0 + SL_DAY_MS - 1000, retry = 0; /* 23:59:59 */

	sl_bucket_init(&b, &l, late);
	for (int i = 0; i < 5; i++) {
		CHECK_INT(sl_bucket_check(&b, &l, late, &retry), SL_QUOTA_OK);
		sl_bucket_take(&b, &l);
	}
	CHECK_INT(sl_bucket_check(&b, &l, late, &retry), SL_QUOTA_DAY);
	CHECK_INT(retry, 1000);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + SL_DAY_MS - 1, &retry), SL_QUOTA_DAY);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + SL_DAY_MS, &retry), SL_QUOTA_OK);
	CHECK_INT(b.today, 0);
}

TEST(quota_bucket_clock_going_back_refills_nothing)
{
	struct sl_quota_limits l = { .per_minute = 60, .burst = 1 };
	struct sl_bucket b;
	uint64_t retry = 0;

	sl_bucket_init(&b, &l, T0 + 5000);
	sl_bucket_take(&b, &l);
	CHECK_INT(sl_bucket_check(&b, &l, T0, &retry), SL_QUOTA_MINUTE);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 999, &retry), SL_QUOTA_MINUTE);
	CHECK_INT(sl_bucket_check(&b, &l, T0 + 1000, &retry), SL_QUOTA_OK);
}

TEST(quota_bucket_idle)
{
	struct sl_quota_limits rate = { .per_minute = 60, .burst = 2 }, day = { .per_day = 3 };
	struct sl_bucket b;
	uint64_t when = 0;

	sl_bucket_init(&b, &rate, T0);
	CHECK(sl_bucket_idle(&b, &rate, T0, &when));
	sl_bucket_take(&b, &rate);
	CHECK(!sl_bucket_idle(&b, &rate, T0, &when));
	CHECK_INT(when, 1000);
	CHECK(sl_bucket_idle(&b, &rate, T0 + 1000, &when));
	/* A call today under a day quota: not idle until midnight. */
	sl_bucket_init(&b, &day, T0 + 1000);
	sl_bucket_take(&b, &day);
	CHECK(!sl_bucket_idle(&b, &day, T0 + 2000, &when));
	CHECK_INT(when, SL_DAY_MS - 2000);
	CHECK(sl_bucket_idle(&b, &day, T0 + SL_DAY_MS, &when));
}

static int counted;

static void count_row(const struct sl_quota_row *r, void *ctx)
{
	counted++;
}

TEST(quota_store_admits_all_or_nothing)
{
	struct sl_quota_store *st = sl_quota_local_new(10);
	struct sl_quota_limits alice = { .per_minute = 60, .burst = 5 }, prof = { .per_day = 1 };
	struct sl_quota_ask asks[2] = {
		{ SL_QUOTA_SUBJECT, "k-alice", "alice", &alice },
		{ SL_QUOTA_PROFILE, "ops", "ops", &prof },
	};
	struct sl_quota_refusal why;

	CHECK(st->ops->admit(st, asks, 2, T0, &why));
	CHECK(!st->ops->admit(st, asks, 2, T0, &why));
	CHECK_INT(why.window, SL_QUOTA_DAY);
	CHECK_INT(why.ask, 1);
	CHECK_INT(why.limit, 1);
	/* The profile's refusal cost alice nothing: 4 tokens left. */
	for (int i = 0; i < 4; i++)
		CHECK(st->ops->admit(st, asks, 1, T0, &why));
	CHECK(!st->ops->admit(st, asks, 1, T0, &why));
	CHECK_INT(why.window, SL_QUOTA_MINUTE);
	CHECK_INT(why.ask, 0);
	CHECK_INT(why.limit, 60);
	counted = 0;
	CHECK_INT(st->ops->report(st, T0, 100, count_row, NULL), 2);
	CHECK_INT(counted, 2);
	st->ops->free(st);
}

TEST(quota_store_cap_never_resets_a_day_quota)
{
	struct sl_quota_store *st = sl_quota_local_new(2);
	struct sl_quota_limits day = { .per_day = 2 }, rate = { .per_minute = 60 };
	struct sl_quota_ask a = { SL_QUOTA_SUBJECT, "a", "a", &day };
	struct sl_quota_ask b = { SL_QUOTA_SUBJECT, "b", "b", &day };
	struct sl_quota_ask c = { SL_QUOTA_SUBJECT, "c", "c", &day };
	struct sl_quota_refusal why;

	CHECK(st->ops->admit(st, &a, 1, T0, &why));
	CHECK(st->ops->admit(st, &b, 1, T0, &why));
	/* Both have calls today: forgetting either would give it its day
	 * back, so the new subject is refused until midnight. */
	CHECK(!st->ops->admit(st, &c, 1, T0 + 1000, &why));
	CHECK_INT(why.window, SL_QUOTA_FULL);
	CHECK_INT(why.limit, 2);
	CHECK_INT(why.retry_ms, SL_DAY_MS - 1000);
	/* a, still counted, keeps its count: one more call, then refused. */
	CHECK(st->ops->admit(st, &a, 1, T0 + 2000, &why));
	CHECK(!st->ops->admit(st, &a, 1, T0 + 2000, &why));
	CHECK_INT(why.window, SL_QUOTA_DAY);
	/* The next day every one is idle: c replaces the least recently used (b). */
	CHECK(st->ops->admit(st, &c, 1, T0 + SL_DAY_MS, &why));
	counted = 0;
	CHECK_INT(st->ops->report(st, T0 + SL_DAY_MS, 100, count_row, NULL), 2);
	st->ops->free(st);

	/* Rate-only subjects are idle once their bucket is full again. */
	st = sl_quota_local_new(1);
	a.lim = b.lim = &rate;
	CHECK(st->ops->admit(st, &a, 1, T0, &why));
	CHECK(!st->ops->admit(st, &b, 1, T0 + 10, &why));
	CHECK_INT(why.window, SL_QUOTA_FULL);
	CHECK_INT(why.retry_ms, 990);
	CHECK(st->ops->admit(st, &b, 1, T0 + 1000, &why));
	st->ops->free(st);
}

static void *quota_state(const char *json, struct sl_err *err)
{
	yyjson_doc *d = json ? yyjson_read(json, strlen(json), 0) : NULL;
	void *st = NULL;
	int rc = sl_stage_quota.init(NULL, NULL, yyjson_doc_get_root(d), &st, err);
	yyjson_doc_free(d);
	return rc < 0 ? NULL : st;
}

TEST(quota_section_errors_name_the_key)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
		{ "{\"default\":{\"burst\":3}}",
		  "sluice.quotas.default: \"burst\" needs \"callsPerMinute\"" },
		{ "{\"subjects\":{\"alice\":{\"burst\":3}}}",
		  "sluice.quotas.subjects.alice: \"burst\" needs \"callsPerMinute\"" },
		{ "{\"subjects\":{\"\":{}}}", "sluice.quotas.subjects: has an empty name" },
		{ "{\"profiles\":{\"ops\":{\"perDay\":3}}}", "sluice.quotas.profiles.ops: unknown key" },
		{ "{\"profiles\":[]}", "sluice.quotas.profiles: must be an object of profile names" },
		{ "{\"maxIdentities\":0}", "sluice.quotas.maxIdentities: must be" },
		{ "{\"subjects\":{\"a\":{},\"a\":{}}}", "sluice.quotas.subjects.a: is given twice" },
	};
	for (size_t i = 0; i < SL_COUNT(cases); i++) {
		struct sl_err err = { 0 };
		CHECK(quota_state(cases[i].json, &err) == NULL);
		if (strncmp(err.msg, cases[i].msg, strlen(cases[i].msg)) != 0) {
			fprintf(stderr, "  got: %s\n  want: %s...\n", err.msg, cases[i].msg);
			CHECK(!"the message names the key");
		}
	}
	CHECK(quota_state(NULL, &(struct sl_err){ 0 }) == NULL); /* absent: no state */
}

TEST(quota_stage_refuses_with_retry_and_data)
{
	struct sl_err err = { 0 };
	void *st = quota_state("{\"default\":{\"callsPerMinute\":6,\"burst\":1}}", &err);
	struct sl_upstream u = { .name = (char *)"gh" };
	struct sl_call *c;
	yyjson_mut_val *data;

	CHECK(st != NULL);
	/* No session: the anonymous caller, under the default. */
	c = sl_call_new(t_gen_bare(), SL_ORIGIN_CODE, &u, "t", NULL, 1000, NULL, NULL, NULL);
	CHECK_INT(sl_stage_quota.request(st, c), SL_STAGE_NEXT);
	sl_call_free(c);
	c = sl_call_new(t_gen_bare(), SL_ORIGIN_CODE, &u, "t", NULL, 1000, NULL, NULL, NULL);
	CHECK_INT(sl_stage_quota.request(st, c), SL_STAGE_DONE);
	CHECK_INT(c->outcome, SL_OUTCOME_DENIED);
	CHECK(c->why && strstr(c->why, "rate limit: subject 'anonymous' is over its 6 calls per "
				     "minute (burst 1); retry after "));
	CHECK(c->retry_after_s >= 9 && c->retry_after_s <= 10);
	data = c->limit;
	CHECK_INT(yyjson_mut_get_uint(yyjson_mut_obj_get(data, "retryAfterSeconds")), c->retry_after_s);
	CHECK_INT(yyjson_mut_get_uint(yyjson_mut_obj_get(data, "limit")), 6);
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(data, "scope")), "subject");
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(data, "window")), "minute");
	sl_call_free(c);
	sl_stage_quota.fini(st);
}

/* One call as method/issuer/subject through profile (NULL: /mcp): the stage's answer. */
static enum sl_stage_rc call_as(void *st, const char *method, const char *issuer,
				const char *subject, const char *profile)
{
	struct sl_upstream u = { .name = (char *)"gh" };
	struct sl_call *c = sl_call_new(t_gen_bare(), SL_ORIGIN_DIRECT, &u, "t", NULL, 1000, NULL,
					NULL, NULL);
	struct sl_caller *who = sl_caller_new(method);
	enum sl_stage_rc rc;

	sl_caller_set_subject(who, issuer, subject);
	sl_caller_set_profile(who, profile);
	c->who = who;
	rc = sl_stage_quota.request(st, c);
	sl_call_free(c);
	return rc;
}

TEST(quota_counts_a_person_once_across_profiles)
{
	struct sl_err err = { 0 };
	void *st = quota_state("{\"default\":{\"callsPerDay\":3},"
			       "\"profiles\":{\"tight\":{\"callsPerDay\":1}}}", &err);
	const char *iss = "https://idp.example";

	CHECK(st != NULL);
	/* alice's three calls, through three endpoints; the fourth is refused on each. */
	CHECK_INT(call_as(st, "jwt", iss, "alice", NULL), SL_STAGE_NEXT);
	CHECK_INT(call_as(st, "jwt", iss, "alice", "a"), SL_STAGE_NEXT);
	/* An introspected token of the same issuer is the same person. */
	CHECK_INT(call_as(st, "introspection", iss, "alice", "b"), SL_STAGE_NEXT);
	CHECK_INT(call_as(st, "jwt", iss, "alice", "c"), SL_STAGE_DONE);
	CHECK_INT(call_as(st, "jwt", iss, "alice", NULL), SL_STAGE_DONE);
	/* Another issuer's alice, or a static token named alice, is another person. */
	CHECK_INT(call_as(st, "jwt", "https://other.example", "alice", "a"), SL_STAGE_NEXT);
	CHECK_INT(call_as(st, "token", NULL, "alice", "a"), SL_STAGE_NEXT);
	/* A profile's own limit applies on top, counted for the profile. */
	CHECK_INT(call_as(st, "token", NULL, "bob", "tight"), SL_STAGE_NEXT);
	CHECK_INT(call_as(st, "token", NULL, "bob", "tight"), SL_STAGE_DONE);
	CHECK_INT(call_as(st, "token", NULL, "bob", NULL), SL_STAGE_NEXT);
	sl_stage_quota.fini(st);
}

TEST(quota_status_lists_limits_and_counters)
{
	struct sl_gen *g = t_gen_sluice("{\"quotas\":{\"subjects\":{\"alice\":{\"callsPerDay\":5}},"
					"\"profiles\":{\"default\":{\"callsPerMinute\":100}}}}",
					&(struct sl_err){ 0 });
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *root = yyjson_mut_obj(d), *q;
	struct sl_upstream u = { .name = (char *)"gh" };
	struct sl_call *c;

	CHECK(g != NULL);
	c = sl_call_new(g, SL_ORIGIN_DIRECT, &u, "t", NULL, 1000, NULL, NULL, NULL);
	CHECK_INT(sl_stage_quota.request(sl_gen_state(g, &sl_stage_quota), c), SL_STAGE_NEXT);
	sl_call_free(c);
	sl_quota_status(sl_gen_state(g, &sl_stage_quota), d, root);
	q = yyjson_mut_obj_get(root, "quotas");
	CHECK_INT(yyjson_mut_get_uint(yyjson_mut_obj_get(q, "counted")), 1);
	{
		yyjson_mut_val *row = yyjson_mut_arr_get_first(yyjson_mut_obj_get(q, "counters"));
		CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(row, "scope")), "profile");
		CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(row, "name")), "default");
		CHECK_INT(yyjson_mut_get_uint(yyjson_mut_obj_get(row, "tokens")), 99);
		CHECK_INT(yyjson_mut_get_uint(yyjson_mut_obj_get(row, "callsToday")), 1);
	}
	CHECK(yyjson_mut_obj_get(yyjson_mut_obj_get(q, "subjects"), "alice") != NULL);
	yyjson_mut_doc_free(d);
	sl_gen_unref(g);
}

/* Unit tests of what replicas share besides pins: key names and result ids
 * (shared/state.c), the check of values read back from Redis, the rate
 * limit script's answers (stages/quota_shared.c), and the results store's
 * owners and count cap (stages/results.c). No Redis here:
 * tests/e2e/sharedstate.test.mjs runs one. */
#include "unit.h"

#include "stages/results.h"
#include "shared/once.h"
#include "shared/state.h"
#include "core/digest.h"
#include "stages/quota_shared.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define CALLER "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

TEST(sharedstate_result_ids_are_random_and_typed)
{
	char a[SL_RESULT_ID_SIZE], b[SL_RESULT_ID_SIZE], l[SL_RESULT_ID_SIZE];

	sl_shared_result_id(a, true);
	sl_shared_result_id(b, true);
	sl_shared_result_id(l, false);
	CHECK_INT(strlen(a), 25);
	CHECK(strcmp(a, b) != 0);
	CHECK(sl_shared_result_id_shared(a) && !sl_shared_result_id_local(a));
	CHECK(sl_shared_result_id_local(l) && !sl_shared_result_id_shared(l));
	CHECK(!sl_shared_result_id_shared("r1"));
	CHECK(!sl_shared_result_id_shared(NULL));
	CHECK(!sl_shared_result_id_shared("s0123456789ABCDEF01234567")); /* upper case */
	CHECK(!sl_shared_result_id_shared("s0123456789abcdef0123456"));  /* 23 digits */
	CHECK(!sl_shared_result_id_shared("s0123456789abcdef012345678"));/* 25 */
	CHECK(!sl_shared_result_id_shared("s0123456789abcdef012345:*"));
}

TEST(sharedstate_keys)
{
	char *k = sl_shared_result_key("sluice:", CALLER, "s0123456789abcdef01234567");
	CHECK_STR(k, "sluice:result:" CALLER ":s0123456789abcdef01234567");
	free(k);
	/* A client's id or a caller that could reach another key: no key. */
	CHECK(sl_shared_result_key("p:", CALLER, "s0123456789abcdef0123456*") == NULL);
	CHECK(sl_shared_result_key("p:", CALLER, "r0123456789abcdef01234567") == NULL);
	CHECK(sl_shared_result_key("p:", CALLER, "s0123456789abcdef01234567:x") == NULL);
	CHECK(sl_shared_result_key("p:", "", "s0123456789abcdef01234567") == NULL);
	CHECK(sl_shared_result_key("p:", "ab:cd", "s0123456789abcdef01234567") == NULL);
	CHECK(sl_shared_result_key("p:", NULL, "s0123456789abcdef01234567") == NULL);
	k = sl_shared_cache_key("e2e:", "ff00");
	CHECK_STR(k, "e2e:cache:ff00");
	free(k);
	k = sl_shared_quota_key("e2e:", "profile", "team a");
	CHECK_STR(k, "e2e:quota:profile:team a");
	free(k);
	/* The single-use marks' epoch names no mark: a mark has a purpose and an id. */
	k = sl_shared_once_epoch_key("e2e:");
	CHECK_STR(k, "e2e:once:epoch");
	free(k);
	k = sl_shared_once_key("e2e:", "confirm", "ab");
	CHECK_STR(k, "e2e:once:confirm:ab");
	free(k);
}

TEST(sharedstate_values_read_back_are_checked)
{
	const char *why = NULL;
	yyjson_doc *d = sl_shared_object("{\"content\":[]}", 14, 100, &why);
	char deep[600];

	CHECK(d != NULL);
	yyjson_doc_free(d);
	CHECK(sl_shared_object("{\"content\":[]}", 14, 10, &why) == NULL);
	CHECK(strstr(why, "larger") != NULL);
	CHECK(sl_shared_object("{\"a\":", 5, 100, &why) == NULL);
	CHECK(strstr(why, "not valid JSON") != NULL);
	CHECK(sl_shared_object("[1,2,3]", 7, 100, &why) == NULL);
	CHECK(strstr(why, "not a JSON object") != NULL);
	CHECK(sl_shared_object("\"x\"", 3, 100, &why) == NULL);
	CHECK(sl_shared_object("", 0, 100, &why) == NULL);
	/* Nested past the depth limit: refused, not a crash. */
	memset(deep, '[', 300);
	memset(deep + 300, ']', 300);
	CHECK(sl_shared_object(deep, 600, 1000, &why) == NULL);
}

/* redisReply values as hiredis makes them, for the parser. */
static redisReply *rnum(long long v)
{
	redisReply *r = calloc(1, sizeof(*r));
	r->type = REDIS_REPLY_INTEGER;
	r->integer = v;
	return r;
}

static redisReply *rarr(size_t n, ...)
{
	redisReply *r = calloc(1, sizeof(*r));
	va_list ap;
	r->type = REDIS_REPLY_ARRAY;
	r->elements = n;
	r->element = calloc(n ? n : 1, sizeof(*r->element));
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		r->element[i] = va_arg(ap, redisReply *);
	va_end(ap);
	return r;
}

static void rfree(redisReply *r)
{
	if (r->type == REDIS_REPLY_ARRAY)
		for (size_t i = 0; i < r->elements; i++)
			rfree(r->element[i]);
	free(r->element);
	free(r->str);
	free(r);
}

static int parse(redisReply *r, bool *admitted, struct sl_quota_refusal *why)
{
	static const struct sl_quota_limits subj = { 10, 0, 100 }, prof = { 60, 5, 0 };
	const struct sl_quota_ask asks[2] = {
		{ SL_QUOTA_SUBJECT, "k", "alice", &subj },
		{ SL_QUOTA_PROFILE, "team", "team", &prof },
	};
	int rc = sl_quota_shared_parse(r, asks, 2, admitted, why);
	rfree(r);
	return rc;
}

TEST(sharedstate_bucket_script_answers)
{
	struct sl_quota_refusal why = { 0 };
	bool admitted = false;

	CHECK_INT(parse(rarr(1, rnum(0)), &admitted, &why), 0);
	CHECK(admitted);
	CHECK_INT(parse(rarr(4, rnum(1), rnum(2), rnum(1), rnum(1500)), &admitted, &why), 0);
	CHECK(!admitted);
	CHECK_INT(why.ask, 1);
	CHECK_INT(why.window, SL_QUOTA_MINUTE);
	CHECK_INT(why.limit, 60);
	CHECK_INT(why.retry_ms, 1500);
	CHECK_INT(parse(rarr(4, rnum(1), rnum(1), rnum(2), rnum(3600000)), &admitted, &why), 0);
	CHECK_INT(why.ask, 0);
	CHECK_INT(why.window, SL_QUOTA_DAY);
	CHECK_INT(why.limit, 100);
}

TEST(sharedstate_bucket_script_hostile_answers_are_refused)
{
	struct sl_quota_refusal why;
	bool admitted;
	redisReply *s = calloc(1, sizeof(*s)), *err;

	s->type = REDIS_REPLY_ERROR;
	s->str = strdup("NOSCRIPT No matching script");
	s->len = strlen(s->str);
	CHECK_INT(parse(s, &admitted, &why), -1);
	CHECK(sl_quota_shared_parse(NULL, NULL, 0, &admitted, &why) == -1);
	CHECK_INT(parse(rnum(0), &admitted, &why), -1);                      /* not an array */
	CHECK_INT(parse(rarr(0), &admitted, &why), -1);                      /* empty */
	CHECK_INT(parse(rarr(2, rnum(0), rnum(0)), &admitted, &why), -1);    /* admitted + more */
	CHECK_INT(parse(rarr(1, rnum(7)), &admitted, &why), -1);             /* no such flag */
	CHECK_INT(parse(rarr(3, rnum(1), rnum(1), rnum(1)), &admitted, &why), -1);
	CHECK_INT(parse(rarr(4, rnum(1), rnum(0), rnum(1), rnum(5)), &admitted, &why), -1); /* ask 0 */
	CHECK_INT(parse(rarr(4, rnum(1), rnum(3), rnum(1), rnum(5)), &admitted, &why), -1); /* ask 3 of 2 */
	CHECK_INT(parse(rarr(4, rnum(1), rnum(1), rnum(3), rnum(5)), &admitted, &why), -1); /* window */
	CHECK_INT(parse(rarr(4, rnum(1), rnum(1), rnum(1), rnum(0)), &admitted, &why), -1); /* retry 0 */
	CHECK_INT(parse(rarr(4, rnum(1), rnum(1), rnum(1), rnum(1LL << 40)), &admitted, &why), -1);
	CHECK_INT(parse(rarr(4, rnum(1), rnum(1), rnum(1), rnum(-5)), &admitted, &why), -1);
	err = calloc(1, sizeof(*err));
	err->type = REDIS_REPLY_STRING;
	err->str = strdup("1");
	err->len = 1;
	CHECK_INT(parse(rarr(1, err), &admitted, &why), -1);                 /* "1", not 1 */
}

static redisReply *rstr(int type, const char *text)
{
	redisReply *r = calloc(1, sizeof(*r));
	r->type = type;
	if (text) {
		r->str = strdup(text);
		r->len = strlen(text);
	}
	return r;
}

static enum sl_once_verdict verdict(redisReply *r, const char **why)
{
	enum sl_once_verdict v = sl_once_verdict_of(r, why);
	if (r)
		rfree(r);
	return v;
}

/* A claim's answer from Redis (shared/once.c's script): OK the first use,
 * nil a use elsewhere, 0 or 1 the store's data began after (or about when)
 * the approval was given; anything else, or nothing, cannot show it unused. */
TEST(once_verdict_of_the_claim_script)
{
	const char *why;

	CHECK_INT(verdict(rstr(REDIS_REPLY_STATUS, "OK"), &why), SL_ONCE_FIRST);
	CHECK(why == NULL);
	CHECK_INT(verdict(rstr(REDIS_REPLY_NIL, NULL), &why), SL_ONCE_USED);
	CHECK_INT(verdict(rnum(0), &why), SL_ONCE_UNSURE);
	CHECK(strstr(why, "restarted empty") != NULL);
	CHECK_INT(verdict(rnum(1), &why), SL_ONCE_UNSURE);
	CHECK(strstr(why, "restarted empty") != NULL);
	/* Hostile or foreign answers are no first use. */
	CHECK_INT(verdict(rnum(2), &why), SL_ONCE_UNSURE);
	CHECK(strstr(why, "did not answer") != NULL);
	CHECK_INT(verdict(rstr(REDIS_REPLY_STRING, "OK"), &why), SL_ONCE_UNSURE);
	CHECK_INT(verdict(rstr(REDIS_REPLY_STATUS, "QUEUED"), &why), SL_ONCE_UNSURE);
	CHECK_INT(verdict(rstr(REDIS_REPLY_ERROR, "ERR user_script:3: attempt to perform arithmetic on a nil value"), &why),
		  SL_ONCE_UNSURE);
	CHECK_INT(verdict(rarr(1, rstr(REDIS_REPLY_STATUS, "OK")), &why), SL_ONCE_UNSURE);
	CHECK_INT(verdict(NULL, &why), SL_ONCE_UNSURE);
	CHECK(strstr(why, "did not answer") != NULL);
}

TEST(sharedstate_results_owners_and_count_cap)
{
	struct sl_results *r = sl_results_new(60000, 1u << 20);
	size_t len;

	sl_results_set_max_count(r, 2);
	CHECK_STR(sl_results_put_as(r, "s1", "alice", strdup("A"), 1), "s1");
	CHECK(sl_results_get_for(r, "s1", "alice", &len) != NULL && len == 1);
	CHECK(sl_results_get_for(r, "s1", "bob", &len) == NULL);
	CHECK(sl_results_get(r, "s1", &len) == NULL); /* an owner's entry needs its owner */
	CHECK(sl_results_put_as(r, "s2", "bob", strdup("B"), 1) != NULL);
	CHECK(sl_results_put_as(r, "s3", "bob", strdup("C"), 1) != NULL);
	CHECK(sl_results_get_for(r, "s1", "alice", &len) == NULL); /* the count cap took it */
	CHECK(sl_results_get_for(r, "s3", "bob", &len) != NULL);
	sl_results_free(r);
}

/* Single-use marks (shared/once.h), without Redis: the first claim of an
 * id goes on, a second is refused; at the bound a new claim is refused
 * rather than an old mark forgotten. */
TEST(once_claims_each_id_once_and_never_forgets_a_live_one)
{
	struct sl_once *o = sl_once_new(2);
	struct sl_once_wait *w = NULL;
	const char *why;
	unsigned long long now = sl_seal_now(), later = now + 60;

	CHECK_INT(sl_once_claim(o, NULL, "confirm", "aa", now, later, NULL, NULL, &w, &why), SL_ONCE_FIRST);
	CHECK_INT(sl_once_claim(o, NULL, "confirm", "aa", now, later, NULL, NULL, &w, &why), SL_ONCE_USED);
	/* Another purpose is another mark. */
	CHECK_INT(sl_once_claim(o, NULL, "code", "aa", now, later, NULL, NULL, &w, &why), SL_ONCE_FIRST);
	CHECK_INT(sl_once_claim(o, NULL, "confirm", "bb", now, later, NULL, NULL, &w, &why), SL_ONCE_UNSURE);
	CHECK(why && strstr(why, "too many approvals") != NULL);
	CHECK_INT(sl_once_claim(o, NULL, "confirm", "aa", now, later, NULL, NULL, &w, &why), SL_ONCE_USED);
	CHECK_INT(sl_once_count(o), 2);
	CHECK(w == NULL);
	sl_once_free(o);
	/* A claim given back (its effect never started) may be claimed again. */
	o = sl_once_new(4);
	CHECK_INT(sl_once_claim(o, NULL, "code", "ee", now, later, NULL, NULL, &w, &why), SL_ONCE_FIRST);
	sl_once_release(o, NULL, "code", "ee");
	CHECK_INT(sl_once_claim(o, NULL, "code", "ee", now, later, NULL, NULL, &w, &why), SL_ONCE_FIRST);
	CHECK_INT(sl_once_claim(o, NULL, "code", "ee", now, later, NULL, NULL, &w, &why), SL_ONCE_USED);
	sl_once_free(o);
	/* Nothing to keep the marks (no gateway): nothing is approved. */
	CHECK_INT(sl_once_claim(NULL, NULL, "confirm", "cc", now, later, NULL, NULL, &w, &why),
		  SL_ONCE_UNSURE);
	CHECK(why != NULL);
}

/* Unit tests of src/gateway/replay.c: the requestState of a program that
 * asked (encoding, seal, bounds) and what a retry does with each call. */
#include "unit.h"

#include "gateway/replay.h"

#include <stdlib.h>
#include <string.h>

static const unsigned char key[32] = { 7, 7, 7 };
static const char CODE[] = "const a = await tools.s.r({}); await tools.s.w({ a });";
static const char *CRED = "cafe";

static yyjson_mut_val *ir_of(yyjson_mut_doc *d)
{
	yyjson_mut_val *ir = yyjson_mut_obj(d), *reqs = yyjson_mut_obj(d), *q = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, q, "method", "elicitation/create");
	yyjson_mut_obj_add_val(d, reqs, "confirm", q);
	yyjson_mut_obj_add_str(d, ir, "resultType", "input_required");
	yyjson_mut_obj_add_val(d, ir, "inputRequests", reqs);
	yyjson_mut_obj_add_str(d, ir, "requestState", "INNER");
	return ir;
}

/* A first run that made call 0 (s.r, value {"n":1}) and suspended at
 * call 1 (s.w): its requestState (malloc'd). */
static char *first_state(struct sl_replay *rp, const char *value_json)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_doc *v = yyjson_read(value_json, strlen(value_json), 0);
	yyjson_mut_val *r;
	struct sl_err err = { 0 };
	char *state = NULL;

	CHECK_INT(sl_replay_next(rp, NULL, 0, "s", "r", "h0"), SL_REPLAY_LIVE);
	sl_replay_record(rp, NULL, 0, "s", "r", "h0", yyjson_val_mut_copy(d, yyjson_doc_get_root(v)), NULL, 0);
	CHECK_INT(sl_replay_next(rp, NULL, 1, "s", "w", "h1"), SL_REPLAY_LIVE);
	CHECK(sl_replay_suspend(rp, NULL, 1, "s", "w", "h1", ir_of(d)));
	/* A second question meanwhile is not recorded: it was not made. */
	CHECK(!sl_replay_suspend(rp, NULL, 2, "s", "w", "h2", ir_of(d)));
	CHECK(sl_replay_suspended(rp));
	r = sl_replay_answer(rp, key, sizeof(key), CRED, sl_seal_now() + 60, d, &err);
	if (r) {
		CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(r, "resultType")), "input_required");
		CHECK(yyjson_mut_obj_get(yyjson_mut_obj_get(r, "inputRequests"), "confirm") != NULL);
		state = sl_strdup(yyjson_mut_get_str(yyjson_mut_obj_get(r, "requestState")));
	}
	yyjson_doc_free(v);
	yyjson_mut_doc_free(d);
	return state;
}

TEST(replay_round_trip)
{
	struct sl_replay *rp = sl_replay_new(CODE, strlen(CODE)), *again;
	uint32_t seed[4];
	uint64_t clock = sl_replay_clock(rp);
	struct sl_err err = { 0 };
	static const char answer[] = "{\"confirm\":{\"action\":\"accept\"}}";
	yyjson_doc *resp = yyjson_read(answer, sizeof(answer) - 1, 0);
	yyjson_mut_doc *d;
	yyjson_mut_val *value;
	const char *e;
	size_t elen;
	char *state;

	memcpy(seed, sl_replay_seed(rp), sizeof(seed));
	state = first_state(rp, "{\"n\":1}");
	CHECK(state && strncmp(state, SL_REPLAY_PREFIX, strlen(SL_REPLAY_PREFIX)) == 0);
	again = sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE), state,
			       yyjson_doc_get_root(resp), &err);
	CHECK(again != NULL);
	if (again) {
		/* Same seed and clock; call 0 from the record, 1 is the pending one. */
		CHECK(memcmp(sl_replay_seed(again), seed, sizeof(seed)) == 0);
		CHECK_INT(sl_replay_clock(again), clock);
		CHECK_INT(sl_replay_next(again, NULL, 0, "s", "r", "h0"), SL_REPLAY_RECORDED);
		CHECK(sl_replay_result(again, NULL, 0, &d, &value, &e, &elen));
		CHECK_INT(yyjson_mut_get_int(yyjson_mut_obj_get(value, "n")), 1);
		yyjson_mut_doc_free(d);
		CHECK_INT(sl_replay_next(again, NULL, 1, "s", "w", "h1"), SL_REPLAY_PENDING);
		CHECK_STR(sl_replay_inner_state(again), "INNER");
		CHECK(yyjson_obj_get(sl_replay_answers(again), "confirm") != NULL);
		CHECK_INT(sl_replay_next(again, NULL, 2, "s", "w", "h2"), SL_REPLAY_LIVE);
		CHECK(sl_replay_failed(again) == NULL);
		sl_replay_free(again);
	}
	free(state);
	yyjson_doc_free(resp);
	sl_replay_free(rp);
}

TEST(replay_skill_runs_are_apart)
{
	/* The program's call 0 runs a skill (run "0"), whose call 0 is
	 * recorded and whose call 1 asks: the retry tells the skill's calls
	 * from the program's by their run. */
	struct sl_replay *rp = sl_replay_new(CODE, strlen(CODE)), *again;
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL), *vd;
	yyjson_mut_val *r, *value;
	struct sl_err err = { 0 };
	const char *e;
	size_t elen;
	char *state = NULL;

	CHECK_INT(sl_replay_next(rp, NULL, 0, "skills", "k", "hk"), SL_REPLAY_LIVE);
	CHECK_INT(sl_replay_next(rp, "0", 0, "s", "r", "h0"), SL_REPLAY_LIVE);
	sl_replay_record(rp, "0", 0, "s", "r", "h0", yyjson_mut_int(d, 5), NULL, 0);
	CHECK_INT(sl_replay_next(rp, "0", 1, "s", "w", "h1"), SL_REPLAY_LIVE);
	CHECK(sl_replay_suspend(rp, "0", 1, "s", "w", "h1", ir_of(d)));
	r = sl_replay_answer(rp, key, sizeof(key), CRED, sl_seal_now() + 60, d, &err);
	CHECK(r != NULL);
	if (r)
		state = sl_strdup(yyjson_mut_get_str(yyjson_mut_obj_get(r, "requestState")));
	again = state ? sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE), state, NULL, &err) :
			NULL;
	CHECK(again != NULL);
	if (again) {
		/* The skill call itself was never answered: it runs again. */
		CHECK_INT(sl_replay_next(again, NULL, 0, "skills", "k", "hk"), SL_REPLAY_LIVE);
		CHECK_INT(sl_replay_next(again, "0", 0, "s", "r", "h0"), SL_REPLAY_RECORDED);
		CHECK(sl_replay_result(again, "0", 0, &vd, &value, &e, &elen));
		CHECK_INT(yyjson_mut_get_int(value), 5);
		yyjson_mut_doc_free(vd);
		CHECK_INT(sl_replay_next(again, "0", 1, "s", "w", "h1"), SL_REPLAY_PENDING);
		/* The program's own call 1 is not the skill's pending one. */
		CHECK_INT(sl_replay_next(again, NULL, 1, "s", "w", "h1"), SL_REPLAY_LIVE);
		CHECK(sl_replay_failed(again) == NULL);
		sl_replay_free(again);
	}
	free(state);
	yyjson_mut_doc_free(d);
	sl_replay_free(rp);
}

TEST(replay_divergence)
{
	struct sl_replay *rp = sl_replay_new(CODE, strlen(CODE)), *again;
	struct sl_err err = { 0 };
	char *state = first_state(rp, "1");

	/* Call 0 with other arguments: diverged, and it stays so. */
	again = sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE), state, NULL, &err);
	CHECK(again != NULL);
	if (again) {
		CHECK_INT(sl_replay_next(again, NULL, 0, "s", "r", "other"), SL_REPLAY_DIVERGED);
		CHECK(strstr(sl_replay_failed(again), "replay diverged: the program's call 1 is s.r") != NULL);
		CHECK_INT(sl_replay_next(again, NULL, 1, "s", "w", "h1"), SL_REPLAY_DIVERGED);
		sl_replay_free(again);
	}
	/* The pending call as another tool. */
	again = sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE), state, NULL, &err);
	if (again) {
		CHECK_INT(sl_replay_next(again, NULL, 0, "s", "r", "h0"), SL_REPLAY_RECORDED);
		CHECK_INT(sl_replay_next(again, NULL, 1, "s", "x", "h1"), SL_REPLAY_DIVERGED);
		sl_replay_free(again);
	}
	free(state);
	sl_replay_free(rp);
}

TEST(replay_refused_states)
{
	struct sl_replay *rp = sl_replay_new(CODE, strlen(CODE));
	struct sl_err err = { 0 };
	char *state = first_state(rp, "1"), *bad;
	size_t n = strlen(state);

	/* Another client, other code, a changed byte, junk, too long. */
	CHECK(!sl_replay_open(key, sizeof(key), "beef", CODE, strlen(CODE), state, NULL, &err));
	CHECK(strstr(err.msg, "forged") != NULL);
	CHECK(!sl_replay_open(key, sizeof(key), CRED, "x", 1, state, NULL, &err));
	CHECK(strstr(err.msg, "another program") != NULL);
	bad = sl_strdup(state);
	bad[strlen(SL_REPLAY_PREFIX) + 3] ^= 1;
	CHECK(!sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE), bad, NULL, &err));
	CHECK(strstr(err.msg, "forged") != NULL);
	free(bad);
	CHECK(!sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE), "sluice-code.", NULL, &err));
	CHECK(strstr(err.msg, "malformed") != NULL);
	bad = sl_alloc(SL_REPLAY_MAX_STATE + 2);
	memset(bad, 'A', SL_REPLAY_MAX_STATE + 1);
	memcpy(bad, state, n);
	CHECK(!sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE), bad, NULL, &err));
	CHECK(strstr(err.msg, "over the limit") != NULL);
	free(bad);
	free(state);
	sl_replay_free(rp);
}

TEST(replay_bounds)
{
	struct sl_replay *rp = sl_replay_new(CODE, strlen(CODE));
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	struct sl_err err = { 0 };
	char *big = sl_alloc(100001);

	/* Results past the bound: no state, a message that says what to do. */
	memset(big, 'x', 100000);
	for (uint32_t i = 0; i < 3; i++)
		sl_replay_record(rp, NULL, i, "s", "r", "h", yyjson_mut_strcpy(d, big), NULL, 0);
	CHECK(sl_replay_suspend(rp, NULL, 3, "s", "w", "h", ir_of(d)));
	CHECK(sl_replay_answer(rp, key, sizeof(key), CRED, sl_seal_now() + 60, d, &err) == NULL);
	CHECK(strstr(err.msg, "exceed 256 KiB") != NULL && strstr(err.msg, "fewer or smaller") != NULL);
	free(big);
	sl_replay_free(rp);
	yyjson_mut_doc_free(d);
}

TEST(replay_rounds_bounded)
{
	struct sl_replay *rp = sl_replay_new(CODE, strlen(CODE));
	struct sl_err err = { 0 };
	char *state = first_state(rp, "1");

	/* Each retry's answer is one round more; the ninth question fails. */
	for (unsigned round = 1; state && round <= SL_REPLAY_MAX_ROUNDS; round++) {
		struct sl_replay *again = sl_replay_open(key, sizeof(key), CRED, CODE, strlen(CODE),
							 state, NULL, &err);
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		yyjson_mut_val *r;
		free(state);
		state = NULL;
		CHECK(again != NULL);
		if (!again)
			break;
		if (round == SL_REPLAY_MAX_ROUNDS) {
			CHECK(!sl_replay_suspend(again, NULL, 1 + round, "s", "w", "h", ir_of(d)));
			CHECK(strstr(sl_replay_failed(again), "8 times") != NULL);
		} else {
			CHECK(sl_replay_suspend(again, NULL, 1 + round, "s", "w", "h", ir_of(d)));
			r = sl_replay_answer(again, key, sizeof(key), CRED, sl_seal_now() + 60, d, &err);
			CHECK(r != NULL);
			if (r)
				state = sl_strdup(yyjson_mut_get_str(yyjson_mut_obj_get(r, "requestState")));
		}
		yyjson_mut_doc_free(d);
		sl_replay_free(again);
	}
	free(state);
	sl_replay_free(rp);
}

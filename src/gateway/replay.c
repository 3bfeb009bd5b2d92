/* Confirmations inside programs by replay; see replay.h. */
#include "gateway/replay.h"
#include "core/escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define REPLAY_VERSION 2 /* 1: signed, readable (before the state was encrypted) */

struct sl_replay {
	char code[SL_SHA256_HEX];
	char id[SL_SEAL_ID_HEX + 1]; /* the retry's state's seal (sl_seal_open), else "" */
	unsigned long long expiry;   /* the retry's state's */
	uint32_t seed[4];
	uint64_t clock_ms;
	unsigned round;              /* answers given before this run */
	/* From the retry's state (NULL on a first run). */
	yyjson_doc *in;
	yyjson_val *in_calls;        /* [{i, s, t, a, ok, v | e}], in the order they finished */
	yyjson_val *in_pending;      /* {i, s, t, a, state} */
	yyjson_doc *answers;         /* the retry's inputResponses */
	/* For the next state. */
	yyjson_mut_doc *out;
	yyjson_mut_val *calls;
	yyjson_mut_val *pending;     /* set once suspended */
	yyjson_mut_val *ir;          /* the pending call's input_required */
	char *failed;
	bool ended;                  /* by its host (sl_replay_set_ended) */
};

static struct sl_replay *alloc_replay(const char *code, size_t len)
{
	struct sl_replay *rp = sl_alloc(sizeof(*rp));
	sl_sha256_hex(code, len, rp->code);
	rp->out = yyjson_mut_doc_new(NULL);
	if (!rp->out)
		sl_oom();
	rp->calls = yyjson_mut_arr(rp->out);
	return rp;
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct sl_replay *sl_replay_new(const char *code, size_t len)
{
	struct sl_replay *rp = alloc_replay(code, len);
	if (getrandom(rp->seed, sizeof(rp->seed), 0) != sizeof(rp->seed))
		for (int i = 0; i < 4; i++)
			rp->seed[i] = (uint32_t)sl_hash64(rp->code, 64, sl_now_us() + (uint64_t)i);
	rp->clock_ms = wall_ms();
	return rp;
}

void sl_replay_free(struct sl_replay *rp)
{
	if (!rp)
		return;
	yyjson_doc_free(rp->in);
	yyjson_doc_free(rp->answers);
	yyjson_mut_doc_free(rp->out);
	free(rp->failed);
	free(rp);
}

const uint32_t *sl_replay_seed(const struct sl_replay *rp)
{
	return rp->seed;
}

uint64_t sl_replay_clock(const struct sl_replay *rp)
{
	return rp->clock_ms;
}

void sl_replay_args_hash(yyjson_mut_val *args, char out[SL_SHA256_HEX])
{
	size_t n;
	char *json = sl_json_canonical(args, &n);
	sl_sha256_hex(json, n, out);
	free(json);
}

/* ---- decoding a retry's state ---------------------------------------------------- */

/* What a state stands for: a program's state, for this caller, for
 * this code (its hash); the associated data of its seal. */
static char *seal_what(const char *cred, const char *code_hash)
{
	return sl_printf("sluice-code\n%s\n%s", cred, code_hash);
}

/* Whether the decoded state's parts have their types and bounds. */
static bool state_shape(struct sl_replay *rp, yyjson_val *root, struct sl_err *err)
{
	yyjson_val *seed = sl_json_arr(root, "seed"), *c, *pend = sl_json_obj(root, "pending");
	int64_t clock, round, v;
	size_t i, n;

	if (!sl_json_int(root, "v", &v) || v != REPLAY_VERSION || yyjson_arr_size(seed) != 4 ||
	    !sl_json_int(root, "clock", &clock) || clock < 0 || !sl_json_int(root, "round", &round) ||
	    round < 0 || !sl_json_arr(root, "calls") || !pend) {
		sl_err_set(err, "malformed (not a state of this sluice version)");
		return false;
	}
	yyjson_arr_foreach(seed, i, n, c) {
		if (!yyjson_is_uint(c) || yyjson_get_uint(c) > UINT32_MAX) {
			sl_err_set(err, "malformed seed");
			return false;
		}
		rp->seed[i] = (uint32_t)yyjson_get_uint(c);
	}
	yyjson_arr_foreach(sl_json_arr(root, "calls"), i, n, c) {
		if (!sl_json_int(c, "i", &v) || v < 0 || v > UINT32_MAX || !sl_json_str(c, "s") ||
		    !sl_json_str(c, "t") || !sl_json_str(c, "a") ||
		    (!sl_json_true(c, "ok") && !yyjson_is_str(yyjson_obj_get(c, "e")))) {
			sl_err_set(err, "malformed call record %zu", i);
			return false;
		}
	}
	if (!sl_json_int(pend, "i", &v) || v < 0 || v > UINT32_MAX || !sl_json_str(pend, "s") ||
	    !sl_json_str(pend, "t") || !sl_json_str(pend, "a") || !sl_json_str(pend, "state")) {
		sl_err_set(err, "malformed pending call");
		return false;
	}
	rp->clock_ms = (uint64_t)clock;
	rp->round = (unsigned)round;
	rp->in_calls = sl_json_arr(root, "calls");
	rp->in_pending = pend;
	return true;
}

struct sl_replay *sl_replay_open(const void *key, size_t klen, const char *cred, const char *code,
				 size_t len, const char *state, yyjson_val *responses,
				 struct sl_err *err)
{
	size_t slen = strlen(state), jlen = 0;
	struct sl_replay *rp;
	char *what, *json;
	enum sl_seal_check chk;

	if (slen > SL_REPLAY_MAX_STATE) {
		sl_err_set(err, "%zu bytes, over the limit of %u", slen, SL_REPLAY_MAX_STATE);
		return NULL;
	}
	if (strncmp(state, SL_REPLAY_PREFIX, strlen(SL_REPLAY_PREFIX)) != 0 ||
	    !strchr(state + strlen(SL_REPLAY_PREFIX), '.')) {
		sl_err_set(err, "malformed; it is not one sluice issued");
		return NULL;
	}
	rp = alloc_replay(code, len);
	what = seal_what(cred, rp->code);
	chk = sl_seal_open(key, klen, state + strlen(SL_REPLAY_PREFIX), what, &json, &jlen, rp->id);
	free(what);
	if (chk == SL_SEAL_FORGED) {
		sl_err_set(err, "forged, tampered with, issued to another client, or issued for "
			   "another program (its seal does not verify); a retry sends the same "
			   "code, unchanged, with the requestState it was given");
		sl_replay_free(rp);
		return NULL;
	}
	if (chk == SL_SEAL_EXPIRED) {
		sl_err_set(err, "expired; run the program again");
		sl_replay_free(rp);
		return NULL;
	}
	rp->expiry = sl_seal_expiry(state + strlen(SL_REPLAY_PREFIX));
	rp->in = sl_json_read(json, jlen, 0, NULL);
	explicit_bzero(json, jlen);
	free(json);
	if (!rp->in) {
		sl_err_set(err, "malformed (its payload is not JSON)");
		sl_replay_free(rp);
		return NULL;
	}
	if (!state_shape(rp, yyjson_doc_get_root(rp->in), err)) {
		sl_replay_free(rp);
		return NULL;
	}
	if (yyjson_is_obj(responses)) {
		yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
		yyjson_mut_doc_set_root(d, yyjson_val_mut_copy(d, responses));
		rp->answers = yyjson_mut_doc_imut_copy(d, NULL);
		yyjson_mut_doc_free(d);
	}
	return rp;
}

const char *sl_replay_id(const struct sl_replay *rp)
{
	return rp->id;
}

unsigned long long sl_replay_expiry(const struct sl_replay *rp)
{
	return rp->expiry;
}

/* ---- the run --------------------------------------------------------------------- */

/* rec is of run (NULL or "": the program itself). */
static bool of_run(yyjson_val *rec, const char *run)
{
	const char *r = sl_json_str(rec, "r");
	return strcmp(r ? r : "", run ? run : "") == 0;
}

/* The record of call id of run in the retry's state, or NULL. */
static yyjson_val *recorded(const struct sl_replay *rp, const char *run, uint32_t id)
{
	yyjson_val *c;
	size_t i, n;
	int64_t v;
	yyjson_arr_foreach(rp->in_calls, i, n, c)
		if (sl_json_int(c, "i", &v) && v == id && of_run(c, run))
			return c;
	return NULL;
}

static bool same_call(yyjson_val *rec, const char *server, const char *tool, const char *ahash)
{
	return strcmp(sl_json_str(rec, "s"), server) == 0 && strcmp(sl_json_str(rec, "t"), tool) == 0 &&
	       strcmp(sl_json_str(rec, "a"), ahash) == 0;
}

static void diverged(struct sl_replay *rp, uint32_t id, const char *server, const char *tool,
		     yyjson_val *rec)
{
	char *msg;
	if (rec)
		msg = sl_printf("replay diverged: the program's call %u is %s.%s (or its arguments "
				"changed), but when it asked for confirmation it was %s.%s with other "
				"arguments; programs that ask must be deterministic (no call made on "
				"this run; see SANDBOX.md, \"Confirmations\")", id + 1, server, tool,
				sl_json_str(rec, "s"), sl_json_str(rec, "t"));
	else
		msg = sl_printf("replay diverged: the program's call %u (%s.%s) was not made when it "
				"asked for confirmation; programs that ask must be deterministic (no "
				"call made on this run; see SANDBOX.md, \"Confirmations\")", id + 1,
				server, tool);
	sl_replay_fail(rp, msg);
	free(msg);
}

enum sl_replay_step sl_replay_next(struct sl_replay *rp, const char *run, uint32_t id,
				   const char *server, const char *tool, const char *ahash)
{
	yyjson_val *rec;
	int64_t pid;
	bool same_run;

	if (rp->failed)
		return SL_REPLAY_DIVERGED;
	if (!rp->in)
		return SL_REPLAY_LIVE;
	(void)sl_json_int(rp->in_pending, "i", &pid);
	same_run = of_run(rp->in_pending, run);
	if (same_run && (int64_t)id == pid) {
		if (same_call(rp->in_pending, server, tool, ahash))
			return SL_REPLAY_PENDING;
		diverged(rp, id, server, tool, rp->in_pending);
		return SL_REPLAY_DIVERGED;
	}
	if ((rec = recorded(rp, run, id))) {
		if (same_call(rec, server, tool, ahash))
			return SL_REPLAY_RECORDED;
		diverged(rp, id, server, tool, rec);
		return SL_REPLAY_DIVERGED;
	}
	/* Every call issued before the pending one had finished (and was
	 * recorded) when the program ended. */
	if (same_run && (int64_t)id < pid) {
		diverged(rp, id, server, tool, NULL);
		return SL_REPLAY_DIVERGED;
	}
	return SL_REPLAY_LIVE;
}

bool sl_replay_result(struct sl_replay *rp, const char *run, uint32_t id, yyjson_mut_doc **d,
		      yyjson_mut_val **value, const char **error, size_t *len)
{
	yyjson_val *rec = recorded(rp, run, id);
	yyjson_mut_arr_append(rp->calls, yyjson_val_mut_copy(rp->out, rec));
	*d = NULL;
	*value = NULL;
	*error = NULL;
	if (sl_json_true(rec, "ok")) {
		yyjson_val *v = yyjson_obj_get(rec, "v");
		*d = yyjson_mut_doc_new(NULL);
		*value = v ? yyjson_val_mut_copy(*d, v) : yyjson_mut_null(*d);
		return true;
	}
	*error = yyjson_get_str(yyjson_obj_get(rec, "e"));
	*len = yyjson_get_len(yyjson_obj_get(rec, "e"));
	return false;
}

const char *sl_replay_inner_state(const struct sl_replay *rp)
{
	return rp->in_pending ? sl_json_str(rp->in_pending, "state") : NULL;
}

yyjson_val *sl_replay_answers(const struct sl_replay *rp)
{
	return rp->answers ? yyjson_doc_get_root(rp->answers) : NULL;
}

static yyjson_mut_val *call_obj(struct sl_replay *rp, const char *run, uint32_t id,
				const char *server, const char *tool, const char *ahash)
{
	yyjson_mut_val *o = yyjson_mut_obj(rp->out);
	yyjson_mut_obj_add_uint(rp->out, o, "i", id);
	if (run && *run)
		yyjson_mut_obj_add_strcpy(rp->out, o, "r", run);
	yyjson_mut_obj_add_strcpy(rp->out, o, "s", server);
	yyjson_mut_obj_add_strcpy(rp->out, o, "t", tool);
	yyjson_mut_obj_add_strcpy(rp->out, o, "a", ahash);
	return o;
}

void sl_replay_record(struct sl_replay *rp, const char *run, uint32_t id, const char *server,
		      const char *tool, const char *ahash, yyjson_mut_val *value, const char *error,
		      size_t len)
{
	yyjson_mut_val *o = call_obj(rp, run, id, server, tool, ahash);
	yyjson_mut_obj_add_bool(rp->out, o, "ok", error == NULL);
	if (error)
		yyjson_mut_obj_add_strncpy(rp->out, o, "e", error, len);
	else
		yyjson_mut_obj_add_val(rp->out, o, "v", value ? yyjson_mut_val_mut_copy(rp->out, value) :
				       yyjson_mut_null(rp->out));
	yyjson_mut_arr_append(rp->calls, o);
}

bool sl_replay_suspend(struct sl_replay *rp, const char *run, uint32_t id, const char *server,
		       const char *tool, const char *ahash, yyjson_mut_val *ir)
{
	if (rp->pending || rp->failed)
		return false;
	if (rp->round + 1 > SL_REPLAY_MAX_ROUNDS) {
		char *msg = sl_printf("the program asked for answers %u times, the limit for one "
				      "program; split the work into programs that each ask fewer "
				      "times", SL_REPLAY_MAX_ROUNDS);
		sl_replay_fail(rp, msg);
		free(msg);
		return false;
	}
	rp->pending = call_obj(rp, run, id, server, tool, ahash);
	rp->ir = yyjson_mut_val_mut_copy(rp->out, ir);
	yyjson_mut_obj_add_strcpy(rp->out, rp->pending, "state",
				  yyjson_mut_get_str(yyjson_mut_obj_get(ir, "requestState")) ?: "");
	return true;
}

bool sl_replay_suspended(const struct sl_replay *rp)
{
	return rp->pending && !rp->failed;
}

void sl_replay_set_ended(struct sl_replay *rp)
{
	rp->ended = true;
}

bool sl_replay_ended(const struct sl_replay *rp)
{
	return rp->ended;
}

void sl_replay_fail(struct sl_replay *rp, const char *msg)
{
	if (!rp->failed)
		rp->failed = sl_strdup(msg);
}

const char *sl_replay_failed(const struct sl_replay *rp)
{
	return rp->failed;
}

/* ---- the next state -------------------------------------------------------------- */

yyjson_mut_val *sl_replay_answer(struct sl_replay *rp, const void *key, size_t klen,
				 const char *cred, unsigned long long expiry, yyjson_mut_doc *d,
				 struct sl_err *err)
{
	yyjson_mut_doc *sd = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(sd), *seed = yyjson_mut_arr(sd), *r;
	size_t jlen;
	char *json, *what, *sealed, *state;

	yyjson_mut_obj_add_int(sd, o, "v", REPLAY_VERSION);
	for (int i = 0; i < 4; i++)
		yyjson_mut_arr_add_uint(sd, seed, rp->seed[i]);
	yyjson_mut_obj_add_val(sd, o, "seed", seed);
	yyjson_mut_obj_add_uint(sd, o, "clock", rp->clock_ms);
	yyjson_mut_obj_add_uint(sd, o, "round", rp->round + 1);
	yyjson_mut_obj_add_val(sd, o, "calls", yyjson_mut_val_mut_copy(sd, rp->calls));
	yyjson_mut_obj_add_val(sd, o, "pending", yyjson_mut_val_mut_copy(sd, rp->pending));
	json = sl_json_write_mut_val(o, &jlen);
	yyjson_mut_doc_free(sd);
	/* The prefix, the expiry, the nonce and the tag (under 100 bytes) fit
	 * the bound. */
	if (SL_BASE64URL_SIZE(jlen + SL_AEAD_OVERHEAD) + 100 > SL_REPLAY_MAX_STATE) {
		sl_err_set(err, "the program asked for confirmation after tool calls whose results "
			   "come to %zu bytes; the state to resume it would exceed %u KiB. Make "
			   "fewer or smaller calls before the call that needs confirmation (e.g. "
			   "make it first), or return their results and confirm in a second program",
			   jlen, SL_REPLAY_MAX_STATE >> 10);
		explicit_bzero(json, jlen);
		free(json);
		return NULL;
	}
	/* Encrypted, not only signed: it holds the recorded results, personal
	 * data included, which the client must not read (nor change). */
	what = seal_what(cred, rp->code);
	sealed = sl_seal_private(key, klen, expiry, what, json, jlen);
	state = sl_printf(SL_REPLAY_PREFIX "%s", sealed);
	explicit_bzero(json, jlen);
	free(json);
	free(what);
	free(sealed);

	r = yyjson_mut_obj(d);
	yyjson_mut_obj_add_str(d, r, "resultType", "input_required");
	yyjson_mut_obj_add_val(d, r, "inputRequests",
			       yyjson_mut_val_mut_copy(d, yyjson_mut_obj_get(rp->ir, "inputRequests")));
	yyjson_mut_obj_add_strcpy(d, r, "requestState", state);
	free(state);
	return r;
}

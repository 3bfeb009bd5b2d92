/*
 * Confirmations inside programs for MCP 2026-07-28 clients, by replay.
 *
 * A 2026-07-28 client takes no request from sluice: a question is the
 * input_required answer to its own tools/call, and the retry is a new
 * request. A program (execute_code) whose tool call needs a person's
 * answer (the policy's confirm, pinning's question) cannot be suspended
 * across those requests, so it ends, and its requestState carries what it
 * takes to run it again to the same point:
 *
 *   the program's hash (SHA-256 of its code), Math.random's seed, the
 *   clock it reads (Date.now and new Date() return that time), the round,
 *   the results of the calls it made (by call number, which is issue
 *   order), and the pending call (number, server, tool, arguments' hash,
 *   and the stage's own requestState for it).
 *
 * The retry (the same code, that requestState, the person's answers in
 * inputResponses) runs the program again: each recorded call gets its
 * recorded result without being made (after checking it is the same call),
 * the pending call is made with the answers (the stage decides again from
 * them), and the program goes on live. No call is made twice.
 *
 * The requestState: "sluice-code.EXPIRY.BLOB", sl_seal_private
 * (core/digest.h) under the generation's key: the state as JSON, encrypted
 * with AES-256-GCM (the recorded results are private: personal data a
 * tokenised client must not read), with "sluice-code\nCRED\nSHA256(code)"
 * as associated data: good only for the caller it was issued to (CRED, the
 * caller's identity digest), for this program, until its expiry,
 * unchanged. At most SL_REPLAY_MAX_STATE bytes; at most
 * SL_REPLAY_MAX_ROUNDS answers per program. A state is good for one retry:
 * its owner marks sl_replay_id used (shared/once.h) before running it.
 */
#ifndef SL_GATEWAY_REPLAY_H
#define SL_GATEWAY_REPLAY_H

#include "core/json.h"
#include "core/digest.h"

#define SL_REPLAY_PREFIX "sluice-code."
#define SL_REPLAY_MAX_STATE (256u << 10) /* bytes of a requestState, in and out */
#define SL_REPLAY_MAX_ROUNDS 8           /* input_required answers of one program */
#define SL_REPLAY_TTL_S 3600             /* a requestState's life */

struct sl_replay;

/* A replay record for a first run of code: a fresh seed, the clock now. */
struct sl_replay *sl_replay_new(const char *code, size_t len);
/* The record of a retry: state is checked (sealed for cred under key, not
 * expired, for this code, under the size and round bounds) and decoded;
 * responses (copied) are the person's answers. NULL with err set when the
 * state is refused. */
struct sl_replay *sl_replay_open(const void *key, size_t klen, const char *cred, const char *code,
				 size_t len, const char *state, yyjson_val *responses,
				 struct sl_err *err);
void sl_replay_free(struct sl_replay *rp);
/* A retry's state: its seal's id (the nonce, sl_seal_open), which names it
 * for its single use, and its expiry (sl_seal_now's clock). */
const char *sl_replay_id(const struct sl_replay *rp);
unsigned long long sl_replay_expiry(const struct sl_replay *rp);

/* Math.random's seed and the fixed clock (ms since the epoch) of the run. */
const uint32_t *sl_replay_seed(const struct sl_replay *rp);
uint64_t sl_replay_clock(const struct sl_replay *rp);

/* What to do with call number id (server, tool, arguments' hash) of run:
 * NULL or "" for the program's own calls, else the path of the skill run
 * that made it (gateway/codemode.c: "3" for the skill the program's call
 * 3 runs, "3.1" for the one that skill's call 1 runs), so that a skill's
 * calls inside the program are replayed as the program's are. */
enum sl_replay_step {
	SL_REPLAY_LIVE,     /* make it */
	SL_REPLAY_PENDING,  /* make it with sl_replay_answers: the person answered */
	SL_REPLAY_RECORDED, /* answer it from the record (sl_replay_result) */
	SL_REPLAY_DIVERGED, /* not the call the record has: the program ends (sl_replay_failed) */
};
enum sl_replay_step sl_replay_next(struct sl_replay *rp, const char *run, uint32_t id,
				   const char *server, const char *tool, const char *ahash);
/* The recorded result of the call sl_replay_next said RECORDED: the value
 * (built in *d, which the caller then owns) or the error (borrowed, *len
 * bytes); the call is recorded again for the next state. Returns true for
 * a value. */
bool sl_replay_result(struct sl_replay *rp, const char *run, uint32_t id, yyjson_mut_doc **d,
		      yyjson_mut_val **value, const char **error, size_t *len);
/* For the PENDING call: the stage's requestState and the person's answers
 * (borrowed until rp is freed). */
const char *sl_replay_inner_state(const struct sl_replay *rp);
yyjson_val *sl_replay_answers(const struct sl_replay *rp);

/* Records a finished call's outcome: value, or error (len bytes). */
void sl_replay_record(struct sl_replay *rp, const char *run, uint32_t id, const char *server,
		      const char *tool, const char *ahash, yyjson_mut_val *value, const char *error,
		      size_t len);
/* Call id needs an answer: ir is its input_required result ({resultType,
 * inputRequests, requestState}, copied). Returns false when one is pending
 * already (the later one is not recorded: it was not made, and the retry
 * makes it again) or the rounds are used up (sl_replay_failed says so). */
bool sl_replay_suspend(struct sl_replay *rp, const char *run, uint32_t id, const char *server,
		       const char *tool, const char *ahash, yyjson_mut_val *ir);
bool sl_replay_suspended(const struct sl_replay *rp);
/* The program was ended by its host to ask or because it failed (not by
 * its client, nor by itself): only then is input_required its answer. */
void sl_replay_set_ended(struct sl_replay *rp);
bool sl_replay_ended(const struct sl_replay *rp);
/* Ends the replay as failed with msg (the first failure stays). */
void sl_replay_fail(struct sl_replay *rp, const char *msg);
/* Why the program must end (a divergence, too many rounds), or NULL. */
const char *sl_replay_failed(const struct sl_replay *rp);

/* The input_required answer of a suspended program, built in d: its
 * inputRequests, and the requestState sealed for cred until expiry. NULL
 * with err set when the state would exceed SL_REPLAY_MAX_STATE. */
yyjson_mut_val *sl_replay_answer(struct sl_replay *rp, const void *key, size_t klen,
				 const char *cred, unsigned long long expiry, yyjson_mut_doc *d,
				 struct sl_err *err);

/* SHA-256 hex of args' canonical JSON (the calls' identity in the record). */
void sl_replay_args_hash(yyjson_mut_val *args, char out[SL_SHA256_HEX]);

#endif

/* Whole results for read_result, per session, per caller and across
 * replicas; see kept.h. */
#include "gateway/kept.h"
#include "stages/results.h"
#include "gateway/session.h"
#include "shared/redis.h"
#include "shared/state.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sl_kept_wait {
	sl_kept_fn *fn;            /* a lookup's; NULL once abandoned */
	sl_kept_stored_fn *stored; /* a write's; NULL once abandoned */
	void *ctx;
	char id[SL_KEPT_ID_SIZE];
	size_t max;                /* the cap of a shared entry when asked */
	const struct sl_governor *gov; /* a lookup's, with its session: both live */
	struct sl_session *s;          /* while fn is set (the pending holds them) */
};

/* 2026-07-28 requests each come as a session of their own. */
static bool per_caller(const struct sl_session *s)
{
	return s->era == SL_ERA_MODERN;
}

static struct sl_redis *redis_of(const struct sl_session *s)
{
	return s->gw ? s->gw->redis : NULL;
}

/* s's own store, made on first use with the governor's TTL and cap. */
static struct sl_results *store_of(const struct sl_governor *gov, struct sl_session *s)
{
	if (!s->results)
		s->results = sl_results_new(sl_governor_ttl_ms(gov), sl_governor_store_bytes(gov));
	return s->results;
}

static void on_stored(void *ctx, redisReply *reply, const char *error)
{
	struct sl_kept_wait *w = ctx;
	bool ok = reply && reply->type != REDIS_REPLY_ERROR;

	if (!ok)
		sl_log(SL_LOG_DEBUG, "read_result: a result was not stored in Redis: %s",
		       reply ? reply->str : error ? error : "");
	if (w && w->stored)
		w->stored(w->ctx, ok);
	free(w);
}

bool sl_kept_put(const struct sl_governor *gov, struct sl_session *s, char *json, size_t len,
		 char id[SL_KEPT_ID_SIZE], sl_kept_stored_fn *stored, void *ctx,
		 struct sl_kept_wait **wait)
{
	struct sl_kept_wait *w = NULL;
	struct sl_redis *r = redis_of(s);
	bool shared = r && sl_redis_state(r) == SL_REDIS_CONNECTED &&
		      len <= sl_governor_shared_bytes(gov);
	char rid[SL_RESULT_ID_SIZE], *key = NULL, ttl[24];
	const char *kept, *argv[5];
	size_t lens[5];
	struct sl_err err;

	if (shared) {
		/* Redis copies the value: json stays ours for the local store. */
		sl_shared_result_id(rid, true);
		key = sl_shared_result_key(sl_redis_prefix(r), s->cred, rid);
		snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)sl_governor_ttl_ms(gov));
		argv[0] = "SET", argv[1] = key, argv[2] = json, argv[3] = "PX", argv[4] = ttl;
		for (int i = 0; i < 5; i++)
			lens[i] = i == 2 ? len : strlen(argv[i]);
		/* A write that fails later leaves the entry local, and another
		 * replica's lookup says the shared store missed it. The client's
		 * next request comes after this command is on its way (the answer
		 * goes out later in the loop), and Redis runs the commands of the
		 * fleet in the order they arrive. One that cannot go at all makes
		 * the id a local one, which says so. */
		if (stored) {
			w = sl_alloc(sizeof(*w));
			w->stored = stored;
			w->ctx = ctx;
		}
		if (sl_redis_command(r, on_stored, w, 5, argv, lens, &err) < 0) {
			sl_log(SL_LOG_DEBUG, "read_result: kept locally only: %s", err.msg);
			shared = false;
			free(w);
			w = NULL;
		}
		free(key);
	}
	if (r && !shared)
		sl_shared_result_id(rid, false);
	if (per_caller(s))
		kept = sl_results_put_as(sl_governor_callers(gov), r ? rid : NULL, s->cred, json, len);
	else
		kept = sl_results_put_as(store_of(gov, s), r ? rid : NULL, NULL, json, len);
	if (wait)
		*wait = w;
	if (!kept && !shared)
		return false;
	/* Over the local cap, yet in Redis: found there. */
	snprintf(id, SL_KEPT_ID_SIZE, "%s", kept ? kept : rid);
	return true;
}

/* A result read from Redis is kept here too (in the session's or the
 * caller's store, under its id and owner, for ttlMs from now, within the
 * store's bounds), so that its next pages are not fetched again: each was a
 * GET of the whole result (bench/replica.mjs: ~11 ms a page for 300 issues
 * against ~1.4 ms). It is the text each page would be cut from anyway (a
 * result is any text; the size was checked): nothing more is trusted. */
static void keep_here(const struct sl_kept_wait *w, const char *text, size_t len)
{
	if (per_caller(w->s))
		sl_results_put_as(sl_governor_callers(w->gov), w->id, w->s->cred,
				  sl_strndup(text, len), len);
	else
		sl_results_put_as(store_of(w->gov, w->s), w->id, NULL,
				  sl_strndup(text, len), len);
}

static void on_reply(void *ctx, redisReply *reply, const char *error)
{
	struct sl_kept_wait *w = ctx;
	char why[400];

	if (!w->fn) {
		free(w);
		return;
	}
	if (!reply) {
		snprintf(why, sizeof(why), "no result '%s' could be read: the shared store (Redis) "
			 "failed (%.200s); try again, or call the tool again", w->id, error ? error : "");
		w->fn(w->ctx, NULL, 0, why);
	} else if (reply->type == REDIS_REPLY_STRING && (size_t)reply->len <= w->max) {
		keep_here(w, reply->str, (size_t)reply->len);
		w->fn(w->ctx, reply->str, (size_t)reply->len, NULL);
	} else if (reply->type == REDIS_REPLY_NIL) {
		snprintf(why, sizeof(why), "no result '%s': it expired (results are kept for "
			 "sluice.governor.ttlMs, 30 minutes by default), or it belongs to another "
			 "caller", w->id);
		w->fn(w->ctx, NULL, 0, why);
	} else {
		/* Not what sluice wrote: someone else's key, or a tampered store.
		 * At most a warning a minute, however often clients ask: the
		 * rate is the process's, like the Redis client it concerns. */
		static struct sl_rate warned;
		if (sl_rate_admit(&warned, 60000, 1))
			sl_log(SL_LOG_WARN, "read_result: the shared store's entry for %s is not a string "
		       "within sluice.governor.maxSharedBytes; ignored (at most one such warning a "
			       "minute)", w->id);
		snprintf(why, sizeof(why), "no result '%s': the shared store holds something else "
			 "under its key", w->id);
		w->fn(w->ctx, NULL, 0, why);
	}
	free(w);
}

static void not_found(const struct sl_session *s, const char *id, sl_kept_fn *fn, void *ctx)
{
	struct sl_redis *r = redis_of(s);
	char why[500];

	if (r && sl_shared_result_id_shared(id))
		snprintf(why, sizeof(why), "no result with id '%.60s' here: it is kept in the shared "
			 "store (Redis), which this replica cannot reach now; it can be read again "
			 "once Redis is back (else call the tool again)", id);
	else if (r && sl_shared_result_id_local(id))
		snprintf(why, sizeof(why), "no result with id '%.60s' here: it expired, or it was kept "
			 "by another replica only (larger than sluice.governor.maxSharedBytes, or made "
			 "while the shared store was unreachable); call the tool again", id);
	else
		snprintf(why, sizeof(why), "no result '%.60s' here: result ids last "
			 "sluice.governor.ttlMs (30 minutes by default) and belong to the %s that "
			 "received them", id ? id : "", per_caller(s) ? "caller" : "session");
	fn(ctx, NULL, 0, why);
}

struct sl_kept_wait *sl_kept_get(const struct sl_governor *gov, struct sl_session *s,
				 const char *id, sl_kept_fn *fn, void *ctx)
{
	struct sl_redis *r = redis_of(s);
	struct sl_kept_wait *w;
	const char *text, *argv[2];
	size_t len, lens[2];
	struct sl_err err;
	char *key;

	text = !id ? NULL : per_caller(s) ? sl_results_get_for(sl_governor_callers(gov), id, s->cred, &len) :
	       sl_results_get(store_of(gov, s), id, &len);
	if (text) {
		fn(ctx, text, len, NULL);
		return NULL;
	}
	key = r && sl_redis_state(r) == SL_REDIS_CONNECTED ?
	      sl_shared_result_key(sl_redis_prefix(r), s->cred, id) : NULL;
	if (!key) {
		not_found(s, id, fn, ctx);
		return NULL;
	}
	w = sl_alloc(sizeof(*w));
	w->fn = fn;
	w->ctx = ctx;
	w->max = sl_governor_shared_bytes(gov);
	w->gov = gov;
	w->s = s;
	snprintf(w->id, sizeof(w->id), "%s", id);
	argv[0] = "GET", argv[1] = key;
	lens[0] = 3, lens[1] = strlen(key);
	if (sl_redis_command(r, on_reply, w, 2, argv, lens, &err) < 0) {
		free(w);
		free(key);
		not_found(s, id, fn, ctx);
		return NULL;
	}
	free(key);
	return w;
}

void sl_kept_abandon(struct sl_kept_wait *w)
{
	if (w) /* freed by on_reply or on_stored, which always run */
		w->fn = NULL, w->stored = NULL;
}

const struct sl_keeper sl_kept_keeper = {
	.put = sl_kept_put,
	.abandon = sl_kept_abandon,
};

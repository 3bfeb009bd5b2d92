/* Single-use marks, here and in Redis; see once.h. */
#include "shared/once.h"
#include "core/digest.h"
#include "core/log.h"
#include "core/lru.h"
#include "shared/redis.h"
#include "shared/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mark {
	struct sl_lru_entry e;
};

struct sl_once {
	struct sl_lru marks;  /* "purpose:id" -> mark, until the state's expiry */
	size_t max;
	struct sl_rate full_logged;
	struct sl_redis *redis;            /* set by sl_once_share */
	struct sl_redis_listener *up;      /* its (re)connects */
};

/* A claim in Redis, in one round trip. KEYS: the epoch, the mark; ARGV:
 * now, the state's issue time, the least issue time past the epoch (the
 * slack, seconds), the mark's PX. No epoch: the data began now (a fresh
 * Redis, one restarted empty, a FLUSHALL), and whatever marks were there
 * may be gone: 0. A state issued before the epoch (plus the slack for the
 * replicas' clocks): its mark may be gone with the old data: 1. Else the
 * mark, first writer wins: OK, or nil when it was set. An epoch that is
 * not a number fails the script (an error: refused too). */
static const char claim_script[] =
	"local e = redis.call('GET', KEYS[1])\n"
	"if not e then redis.call('SET', KEYS[1], ARGV[1]) return 0 end\n"
	"if tonumber(ARGV[2]) < tonumber(e) + tonumber(ARGV[3]) then return 1 end\n"
	"return redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[4])\n";

struct sl_once_wait {
	sl_once_fn *fn;       /* NULL once cancelled */
	void *ctx;
};

static void mark_free(struct sl_lru_entry *e, void *arg)
{
	(void)arg;
	free(sl_lru_item(e, struct mark, e));
}

struct sl_once *sl_once_new(size_t max)
{
	struct sl_once *o = sl_alloc(sizeof(*o));
	/* The map's own bound is never reached: a claim at max is refused
	 * before the put (an eviction would forget a live mark). */
	sl_lru_init(&o->marks, max + 1, 0, mark_free, NULL);
	o->max = max;
	return o;
}

void sl_once_free(struct sl_once *o)
{
	if (!o)
		return;
	sl_redis_unlisten(o->up);
	sl_lru_dispose(&o->marks);
	free(o);
}

size_t sl_once_count(struct sl_once *o)
{
	sl_lru_expire(&o->marks, sl_now_ms());
	return o->marks.count;
}

/* The first writer of the epoch wins: a restarted Redis that kept its
 * data keeps its epoch. Not sent (Redis down again): the next claim sets
 * it. */
static void on_up(void *ctx)
{
	struct sl_once *o = ctx;
	char *key = sl_shared_once_epoch_key(sl_redis_prefix(o->redis)), now[24];
	const char *argv[4] = { "SET", key, now, "NX" };
	size_t lens[4];
	struct sl_err err;

	snprintf(now, sizeof(now), "%llu", sl_seal_now());
	for (int i = 0; i < 4; i++)
		lens[i] = strlen(argv[i]);
	if (sl_redis_command(o->redis, NULL, NULL, 4, argv, lens, &err) < 0)
		sl_log(SL_LOG_DEBUG, "approvals: the shared store's epoch was not set: %s", err.msg);
	free(key);
}

void sl_once_share(struct sl_once *o, struct sl_redis *redis)
{
	if (!o || o->up)
		return;
	o->redis = redis;
	o->up = sl_redis_listen(redis, NULL, NULL, on_up, o);
}

enum sl_once_verdict sl_once_verdict_of(const struct redisReply *reply, const char **why)
{
	*why = NULL;
	if (reply && reply->type == REDIS_REPLY_STATUS && strcmp(reply->str, "OK") == 0)
		return SL_ONCE_FIRST;
	if (reply && reply->type == REDIS_REPLY_NIL)
		return SL_ONCE_USED;
	if (reply && reply->type == REDIS_REPLY_INTEGER && (reply->integer == 0 || reply->integer == 1))
		*why = "the shared store (Redis) restarted empty (or was emptied) after, or shortly "
		       "before, this approval was given, so whether it was used on another replica "
		       "may be lost";
	else
		*why = "the shared store (Redis) did not answer whether it was used on another "
		       "replica";
	return SL_ONCE_UNSURE;
}

static void on_set(void *ctx, redisReply *reply, const char *error)
{
	struct sl_once_wait *w = ctx;
	const char *why;
	enum sl_once_verdict v = sl_once_verdict_of(reply, &why);

	if (w->fn)
		w->fn(w->ctx, v, why);
	(void)error;
	free(w);
}

void sl_once_cancel(struct sl_once_wait *w)
{
	w->fn = NULL; /* on_set frees it */
}

enum sl_once_verdict sl_once_claim(struct sl_once *o, struct sl_redis *redis, const char *purpose,
				   const char *id, unsigned long long issued, unsigned long long expiry,
				   sl_once_fn *fn, void *ctx, struct sl_once_wait **wait,
				   const char **why)
{
	uint64_t now = sl_now_ms(), wall = sl_seal_now(), ttl_ms;
	char *key, *rkey, *ekey, nums[4][24];
	const char *argv[9];
	size_t lens[9];
	struct sl_err err;
	struct sl_once_wait *w;

	*why = NULL;
	if (!o) {
		*why = "nothing keeps the approvals used here (only a serving gateway does)";
		return SL_ONCE_UNSURE;
	}
	/* Kept past the expiry: a state is refused as expired only once its
	 * expiry second is over, on each replica's own clock (which may lag
	 * this one's by some seconds). */
	ttl_ms = (expiry >= wall ? expiry - wall : 0) * 1000 + SL_ONCE_SLACK_MS;
	key = sl_printf("%s:%s", purpose, id);
	if (sl_lru_get(&o->marks, key, now)) {
		free(key);
		return SL_ONCE_USED;
	}
	if (o->marks.count >= o->max)
		sl_lru_expire(&o->marks, now);
	/* With the shared store, which decides, a mark here only saves a
	 * round trip: the oldest may go. Alone, forgetting one would let its
	 * approval run again. */
	if (o->marks.count >= o->max && redis)
		sl_lru_drop(&o->marks, sl_lru_oldest(&o->marks));
	if (o->marks.count >= o->max) {
		if (sl_rate_admit(&o->full_logged, 60000, 1))
			sl_log(SL_LOG_WARN, "approvals: %zu approvals were used within their lifetime, "
			       "the most one process remembers: more are refused until the oldest "
			       "expire", o->max);
		free(key);
		*why = "too many approvals are in use on this gateway right now";
		return SL_ONCE_UNSURE;
	}
	(void)sl_lru_put(&o->marks, key, &((struct mark *)sl_alloc(sizeof(struct mark)))->e, 0,
			 now + ttl_ms);
	free(key);
	if (!redis)
		return SL_ONCE_FIRST;
	ekey = sl_shared_once_epoch_key(sl_redis_prefix(redis));
	rkey = sl_shared_once_key(sl_redis_prefix(redis), purpose, id);
	snprintf(nums[0], sizeof(nums[0]), "%llu", (unsigned long long)wall);
	snprintf(nums[1], sizeof(nums[1]), "%llu", issued);
	snprintf(nums[2], sizeof(nums[2]), "%d", SL_ONCE_SLACK_MS / 1000);
	snprintf(nums[3], sizeof(nums[3]), "%llu", (unsigned long long)ttl_ms);
	argv[0] = "EVAL", argv[1] = claim_script, argv[2] = "2", argv[3] = ekey, argv[4] = rkey;
	for (int i = 0; i < 4; i++)
		argv[5 + i] = nums[i];
	for (int i = 0; i < 9; i++)
		lens[i] = strlen(argv[i]);
	w = sl_alloc(sizeof(*w));
	w->fn = fn;
	w->ctx = ctx;
	if (sl_redis_command(redis, on_set, w, 9, argv, lens, &err) < 0) {
		free(w);
		free(rkey);
		free(ekey);
		*why = "the shared store (Redis) is unreachable, so it cannot be shown unused on "
		       "the other replicas";
		return SL_ONCE_UNSURE;
	}
	free(rkey);
	free(ekey);
	*wait = w;
	return SL_ONCE_WAIT;
}

void sl_once_release(struct sl_once *o, struct sl_redis *redis, const char *purpose,
		     const char *id)
{
	char *key, *rkey;
	const char *argv[2];
	size_t lens[2];
	struct sl_err err;

	if (!o)
		return;
	key = sl_printf("%s:%s", purpose, id);
	sl_lru_del(&o->marks, key);
	free(key);
	if (!redis)
		return;
	rkey = sl_shared_once_key(sl_redis_prefix(redis), purpose, id);
	argv[0] = "DEL", argv[1] = rkey;
	lens[0] = 3, lens[1] = strlen(rkey);
	/* Not sent (Redis down): the mark expires with the state, and the
	 * state is refused until then, as an approval not shown unused. */
	if (sl_redis_command(redis, NULL, NULL, 2, argv, lens, &err) < 0)
		sl_log(SL_LOG_DEBUG, "approvals: a claim could not be given back: %s", err.msg);
	free(rkey);
}

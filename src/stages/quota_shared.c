/* The quota stage's buckets in Redis; see quota_shared.h. */
#include "stages/quota_shared.h"
#include "core/log.h"
#include "pipeline/call.h"
#include "shared/redis.h"
#include "shared/state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ASKS_MAX 2

/* KEYS: one bucket per ask. ARGV: per ask, calls per minute, the bucket's
 * size, calls per day (0: none). The same arithmetic as sl_bucket_* in
 * quota_store.c, in 1/60000ths of a call; numbers are written with %.0f
 * since Lua's default conversion keeps only 14 digits. */
const char sl_quota_script[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
	"local UNIT, DAY = 60000, 86400000\n"
	"local day = math.floor(now / DAY)\n"
	"local st = {}\n"
	"for i = 1, #KEYS do\n"
	"  local pm, size, pd = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i-1]), tonumber(ARGV[3*i])\n"
	"  local cap = size * UNIT\n"
	"  local h = redis.call('HMGET', KEYS[i], 'u', 't', 'd', 'n')\n"
	"  local u, at, d, n = tonumber(h[1]), tonumber(h[2]), tonumber(h[3]), tonumber(h[4])\n"
	"  if not (u and at and d and n) then u, at, d, n = cap, now, day, 0 end\n"
	"  if d ~= day then d, n = day, 0 end\n"
	"  if now > at and pm > 0 then u = math.min(cap, u + (now - at) * pm) end\n"
	"  if u > cap then u = cap end\n"
	"  if u < 0 then u = 0 end\n"
	"  if pd > 0 and n >= pd then return {1, i, 2, (day + 1) * DAY - now} end\n"
	"  if pm > 0 and u < UNIT then return {1, i, 1, math.max(1, math.ceil((UNIT - u) / pm))} end\n"
	"  st[i] = {u, d, n, pm, cap, pd}\n"
	"end\n"
	"for i = 1, #KEYS do\n"
	"  local s = st[i]\n"
	"  local u = s[1]\n"
	"  if s[4] > 0 then u = u - UNIT end\n"
	"  redis.call('HSET', KEYS[i], 'u', string.format('%.0f', u), 't', string.format('%.0f', now),\n"
	"             'd', string.format('%.0f', s[2]), 'n', string.format('%.0f', s[3] + 1))\n"
	"  local ttl = 1000\n"
	"  if s[4] > 0 then ttl = ttl + math.ceil((s[5] - u) / s[4]) end\n"
	"  if s[6] > 0 then ttl = math.max(ttl, (s[2] + 1) * DAY - now + 1000) end\n"
	"  redis.call('PEXPIRE', KEYS[i], string.format('%.0f', ttl))\n"
	"end\n"
	"return {0}\n";

struct sl_quota_wait {
	struct sl_list link;             /* in the stage's waits */
	struct sl_call *c;               /* NULL once cancelled */
	sl_quota_shared_fn *done;
	void *ctx;
	struct sl_quota_ask asks[ASKS_MAX];
	char *keys[ASKS_MAX], *names[ASKS_MAX];
	size_t n;
};

static const char *const scope_words[] = { "subject", "profile" };

static void wait_free(struct sl_quota_wait *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->keys[i]);
		free(w->names[i]);
	}
	free(w);
}

static void unlink_wait(struct sl_quota_wait *w)
{
	sl_list_remove(&w->link);
}

static bool integer(const redisReply *r, long long lo, long long hi, long long *v)
{
	if (!r || r->type != REDIS_REPLY_INTEGER || r->integer < lo || r->integer > hi)
		return false;
	*v = r->integer;
	return true;
}

int sl_quota_shared_parse(const redisReply *reply, const struct sl_quota_ask *asks, size_t n,
			  bool *admitted, struct sl_quota_refusal *why)
{
	long long flag, ask, window, retry;

	if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
	    !integer(reply->element[0], 0, 1, &flag))
		return -1;
	if (flag == 0) {
		if (reply->elements != 1)
			return -1;
		*admitted = true;
		return 0;
	}
	/* A refusal: no longer wait than a day and a bit (the day quota). */
	if (reply->elements != 4 || !integer(reply->element[1], 1, (long long)n, &ask) ||
	    !integer(reply->element[2], 1, 2, &window) ||
	    !integer(reply->element[3], 1, (long long)SL_DAY_MS + 60000, &retry))
		return -1;
	*admitted = false;
	why->ask = (size_t)(ask - 1);
	why->window = window == 1 ? SL_QUOTA_MINUTE : SL_QUOTA_DAY;
	why->limit = window == 1 ? asks[why->ask].lim->per_minute : asks[why->ask].lim->per_day;
	why->retry_ms = (uint64_t)retry;
	return 0;
}

static void on_reply(void *ctx, redisReply *reply, const char *error)
{
	struct sl_quota_wait *w = ctx;
	struct sl_quota_refusal why = { 0 };
	bool admitted = false;
	int rc;

	if (!w->c) {
		wait_free(w);
		return;
	}
	unlink_wait(w);
	if (!reply)
		rc = -1; /* the shared state reports the outage */
	else if (sl_quota_shared_parse(reply, w->asks, w->n, &admitted, &why) < 0) {
		rc = -1;
		sl_log(SL_LOG_DEBUG, "quotas: the shared store's answer is not the script's (%s); "
		       "counted on this replica", reply->type == REDIS_REPLY_ERROR ? reply->str : "shape");
	} else {
		rc = admitted ? 1 : 0;
	}
	(void)error;
	w->done(w->ctx, w->c, w->asks, w->n, rc, &why);
	wait_free(w);
}

bool sl_quota_shared_ask(struct sl_redis *r, struct sl_list *waits, struct sl_call *c,
			 const struct sl_quota_ask *asks, size_t n, sl_quota_shared_fn *done,
			 void *ctx)
{
	const char *argv[3 + ASKS_MAX * 4];
	size_t lens[3 + ASKS_MAX * 4];
	char nums[ASKS_MAX * 3][16], nk[4];
	char *rkeys[ASKS_MAX] = { NULL };
	struct sl_quota_wait *w;
	struct sl_err err;
	int argc = 0, rc;

	if (!r || sl_redis_state(r) != SL_REDIS_CONNECTED || n == 0 || n > ASKS_MAX)
		return false;
	w = sl_alloc(sizeof(*w));
	w->c = c;
	w->done = done;
	w->ctx = ctx;
	w->n = n;
	snprintf(nk, sizeof(nk), "%zu", n);
	argv[argc++] = "EVAL";
	argv[argc++] = sl_quota_script;
	argv[argc++] = nk;
	for (size_t i = 0; i < n; i++) {
		w->asks[i] = asks[i];
		w->keys[i] = sl_strdup(asks[i].key);
		w->names[i] = sl_strdup(asks[i].name);
		w->asks[i].key = w->keys[i];
		w->asks[i].name = w->names[i];
		rkeys[i] = sl_shared_quota_key(sl_redis_prefix(r), scope_words[asks[i].scope], asks[i].key);
		argv[argc++] = rkeys[i];
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(nums[3 * i], 16, "%u", asks[i].lim->per_minute);
		snprintf(nums[3 * i + 1], 16, "%u", sl_bucket_size(asks[i].lim));
		snprintf(nums[3 * i + 2], 16, "%u", asks[i].lim->per_day);
		for (int k = 0; k < 3; k++)
			argv[argc++] = nums[3 * i + k];
	}
	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	rc = sl_redis_command(r, on_reply, w, argc, argv, lens, &err);
	for (size_t i = 0; i < n; i++)
		free(rkeys[i]);
	if (rc < 0) {
		wait_free(w);
		return false;
	}
	sl_list_push_front(waits, &w->link);
	return true;
}

void sl_quota_shared_cancel(struct sl_list *waits, struct sl_call *c)
{
	struct sl_list *n;

	sl_list_each(n, waits) {
		struct sl_quota_wait *w = sl_list_entry(n, struct sl_quota_wait, link);
		if (w->c == c) {
			unlink_wait(w);
			w->c = NULL; /* freed by on_reply, which always runs */
			sl_call_resume(c);
			return;
		}
	}
}

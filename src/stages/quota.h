/*
 * Per-identity limits (docs/stages/quota.md): a token bucket (calls per
 * minute with a burst) and a daily call quota, per subject and per
 * profile, on every tool call (tools/call, invoke_tool, a program's calls).
 *
 * Three layers, each swappable on its own:
 *   the bucket math (sl_bucket_*): pure, every function takes the time, so
 *     a test drives the clock (refill, burst, the day's rollover at 00:00
 *     UTC);
 *   the store (struct sl_quota_store): which identities are counted and
 *     their buckets, behind three operations; the process-local one
 *     (sl_quota_local_new) is the only one yet, and a store shared between
 *     gateways (Redis) replaces it without touching the stage;
 *   the stage (quota.c): the config, which limits apply to a call, and the
 *     refusal the client and the program see.
 *
 * API:
 *   struct sl_bucket b; sl_bucket_init(&b, &lim, now);
 *   if (sl_bucket_check(&b, &lim, now, &retry_ms) == SL_QUOTA_OK) sl_bucket_take(&b, &lim);
 *   st = sl_quota_local_new(max_identities);
 *   if (!st->ops->admit(st, asks, n, now, &why)) ...refused: why
 *   st->ops->report(st, now, fn, ctx); st->ops->free(st);
 *   sl_quota_status(sl_gen_state(gen, &sl_stage_quota), d, obj)   for /status
 */
#ifndef SL_STAGES_QUOTA_H
#define SL_STAGES_QUOTA_H

#include "core/json.h"

/* One identity's limits; 0 is unlimited. */
struct sl_quota_limits {
	uint32_t per_minute; /* bucket refill, calls per minute */
	uint32_t burst;      /* bucket size; 0: per_minute */
	uint32_t per_day;    /* calls per UTC day */
};

/* Tokens are counted in 1/60000ths so that a refill of per_minute tokens
 * per 60000 ms is exact in whole numbers: no drift, however often it runs. */
#define SL_BUCKET_UNIT 60000u
#define SL_DAY_MS 86400000u

struct sl_bucket {
	uint64_t units;   /* tokens left, in SL_BUCKET_UNITs */
	uint64_t at_ms;   /* wall clock of the last refill */
	uint64_t day;     /* the UTC day (ms / SL_DAY_MS) today counts */
	uint32_t today;   /* calls taken that day */
};

enum sl_quota_window {
	SL_QUOTA_OK,
	SL_QUOTA_MINUTE,  /* the bucket is empty */
	SL_QUOTA_DAY,     /* the day's calls are used up */
	SL_QUOTA_FULL,    /* a new identity, and the store counts as many as it may */
};

enum sl_quota_scope { SL_QUOTA_SUBJECT, SL_QUOTA_PROFILE };

/* A full bucket and no call today, as of now_ms (wall clock). */
void sl_bucket_init(struct sl_bucket *b, const struct sl_quota_limits *l, uint64_t now_ms);
/* Refills b up to now_ms (a clock that went back refills nothing) and
 * starts a new day's count at 00:00 UTC; then whether one call may be
 * taken: SL_QUOTA_OK, or the window that refuses it with *retry_ms, how
 * long until it would not (at least 1). */
enum sl_quota_window sl_bucket_check(struct sl_bucket *b, const struct sl_quota_limits *l,
				     uint64_t now_ms, uint64_t *retry_ms);
/* Takes one call (after a check said OK). */
void sl_bucket_take(struct sl_bucket *b, const struct sl_quota_limits *l);
/* Whole tokens left (after a refill), and the bucket's size. */
uint32_t sl_bucket_tokens(const struct sl_bucket *b);
uint32_t sl_bucket_size(const struct sl_quota_limits *l);
/* Forgetting b loses nothing a limit needs (after a refill): its bucket is
 * full, and it has no call today under a day quota. Else *when_ms: how
 * long until it will be. */
bool sl_bucket_idle(const struct sl_bucket *b, const struct sl_quota_limits *l, uint64_t now_ms,
		    uint64_t *when_ms);

/* One identity a call is counted against. */
struct sl_quota_ask {
	enum sl_quota_scope scope;
	const char *key;                  /* the identity: the person (sl_caller_user_key), or the profile */
	const char *name;                 /* what status shows: subject, "anonymous", profile */
	const struct sl_quota_limits *lim;
};

struct sl_quota_refusal {
	enum sl_quota_window window;      /* MINUTE, DAY or FULL */
	size_t ask;                       /* the ask refused (MINUTE, DAY) */
	uint32_t limit;                   /* the limit that refused: per_minute, per_day, or
					   * the store's cap of identities */
	uint64_t retry_ms;
};

/* One counted identity, for status. */
struct sl_quota_row {
	enum sl_quota_scope scope;
	const char *name;
	struct sl_quota_limits lim;
	uint32_t tokens;                  /* whole tokens left (lim.per_minute 0: 0) */
	uint32_t today;
};
typedef void sl_quota_row_fn(const struct sl_quota_row *r, void *ctx);

struct sl_quota_store;
struct sl_quota_store_ops {
	/* Takes one call from every ask's bucket, or from none of them; an
	 * identity not yet counted starts with a full bucket. true: admitted;
	 * false: *why says which ask and window refused, and for how long. */
	bool (*admit)(struct sl_quota_store *st, const struct sl_quota_ask *asks, size_t n,
		      uint64_t now_ms, struct sl_quota_refusal *why);
	/* Every counted identity, most recently used first, at most max of
	 * them; returns how many it counts in all. */
	size_t (*report)(struct sl_quota_store *st, uint64_t now_ms, size_t max, sl_quota_row_fn *fn,
			 void *ctx);
	void (*free)(struct sl_quota_store *st);
};
struct sl_quota_store {
	const struct sl_quota_store_ops *ops;
};

/*
 * The process-local store: at most max_subjects subjects are counted (the
 * profiles, which the config names, are not capped). A new subject beyond
 * the cap takes the place of the least recently used idle one
 * (sl_bucket_idle: forgetting it changes no answer, so churn cannot reset
 * a day quota); with none idle, the new subject's call is refused (FULL)
 * until one is.
 */
struct sl_quota_store *sl_quota_local_new(uint32_t max_subjects);

/* The stage's state (sl_gen_state(gen, &sl_stage_quota)), NULL when
 * sluice.quotas is absent. Adds "quotas" to obj: the limits in force and
 * the counters (docs/stages/quota.md); null with a NULL state. */
struct sl_quota;
void sl_quota_status(struct sl_quota *q, yyjson_mut_doc *d, yyjson_mut_val *obj);

/* A program counts as one call of its caller's quotas (its person's and
 * its profile's), taken when it is admitted, from this process's counts
 * (with replicas, the replica that runs it counts it): true, or false
 * with the refusal's text in why (n bytes). q NULL (no sluice.quotas):
 * true. */
struct sl_caller;
bool sl_quota_admit_program(struct sl_quota *q, const struct sl_caller *who, char *why,
			    size_t n);

/* The wall clock in ms (UTC days are counted from it). */
uint64_t sl_quota_wall_ms(void);

#endif

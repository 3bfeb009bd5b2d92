/*
 * The quota stage's counting (quota.h): the bucket math, and the
 * process-local store of buckets with its cap on subjects.
 */
#include "stages/quota.h"
#include "core/lru.h"
#include "core/map.h"

#include <stdlib.h>
#include <time.h>

uint64_t sl_quota_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the bucket ----------------------------------------------------------- */

uint32_t sl_bucket_size(const struct sl_quota_limits *l)
{
	return l->burst ? l->burst : l->per_minute;
}

static uint64_t capacity(const struct sl_quota_limits *l)
{
	return (uint64_t)sl_bucket_size(l) * SL_BUCKET_UNIT;
}

void sl_bucket_init(struct sl_bucket *b, const struct sl_quota_limits *l, uint64_t now_ms)
{
	b->units = capacity(l);
	b->at_ms = now_ms;
	b->day = now_ms / SL_DAY_MS;
	b->today = 0;
}

static void refill(struct sl_bucket *b, const struct sl_quota_limits *l, uint64_t now_ms)
{
	uint64_t cap = capacity(l);

	if (now_ms / SL_DAY_MS != b->day) {
		b->day = now_ms / SL_DAY_MS;
		b->today = 0;
	}
	if (now_ms > b->at_ms && l->per_minute) {
		uint64_t elapsed = now_ms - b->at_ms;
		/* Past the time to fill from empty, it is full: no product that
		 * could overflow after years of idleness. */
		if (elapsed >= cap / l->per_minute + 1)
			b->units = cap;
		else
			b->units = b->units + elapsed * l->per_minute > cap ? cap :
				   b->units + elapsed * l->per_minute;
	}
	/* A limit lowered while the state lives (never: a changed section is
	 * a new state) or a bucket made by another store's rules. */
	if (b->units > cap)
		b->units = cap;
	b->at_ms = now_ms;
}

static uint64_t until_midnight(uint64_t now_ms)
{
	return (now_ms / SL_DAY_MS + 1) * SL_DAY_MS - now_ms;
}

enum sl_quota_window sl_bucket_check(struct sl_bucket *b, const struct sl_quota_limits *l,
				     uint64_t now_ms, uint64_t *retry_ms)
{
	refill(b, l, now_ms);
	if (l->per_day && b->today >= l->per_day) {
		*retry_ms = until_midnight(now_ms);
		return SL_QUOTA_DAY;
	}
	if (l->per_minute && b->units < SL_BUCKET_UNIT) {
		*retry_ms = (SL_BUCKET_UNIT - b->units + l->per_minute - 1) / l->per_minute;
		if (*retry_ms == 0)
			*retry_ms = 1;
		return SL_QUOTA_MINUTE;
	}
	return SL_QUOTA_OK;
}

void sl_bucket_take(struct sl_bucket *b, const struct sl_quota_limits *l)
{
	if (l->per_minute && b->units >= SL_BUCKET_UNIT)
		b->units -= SL_BUCKET_UNIT;
	if (b->today < UINT32_MAX)
		b->today++;
}

uint32_t sl_bucket_tokens(const struct sl_bucket *b)
{
	return (uint32_t)(b->units / SL_BUCKET_UNIT);
}

bool sl_bucket_idle(const struct sl_bucket *b, const struct sl_quota_limits *l, uint64_t now_ms,
		    uint64_t *when_ms)
{
	struct sl_bucket x = *b;
	uint64_t cap = capacity(l), wait = 0;

	refill(&x, l, now_ms);
	if (l->per_day && x.today > 0)
		wait = until_midnight(now_ms);
	else if (l->per_minute && x.units < cap)
		wait = (cap - x.units + l->per_minute - 1) / l->per_minute;
	*when_ms = wait;
	return wait == 0;
}

/* ---- the process-local store ---------------------------------------------- */

struct entry {
	struct sl_lru_entry e;       /* a subject's place in its map */
	enum sl_quota_scope scope;
	char *name;
	struct sl_quota_limits lim;  /* as last asked: what idleness is judged by */
	struct sl_bucket b;
};

struct local {
	struct sl_quota_store base;
	/* key -> struct entry, least recently used first; a subject is
	 * forgotten only idle (make_room), never by the map's own bound */
	struct sl_lru subjects;
	struct sl_map profiles;      /* name -> struct entry: as many as the config names */
};

static struct entry *entry_new(const struct sl_quota_ask *a, uint64_t now_ms)
{
	struct entry *e = sl_alloc(sizeof(*e));
	e->scope = a->scope;
	e->name = sl_strdup(a->name);
	e->lim = *a->lim;
	sl_bucket_init(&e->b, a->lim, now_ms);
	return e;
}

static void entry_free(struct entry *e)
{
	free(e->name);
	free(e);
}

static void subject_free(struct sl_lru_entry *le, void *arg)
{
	(void)arg;
	entry_free(sl_lru_item(le, struct entry, e));
}

/* Makes room for one more subject: forgets the least recently used idle
 * one. false: none is idle; *wait_ms, the soonest one will be. */
static bool make_room(struct local *s, uint64_t now_ms, uint64_t *wait_ms)
{
	uint64_t soonest = UINT64_MAX, when;
	struct sl_list *n;

	sl_list_each(n, &s->subjects.order) {
		struct entry *e = sl_lru_item(sl_list_entry(n, struct sl_lru_entry, link), struct entry, e);
		if (sl_bucket_idle(&e->b, &e->lim, now_ms, &when)) {
			sl_lru_drop(&s->subjects, &e->e);
			return true;
		}
		if (when < soonest)
			soonest = when;
	}
	*wait_ms = soonest == UINT64_MAX || soonest == 0 ? 1 : soonest;
	return false;
}

static struct entry *lookup(struct local *s, const struct sl_quota_ask *a, uint64_t now_ms,
			    struct sl_quota_refusal *why)
{
	bool subject = a->scope == SL_QUOTA_SUBJECT;
	struct sl_lru_entry *le = subject ? sl_lru_peek(&s->subjects, a->key) : NULL;
	struct entry *e = le ? sl_lru_item(le, struct entry, e) :
		subject ? NULL : sl_map_get(&s->profiles, a->key);
	uint64_t wait;

	if (e) {
		e->lim = *a->lim;
		return e;
	}
	if (subject && s->subjects.count >= s->subjects.max_count && !make_room(s, now_ms, &wait)) {
		why->window = SL_QUOTA_FULL;
		why->limit = (uint32_t)s->subjects.max_count;
		why->retry_ms = wait;
		return NULL;
	}
	e = entry_new(a, now_ms);
	if (subject)
		(void)sl_lru_put(&s->subjects, a->key, &e->e, 0, 0);
	else
		sl_map_put(&s->profiles, a->key, e);
	return e;
}

/* The most a call counts against: its subject and its profile. */
#define ASKS_MAX 2

static bool local_admit(struct sl_quota_store *st, const struct sl_quota_ask *asks, size_t n,
			uint64_t now_ms, struct sl_quota_refusal *why)
{
	struct local *s = (struct local *)st;
	struct entry *e[ASKS_MAX];
	enum sl_quota_window w;

	if (n > ASKS_MAX)
		n = ASKS_MAX;
	for (size_t i = 0; i < n; i++) {
		why->ask = i;
		if (!(e[i] = lookup(s, &asks[i], now_ms, why)))
			return false;
		if (asks[i].scope == SL_QUOTA_SUBJECT)
			sl_lru_touch(&s->subjects, &e[i]->e);
	}
	/* Every bucket first, then the takes: a call one limit refuses costs
	 * the other nothing. */
	for (size_t i = 0; i < n; i++) {
		w = sl_bucket_check(&e[i]->b, asks[i].lim, now_ms, &why->retry_ms);
		if (w != SL_QUOTA_OK) {
			why->window = w;
			why->ask = i;
			why->limit = w == SL_QUOTA_DAY ? asks[i].lim->per_day : asks[i].lim->per_minute;
			return false;
		}
	}
	for (size_t i = 0; i < n; i++)
		sl_bucket_take(&e[i]->b, asks[i].lim);
	return true;
}

static void row(struct entry *e, uint64_t now_ms, sl_quota_row_fn *fn, void *ctx)
{
	struct sl_quota_row r = { .scope = e->scope, .name = e->name, .lim = e->lim };
	uint64_t retry;

	(void)sl_bucket_check(&e->b, &e->lim, now_ms, &retry); /* refills */
	r.tokens = e->lim.per_minute ? sl_bucket_tokens(&e->b) : 0;
	r.today = e->b.today;
	fn(&r, ctx);
}

struct each_ctx {
	uint64_t now_ms;
	sl_quota_row_fn *fn;
	void *ctx;
};

static void profile_row(const char *key, void *value, void *ctx)
{
	struct each_ctx *x = ctx;
	row(value, x->now_ms, x->fn, x->ctx);
}

static size_t local_report(struct sl_quota_store *st, uint64_t now_ms, size_t max,
			   sl_quota_row_fn *fn, void *ctx)
{
	struct local *s = (struct local *)st;
	struct each_ctx x = { now_ms, fn, ctx };
	struct sl_list *n, *order = &s->subjects.order;
	size_t shown = 0;

	sl_map_each(&s->profiles, profile_row, &x);
	/* Subjects most recently used first. */
	for (n = order->prev; n != order && shown < max; n = n->prev, shown++)
		row(sl_lru_item(sl_list_entry(n, struct sl_lru_entry, link), struct entry, e), now_ms,
		    fn, ctx);
	return s->subjects.count + s->profiles.live;
}

static void free_entry(const char *key, void *value, void *ctx)
{
	entry_free(value);
}

static void local_free(struct sl_quota_store *st)
{
	struct local *s = (struct local *)st;
	sl_lru_dispose(&s->subjects);
	sl_map_each(&s->profiles, free_entry, NULL);
	sl_map_dispose(&s->profiles);
	free(s);
}

static const struct sl_quota_store_ops local_ops = {
	.admit = local_admit,
	.report = local_report,
	.free = local_free,
};

struct sl_quota_store *sl_quota_local_new(uint32_t max_subjects)
{
	struct local *s = sl_alloc(sizeof(*s));
	s->base.ops = &local_ops;
	sl_lru_init(&s->subjects, max_subjects, 0, subject_free, NULL);
	sl_map_init(&s->profiles);
	return &s->base;
}

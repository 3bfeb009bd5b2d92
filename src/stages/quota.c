/*
 * The quota stage (quota.h, docs/stages/quota.md): right after policy, it
 * counts every tool call against its caller (the person, whatever endpoint
 * they come through) and its profile, and
 * refuses one over a limit with the time to wait. A refused call never
 * reaches its server; its answer is a JSON-RPC error that says when to
 * retry (calls.c), over HTTP a 429 with Retry-After where the status is
 * still free (transport/http.c), and a program's call throws the same
 * message.
 *
 * The counters live in the stage's state, so a reload that leaves
 * sluice.quotas as it was keeps them (pipeline/gen.h); a changed section
 * starts them afresh.
 */
#include "stages/quota.h"
#include "stages/quota_shared.h"
#include "auth/caller.h"
#include "config/conf.h"
#include "core/log.h"
#include "core/map.h"
#include "pipeline/call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ANONYMOUS "anonymous"
#define DEFAULT_PROFILE "default"
#define NAME_SHOWN_MAX 100  /* bytes of a subject in a message */
#define STATUS_ROWS_MAX 1000 /* subjects listed by /status, most recent first */

struct named {
	char *name;
	struct sl_quota_limits lim;
};

struct named_list {
	struct named *v;
	size_t n;
};

struct sl_quota {
	struct sl_quota_limits def;
	struct named_list subjects, profiles;
	uint32_t max_identities;
	struct sl_map by_subject, by_profile; /* name -> struct sl_quota_limits in the lists */
	struct sl_quota_store *store;
	struct sl_list waits;                 /* calls waiting for Redis (quota_shared.c) */
	uint64_t (*clock)(void);
	struct sl_rate full_warned;           /* the cap's warning: once a minute */
	const struct sl_services *svc;        /* the process's: its Redis link, when there is one */
};

#define LIM(field) SL_CONF_AT(struct sl_quota_limits, field)
static const struct sl_conf_key limits_keys[] = {
	{ "callsPerMinute", SL_CONF_UINT, LIM(per_minute), .max = 1000000,
	  .doc = "The bucket refills at this rate (a token every 60/n seconds); 0: no rate limit." },
	{ "burst", SL_CONF_UINT, LIM(burst), .max = 1000000,
	  .doc = "The bucket's size: calls that may come at once after a quiet spell; 0: "
		 "`callsPerMinute`. Needs `callsPerMinute`." },
	{ "callsPerDay", SL_CONF_UINT, LIM(per_day), .max = 1000000000,
	  .doc = "Calls per UTC day (the count starts again at 00:00 UTC); 0: no daily quota." },
};
#undef LIM

static const struct sl_conf_section limits_conf = {
	"sluice.quotas.default",
	"The limits of one identity, for every subject without an entry in `subjects` and for "
	"anonymous callers (who share one bucket). Each entry of `subjects` and `profiles` is an "
	"object of the same keys. Absent or 0: unlimited.",
	limits_keys, SL_COUNT(limits_keys), SL_CONF_STRICT, NULL,
};

static bool limited(const struct sl_quota_limits *l)
{
	return l->per_minute || l->per_day;
}

static int check_limits(struct sl_conf_ctx *cx, const char *where,
			const struct sl_quota_limits *l)
{
	if (l->burst && !l->per_minute)
		return sl_conf_fail(cx, where, "\"burst\" needs \"callsPerMinute\"");
	return SL_OK;
}

/* subjects and profiles: {"name": {limits}, ...}. */
static int parse_named(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	struct named_list *list = sl_conf_field(target, k);
	yyjson_val *key, *val;
	size_t i, n;
	int rc;

	if (!yyjson_is_obj(v))
		return sl_conf_bad(cx, k);
	list->v = sl_alloc((yyjson_obj_size(v) + 1) * sizeof(*list->v));
	yyjson_obj_foreach(v, i, n, key, val) {
		struct named *e = &list->v[list->n];
		const char *name = yyjson_get_str(key); /* an object's keys are strings */
		char where[200];

		snprintf(where, sizeof(where), "sluice.quotas.%s.%.100s", k->key, name ? name : "");
		if (yyjson_get_len(key) == 0)
			return sl_conf_fail_key(cx, k, "has an empty name");
		if (sl_conf_repeated(v, key))
			return sl_conf_fail(cx, where, "is given twice");
		if ((rc = sl_conf_apply(cx, &limits_conf, where, val, &e->lim)) < 0)
			return rc;
		if ((rc = check_limits(cx, where, &e->lim)) < 0)
			return rc;
		e->name = sl_strdup(name ? name : "");
		list->n++;
	}
	return SL_OK;
}

#define Q(field) SL_CONF_AT(struct sl_quota, field)
static const struct sl_conf_key quota_keys[] = {
	{ "default", SL_CONF_OBJECT, Q(def), .sub = &limits_conf,
	  .doc = "The limits of a subject without its own entry, and of anonymous callers "
		 "(`sluice.quotas.default` below)." },
	{ "subjects", SL_CONF_CUSTOM, Q(subjects), .parse = parse_named,
	  .shape = "an object of subject names to limits", .dflt_doc = "`{}`",
	  .doc = "Limits per subject (a static token's `subject`, a JWT's `sub`), by exact name, "
		 "instead of `default`; `{}` exempts that subject. A person is counted once across "
		 "every profile and replica." },
	{ "profiles", SL_CONF_CUSTOM, Q(profiles), .parse = parse_named,
	  .shape = "an object of profile names to limits", .dflt_doc = "`{}`",
	  .doc = "Limits per profile, shared by every caller of it (`default`: callers of `/mcp` "
		 "itself); they apply on top of the subject's. A profile without an entry is "
		 "unlimited." },
	{ "maxIdentities", SL_CONF_UINT, Q(max_identities), .min = 1, .max = 1000000,
	  .dflt = 10000,
	  .doc = "Subjects counted at once. A new one beyond it replaces the least recently used "
		 "idle one (full bucket, no call today under a day quota); with none idle, its "
		 "calls are refused until one is (docs/stages/quota.md)." },
};
#undef Q

static const struct sl_conf_section quota_conf = {
	"sluice.quotas",
	"Per-identity limits on tool calls: a token bucket (calls per minute, burst) and a daily "
	"quota, per subject and per profile (docs/stages/quota.md). Absent: no limits.",
	quota_keys, SL_COUNT(quota_keys), SL_CONF_STRICT, NULL,
};

static void list_dispose(struct named_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

static void quota_fini(void *state)
{
	struct sl_quota *q = state;
	if (!q)
		return;
	if (q->store)
		q->store->ops->free(q->store);
	sl_map_dispose(&q->by_subject);
	sl_map_dispose(&q->by_profile);
	list_dispose(&q->subjects);
	list_dispose(&q->profiles);
	free(q);
}

static int quota_init(const struct sl_config *cfg, const struct sl_services *svc,
		      yyjson_val *sec, void **state, struct sl_err *err)
{
	struct sl_quota *q;
	int rc;

	if (!sec)
		return SL_OK;
	q = sl_alloc(sizeof(*q));
	sl_list_init(&q->waits);
	q->svc = svc;
	sl_map_init(&q->by_subject);
	sl_map_init(&q->by_profile);
	if ((rc = sl_conf_load(&quota_conf, sec, q, err)) < 0)
		goto out;
	if (q->def.burst && !q->def.per_minute) {
		sl_err_set(err, "sluice.quotas.default: \"burst\" needs \"callsPerMinute\"");
		rc = SL_ERR_INVALID;
		goto out;
	}
	for (size_t i = 0; i < q->subjects.n; i++)
		sl_map_put(&q->by_subject, q->subjects.v[i].name, &q->subjects.v[i].lim);
	for (size_t i = 0; i < q->profiles.n; i++)
		sl_map_put(&q->by_profile, q->profiles.v[i].name, &q->profiles.v[i].lim);
	q->store = sl_quota_local_new(q->max_identities);
	q->clock = sl_quota_wall_ms;
	*state = q;
out:
	if (rc < 0)
		quota_fini(q);
	return rc;
}

static const char *const scope_names[] = { "subject", "profile" };

/* What a refusal says, into buf; *scope and *window name it for the
 * client's data. */
static void refusal_text(struct sl_quota *q, const struct sl_quota_ask *asks,
			 const struct sl_quota_refusal *why, uint32_t secs, char *buf, size_t n,
			 const char **scope, const char **window)
{
	const struct sl_quota_ask *a = &asks[why->ask];

	*scope = "gateway";
	*window = "identities";
	switch (why->window) {
	case SL_QUOTA_MINUTE:
		*scope = scope_names[a->scope];
		*window = "minute";
		snprintf(buf, n, "rate limit: %s '%.*s' is over its %u calls per minute (burst %u); "
			 "retry after %u s", *scope, NAME_SHOWN_MAX, a->name, a->lim->per_minute,
			 sl_bucket_size(a->lim), secs);
		break;
	case SL_QUOTA_DAY:
		*scope = scope_names[a->scope];
		*window = "day";
		snprintf(buf, n, "rate limit: %s '%.*s' has made its %u calls for today (the count "
			 "starts again at 00:00 UTC); retry after %u s", *scope, NAME_SHOWN_MAX, a->name,
			 a->lim->per_day, secs);
		break;
	default:
		snprintf(buf, n, "rate limit: sluice.quotas.maxIdentities (%u) callers are counted "
			 "already and none is idle; retry after %u s", why->limit, secs);
		if (sl_rate_admit(&q->full_warned, 60000, 1))
			sl_log(SL_LOG_WARN, "quotas: %u subjects are counted, none idle: a new one's "
			       "calls are refused (sluice.quotas.maxIdentities)", why->limit);
		break;
	}
}

static uint32_t retry_seconds(const struct sl_quota_refusal *why)
{
	uint32_t secs = (uint32_t)((why->retry_ms + 999) / 1000);
	return secs ? secs : 1;
}

/* The refusal's answer: the outcome and message, and what the client
 * acts on (c->retry_after_s, c->limit). */
static void refuse(struct sl_quota *q, struct sl_call *c, const struct sl_quota_ask *asks,
		   const struct sl_quota_refusal *why)
{
	uint32_t secs = retry_seconds(why);
	const char *scope, *window;
	yyjson_mut_val *data = yyjson_mut_obj(c->doc);
	char msg[512];

	refusal_text(q, asks, why, secs, msg, sizeof(msg), &scope, &window);
	sl_call_set_error(c, SL_OUTCOME_DENIED, "%s", msg);
	yyjson_mut_obj_add_uint(c->doc, data, "retryAfterSeconds", secs);
	yyjson_mut_obj_add_uint(c->doc, data, "limit", why->limit);
	yyjson_mut_obj_add_str(c->doc, data, "scope", scope);
	yyjson_mut_obj_add_str(c->doc, data, "window", window);
	c->retry_after_s = secs;
	c->limit = data;
}

/* Redis's answer; rc -1 (down, or an answer the script cannot give):
 * this replica counts the call, as without Redis. */
static void on_shared(void *ctx, struct sl_call *c, const struct sl_quota_ask *asks, size_t n,
		      int rc, const struct sl_quota_refusal *shared_why)
{
	struct sl_quota *q = ctx;
	struct sl_quota_refusal why = *shared_why;

	if (rc < 0 && q->store->ops->admit(q->store, asks, n, q->clock(), &why))
		rc = 1;
	if (rc != 1)
		refuse(q, c, asks, &why); /* the outcome DENIED: resume skips to the response half */
	sl_call_resume(c);
}

/* The limits that apply to who: its person's (or the anonymous bucket's)
 * and its profile's, into asks[2] (person is their storage); how many. */
static size_t asks_for(struct sl_quota *q, const struct sl_caller *who, struct sl_quota_ask *asks,
		       char person[SL_SHA256_HEX])
{
	const char *subject = who ? who->subject : NULL;
	const char *profile = who && who->profile ? who->profile : DEFAULT_PROFILE;
	const struct sl_quota_limits *lim;
	size_t n = 0;

	/* Callers without a subject (no authentication, stdio, the shared
	 * bearerToken) are one identity: anonymous. A subject is counted as
	 * the person (sl_caller_user_key: method, issuer and subject, never the
	 * profile), so every endpoint draws on one bucket: who->key, which
	 * holds the profile, would give a person a bucket per profile. */
	if (!sl_caller_user_key(who, person))
		subject = NULL;
	lim = subject ? sl_map_get(&q->by_subject, subject) : NULL;
	if (!lim)
		lim = &q->def;
	if (limited(lim))
		asks[n++] = (struct sl_quota_ask){ SL_QUOTA_SUBJECT, subject ? person : ANONYMOUS,
						    subject ? subject : ANONYMOUS, lim };
	lim = sl_map_get(&q->by_profile, profile);
	if (lim && limited(lim))
		asks[n++] = (struct sl_quota_ask){ SL_QUOTA_PROFILE, profile, profile, lim };
	return n;
}

static enum sl_stage_rc quota_request(void *state, struct sl_call *c)
{
	struct sl_quota *q = state;
	struct sl_quota_ask asks[2];
	struct sl_quota_refusal why;
	char person[SL_SHA256_HEX];
	size_t n;

	if (!q || (n = asks_for(q, c->who, asks, person)) == 0)
		return SL_STAGE_DECLINED;
	/* Replicas: the fleet's bucket in Redis when it is there. */
	if (sl_quota_shared_ask(q->svc ? q->svc->redis : NULL, &q->waits, c, asks, n, on_shared, q))
		return SL_STAGE_AGAIN;
	if (q->store->ops->admit(q->store, asks, n, q->clock(), &why))
		return SL_STAGE_NEXT;
	refuse(q, c, asks, &why);
	return SL_STAGE_DONE;
}

bool sl_quota_admit_program(struct sl_quota *q, const struct sl_caller *who, char *why,
			    size_t n)
{
	struct sl_quota_ask asks[2];
	struct sl_quota_refusal refusal;
	char person[SL_SHA256_HEX];
	const char *scope, *window;
	size_t k;

	if (!q || (k = asks_for(q, who, asks, person)) == 0 ||
	    q->store->ops->admit(q->store, asks, k, q->clock(), &refusal))
		return true;
	refusal_text(q, asks, &refusal, retry_seconds(&refusal), why, n, &scope, &window);
	return false;
}

static void quota_cancel(void *state, struct sl_call *c)
{
	struct sl_quota *q = state;
	sl_quota_shared_cancel(&q->waits, c);
}

/* ---- status -------------------------------------------------------------------- */

/* A limit as status shows it: null for unlimited. */
static void add_limit(yyjson_mut_doc *d, yyjson_mut_val *o, const char *key, uint32_t v)
{
	if (v)
		yyjson_mut_obj_add_uint(d, o, key, v);
	else
		yyjson_mut_obj_add_null(d, o, key);
}

static yyjson_mut_val *limits_json(yyjson_mut_doc *d, const struct sl_quota_limits *l)
{
	yyjson_mut_val *o = yyjson_mut_obj(d);
	add_limit(d, o, "callsPerMinute", l->per_minute);
	add_limit(d, o, "burst", l->per_minute ? sl_bucket_size(l) : 0);
	add_limit(d, o, "callsPerDay", l->per_day);
	return o;
}

struct rows {
	yyjson_mut_doc *d;
	yyjson_mut_val *arr;
};

static void status_row(const struct sl_quota_row *r, void *ctx)
{
	struct rows *x = ctx;
	yyjson_mut_val *o = yyjson_mut_obj(x->d);

	yyjson_mut_obj_add_str(x->d, o, "scope", scope_names[r->scope]);
	yyjson_mut_obj_add_strcpy(x->d, o, "name", r->name);
	if (r->lim.per_minute)
		yyjson_mut_obj_add_uint(x->d, o, "tokens", r->tokens);
	else
		yyjson_mut_obj_add_null(x->d, o, "tokens");
	yyjson_mut_obj_add_uint(x->d, o, "callsToday", r->today);
	yyjson_mut_obj_add_val(x->d, o, "limits", limits_json(x->d, &r->lim));
	yyjson_mut_arr_append(x->arr, o);
}

void sl_quota_status(struct sl_quota *q, yyjson_mut_doc *d, yyjson_mut_val *obj)
{
	yyjson_mut_val *o, *subs, *profs;
	struct rows x = { d, yyjson_mut_arr(d) };
	size_t total;

	if (!q) {
		yyjson_mut_obj_add_null(d, obj, "quotas");
		return;
	}
	o = yyjson_mut_obj(d);
	yyjson_mut_obj_add_val(d, o, "default", limits_json(d, &q->def));
	subs = yyjson_mut_obj(d);
	for (size_t i = 0; i < q->subjects.n; i++)
		yyjson_mut_obj_add(subs, yyjson_mut_strcpy(d, q->subjects.v[i].name),
				   limits_json(d, &q->subjects.v[i].lim));
	yyjson_mut_obj_add_val(d, o, "subjects", subs);
	profs = yyjson_mut_obj(d);
	for (size_t i = 0; i < q->profiles.n; i++)
		yyjson_mut_obj_add(profs, yyjson_mut_strcpy(d, q->profiles.v[i].name),
				   limits_json(d, &q->profiles.v[i].lim));
	yyjson_mut_obj_add_val(d, o, "profiles", profs);
	yyjson_mut_obj_add_uint(d, o, "maxIdentities", q->max_identities);
	total = q->store->ops->report(q->store, q->clock(), STATUS_ROWS_MAX, status_row, &x);
	yyjson_mut_obj_add_uint(d, o, "counted", total);
	yyjson_mut_obj_add_val(d, o, "counters", x.arr);
	yyjson_mut_obj_add_uint(d, o, "omitted", total - yyjson_mut_arr_size(x.arr));
	yyjson_mut_obj_add_val(d, obj, "quotas", o);
}

const struct sl_stage sl_stage_quota = {
	.name = "quotas",
	.conf = &quota_conf,
	.init = quota_init,
	.fini = quota_fini,
	.request = quota_request,
	.cancel = quota_cancel,
};

/*
 * Token introspection: see introspect.h.
 */
#include "auth/introspect.h"
#include "auth/claims.h"
#include "auth/verdicts.h"
#include "core/escape.h"
#include "core/json.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAILED_KEEP_MS 1000 /* a failed request's verdict serves those that waited for it */

struct asking {
	struct sl_introspect *in;
	char key[SL_SHA256_HEX];
};

/* Known tokens keep their capacity (issue 32, finding 13): an active
 * answer lives in known, apart from the others, so that a flood of
 * unknown tokens pushes none out; once it has aged out (cacheSeconds) it
 * still serves its token for staleSeconds while one request asks again;
 * and a part of maxInFlight (reserved_in_flight) is left to those
 * re-checks, which unknown tokens cannot take. */
struct sl_introspect {
	struct sl_fetcher *f;
	const struct sl_auth_config *cfg;
	struct sl_verdicts known;    /* active answers, fresh then stale */
	struct sl_verdicts answers;  /* the others: inactive, refused, failed */
	struct sl_map asking;        /* token hash -> struct asking, while its request runs */
	void (*ready)(void *arg);
	void *arg;
	char *user, *password;       /* form-encoded (RFC 6749 §2.3.1) */
};

struct sl_introspect *sl_introspect_new(struct sl_fetcher *f, const struct sl_auth_config *cfg,
					void (*ready)(void *arg), void *arg)
{
	struct sl_introspect *in = sl_alloc(sizeof(*in));

	in->f = f;
	in->cfg = cfg;
	in->ready = ready;
	in->arg = arg;
	sl_verdicts_init(&in->known, cfg->introspection.max_entries);
	sl_verdicts_init(&in->answers, cfg->introspection.max_entries);
	sl_map_init(&in->asking);
	in->user = sl_url_encode(cfg->introspection.client_id);
	in->password = sl_url_encode(cfg->introspection.client_secret);
	return in;
}

static void free_asking(const char *key, void *value, void *ctx)
{
	free(value);
}

void sl_introspect_free(struct sl_introspect *in)
{
	if (!in)
		return;
	sl_map_each(&in->asking, free_asking, NULL);
	sl_map_dispose(&in->asking);
	sl_verdicts_dispose(&in->known);
	sl_verdicts_dispose(&in->answers);
	free(in->user);
	free(in->password);
	free(in);
}

static bool listed(char *const *l, const char *s)
{
	for (size_t i = 0; l && l[i]; i++)
		if (!strcmp(l[i], s))
			return true;
	return false;
}

static bool audience_ok(const struct sl_auth_config *cfg, yyjson_val *aud)
{
	char *const dflt[] = { cfg->resource, NULL };
	char *const *want = cfg->audiences && cfg->audiences[0] ? cfg->audiences : dflt;
	yyjson_val *v;
	size_t i, max;

	if (yyjson_is_str(aud))
		return listed(want, yyjson_get_str(aud));
	if (yyjson_is_arr(aud))
		yyjson_arr_foreach(aud, i, max, v)
			if (yyjson_is_str(v) && listed(want, yyjson_get_str(v)))
				return true;
	return false;
}

/* The answer's verdict, kept under key: in in->known when the token is
 * active, else in in->answers. A failed request leaves an active answer
 * the token had serving (its staleness runs on). */
static void judge(struct sl_introspect *in, const char *key, const struct sl_fetch_result *res)
{
	const struct sl_auth_config *cfg = in->cfg;
	uint64_t now = sl_now_ms(), until = now + (uint64_t)cfg->introspection.cache_s * 1000u;
	uint64_t keep = until + (uint64_t)cfg->introspection.stale_s * 1000u;
	int64_t wall_s = (int64_t)time(NULL);
	yyjson_doc *doc = NULL;
	yyjson_val *o;
	const char *why = NULL, *iss, *sub;
	struct sl_err err;
	struct sl_caller *c;
	double exp = 0;
	char failed[160];

	if (res->error || res->status != 200 ||
	    !(doc = sl_json_read(res->body, res->len, 0, NULL)) ||
	    !yyjson_is_obj(o = yyjson_doc_get_root(doc))) {
		if (res->error)
			snprintf(failed, sizeof(failed), "the introspection endpoint failed (%s)",
				 res->error);
		else
			snprintf(failed, sizeof(failed), "the introspection endpoint answered HTTP %ld%s",
				 res->status, res->status == 200 ? " without JSON" : "");
		sl_log(SL_LOG_WARN, "auth: %s", failed);
		/* Beside a known token's stale answer, it keeps the next re-check
		 * a second away. */
		sl_verdicts_put(&in->answers, key, NULL, SL_VERDICT_FAILED, failed, now + FAILED_KEEP_MS);
		yyjson_doc_free(doc);
		return;
	}
	iss = sl_json_str(o, "iss");
	/* A client acting for itself (client credentials) has no sub: it is
	 * named by its client_id (as RFC 9068 §2.2 has it for JWTs). */
	if (!(sub = sl_json_str(o, "sub")) || !*sub)
		sub = sl_json_str(o, "client_id");
	if (yyjson_obj_get(o, "exp"))
		exp = yyjson_is_num(yyjson_obj_get(o, "exp")) ? yyjson_get_num(yyjson_obj_get(o, "exp")) : -1;
	if (!yyjson_get_bool(yyjson_obj_get(o, "active")))
		why = "the token is not active (revoked, expired or unknown)";
	else if (exp < 0 || (exp > 0 && (int64_t)exp + (int64_t)cfg->clock_skew_s < wall_s))
		why = "the token has expired";
	else if (iss && !listed(cfg->authorization_servers, iss))
		why = "the token's issuer is not accepted";
	else if (!audience_ok(cfg, yyjson_obj_get(o, "aud")))
		why = "the token is not for this resource (aud)";
	else if (!sub || !*sub)
		why = "the token names no subject (sub)";
	if (why) {
		sl_verdicts_del(&in->known, key); /* revoked: its last answer serves no more */
		sl_verdicts_put(&in->answers, key, NULL, SL_VERDICT_DENIED, why, until);
		yyjson_doc_free(doc);
		return;
	}
	/* The claims as every method reads them (auth/claims.h); the subject
	 * and issuer as introspection has them: without iss in the answer,
	 * the issuer is the one server configured; with several none is, and
	 * the subject is in the endpoint's own namespace (its realm), never
	 * another method's or issuer's (auth/caller.h). */
	if (sl_caller_from_claims("introspection", o, (const char *const *)cfg->groups_claims, &c,
				  &err) < 0) {
		snprintf(failed, sizeof(failed), "the introspection answer's %.120s", err.msg);
		sl_verdicts_del(&in->known, key);
		sl_verdicts_put(&in->answers, key, NULL, SL_VERDICT_DENIED, failed, until);
		yyjson_doc_free(doc);
		return;
	}
	if (!iss && cfg->authorization_servers[0] && !cfg->authorization_servers[1])
		iss = cfg->authorization_servers[0];
	sl_caller_set_subject(c, iss, sub);
	if (!iss)
		sl_caller_set_realm(c, cfg->introspection.endpoint);
	if (exp > 0) {
		uint64_t end = (int64_t)exp > wall_s ? now + (uint64_t)((int64_t)exp - wall_s) * 1000u
						     : now + 1;
		c->expires_ms = (uint64_t)exp * 1000u;
		until = end < until ? end : until;
		keep = end < keep ? end : keep;
	}
	sl_verdicts_del(&in->answers, key);
	sl_verdicts_put_stale(&in->known, key, c, until, keep);
	sl_caller_unref(c);
	yyjson_doc_free(doc);
}

static void on_answer(void *arg, const struct sl_fetch_result *res)
{
	struct asking *a = arg;
	struct sl_introspect *in = a->in;

	judge(in, a->key, res);
	sl_map_del(&in->asking, a->key);
	free(a);
	in->ready(in->arg);
}

/* Requests at once kept for re-checks of known tokens: a quarter of
 * maxInFlight, at least 1 from 2 on. */
static size_t reserved_in_flight(const struct sl_introspect *in)
{
	uint32_t max = in->cfg->introspection.max_in_flight;
	return max >= 2 && max / 4 == 0 ? 1 : max / 4;
}

/* Starts the introspection request for token (under hash). */
static void ask(struct sl_introspect *in, const char *token, const char *hash)
{
	struct sl_fetch_req q = { .url = in->cfg->introspection.endpoint,
				  .user = in->user, .password = in->password,
				  .max_bytes = in->cfg->max_document_bytes,
				  .timeout_ms = in->cfg->fetch_timeout_ms };
	struct asking *a;
	char *tok;

	a = sl_alloc(sizeof(*a));
	a->in = in;
	snprintf(a->key, sizeof(a->key), "%s", hash);
	sl_map_put(&in->asking, a->key, a);
	tok = sl_url_encode(token);
	q.form = sl_printf("token=%s&token_type_hint=access_token", tok);
	sl_fetch_start(in->f, &q, on_answer, a);
	free((char *)q.form);
	free(tok);
}

enum sl_auth_verdict sl_introspect_check(struct sl_introspect *in, const char *token,
					 const char *hash, struct sl_caller **who, struct sl_err *err)
{
	const struct sl_verdict *k = sl_verdicts_get(&in->known, hash);
	const struct sl_verdict *v;

	if (k) {
		/* Stale: asked again, at most one request at a time and one a
		 * second while they fail (the failed verdict beside it); the
		 * last answer serves meanwhile. (k is not read after ask: an
		 * answer may replace it.) */
		bool stale = sl_now_ms() >= k->fresh_ms;
		*who = sl_caller_ref(k->who);
		if (stale && !sl_map_get(&in->asking, hash) && !sl_verdicts_get(&in->answers, hash) &&
		    in->asking.live < in->cfg->introspection.max_in_flight)
			ask(in, token, hash);
		return SL_AUTH_OK;
	}
	if ((v = sl_verdicts_get(&in->answers, hash))) {
		sl_err_set(err, "%s", v->why);
		return v->kind == SL_VERDICT_DENIED ? SL_AUTH_DENIED : SL_AUTH_UNAVAILABLE;
	}
	if (sl_map_get(&in->asking, hash))
		return SL_AUTH_PENDING;
	if (in->asking.live + reserved_in_flight(in) >= in->cfg->introspection.max_in_flight) {
		sl_err_set(err, "too many tokens are being introspected "
			 "(sluice.http.auth.introspection.maxInFlight, of which %zu are kept for "
			 "tokens known to be active)", reserved_in_flight(in));
		return SL_AUTH_UNAVAILABLE;
	}
	ask(in, token, hash);
	return SL_AUTH_PENDING;
}

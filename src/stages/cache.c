/*
 * Cache: answers a repeated call from memory. Opt-in: only tools matching
 * one of sluice.cache.tools (globs on "server.tool") and, with readOnly,
 * tools the server annotates readOnlyHint.
 *
 * It sits after redaction in the table, so the key is made of the redacted
 * arguments and the stored result is the redacted one (a secret never
 * lands in the cache). The key is the SHA-256 of server, tool and the
 * canonical JSON of the arguments; the value is the result's JSON text.
 *
 * request:  a fresh entry finishes the call with a copy of the stored result
 *           (SL_STAGE_DONE; the response half still runs: guard etc.)
 * response: an ok, non-isError result from the upstream is stored; denied,
 *           failed, rpc_error and cancelled calls never are.
 * Entries expire after ttlMs; past maxBytes the least recently used go
 * (a bounded map, core/lru.h: a hit touches its entry, never renews it).
 *
 * Replicas (docs/internals/REPLICAS.md): with sluice.shared.redis
 * connected, a stored result also goes to Redis as <prefix>cache:<key>
 * with PX ttlMs (up to maxSharedBytes), and a local miss asks Redis (the
 * call suspends until it answers, at most commandTimeoutMs). The answer of
 * a stored call waits for Redis's SET too, so the client's next call, on
 * any replica, can hit it. What Redis
 * returns is untrusted: it must be a JSON object within maxSharedBytes,
 * else it is a miss (logged once). Redis down: the local cache alone.
 */
#include "config/conf.h"
#include "auth/caller.h"
#include "core/digest.h"
#include "pipeline/call.h"
#include "core/log.h"
#include "core/lru.h"
#include "shared/redis.h"
#include "shared/state.h"
#include "stages/audit.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY_OVERHEAD 128 /* the entry, its map slot and key copy, roughly */

struct entry {
	struct sl_lru_entry e;     /* bytes: the JSON's length and ENTRY_OVERHEAD */
	char *json;
	size_t len;
};

/* The stage's state: none without a sluice.cache section. */
struct cache {
	bool on;
	char **globs;
	size_t nglobs;
	bool read_only;
	uint64_t ttl_ms;
	size_t max_bytes;
	struct sl_lru lru;         /* key -> struct entry, within max_bytes */
	size_t shared_bytes;
	struct sl_list waits;      /* calls suspended on a Redis GET, newest first */
	const struct sl_services *svc; /* the process's: its Redis link, when there is one */
	bool bad_logged;           /* a hostile entry in Redis was logged */
};

/* A call whose lookup waits for Redis. Unlinked and c NULL once
 * cancelled: the reply then frees it and touches nothing else. */
struct wait {
	struct sl_list link;       /* in waits */
	struct cache *C;
	struct sl_call *c;
	bool store;                /* a SET the answer waits for, not a GET */
	char key[65];
};

static void entry_free(struct sl_lru_entry *le, void *arg)
{
	struct entry *e = sl_lru_item(le, struct entry, e);

	(void)arg;
	free(e->json);
	free(e);
}

/* ---- selection and keys ------------------------------------------------------ */

static bool annotated_read_only(const struct sl_upstream *up, const char *tool)
{
	for (size_t i = 0; i < up->tools.n; i++) {
		yyjson_val *t = up->tools.items[i];
		const char *name = sl_json_str(t, "name");
		if (name && strcmp(name, tool) == 0)
			return yyjson_is_true(yyjson_obj_get(sl_json_obj(t, "annotations"), "readOnlyHint"));
	}
	return false;
}

static bool selected(const struct cache *C, const struct sl_call *c)
{
	char *full = sl_printf("%s.%s", c->up->name, c->tool);
	bool hit = false;
	for (size_t i = 0; i < C->nglobs && !hit; i++)
		hit = fnmatch(C->globs[i], full, 0) == 0;
	free(full);
	return hit || (C->read_only && annotated_read_only(c->up, c->tool));
}

/* Lengths first, so no choice of names can make two keys the same text.
 * A perUser server answers each caller with that caller's own rights: the
 * caller's user key is part of the key, so one's answer is never
 * another's. */
static void make_key(struct sl_call *c, char out[65])
{
	size_t n;
	char user[65] = "";
	char *canon = sl_json_canonical(c->args, &n), *text;

	if (c->up->cfg->oauth.per_user && !sl_caller_user_key(c->who, user))
		user[0] = '\0';
	text = sl_printf("%zu:%s\n%zu:%s\n%s\n%s", strlen(c->up->name), c->up->name,
			 strlen(c->tool), c->tool, user, canon);
	sl_sha256_hex(text, strlen(text), out);
	free(text);
	free(canon);
}

/* ---- replicas ------------------------------------------------------------------ */

static struct sl_redis *shared_redis(const struct cache *C)
{
	struct sl_redis *r = C->svc ? C->svc->redis : NULL;
	return r && sl_redis_state(r) == SL_REDIS_CONNECTED ? r : NULL;
}

static void put_local(struct cache *C, const char *key, char *json, size_t len);

static void unlink_wait(struct wait *w)
{
	sl_list_remove(&w->link);
}

/* c is answered by the stored result doc (taken). */
static void answer_hit(struct sl_call *c, yyjson_doc *doc)
{
	yyjson_doc_free(c->result_doc);
	c->result_doc = doc;
	c->result = yyjson_doc_get_root(doc);
	c->mresult = NULL;
	c->outcome = SL_OUTCOME_OK;
	c->cache_hit = true;
}

/* A hit from Redis is taken like a local one, and kept here as well. */
static void on_got(void *ctx, redisReply *reply, const char *error)
{
	struct wait *w = ctx;
	struct sl_call *c = w->c;
	struct cache *C = w->C;
	const char *why = NULL;
	yyjson_doc *doc;

	if (!c) {
		free(w);
		return;
	}
	unlink_wait(w);
	if (w->store) {
		free(w);
		sl_call_resume(c);
		return;
	}
	if (reply && reply->type == REDIS_REPLY_STRING) {
		doc = sl_shared_object(reply->str, (size_t)reply->len, C->shared_bytes, &why);
		if (doc) {
			put_local(C, w->key, sl_strndup(reply->str, (size_t)reply->len), (size_t)reply->len);
			answer_hit(c, doc);
		}
	} else if (reply && reply->type != REDIS_REPLY_NIL) {
		why = "it is not a string";
	}
	if (why && !C->bad_logged) {
		C->bad_logged = true;
		sl_log(SL_LOG_WARN, "cache: an entry in the shared store (Redis) was ignored: %s "
		       "(once per cache; counted as a miss)", why);
	}
	(void)error; /* a failed GET is a miss; the shared state reports the outage */
	free(w);
	sl_call_resume(c);
}

/* Sends GET (json NULL) or SET ... PX of key; the call waits for the
 * reply: a GET's is the lookup, a SET's lets the answer go only once
 * another replica can hit the entry. NEXT when nothing was sent. */
static enum sl_stage_rc ask_shared(struct cache *C, struct sl_call *c, const char *key,
				   const char *json, size_t len)
{
	struct sl_redis *r = shared_redis(C);
	struct wait *w;
	const char *argv[5];
	size_t lens[5];
	struct sl_err err;
	char *rkey, ttl[24];
	int argc = 2, rc;

	if (!r || (json && len > C->shared_bytes))
		return SL_STAGE_NEXT;
	w = sl_alloc(sizeof(*w));
	w->C = C;
	w->c = c;
	w->store = json != NULL;
	memcpy(w->key, key, sizeof(w->key));
	rkey = sl_shared_cache_key(sl_redis_prefix(r), key);
	argv[0] = json ? "SET" : "GET", argv[1] = rkey;
	if (json) {
		snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)C->ttl_ms);
		argv[2] = json, argv[3] = "PX", argv[4] = ttl;
		argc = 5;
	}
	for (int i = 0; i < argc; i++)
		lens[i] = i == 2 ? len : strlen(argv[i]);
	rc = sl_redis_command(r, on_got, w, argc, argv, lens, &err);
	free(rkey);
	if (rc < 0) {
		free(w);
		return SL_STAGE_NEXT;
	}
	sl_list_push_front(&C->waits, &w->link);
	return SL_STAGE_AGAIN;
}

static void cache_cancel(void *state, struct sl_call *c)
{
	struct cache *C = state;
	struct sl_list *n;

	sl_list_each(n, &C->waits) {
		struct wait *w = sl_list_entry(n, struct wait, link);
		if (w->c == c) {
			unlink_wait(w);
			w->c = NULL; /* freed by on_got, which always runs */
			sl_call_resume(c);
			return;
		}
	}
}

/* ---- hooks --------------------------------------------------------------------- */

static enum sl_stage_rc cache_request(void *state, struct sl_call *c)
{
	struct cache *C = state;
	char key[65];
	struct sl_lru_entry *le;
	struct entry *e;
	yyjson_doc *doc;

	/* A task is one run the client follows by its id: never answered
	 * from, nor stored in, the cache. */
	if (!C || !C->on || c->task || c->task_fetch || !selected(C, c))
		return SL_STAGE_DECLINED;
	c->cache_lookup = true;
	make_key(c, key);
	/* An expired entry is dropped on sight: a miss. */
	if (!(le = sl_lru_get(&C->lru, key, sl_now_ms())))
		return ask_shared(C, c, key, NULL, 0);
	e = sl_lru_item(le, struct entry, e);
	doc = yyjson_read(e->json, e->len, SL_JSON_READ_FLAGS);
	if (!doc || !yyjson_is_obj(yyjson_doc_get_root(doc))) {
		/* We wrote it; unreadable means memory went bad. Forget it. */
		yyjson_doc_free(doc);
		sl_lru_drop(&C->lru, le);
		return SL_STAGE_NEXT;
	}
	sl_lru_touch(&C->lru, le);
	answer_hit(c, doc);
	return SL_STAGE_DONE;
}

static enum sl_stage_rc cache_response(void *state, struct sl_call *c)
{
	struct cache *C = state;
	char key[65];
	enum sl_stage_rc rc;
	yyjson_doc *tmp = NULL;
	yyjson_val *res;
	char *json;
	size_t len = 0;

	if (!C || !C->on || c->cache_hit || c->outcome != SL_OUTCOME_OK || c->task || c->task_fetch ||
	    !selected(C, c))
		return SL_STAGE_DECLINED;
	res = sl_call_result_view(c, &tmp);
	if (!yyjson_is_obj(res) || yyjson_is_true(yyjson_obj_get(res, "isError"))) {
		yyjson_doc_free(tmp);
		return SL_STAGE_DECLINED;
	}
	json = yyjson_val_write(res, YYJSON_WRITE_ALLOW_INVALID_UNICODE, &len);
	yyjson_doc_free(tmp);
	if (!json)
		sl_oom();
	make_key(c, key);
	rc = ask_shared(C, c, key, json, len);
	put_local(C, key, json, len);
	return rc;
}

/* Takes json. */
static void put_local(struct cache *C, const char *key, char *json, size_t len)
{
	struct entry *e = sl_alloc(sizeof(*e));

	e->json = json;
	e->len = len;
	/* It replaces the entry under key, then the least recently used go
	 * until it fits; one over maxBytes alone is not kept. */
	(void)sl_lru_put(&C->lru, key, &e->e, len + ENTRY_OVERHEAD, sl_now_ms() + C->ttl_ms);
}

/* ---- config ------------------------------------------------------------------------ */

static void cache_fini(void *state)
{
	struct cache *C = state;
	sl_lru_dispose(&C->lru);
	for (size_t i = 0; i < C->nglobs; i++)
		free(C->globs[i]);
	free(C->globs);
	free(C);
}

static int parse_tools(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
		       void *target)
{
	struct cache *C = target;
	yyjson_val *g;
	size_t i, n;

	if (!yyjson_is_arr(v))
		return sl_conf_bad(cx, k);
	C->globs = sl_alloc((yyjson_arr_size(v) + 1) * sizeof(*C->globs));
	yyjson_arr_foreach(v, i, n, g) {
		if (!yyjson_is_str(g) || !*yyjson_get_str(g))
			return sl_conf_fail_key(cx, k, "every entry must be a non-empty \"server.tool\" "
						"glob");
		C->globs[C->nglobs++] = sl_strdup(yyjson_get_str(g));
	}
	return SL_OK;
}

#define CACHE(field) SL_CONF_AT(struct cache, field)
static const struct sl_conf_key cache_keys[] = {
	{ "tools", SL_CONF_CUSTOM, CACHE(globs), .parse = parse_tools,
	  .shape = "an array of \"server.tool\" globs", .dflt_doc = "`[]`",
	  .doc = "Globs (`fnmatch`) on `server.tool`, e.g. `\"github.get_*\"`, `\"jira.*\"`." },
	{ "readOnly", SL_CONF_BOOL, CACHE(read_only),
	  .doc = "`true`: also cache every tool its server annotates `readOnlyHint: true` (the "
		 "server's own claim: only for servers you trust)." },
	{ "ttlMs", SL_CONF_UINT, CACHE(ttl_ms), .min = 1, .max = 86400000ull * 7, .dflt = 60000,
	  .doc = "How long an entry answers." },
	{ "maxBytes", SL_CONF_UINT, CACHE(max_bytes), .min = 1024, .max = 1ull << 40,
	  .dflt = 64u << 20,
	  .doc = "Memory cap; each entry counts its result's JSON plus 128 bytes." },
	{ "maxSharedBytes", SL_CONF_UINT, CACHE(shared_bytes), .min = 1024, .max = 512u << 20,
	  .dflt = 1u << 20,
	  .doc = "With `sluice.shared.redis`: results up to this size are cached in Redis too, "
		 "shared by the replicas; a value read back over it (or not a JSON object) is a "
		 "miss." },
};
#undef CACHE

static const struct sl_conf_section cache_conf = {
	"sluice.cache",
	"The result cache: answers a repeated call from memory. Off unless the section is present "
	"and selects something (docs/stages/cache.md).",
	cache_keys, SL_COUNT(cache_keys), SL_CONF_STRICT, NULL,
};

static int cache_init(const struct sl_config *cfg, const struct sl_services *svc,
		      yyjson_val *section, void **state, struct sl_err *err)
{
	struct cache *C;
	int rc;

	if (!section)
		return SL_OK;
	C = sl_alloc(sizeof(*C));
	C->svc = svc;
	sl_list_init(&C->waits);
	sl_lru_init(&C->lru, 0, 0, entry_free, NULL);
	if ((rc = sl_conf_load(&cache_conf, section, C, err)) < 0) {
		cache_fini(C);
		return rc;
	}
	sl_lru_set_bounds(&C->lru, 0, C->max_bytes);
	*state = C;
	/* Configured but selecting nothing: stay out of every call's way. */
	C->on = C->nglobs > 0 || C->read_only;
	if (C->on)
		sl_log(SL_LOG_INFO, "cache: %zu tool glob%s%s, ttl %llu ms, at most %zu bytes", C->nglobs,
		       C->nglobs == 1 ? "" : "s", C->read_only ? " and read-only tools" : "",
		       (unsigned long long)C->ttl_ms, C->max_bytes);
	return SL_OK;
}

const struct sl_stage sl_stage_cache = {
	.name = "cache",
	.conf = &cache_conf,
	.init = cache_init,
	.fini = cache_fini,
	.request = cache_request,
	.response = cache_response,
	.cancel = cache_cancel,
};

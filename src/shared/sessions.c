/* Sessions across replicas: sealed ids, the record and its store; see sessions.h. */
#include "shared/sessions.h"
#include "core/digest.h"
#include "core/escape.h"
#include "core/json.h"
#include "core/log.h"
#include "proto/mcp.h"
#include "shared/redis.h"
#include "shared/url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RANDOM_HEX 32 /* 128 random bits */
#define TAG_HEX SL_SEAL_TAG_HEX /* 128 bits of the MAC: short ids, still unforgeable */
#define URI_MAX 2048  /* one subscription's URI in a record */

/* ---- ids ------------------------------------------------------------------ */

/* What an id's seal (core/digest.h) stands for: its random part and the
 * caller it was issued to. */
static char *id_what(const char *random, size_t rlen, const char *caller)
{
	return sl_printf("sluice-session\n%.*s\n%s", (int)rlen, random, caller);
}

void sl_session_id_make(const uint8_t key[32], const char *caller, char id[SL_SESSION_ID_MAX])
{
	unsigned char r[RANDOM_HEX / 2];
	char tag[SL_SEAL_TAG_HEX + 1], *what;

	/* MCP 2025-11-25 transports: a globally unique, cryptographically
	 * secure session id of visible ASCII. */
	sl_random(r, sizeof(r));
	sl_hex(r, sizeof(r), id);
	what = id_what(id, RANDOM_HEX, caller);
	sl_seal_tag(key, 32, what, tag);
	free(what);
	id[RANDOM_HEX] = '.';
	memcpy(id + RANDOM_HEX + 1, tag, TAG_HEX);
	id[RANDOM_HEX + 1 + TAG_HEX] = '\0';
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool sl_session_id_check(const uint8_t key[32], const char *id, const char *caller)
{
	char *what;
	bool ok;

	if (strlen(id) != RANDOM_HEX + 1 + TAG_HEX || id[RANDOM_HEX] != '.' ||
	    !all_hex(id, RANDOM_HEX) || !all_hex(id + RANDOM_HEX + 1, TAG_HEX))
		return false;
	what = id_what(id, RANDOM_HEX, caller);
	ok = sl_seal_tag_check(key, 32, what, id + RANDOM_HEX + 1, TAG_HEX);
	free(what);
	return ok;
}

/* ---- the record ------------------------------------------------------------- */

static bool mcp_level(const char *s)
{
	static const char *const levels[] = { "debug", "info", "notice", "warning", "error",
					      "critical", "alert", "emergency" };
	for (size_t i = 0; i < SL_COUNT(levels); i++)
		if (!strcmp(s, levels[i]))
			return true;
	return false;
}

char *sl_session_record_build(const struct sl_session_record *rec, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(d), *subs = yyjson_mut_arr(d);
	char *json;

	yyjson_mut_doc_set_root(d, o);
	yyjson_mut_obj_add_int(d, o, "v", 1);
	yyjson_mut_obj_add_strcpy(d, o, "caller", rec->caller);
	yyjson_mut_obj_add_strcpy(d, o, "protocolVersion", rec->version);
	yyjson_mut_obj_add_val(d, o, "capabilities",
			       rec->caps ? yyjson_val_mut_copy(d, rec->caps) : yyjson_mut_obj(d));
	if (rec->client_info)
		yyjson_mut_obj_add_val(d, o, "clientInfo", yyjson_val_mut_copy(d, rec->client_info));
	/* A level no MCP version has (a client may send anything) is left
	 * out: the record stays one the parser takes. */
	if (rec->log_level && mcp_level(rec->log_level))
		yyjson_mut_obj_add_strcpy(d, o, "logLevel", rec->log_level);
	for (size_t i = 0; i < rec->nsubs; i++)
		yyjson_mut_arr_add_strcpy(d, subs, rec->subs[i]);
	yyjson_mut_obj_add_val(d, o, "subscriptions", subs);
	json = yyjson_mut_write(d, 0, len);
	yyjson_mut_doc_free(d);
	if (!json)
		sl_oom();
	if (*len > SL_SESSION_RECORD_MAX) {
		free(json);
		return NULL;
	}
	return json;
}

static int bad(struct sl_err *err, const char *why)
{
	sl_err_set(err, "the session record in Redis %s", why);
	return SL_ERR_INVALID;
}

static int parse_subs(yyjson_val *arr, struct sl_session_record *rec, struct sl_err *err)
{
	yyjson_val *v;
	size_t i, max;

	if (!yyjson_is_arr(arr))
		return bad(err, "has no subscriptions array");
	if (yyjson_arr_size(arr) > SL_SESSION_RECORD_SUBS)
		return bad(err, "has too many subscriptions");
	rec->subs = sl_alloc((yyjson_arr_size(arr) + 1) * sizeof(*rec->subs));
	yyjson_arr_foreach(arr, i, max, v) {
		if (!yyjson_is_str(v) || !yyjson_get_len(v) || yyjson_get_len(v) > URI_MAX ||
		    memchr(yyjson_get_str(v), '\0', yyjson_get_len(v)))
			return bad(err, "has a subscription that is not a URI");
		rec->subs[rec->nsubs++] = yyjson_get_str(v);
	}
	return SL_OK;
}

int sl_session_record_parse(const char *json, size_t len, const char *caller,
			    struct sl_session_record *rec, struct sl_err *err)
{
	yyjson_val *root, *v;
	int rc = SL_ERR_INVALID;

	memset(rec, 0, sizeof(*rec));
	if (len > SL_SESSION_RECORD_MAX)
		return bad(err, "is over its bound (64 KiB)");
	if (!(rec->doc = sl_json_read(json, len, 0, NULL)) ||
	    !yyjson_is_obj(root = yyjson_doc_get_root(rec->doc))) {
		rc = bad(err, "is not a JSON object");
		goto out;
	}
	if (!(yyjson_is_int(v = yyjson_obj_get(root, "v")) && yyjson_get_int(v) == 1)) {
		rc = bad(err, "has an unknown version");
		goto out;
	}
	rec->caller = sl_json_str(root, "caller");
	/* The id's seal binds the caller already; a record written for
	 * another identity (a compromised Redis) is not taken either. */
	if (!rec->caller || strcmp(rec->caller, caller) != 0) {
		rc = bad(err, "is for another caller");
		goto out;
	}
	rec->version = sl_json_str(root, "protocolVersion");
	if (!rec->version || !sl_mcp_legacy_version(rec->version)) {
		rc = bad(err, "has no protocol version of the session era");
		goto out;
	}
	if (!yyjson_is_obj(rec->caps = yyjson_obj_get(root, "capabilities"))) {
		rc = bad(err, "has no capabilities object");
		goto out;
	}
	v = yyjson_obj_get(root, "clientInfo");
	if (v && !yyjson_is_obj(v)) {
		rc = bad(err, "has a clientInfo that is not an object");
		goto out;
	}
	rec->client_info = v;
	v = yyjson_obj_get(root, "logLevel");
	if (v && !(yyjson_is_str(v) && mcp_level(yyjson_get_str(v)))) {
		rc = bad(err, "has an unknown logLevel");
		goto out;
	}
	rec->log_level = v ? yyjson_get_str(v) : NULL;
	if ((rc = parse_subs(yyjson_obj_get(root, "subscriptions"), rec, err)) < 0)
		goto out;
	rc = SL_OK;
out:
	if (rc < 0)
		sl_session_record_dispose(rec);
	return rc;
}

void sl_session_record_dispose(struct sl_session_record *rec)
{
	yyjson_doc_free(rec->doc);
	free(rec->subs);
	memset(rec, 0, sizeof(*rec));
}

/* ---- the store ------------------------------------------------------------------ */

static char *key_of(struct sl_redis *r, const char *id)
{
	char *name = sl_printf("session:%s", id), *key = sl_redis_key(sl_redis_prefix(r), name);
	free(name);
	return key;
}

bool sl_session_store_put(struct sl_redis *r, const char *id, const char *json, size_t len,
			  uint64_t ttl_ms)
{
	char *key = key_of(r, id), ttl[24];
	const char *argv[5] = { "SET", key, json, "PX", ttl };
	size_t lens[5] = { 3, strlen(key), len, 2, 0 };
	struct sl_err err;
	bool sent = true;

	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)(ttl_ms ? ttl_ms : 1));
	lens[4] = strlen(ttl);
	if (sl_redis_command(r, NULL, NULL, 5, argv, lens, &err) < 0) {
		sl_log(SL_LOG_DEBUG, "shared state: a session record was not stored (another replica "
		       "cannot adopt the session yet): %s", err.msg);
		sent = false;
	}
	free(key);
	return sent;
}

struct get {
	sl_session_record_fn *fn;
	void *ctx;
};

static void on_get(void *ctx, redisReply *rep, const char *error)
{
	struct get *g = ctx;

	if (!rep)
		g->fn(g->ctx, NULL, 0, error ? error : "no reply");
	else if (rep->type == REDIS_REPLY_NIL)
		g->fn(g->ctx, NULL, 0, NULL);
	else if (rep->type == REDIS_REPLY_STRING)
		g->fn(g->ctx, rep->str, rep->len, NULL);
	else
		g->fn(g->ctx, NULL, 0, "GET answered with something other than a string");
	free(g);
}

int sl_session_store_get(struct sl_redis *r, const char *id, sl_session_record_fn *fn, void *ctx,
			 struct sl_err *err)
{
	char *key = key_of(r, id);
	const char *argv[2] = { "GET", key };
	struct get *g = sl_alloc(sizeof(*g));
	int rc;

	g->fn = fn;
	g->ctx = ctx;
	if ((rc = sl_redis_command(r, on_get, g, 2, argv, NULL, err)) < 0)
		free(g);
	free(key);
	return rc;
}

void sl_session_store_end(struct sl_redis *r, const char *id)
{
	char *key = key_of(r, id), *channel = sl_redis_key(sl_redis_prefix(r), "sessions");
	const char *del[2] = { "DEL", key }, *pub[3] = { "PUBLISH", channel, id };
	struct sl_err err;

	if (sl_redis_command(r, NULL, NULL, 2, del, NULL, &err) < 0 ||
	    sl_redis_command(r, NULL, NULL, 3, pub, NULL, &err) < 0)
		sl_log(SL_LOG_INFO, "shared state: an ended session's record stays until it "
		       "expires, and replicas that adopted it keep it until idle: %s", err.msg);
	free(key);
	free(channel);
}

struct ended {
	void (*fn)(void *ctx, const char *id);
	void (*up)(void *ctx);
	void *ctx;
};

static void on_ended_message(void *ctx, const char *payload, size_t len)
{
	struct ended *e = ctx;
	char id[SL_SESSION_ID_MAX];

	if (len == 0 || len >= sizeof(id) || memchr(payload, '\0', len))
		return;
	memcpy(id, payload, len);
	id[len] = '\0';
	e->fn(e->ctx, id);
}

static void on_store_up(void *ctx)
{
	struct ended *e = ctx;
	e->up(e->ctx);
}

/* The listener's context lives as long as the process: one per HTTP
 * front end, made once. */
struct sl_redis_listener *sl_session_store_listen(struct sl_redis *r,
						  void (*on_ended)(void *ctx, const char *id),
						  void (*on_up)(void *ctx), void *ctx)
{
	static struct ended e;
	char *channel = sl_redis_key(sl_redis_prefix(r), "sessions");
	struct sl_redis_listener *l;

	e.fn = on_ended;
	e.up = on_up;
	e.ctx = ctx;
	l = sl_redis_listen(r, channel, on_ended_message, on_store_up, &e);
	free(channel);
	return l;
}

void sl_session_store_unlisten(struct sl_redis_listener *l)
{
	sl_redis_unlisten(l);
}

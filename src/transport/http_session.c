/*
 * Sessions: one struct hsess per MCP session (or per 2026-07-28 request).
 * Routing what a session sends (its io->send) to the stream that waits for
 * it, its lifecycle (new, end, reaped from the loop), DELETE, and sessions
 * across replicas: the record kept in Redis, and the adoption of another
 * replica's session (shared/sessions.h, docs/REPLICAS.md).
 */
#include "transport/http_int.h"
#include "core/escape.h"
#include "core/log.h"
#include "gateway/gateway.h"
#include "proto/mcp.h"
#include "shared/redis.h"
#include "shared/sessions.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define BACKLOG_MAX 64        /* lines kept for a GET stream not yet open */
#define ADOPT_MAX 64 /* requests held while their session is read from Redis (REPLICAS.md) */
#define RESYNC_BATCH 256   /* records written again in one loop turn after Redis came back */
#define RESYNC_PAUSE_MS 5  /* between two such turns */

/* ---- routing what a session sends ------------------------------------------ */

char *http_json_key(yyjson_val *v)
{
	return v ? yyjson_val_write(v, 0, NULL) : NULL;
}

static void to_get_stream(struct hsess *hs, char *line, size_t len)
{
	struct line *l;
	enum bound b;

	if (hs->get) {
		b = http_stream_push(hs->get, http_sse_frame(hs->get, line, len), false);
		free(line);
		if (b != FITS)
			http_kill_stream(hs->get, b);
		return;
	}
	if (hs->ephemeral) {
		sl_log(SL_LOG_DEBUG, "http: no stream for a server message: dropped");
		free(line);
		return;
	}
	/* Over HTTP, list_changed sent before the client opens its GET
	 * stream would be lost: keep a few, the oldest given up first. */
	if (hs->nbacklog >= BACKLOG_MAX)
		http_backlog_drop_oldest(hs);
	l = http_line_new(line, len);
	if ((b = http_reserve(hs->h, hs, NULL, http_cost(l))) != FITS) {
		if (!hs->warned) {
			char *why = http_busy_why(hs->h, b);
			sl_log(SL_LOG_WARN, "http: session %.8s…: a message for its GET stream (not open) "
			       "dropped (%s; logged once)", hs->id, why);
			free(why);
			hs->warned = true;
		}
		http_lines_free(l);
		return;
	}
	hs->backlog_bytes += http_cost(l);
	*hs->backlog_tail = l;
	hs->backlog_tail = &l->next;
	hs->nbacklog++;
}

/* Routes one message to a request's stream. At a bound an answer becomes
 * a JSON-RPC error naming it (an answer is never lost silently); anything
 * else is dropped, logged once per stream. */
static void deliver(struct stream *st, const struct sl_out *o)
{
	enum bound b;
	char *why, *e;
	size_t len;

	if (st->sse) {
		b = http_stream_push(st, http_sse_frame(st, o->line, o->len), false);
		free(o->line);
	} else {
		b = http_stream_push(st, http_line_new(o->line, o->len), false);
	}
	if (b == FITS)
		return;
	if (o->sub && o->kind == SL_OUT_NOTIFICATION) {
		/* A listen's client that stopped reading: its stream ends like a
		 * GET stream's, and the client, seeing no graceful end, may
		 * listen again; a change is never dropped silently. */
		http_kill_stream(st, b);
		return;
	}
	why = http_busy_why(st->h, b);
	if (o->kind == SL_OUT_RESPONSE) {
		sl_log(SL_LOG_WARN, "http: session %.8s…: an answer became an error (%s)",
		       st->hs->id, why);
		e = sl_rpc_error_line(o->id, SL_RPC_SERVER_ERROR, why, &len);
		st->failed = true;
		if (st->sse) {
			http_stream_push(st, http_sse_frame(st, e, len), true);
			free(e);
		} else {
			http_stream_push(st, http_line_new(e, len), true);
		}
	} else if (!st->warned) {
		st->warned = true;
		sl_log(SL_LOG_WARN, "http: session %.8s…: a message for stream %u dropped (%s; logged "
		       "once)", st->hs->id, st->no, why);
	}
	free(why);
}

/* io->send: one outgoing message, routed by what the session says it is.
 * The rule (docs/internals/HTTP.md): an answer goes to the POST that
 * carried its request; a progress notification to the POST whose request
 * carries its token; a server-to-client request to the only POST still
 * waiting in the session (with several, to the GET stream); anything else
 * to the GET stream. */
/* The stream of hs waiting for the answer to the request whose id (or,
 * by_token, whose progressToken) is key as JSON; NULL when none is, or
 * key is NULL. */
static struct stream *find_stream(struct hsess *hs, const char *key, bool by_token)
{
	struct sl_list *sn;
	sl_list_each(sn, &hs->streams) {
		struct stream *st = sl_list_entry(sn, struct stream, link);
		const char *k = by_token ? st->token : st->key;
		if (key && !st->is_get && !st->answered && k && !strcmp(k, key))
			return st;
	}
	return NULL;
}

static void send_out(void *ctx, struct sl_out *o)
{
	struct hsess *hs = ctx;
	struct stream *target = NULL;
	char *key = NULL;

	/* Each stream frames and keeps whole lines. */
	sl_out_join(o);
	if (hs->ended) {
		free(o->line);
		return;
	}
	if (hs->sse) {
		http_sse_send(hs, o);
		return;
	}
	switch (o->kind) {
	case SL_OUT_RESPONSE:
		key = http_json_key(o->id);
		target = find_stream(hs, key, false);
		free(key);
		if (!target) {
			sl_log(SL_LOG_DEBUG, "http: an answer whose request is gone: dropped");
			free(o->line);
			return;
		}
		target->answered = true;
		target->failed = o->error;
		target->retry_after = o->retry_after;
		deliver(target, o);
		if (target->detached && target->lost)
			http_stream_free(target); /* nothing left to resume */
		else if (target->sse)
			http_stream_end(target);
		return;
	case SL_OUT_NOTIFICATION:
		if (o->sub) {
			/* A listen's: the stream of the POST that opened it, or
			 * nowhere once that is gone (MCP 2026-07-28 subscriptions). */
			key = http_json_key(o->sub);
			target = find_stream(hs, key, false);
			free(key);
			if (target)
				deliver(target, o);
			else
				free(o->line);
			return;
		}
		key = http_json_key(o->token);
		target = find_stream(hs, key, true);
		free(key);
		break;
	case SL_OUT_REQUEST: {
		struct sl_list *sn;
		int waiting = 0;
		sl_list_each(sn, &hs->streams) {
			struct stream *st = sl_list_entry(sn, struct stream, link);
			if (!st->is_get && !st->answered) {
				waiting++;
				target = st;
			}
		}
		if (waiting != 1)
			target = NULL;
		break;
	}
	}
	if (target)
		deliver(target, o);
	else
		to_get_stream(hs, o->line, o->len);
}

static void on_changed(void *ctx);
static const struct sl_session_io io = { send_out, on_changed };

/* ---- sessions --------------------------------------------------------------- */

struct hsess *http_session_new(struct sl_http *h, bool ephemeral, struct sl_caller *who)
{
	struct hsess *hs = sl_alloc(sizeof(*hs));
	hs->h = h;
	hs->ephemeral = ephemeral;
	sl_list_init(&hs->streams);
	sl_list_init(&hs->detached);
	hs->backlog_tail = &hs->backlog;
	hs->who = sl_caller_ref(who);
	(void)sl_caller_share_key(who, hs->owner); /* "" without authentication */
	hs->last_ms = sl_now_ms();
	if (!ephemeral) {
		unsigned char r[16];
		/* MCP 2025-11-25 transports: a globally unique, secure session id. */
		if (h->gw->gen->key_shared) {
			/* One every replica with the secret can verify. */
			sl_session_id_make(h->gw->gen->key, who ? who->key : "", hs->id);
		} else if (getrandom(r, sizeof(r), 0) != sizeof(r)) {
			sl_log(SL_LOG_ERROR, "getrandom failed: no session id can be made");
			abort();
		} else {
			sl_hex(r, 16, hs->id);
		}
		sl_map_put(&h->by_id, hs->id, hs);
		h->nsessions++;
	} else {
		h->nephemeral++;
	}
	sl_list_push_front(&h->sessions, &hs->link);
	hs->s = sl_session_new(h->gw, &io, hs);
	sl_session_set_caller(hs->s, who);
	return hs;
}

/* Ends a session: its calls are cancelled, its streams end, and it is
 * freed later from the loop. */
void http_session_end(struct hsess *hs)
{
	struct sl_http *h = hs->h;
	struct sl_list *n;
	if (hs->ended)
		return;
	hs->ended = true;
	sl_list_remove(&hs->link);
	sl_list_remove(&hs->resync);
	if (!hs->ephemeral) {
		sl_map_del(&h->by_id, hs->id);
		h->nsessions--;
	} else if (hs->listen) {
		h->nlistens--;
	} else {
		h->nephemeral--;
	}
	sl_session_close(hs->s);
	http_inflight_clear(hs);
	while ((n = sl_list_first(&hs->streams))) {
		struct stream *st = sl_list_entry(n, struct stream, link);
		if (st->detached) {
			http_stream_free(st); /* no response holds it */
			continue;
		}
		http_stream_unlink(st);
		http_stream_end(st);
	}
	sl_list_push_front(&h->reap, &hs->link);
	http_kick(h);
}

void http_reap(struct sl_http *h)
{
	struct sl_list *n;

	while ((n = sl_list_first(&h->reap))) {
		struct hsess *hs = sl_list_entry(n, struct hsess, link);
		sl_list_remove(n);
		sl_session_free(hs->s);
		while (hs->backlog)
			http_backlog_drop_oldest(hs);
		sl_caller_unref(hs->who);
		free(hs->client_info);
		free(hs);
	}
}

/* ---- sessions across replicas (shared/sessions.h, REPLICAS.md) ---------------------- */

/* Sessions are kept in Redis for other replicas to adopt: with a shared
 * secret (sealed ids) and a Redis. */
bool http_sharing(const struct sl_http *h)
{
	return h->gw->redis && h->gw->gen->key_shared;
}

static void collect_sub(const char *key, void *value, void *ctx)
{
	struct sl_session_record *rec = ctx;
	if (rec->nsubs < SL_SESSION_RECORD_SUBS)
		rec->subs[rec->nsubs++] = key;
}

/* Writes hs's record (again), with a TTL of the idle timeout: a session
 * nobody uses is gone from Redis when every replica has let it go. False
 * when the SET could not be sent (Redis down, or maxPending commands in
 * flight): it is tried again later. */
static bool store_record(struct hsess *hs)
{
	struct sl_http *h = hs->h;
	struct sl_session_record rec = { 0 };
	yyjson_doc *info = NULL;
	size_t len;
	char *json;

	bool sent = true;

	if (!http_sharing(h) || hs->ephemeral || hs->sse || hs->ended || hs->s->era != SL_ERA_LEGACY)
		return true;
	rec.caller = hs->who ? hs->who->key : "";
	rec.version = hs->s->version;
	rec.caps = hs->s->caps;
	if (hs->client_info && (info = yyjson_read(hs->client_info, strlen(hs->client_info), 0)))
		rec.client_info = yyjson_doc_get_root(info);
	rec.log_level = hs->s->log_level[0] ? hs->s->log_level : NULL;
	rec.subs = sl_alloc((hs->s->subs.live + 1) * sizeof(*rec.subs));
	sl_map_each(&hs->s->subs, collect_sub, &rec);
	json = sl_session_record_build(&rec, &len);
	hs->stored_ms = sl_now_ms();
	if (json && !(sent = sl_session_store_put(h->gw->redis, hs->id, json, len,
						  h->cfg->idle_timeout_ms)))
		hs->stored_ms = 1; /* Redis is down: again at the next request */
	else if (!json && !hs->record_warned)
		sl_log(SL_LOG_WARN, "http: session %.8s…: its record is over 64 KiB (too many "
		       "subscriptions): another replica cannot adopt it (logged once)", hs->id);
	hs->record_warned |= !json;
	free(json);
	free(rec.subs);
	yyjson_doc_free(info);
	return sent;
}

static void on_changed(void *ctx)
{
	store_record(ctx);
}

/* Redis is (back) up. It may have restarted empty, or lost the records
 * written while it was going down: each session held here has its record
 * written again, or a replica that adopts it after this one dies would find
 * nothing (404, initialize again). Every reconnect, not only an empty
 * Redis: a record written again is the same record, its TTL renewed. The
 * sessions are queued (bounded by sluice.http.maxSessions, in no other
 * memory than their own node) and written RESYNC_BATCH a loop turn, so
 * 50,000 sessions neither block the loop nor flood Redis past maxPending. */
void http_on_redis_up(void *ctx)
{
	struct sl_http *h = ctx;
	struct sl_list *n;

	sl_list_each(n, &h->sessions) {
		struct hsess *hs = sl_list_entry(n, struct hsess, link);
		if (!hs->ephemeral && !hs->sse && !sl_list_linked(&hs->resync))
			sl_list_push_back(&h->resync, &hs->resync);
	}
	if (!sl_list_empty(&h->resync) && !h->stopping)
		uv_timer_start(&h->resync_timer, http_on_resync, 0, 0);
}

void http_on_resync(uv_timer_t *t)
{
	struct sl_http *h = t->data;
	struct sl_list *n;
	size_t done = 0;

	while (done < RESYNC_BATCH && (n = sl_list_first(&h->resync))) {
		/* Down again: the sessions stay queued for the next reconnect. */
		if (sl_redis_state(h->gw->redis) != SL_REDIS_CONNECTED)
			return;
		sl_list_remove(n);
		if (!store_record(sl_list_entry(n, struct hsess, resync))) {
			sl_list_push_front(&h->resync, n); /* maxPending in flight: a pause */
			break;
		}
		done++;
	}
	if (!sl_list_empty(&h->resync))
		uv_timer_start(t, http_on_resync, RESYNC_PAUSE_MS, 0);
	else if (done)
		sl_log(SL_LOG_DEBUG, "http: the records of the sessions held here are in Redis again");
}

/* A session in use: the most recently used of h->sessions (so the least
 * recently used is found from the tail), and it keeps its record: written
 * again once a quarter of the TTL has passed (one SET, not one per
 * request). */
void http_touch(struct hsess *hs)
{
	uint64_t now = sl_now_ms();
	hs->last_ms = now;
	sl_list_remove(&hs->link);
	sl_list_push_front(&hs->h->sessions, &hs->link);
	if (http_sharing(hs->h) && hs->stored_ms && now - hs->stored_ms >= hs->h->cfg->idle_timeout_ms / 4)
		store_record(hs);
}

/* ---- room for a newcomer at maxSessions (issue 32, finding 16) ----------------------- */

/* Idle: nothing a DELETE would take from its client: no request in flight
 * (no call running, nothing deferred), no open stream (the idle timeout's
 * rule: a detached stream kept for resumption does not count). An HTTP+SSE
 * session lives as long as its stream: never idle. */
static bool session_idle(const struct hsess *hs)
{
	const struct sl_list *sn;
	if (hs->ephemeral || hs->sse || hs->ended || !sl_session_idle(hs->s))
		return false;
	sl_list_each(sn, &hs->streams)
		if (!sl_list_entry(sn, struct stream, link)->detached)
			return false;
	return true;
}

bool http_session_room(struct sl_http *h, const struct sl_caller *who, const char **why)
{
	char owner[SL_SHA256_HEX] = "";
	struct hsess *lru = NULL, *own = NULL, *victim;
	uint32_t mine = 0, share;
	struct sl_list *n;

	if (h->nsessions + h->nephemeral < h->cfg->max_sessions)
		return true;
	(void)sl_caller_share_key(who, owner);
	share = h->cfg->max_sessions_caller ? h->cfg->max_sessions_caller : h->cfg->max_sessions / 2;
	share = share ? share : 1;
	/* One pass from the least recently used: at most maxSessions (and the
	 * requests in flight), only at the bound. */
	for (n = sl_list_last(&h->sessions); n; n = n->prev != &h->sessions ? n->prev : NULL) {
		struct hsess *x = sl_list_entry(n, struct hsess, link);
		bool same = owner[0] && !strcmp(x->owner, owner);
		mine += same && !x->ephemeral;
		if (!session_idle(x))
			continue;
		lru = lru ? lru : x;
		own = same && !own ? x : own;
	}
	if (owner[0] && mine >= share) {
		/* Over its share, a caller makes room with its own sessions only. */
		*why = "too many sessions (sluice.http.maxSessions), and every one this caller holds "
		       "(at least its share, sluice.http.maxSessionsPerCaller) is busy";
		victim = own;
	} else {
		*why = "too many sessions (sluice.http.maxSessions; a 2026-07-28 request in flight "
		       "counts as one), and none of them is idle";
		victim = lru;
	}
	if (!victim)
		return false;
	sl_log(SL_LOG_INFO, "http: session %.8s… of %s closed: idle and least recently used%s, to "
	       "admit a new one (sluice.http.maxSessions)", victim->id, sl_caller_name(victim->who),
	       victim == own && owner[0] && mine >= share ? " of its caller's" : "");
	/* As a DELETE: it ends on every replica (none adopts it again), and
	 * its client's next request gets 404 and initializes anew. */
	if (http_sharing(h))
		sl_session_store_end(h->gw->redis, victim->id);
	http_session_end(victim);
	return true;
}

/* What the record would keep of an initialize (root, its body): its
 * clientInfo as JSON (owned), or NULL. Read before the session takes it. */
char *http_client_info(const struct sl_http *h, yyjson_val *root)
{
	yyjson_val *info = yyjson_obj_get(yyjson_obj_get(root, "params"), "clientInfo");

	return http_sharing(h) && yyjson_is_obj(info) ? sl_json_write_val(info, NULL) : NULL;
}

/* After a successful initialize: what the record keeps of it (client_info
 * from http_client_info, taken). */
void http_remember_init(struct hsess *hs, char *client_info)
{
	if (!http_sharing(hs->h) || hs->s->era != SL_ERA_LEGACY) {
		free(client_info);
		return;
	}
	hs->client_info = client_info;
	store_record(hs);
}

/* Another replica ended a session by DELETE: it ends here too. */
void http_on_ended_elsewhere(void *ctx, const char *id)
{
	struct sl_http *h = ctx;
	struct hsess *hs = sl_map_get(&h->by_id, id);

	if (!hs || hs->sse)
		return;
	sl_log(SL_LOG_INFO, "http: session %.8s… ended: deleted on another replica", hs->id);
	http_session_end(hs);
}

/* Streams of an adopted session are numbered from a random base in
 * [2^24, 2^31): the replica that held it before numbered its own from 1 (or
 * its own base), so an event id its client resumes from is told apart from
 * ours (sl_http_event_id_foreign) instead of resuming a stream of ours that
 * happens to have the same number. */
static void adopted_numbering(struct hsess *hs)
{
	uint32_t r;
	sl_random(&r, sizeof(r));
	hs->nstreams = (1u << 24) + r % ((1u << 31) - (1u << 24));
	hs->first_no = hs->nstreams + 1;
}

bool sl_http_event_id_foreign(const char *last, uint32_t first, uint32_t count)
{
	unsigned no, n;
	char end;

	if (!last || sscanf(last, "%u-%u%c", &no, &n, &end) != 2)
		return false;
	return no < first || (uint64_t)no >= (uint64_t)first + count;
}

/* A session made from another replica's record, under the id it had. */
static struct hsess *session_adopted(struct sl_http *h, const char *id, struct sl_caller *who,
				     const struct sl_session_record *rec)
{
	struct hsess *hs = sl_alloc(sizeof(*hs));
	hs->h = h;
	sl_list_init(&hs->streams);
	sl_list_init(&hs->detached);
	hs->backlog_tail = &hs->backlog;
	hs->who = sl_caller_ref(who);
	(void)sl_caller_share_key(who, hs->owner);
	hs->last_ms = sl_now_ms();
	snprintf(hs->id, sizeof(hs->id), "%s", id);
	sl_map_put(&h->by_id, hs->id, hs);
	h->nsessions++;
	sl_list_push_front(&h->sessions, &hs->link);
	hs->s = sl_session_new(h->gw, &io, hs);
	sl_session_set_caller(hs->s, who);
	if (rec->client_info)
		hs->client_info = sl_json_write_val(rec->client_info, NULL);
	sl_session_adopt(hs->s, rec->version, rec->caps, rec->log_level, rec->subs, rec->nsubs);
	hs->stored_ms = sl_now_ms();
	adopted_numbering(hs);
	return hs;
}

/* ---- the session a request names, and DELETE --------------------------------------- */

struct hsess *http_find_session(struct sl_http *h, struct MHD_Connection *c,
				const struct sl_caller *who,
				enum MHD_Result *ret)
{
	const char *sid = http_header(c, SL_MCP_HDR_SESSION);
	struct hsess *hs;
	if (!sid) {
		*ret = http_fail(c, MHD_HTTP_BAD_REQUEST, SL_RPC_SERVER_ERROR, NULL,
				 "Bad Request: Mcp-Session-Id header is required");
		return NULL;
	}
	hs = sl_map_get(&h->by_id, sid);
	if (!hs || hs->sse || !sl_caller_same(hs->who, who)) {
		*ret = http_fail(c, MHD_HTTP_NOT_FOUND, SL_RPC_SERVER_ERROR, NULL, "Session not found");
		return NULL;
	}
	http_touch(hs);
	return hs;
}

enum MHD_Result http_del(struct sl_http *h, struct MHD_Connection *c,
			 const struct sl_caller *who)
{
	const char *sid = http_header(c, SL_MCP_HDR_SESSION);
	enum MHD_Result ret;
	struct hsess *hs;

	/* A session another replica holds, sealed for this caller: it ends
	 * everywhere (no replica adopts it again), without adopting it here. */
	if (sid && http_sharing(h) && !sl_map_get(&h->by_id, sid) &&
	    sl_session_id_check(h->gw->gen->key, sid, who ? who->key : "")) {
		sl_session_store_end(h->gw->redis, sid);
		return http_respond(c, MHD_HTTP_OK, NULL, "", 0, NULL, false);
	}
	if (!(hs = http_find_session(h, c, who, &ret)))
		return ret;
	if (http_sharing(h))
		sl_session_store_end(h->gw->redis, hs->id);
	http_session_end(hs);
	return http_respond(c, MHD_HTTP_OK, NULL, "", 0, NULL, false);
}

/* ---- adopting another replica's session (shared/sessions.h) -------------------------- */

void http_adoption_unlink(struct adoption *ad)
{
	sl_list_remove(&ad->link);
	ad->h->nadoptions--;
	ad->h = NULL;
}

static void adoption_free(struct adoption *ad)
{
	sl_caller_unref(ad->who);
	free(ad);
}

/* The record came (or not): adopt the session when it is good, then let
 * the request ask again; without a session it gets 404 Session not found
 * (MCP 2025-11-25 transports) and the client initializes anew. */
static void on_record(void *ctx, const char *json, size_t len, const char *error)
{
	struct adoption *ad = ctx;
	struct sl_http *h = ad->h;
	struct sl_session_record rec;
	struct sl_err err;
	const char *why;

	if (!h) {
		adoption_free(ad); /* the transport is gone */
		return;
	}
	http_adoption_unlink(ad);
	if (!ad->r) {
		/* Its request ended meanwhile: nothing waits for the session. */
	} else if (error) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: Redis: %s",
		       ad->id, error);
	} else if (!json) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: no record "
		       "in Redis (ended or expired)", ad->id);
	} else if (sl_session_record_parse(json, len, ad->who ? ad->who->key : "", &rec, &err) < 0) {
		sl_log(SL_LOG_WARN, "http: session %.8s… of another replica not adopted: %s", ad->id,
		       err.msg);
	} else {
		if (sl_map_get(&h->by_id, ad->id)) {
			/* Another request adopted it first. */
		} else if (h->stopping || !http_session_room(h, ad->who, &why)) {
			sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: %s",
			       ad->id, h->stopping ? "shutting down" : why);
		} else {
			session_adopted(h, ad->id, ad->who, &rec);
			sl_log(SL_LOG_INFO, "http: session %.8s… adopted from another replica (%zu "
			       "subscriptions)", ad->id, rec.nsubs);
		}
		sl_session_record_dispose(&rec);
	}
	if (ad->r) {
		ad->r->adopt = NULL;
		MHD_resume_connection(ad->r->conn);
		http_kick(h);
	}
	adoption_free(ad);
}

/* Whether r names a session this replica does not hold but another one
 * may: sealed for r's caller, on the session era's endpoint. */
bool http_adoptable(struct sl_http *h, struct MHD_Connection *c, const char *url,
		    const char *method, const char *pv, const struct req *r)
{
	const char *sid = http_header(c, SL_MCP_HDR_SESSION);

	if (r->adopt_tried || !http_sharing(h) || !sid || (pv && !strcmp(pv, SL_MCP_MODERN)))
		return false;
	/* The HTTP+SSE transport's sessions stay on their replica. */
	if (!strcmp(url, "/messages") || !strcmp(url, "/sse"))
		return false;
	if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0)
		return false;
	return !sl_map_get(&h->by_id, sid) &&
	       sl_session_id_check(h->gw->gen->key, sid, r->who ? r->who->key : "");
}

/* Reads the session's record and suspends r until it came (a Redis reply
 * comes within commandTimeoutMs, else the connection to Redis is dropped
 * and the read fails). False when the read cannot start (Redis down,
 * ADOPT_MAX reads in flight): r goes on, to be answered 404 like any
 * unknown session. */
bool http_adopt_start(struct sl_http *h, struct MHD_Connection *c, struct req *r)
{
	const char *sid = http_header(c, SL_MCP_HDR_SESSION);
	struct adoption *ad;
	struct sl_err err;

	r->adopt_tried = true;
	if (h->nadoptions >= ADOPT_MAX) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: %d "
		       "adoptions are in flight already", sid, ADOPT_MAX);
		return false;
	}
	ad = sl_alloc(sizeof(*ad));
	ad->who = sl_caller_ref(r->who);
	snprintf(ad->id, sizeof(ad->id), "%s", sid);
	if (sl_session_store_get(h->gw->redis, ad->id, on_record, ad, &err) < 0) {
		sl_log(SL_LOG_INFO, "http: session %.8s… of another replica not adopted: %s",
		       ad->id, err.msg);
		adoption_free(ad);
		return false;
	}
	ad->h = h;
	ad->r = r;
	sl_list_push_front(&h->adoptions, &ad->link);
	h->nadoptions++;
	r->adopt = ad;
	MHD_suspend_connection(c);
	return true;
}

/* Stopping: requests waiting for a record go on (and get 503). */
void http_adoptions_release(struct sl_http *h)
{
	struct sl_list *n;

	sl_list_each(n, &h->adoptions) {
		struct adoption *ad = sl_list_entry(n, struct adoption, link);
		if (ad->r) {
			ad->r->adopt = NULL;
			MHD_resume_connection(ad->r->conn);
			ad->r = NULL;
		}
	}
}

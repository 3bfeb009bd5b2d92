/*
 * The replicas seen through Redis (fleet.h). A heartbeat is one HSET of
 * this replica's entry followed, on the same connection, by one HGETALL of
 * the hash, so the read always holds the entry just written. Nothing here
 * waits on Redis: while it is down (degraded) a beat is skipped, and
 * GET /status shows the last read with its time, so a reader can tell.
 */
#include "shared/fleet.h"
#include "shared/redis.h"
#include "shared/url.h"
#include "core/json.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HASH "replicas"
#define PRUNES_PER_READ 32 /* HDELs one read may send: a burst stays well under maxPending */

/* ---- pure parts ------------------------------------------------------------------ */

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool printable(const char *s, size_t n, bool space)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		/* Bytes >= 0x80 are UTF-8 (yyjson has checked it): the CLI escapes
		 * whatever it prints, but no control character gets this far. */
		if (c < 0x20 || c == 0x7f || (!space && c == ' '))
			return false;
	}
	return true;
}

bool sl_fleet_id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > SL_FLEET_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (id[i] <= ' ' || id[i] > '~')
			return false;
	return true;
}

void sl_fleet_default_id(char *out, size_t size)
{
	char host[65] = "";
	char pid[24];
	size_t room;

	if (gethostname(host, sizeof(host) - 1) != 0 || !*host)
		snprintf(host, sizeof(host), "localhost");
	for (char *p = host; *p; p++)
		if (*p <= ' ' || *p > '~')
			*p = '_';
	snprintf(pid, sizeof(pid), ":%ld", (long)getpid());
	if (size > SL_FLEET_ID_MAX + 1)
		size = SL_FLEET_ID_MAX + 1;
	room = size - 1 > strlen(pid) ? size - 1 - strlen(pid) : 0;
	snprintf(out, size, "%.*s%s", (int)room, host, pid);
}

/* A string member into buf, whole or not at all. */
static bool take_str(yyjson_val *o, const char *key, char *buf, size_t size, bool required)
{
	yyjson_val *v = yyjson_obj_get(o, key);
	size_t n;

	if (!v && !required) {
		*buf = 0;
		return true;
	}
	if (!yyjson_is_str(v))
		return false;
	n = yyjson_get_len(v);
	if (n >= size || !printable(yyjson_get_str(v), n, true) || memchr(yyjson_get_str(v), 0, n))
		return false;
	memcpy(buf, yyjson_get_str(v), n);
	buf[n] = 0;
	return true;
}

/* A count: absent is 0, anything but a non-negative integer below 2^53 is wrong. */
static bool take_uint(yyjson_val *o, const char *key, uint64_t *out)
{
	yyjson_val *v = yyjson_obj_get(o, key);

	*out = 0;
	if (!v)
		return true;
	if (!yyjson_is_uint(v) || yyjson_get_uint(v) > (1ull << 53))
		return false;
	*out = yyjson_get_uint(v);
	return true;
}

bool sl_fleet_parse(const char *field, size_t flen, const char *value, size_t vlen,
		    uint64_t now_ms, struct sl_fleet_member *m, const char **why)
{
	yyjson_doc *d = NULL;
	yyjson_val *o, *ups;
	uint64_t pid;
	bool ok = false;

	*why = "too big";
	if (vlen > SL_FLEET_ENTRY_MAX || flen > SL_FLEET_ID_MAX)
		return false;
	*why = "not a JSON object";
	d = sl_json_read(value, vlen, SL_JSON_READ_FLAGS, NULL);
	o = yyjson_doc_get_root(d);
	if (!yyjson_is_obj(o) || !sl_json_depth_ok(o))
		goto out;
	*why = "a missing or malformed member";
	memset(m, 0, sizeof(*m));
	if (!take_str(o, "id", m->id, sizeof(m->id), true) ||
	    !take_str(o, "version", m->version, sizeof(m->version), false) ||
	    !take_str(o, "listen", m->listen, sizeof(m->listen), false) ||
	    !take_uint(o, "pid", &pid) || pid > INT32_MAX ||
	    !take_uint(o, "started", &m->started_ms) || !take_uint(o, "lastSeen", &m->seen_ms) ||
	    !take_uint(o, "sessions", &m->sessions) || !take_uint(o, "programs", &m->programs))
		goto out;
	ups = yyjson_obj_get(o, "upstreams");
	if (ups && (!yyjson_is_obj(ups) || !take_uint(ups, "up", &m->ups_up) ||
		    !take_uint(ups, "total", &m->ups_total)))
		goto out;
	m->pid = (int64_t)pid;
	*why = "an id that is not its field's";
	if (strlen(m->id) != flen || memcmp(m->id, field, flen) != 0 || !sl_fleet_id_ok(m->id))
		goto out;
	/* A heartbeat from the future (beyond an hour of clock skew) would be
	 * alive forever and never pruned. */
	*why = "a time in the future";
	if (!m->seen_ms || m->seen_ms > now_ms + SL_FLEET_PRUNE_MS)
		goto out;
	ok = true;
out:
	yyjson_doc_free(d);
	return ok;
}

const char *sl_fleet_state(uint64_t seen_ms, uint64_t now_ms)
{
	uint64_t age = now_ms > seen_ms ? now_ms - seen_ms : 0;
	return age <= (uint64_t)SL_FLEET_ALIVE_BEATS * SL_FLEET_BEAT_MS ? "alive" : "gone";
}

/* ---- the heartbeat --------------------------------------------------------------- */

struct sl_fleet {
	struct sl_redis *r;
	sl_fleet_load_fn *load;          /* the owner's, with load_ctx */
	void *load_ctx;
	char id[SL_FLEET_ID_MAX + 1];
	char *hash;                      /* <prefix>replicas */
	char *listen;                    /* as served, for the operator */
	uint64_t started_ms;
	uv_timer_t beat;
	bool reading;                    /* an HGETALL in flight: the next beat skips its own */
	bool left;
	unsigned refs;                   /* the owner's, the timer's, each reply awaited */
	struct sl_fleet_member *members; /* the last read, in id order, at most SL_FLEET_SHOWN */
	size_t n, omitted, ignored;
	uint64_t read_ms;                /* wall clock of the last read; 0: none yet */
};

static void fleet_unref(struct sl_fleet *f)
{
	if (--f->refs)
		return;
	free(f->members);
	free(f->hash);
	free(f->listen);
	free(f);
}

/* This replica's entry: what an operator of the fleet wants at a glance. */
static char *entry(const struct sl_fleet *f, uint64_t now, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o, *ups;
	struct sl_fleet_load load = { 0 };
	char *out;

	if (!d)
		sl_oom();
	f->load(f->load_ctx, &load);
	o = yyjson_mut_obj(d);
	yyjson_mut_obj_add_strcpy(d, o, "id", f->id);
	yyjson_mut_obj_add_int(d, o, "pid", (int64_t)getpid());
	yyjson_mut_obj_add_str(d, o, "version", SL_VERSION);
	yyjson_mut_obj_add_uint(d, o, "started", f->started_ms);
	yyjson_mut_obj_add_uint(d, o, "lastSeen", now);
	if (f->listen)
		yyjson_mut_obj_add_strcpy(d, o, "listen", f->listen);
	yyjson_mut_obj_add_uint(d, o, "sessions", load.sessions);
	yyjson_mut_obj_add_uint(d, o, "programs", load.programs);
	ups = yyjson_mut_obj(d);
	yyjson_mut_obj_add_uint(d, ups, "up", load.ups_up);
	yyjson_mut_obj_add_uint(d, ups, "total", load.ups_total);
	yyjson_mut_obj_add_val(d, o, "upstreams", ups);
	out = sl_json_write_mut_val(o, len);
	yyjson_mut_doc_free(d);
	return out;
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct sl_fleet_member *)a)->id,
		      ((const struct sl_fleet_member *)b)->id);
}

/* Entries nobody has refreshed for an hour: their replica died without
 * leaving. Whoever reads them deletes them (a few per read). */
static void prune(struct sl_fleet *f, const char *field, size_t flen, unsigned *budget)
{
	const char *argv[3] = { "HDEL", f->hash, field };
	size_t lens[3] = { 4, strlen(f->hash), flen };
	struct sl_err err;

	if (!*budget)
		return;
	(*budget)--;
	if (sl_redis_command(f->r, NULL, NULL, 3, argv, lens, &err) < 0)
		*budget = 0;
}

static void on_read(void *ctx, redisReply *rep, const char *error)
{
	struct sl_fleet *f = ctx;
	uint64_t now = wall_ms();
	struct sl_fleet_member *all = NULL, m;
	size_t n = 0, ignored = 0, skipped = 0;
	unsigned budget = PRUNES_PER_READ;
	const char *why = NULL;

	f->reading = false;
	if (f->left)
		goto out;
	if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		sl_log(SL_LOG_DEBUG, "shared state: cannot read %s: %s", f->hash,
		       error ? error : rep && rep->type == REDIS_REPLY_ERROR ? rep->str : "not a hash");
		goto out;
	}
	all = sl_alloc(((rep->elements / 2 < SL_FLEET_READ_MAX ? rep->elements / 2 :
			 SL_FLEET_READ_MAX) + 1) * sizeof(*all));
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		redisReply *k = rep->element[i], *v = rep->element[i + 1];
		if (i / 2 >= SL_FLEET_READ_MAX) {
			skipped++;
			continue;
		}
		if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
		    !sl_fleet_parse(k->str, k->len, v->str, v->len, now, &m, &why)) {
			ignored++;
			continue;
		}
		if (now > m.seen_ms && now - m.seen_ms > SL_FLEET_PRUNE_MS) {
			prune(f, k->str, k->len, &budget);
			continue;
		}
		all[n++] = m;
	}
	if (ignored)
		sl_log(SL_LOG_DEBUG, "shared state: ignored %zu entr%s of %s (the last: %s)",
		       ignored, ignored == 1 ? "y" : "ies", f->hash, why);
	qsort(all, n, sizeof(*all), by_id);
	free(f->members);
	f->omitted = (n > SL_FLEET_SHOWN ? n - SL_FLEET_SHOWN : 0) + skipped;
	f->n = n > SL_FLEET_SHOWN ? SL_FLEET_SHOWN : n;
	f->members = all;
	all = NULL;
	f->ignored = ignored;
	f->read_ms = now;
out:
	free(all);
	fleet_unref(f);
}

static void on_beat(uv_timer_t *t)
{
	struct sl_fleet *f = t->data;
	uint64_t now = wall_ms();
	size_t len;
	char *e;
	struct sl_err err;

	if (f->left || sl_redis_state(f->r) != SL_REDIS_CONNECTED)
		return;
	e = entry(f, now, &len);
	{
		const char *set[4] = { "HSET", f->hash, f->id, e };
		size_t setl[4] = { 4, strlen(f->hash), strlen(f->id), len };
		const char *get[2] = { "HGETALL", f->hash };
		if (sl_redis_command(f->r, NULL, NULL, 4, set, setl, &err) == 0 && !f->reading) {
			f->refs++;
			if (sl_redis_command(f->r, on_read, f, 2, get, NULL, &err) == 0)
				f->reading = true;
			else
				f->refs--;
		}
	}
	free(e);
}

struct sl_fleet *sl_fleet_start(uv_loop_t *loop, struct sl_redis *r, const char *id,
				const char *listen, sl_fleet_load_fn *load, void *ctx)
{
	struct sl_fleet *f = sl_alloc(sizeof(*f));

	*f = (struct sl_fleet){ .r = r, .load = load, .load_ctx = ctx, .refs = 2,
				.started_ms = wall_ms(),
				.hash = sl_redis_key(sl_redis_prefix(r), HASH),
				.listen = listen ? sl_strdup(listen) : NULL };
	if (id)
		snprintf(f->id, sizeof(f->id), "%s", id);
	else
		sl_fleet_default_id(f->id, sizeof(f->id));
	uv_timer_init(loop, &f->beat);
	uv_unref((uv_handle_t *)&f->beat);
	f->beat.data = f;
	/* The first beat goes once Redis is up: a short first period, then
	 * the steady one (a beat while degraded is skipped). */
	uv_timer_start(&f->beat, on_beat, 100, SL_FLEET_BEAT_MS);
	sl_log(SL_LOG_INFO, "shared state: this replica is %s in %s", f->id, f->hash);
	return f;
}

static void add_time(yyjson_mut_doc *d, yyjson_mut_val *o, const char *key, uint64_t ms)
{
	char when[40];
	struct tm tm;
	time_t s = (time_t)(ms / 1000);

	gmtime_r(&s, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03uZ", (unsigned)(ms % 1000));
	yyjson_mut_obj_add_strcpy(d, o, key, when);
}

void sl_fleet_status(const struct sl_fleet *f, yyjson_mut_doc *d, yyjson_mut_val *obj)
{
	yyjson_mut_val *arr;
	uint64_t now = wall_ms();

	if (!f)
		return;
	yyjson_mut_obj_add_strcpy(d, obj, "replica", f->id);
	yyjson_mut_obj_add_uint(d, obj, "heartbeatMs", SL_FLEET_BEAT_MS);
	if (f->read_ms)
		add_time(d, obj, "readAt", f->read_ms);
	else
		yyjson_mut_obj_add_null(d, obj, "readAt");
	arr = yyjson_mut_arr(d);
	for (size_t i = 0; i < f->n; i++) {
		const struct sl_fleet_member *m = &f->members[i];
		yyjson_mut_val *o = yyjson_mut_obj(d), *ups = yyjson_mut_obj(d);
		yyjson_mut_obj_add_strcpy(d, o, "id", m->id);
		yyjson_mut_obj_add_str(d, o, "state", sl_fleet_state(m->seen_ms, now));
		yyjson_mut_obj_add_bool(d, o, "self", !strcmp(m->id, f->id));
		yyjson_mut_obj_add_int(d, o, "pid", m->pid);
		yyjson_mut_obj_add_strcpy(d, o, "version", m->version);
		yyjson_mut_obj_add_strcpy(d, o, "listen", m->listen);
		add_time(d, o, "started", m->started_ms);
		add_time(d, o, "lastSeen", m->seen_ms);
		yyjson_mut_obj_add_uint(d, o, "lastSeenMsAgo", now > m->seen_ms ? now - m->seen_ms : 0);
		yyjson_mut_obj_add_uint(d, o, "sessions", m->sessions);
		yyjson_mut_obj_add_uint(d, o, "programs", m->programs);
		yyjson_mut_obj_add_uint(d, ups, "up", m->ups_up);
		yyjson_mut_obj_add_uint(d, ups, "total", m->ups_total);
		yyjson_mut_obj_add_val(d, o, "upstreams", ups);
		yyjson_mut_arr_append(arr, o);
	}
	yyjson_mut_obj_add_val(d, obj, "replicas", arr);
	yyjson_mut_obj_add_uint(d, obj, "omitted", f->omitted);
	yyjson_mut_obj_add_uint(d, obj, "ignored", f->ignored);
}

static void on_beat_closed(uv_handle_t *h)
{
	fleet_unref(h->data);
}

void sl_fleet_leave(struct sl_fleet *f)
{
	const char *argv[3];
	struct sl_err err;

	if (!f || f->left)
		return;
	f->left = true;
	uv_timer_stop(&f->beat);
	argv[0] = "HDEL";
	argv[1] = f->hash;
	argv[2] = f->id;
	if (sl_redis_command(f->r, NULL, NULL, 3, argv, NULL, &err) < 0)
		sl_log(SL_LOG_DEBUG, "shared state: %s stays in %s until it is pruned: %s", f->id,
		       f->hash, err.msg);
}

void sl_fleet_free(struct sl_fleet *f)
{
	if (!f)
		return;
	f->left = true;
	uv_timer_stop(&f->beat);
	uv_close((uv_handle_t *)&f->beat, on_beat_closed);
	fleet_unref(f);
}

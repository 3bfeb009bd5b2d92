/*
 * The Redis client (redis.h): two hiredis async connections on the loop,
 * their lifecycle, and the degraded state.
 *
 * The libuv glue is our own (about forty lines on uv_poll) rather than
 * hiredis/adapters/libuv.h from the package: after each read it checks how
 * much of a reply is waiting unparsed, which is where hiredis 0.14 (it has
 * no limit on a reply's size) has to be told no, and its handles are
 * unreferenced so that a Redis connection never keeps the gateway's loop
 * from ending.
 *
 * A connection is never freed inside one of its own hiredis callbacks:
 * drops decided there use redisAsyncDisconnect (hiredis frees it once the
 * callback returns); drops decided by the tick timer use redisAsyncFree.
 */
#include "shared/redis.h"
#include "shared/url.h"
#include "core/list.h"
#include "core/log.h"

#include <hiredis/async.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 5000
#define TICK_MS 100
/* Up this long, a connection is stable again: its backoff starts over and
 * the next drop is a new outage (warned again). Shorter: a flapping one
 * (a reply it cannot take, a server that drops it after the handshake). */
#define STABLE_MS 5000

struct conn {
	struct sl_redis *r;
	redisAsyncContext *ac;  /* NULL: not connected (a retry is scheduled) */
	bool sub;               /* the subscriber connection */
	bool open;              /* connected: setting up or ready */
	bool ready;             /* AUTH, SELECT (and SUBSCRIBE) answered */
	bool failing;           /* its setup was refused: the first reason stands */
	unsigned setup_left;    /* replies still awaited before ready */
	uint64_t deadline;      /* of the connection attempt (ready false) */
	unsigned backoff_ms;
	uv_timer_t retry;
};

struct cmd {
	struct sl_redis *r;
	sl_redis_reply_fn *fn;
	void *ctx;
	uint64_t deadline;
	struct sl_list link;    /* in r->cmds */
};

struct sl_redis_listener {
	struct sl_redis *r;
	char *channel;
	sl_redis_message_fn *on_message;
	sl_redis_up_fn *on_up;
	void *ctx;
	bool subscribed;        /* SUBSCRIBE sent on the current subscriber connection */
	struct sl_list link;    /* in r->listeners */
};

struct sl_redis {
	uv_loop_t *loop;
	struct sl_redis_config cfg;   /* copied strings */
	struct sl_redis_addr addr;
	struct conn cmd, sub;
	uv_timer_t tick;
	struct sl_list cmds;          /* in flight, oldest first (Redis answers in order) */
	size_t npending;
	enum sl_redis_state state;
	time_t since;                 /* wall clock, for `sluice status` */
	char last_error[256];
	bool warned;                  /* this outage was warned about */
	bool recovering;              /* connected again, not yet for STABLE_MS */
	uint64_t up_at;               /* sl_now_ms() when last connected */
	bool ever_up;
	bool closing;
	unsigned handles;             /* open libuv handles: free at 0 once closing */
	struct sl_list listeners;     /* newest first */
};

static void conn_start(struct conn *c);
static void on_retry(uv_timer_t *t);
static void drop(struct conn *c, const char *why);

/* ---- the libuv adapter ---------------------------------------------------- */

struct poll {
	uv_poll_t handle;
	redisAsyncContext *ac;  /* NULL once hiredis let go of it */
	struct conn *c;
	int events;
};

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct poll *p = h->data;
	redisReader *rd;

	if (status < 0) {
		if (p->ac)
			redisAsyncHandleRead(p->ac); /* hiredis finds the error and disconnects */
		return;
	}
	if (p->ac && (events & UV_READABLE))
		redisAsyncHandleRead(p->ac);
	if (p->ac && (events & UV_WRITABLE))
		redisAsyncHandleWrite(p->ac);
	if (!p->ac)
		return;
	rd = p->ac->c.reader;
	/* What is left unparsed is the start of one reply. */
	if (rd && rd->len - rd->pos > p->c->r->cfg.max_reply_bytes) {
		char why[128];
		snprintf(why, sizeof(why), "a reply of more than %u bytes "
			 "(sluice.shared.redis.maxReplyBytes)", p->c->r->cfg.max_reply_bytes);
		drop(p->c, why); /* not inside a hiredis callback: safe */
	}
}

static void poll_update(struct poll *p, int add, int del)
{
	int ev = (p->events | add) & ~del;
	if (ev == p->events)
		return;
	p->events = ev;
	if (ev)
		uv_poll_start(&p->handle, ev, on_poll);
	else
		uv_poll_stop(&p->handle);
}

static void add_read(void *d) { poll_update(d, UV_READABLE, 0); }
static void del_read(void *d) { poll_update(d, 0, UV_READABLE); }
static void add_write(void *d) { poll_update(d, UV_WRITABLE, 0); }
static void del_write(void *d) { poll_update(d, 0, UV_WRITABLE); }

/* The memory goes with the last handle closed and the last listener gone
 * (a stage's state may be freed after the gateway). */
static void release(struct sl_redis *r)
{
	if (r->handles > 0 || !r->closing || !sl_list_empty(&r->listeners))
		return;
	sl_redis_addr_dispose(&r->addr);
	free(r->cfg.url);
	free(r->cfg.password);
	free(r->cfg.key_prefix);
	free(r);
}

static void on_timer_closed(uv_handle_t *h)
{
	struct sl_redis *r = h->data;
	r->handles--;
	release(r);
}

static void on_poll_closed(uv_handle_t *h)
{
	struct poll *p = h->data;
	struct sl_redis *r = p->c->r;
	free(p);
	r->handles--;
	release(r);
}

static void cleanup(void *d)
{
	struct poll *p = d;
	p->ac = NULL;
	uv_close((uv_handle_t *)&p->handle, on_poll_closed);
}

static int attach(struct conn *c, redisAsyncContext *ac)
{
	struct poll *p = sl_alloc(sizeof(*p));
	*p = (struct poll){ .ac = ac, .c = c };
	if (uv_poll_init_socket(c->r->loop, &p->handle, ac->c.fd) < 0) {
		free(p);
		return -1;
	}
	uv_unref((uv_handle_t *)&p->handle);
	p->handle.data = p;
	c->r->handles++;
	ac->ev.addRead = add_read;
	ac->ev.delRead = del_read;
	ac->ev.addWrite = add_write;
	ac->ev.delWrite = del_write;
	ac->ev.cleanup = cleanup;
	ac->ev.data = p;
	return 0;
}

/* ---- state ------------------------------------------------------------------ */

static const char *where(const struct sl_redis *r)
{
	return r->cfg.url;
}

static void set_state(struct sl_redis *r, enum sl_redis_state s)
{
	if (r->state != s) {
		r->state = s;
		r->since = time(NULL);
	}
}

static void went_up(struct sl_redis *r)
{
	struct sl_list *n;

	if (!r->cmd.ready || !r->sub.ready || r->state == SL_REDIS_CONNECTED)
		return;
	set_state(r, SL_REDIS_CONNECTED);
	if (r->warned && !r->recovering)
		sl_log(SL_LOG_INFO, "shared state: Redis at %s is reachable again; sharing resumed",
		       where(r));
	else if (!r->ever_up)
		sl_log(SL_LOG_INFO, "shared state: connected to Redis at %s", where(r));
	/* The outage ends once this holds for STABLE_MS (on_tick). */
	r->recovering = r->warned;
	r->up_at = sl_now_ms();
	r->ever_up = true;
	r->last_error[0] = '\0';
	sl_list_each(n, &r->listeners) {
		struct sl_redis_listener *l = sl_list_entry(n, struct sl_redis_listener, link);
		if (l->on_up)
			l->on_up(l->ctx);
	}
}

/* c is down (r->last_error says why): degraded, warned once, retried. */
static void went_down(struct conn *c)
{
	struct sl_redis *r = c->r;
	struct sl_list *n;

	c->ac = NULL;
	c->open = false;
	c->ready = false;
	if (c->sub)
		sl_list_each(n, &r->listeners)
			sl_list_entry(n, struct sl_redis_listener, link)->subscribed = false;
	if (r->closing)
		return;
	if (!r->last_error[0])
		snprintf(r->last_error, sizeof(r->last_error), "connection closed");
	if (r->state == SL_REDIS_CONNECTED || !r->ever_up)
		set_state(r, SL_REDIS_DEGRADED);
	if (!r->warned) {
		sl_log(SL_LOG_WARN, "shared state: Redis at %s is unreachable (%s); serving with "
		       "local state; retrying", where(r), r->last_error);
		r->warned = true;
	}
	uv_timer_start(&c->retry, on_retry, c->backoff_ms, 0);
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
}

static void on_retry(uv_timer_t *t)
{
	conn_start(t->data);
}

/* Drops c from outside hiredis's callbacks (the tick timer). */
static void drop(struct conn *c, const char *why)
{
	redisAsyncContext *ac = c->ac;

	snprintf(c->r->last_error, sizeof(c->r->last_error), "%s", why);
	c->ready = false;
	redisAsyncFree(ac); /* runs on_disconnect when it was connected */
	if (c->ac == ac)
		went_down(c);
}

/* ---- commands ---------------------------------------------------------------- */

static void unlink_cmd(struct sl_redis *r, struct cmd *k)
{
	sl_list_remove(&k->link);
	r->npending--;
}

/* The bytes of a reply's strings, about what it took on the wire: a reply
 * that arrived in one read escapes the check of on_poll. */
static size_t reply_size(const redisReply *rep, int depth)
{
	size_t n = 16;
	if (rep->type == REDIS_REPLY_STRING || rep->type == REDIS_REPLY_ERROR ||
	    rep->type == REDIS_REPLY_STATUS)
		n += rep->len;
	if (rep->type == REDIS_REPLY_ARRAY && depth < 8)
		for (size_t i = 0; i < rep->elements; i++)
			n += reply_size(rep->element[i], depth + 1);
	return n;
}

/* A reply past maxReplyBytes: failed, and the connection dropped as if
 * it had arrived in pieces (on_poll). */
static bool too_big(struct sl_redis *r, redisAsyncContext *ac, const redisReply *rep)
{
	if (!rep || reply_size(rep, 0) <= r->cfg.max_reply_bytes)
		return false;
	snprintf(r->last_error, sizeof(r->last_error), "a reply of more than %u bytes "
		 "(sluice.shared.redis.maxReplyBytes)", r->cfg.max_reply_bytes);
	((struct conn *)ac->data)->failing = true; /* the reason stands */
	((struct conn *)ac->data)->ready = false;  /* no new command on it */
	redisAsyncDisconnect(ac);
	return true;
}

static void on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	struct cmd *k = priv;
	struct sl_redis *r = k->r;
	char why[300];

	unlink_cmd(r, k);
	if (reply && too_big(r, ac, reply))
		reply = NULL;
	if (!reply)
		snprintf(why, sizeof(why), "Redis at %s: %s", where(r),
			 ac->err ? ac->errstr : r->last_error[0] ? r->last_error : "connection lost");
	if (k->fn)
		k->fn(k->ctx, reply, reply ? NULL : why);
	free(k);
}

int sl_redis_command(struct sl_redis *r, sl_redis_reply_fn *fn, void *ctx, int argc,
		     const char **argv, const size_t *lens, struct sl_err *err)
{
	struct cmd *k;

	if (!r->cmd.ready || r->state != SL_REDIS_CONNECTED) {
		sl_err_set(err, "Redis at %s is unreachable (%s)", where(r),
			   r->last_error[0] ? r->last_error : "not connected yet");
		return SL_ERR_STATE;
	}
	if (r->npending >= r->cfg.max_pending) {
		sl_err_set(err, "%zu Redis commands in flight (sluice.shared.redis.maxPending)",
			   r->npending);
		return SL_ERR_STATE;
	}
	k = sl_alloc(sizeof(*k));
	*k = (struct cmd){ .r = r, .fn = fn, .ctx = ctx,
			   .deadline = sl_now_ms() + r->cfg.command_timeout_ms };
	if (redisAsyncCommandArgv(r->cmd.ac, on_reply, k, argc, argv, lens) != REDIS_OK) {
		sl_err_set(err, "Redis at %s: %s", where(r), r->cmd.ac->errstr);
		free(k);
		return SL_ERR_IO;
	}
	sl_list_push_back(&r->cmds, &k->link);
	r->npending++;
	return SL_OK;
}

/* ---- connecting ------------------------------------------------------------ */

static bool reply_failed(struct sl_redis *r, const redisReply *rep, const char *what)
{
	if (rep && rep->type != REDIS_REPLY_ERROR)
		return false;
	snprintf(r->last_error, sizeof(r->last_error), "the server %s: %.150s", what,
		 rep ? rep->str : "no reply");
	return true;
}

static void setup_step(struct conn *c)
{
	if (--c->setup_left == 0 && c->ac) {
		c->ready = true;
		went_up(c->r);
	}
}

static void on_setup(redisAsyncContext *ac, void *reply, void *priv)
{
	struct conn *c = priv;
	if (!reply || c->failing)
		return; /* the connection is going: on_disconnect follows */
	/* The first refusal is the reason (a wrong password, then NOAUTH for
	 * everything after it). */
	if (reply_failed(c->r, reply, "refused the connection's AUTH, SELECT or PING")) {
		c->failing = true;
		redisAsyncDisconnect(ac);
		return;
	}
	setup_step(c);
}

static void subscribe(struct sl_redis_listener *l);

/* Every message of every channel: the listeners of that channel hear it. */
static void on_sub(redisAsyncContext *ac, void *reply, void *priv)
{
	struct sl_redis *r = priv;
	redisReply *rep = reply, *kind, *chan, *msg;
	struct sl_list *n;

	if (!rep || r->closing || too_big(r, ac, rep))
		return;
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 3)
		return;
	kind = rep->element[0];
	chan = rep->element[1];
	msg = rep->element[2];
	if (kind->type != REDIS_REPLY_STRING || chan->type != REDIS_REPLY_STRING)
		return;
	if (strcmp(kind->str, "subscribe") == 0) {
		if (!r->sub.ready)
			setup_step(&r->sub);
		return;
	}
	if (strcmp(kind->str, "message") != 0 || msg->type != REDIS_REPLY_STRING)
		return;
	sl_list_each(n, &r->listeners) {
		struct sl_redis_listener *x = sl_list_entry(n, struct sl_redis_listener, link);
		if (x->channel && strcmp(x->channel, chan->str) == 0)
			x->on_message(x->ctx, msg->str, msg->len);
	}
}

/* One SUBSCRIBE per channel; its callback (given r, never a listener, which
 * may go before the connection does) serves every listener of it. */
static void subscribe(struct sl_redis_listener *l)
{
	struct sl_redis *r = l->r;
	const char *argv[2] = { "SUBSCRIBE", l->channel };
	struct sl_list *n;

	if (!l->channel)
		return;
	sl_list_each(n, &r->listeners) {
		const struct sl_redis_listener *x = sl_list_entry(n, struct sl_redis_listener, link);
		if (x != l && x->subscribed && strcmp(x->channel, l->channel) == 0) {
			l->subscribed = true;
			return;
		}
	}
	if (redisAsyncCommandArgv(r->sub.ac, on_sub, r, 2, argv, NULL) == REDIS_OK)
		l->subscribed = true;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct conn *c = ac->data;
	struct sl_redis *r = c->r;
	redisAsyncContext *w = (redisAsyncContext *)ac;
	char db[16];

	if (status != REDIS_OK) {
		snprintf(r->last_error, sizeof(r->last_error), "%s", ac->errstr);
		went_down(c); /* hiredis frees ac after this */
		return;
	}
	c->open = true;
	c->setup_left = 1; /* a PING, so that a server that is not Redis is found */
	if (r->cfg.password) {
		const char *argv[2] = { "AUTH", r->cfg.password };
		redisAsyncCommandArgv(w, on_setup, c, 2, argv, NULL);
		c->setup_left++;
	}
	if (r->addr.db) {
		const char *argv[2] = { "SELECT", db };
		snprintf(db, sizeof(db), "%d", r->addr.db);
		redisAsyncCommandArgv(w, on_setup, c, 2, argv, NULL);
		c->setup_left++;
	}
	if (c->sub) {
		/* The first "subscribe" confirmation stands for the PING: a
		 * subscriber has nothing else to say. */
		bool any = false;
		struct sl_list *n;
		sl_list_each(n, &r->listeners) {
			struct sl_redis_listener *l = sl_list_entry(n, struct sl_redis_listener, link);
			subscribe(l);
			any = any || l->channel;
		}
		if (any)
			return;
	}
	{
		const char *argv[1] = { "PING" };
		redisAsyncCommandArgv(w, on_setup, c, 1, argv, NULL);
	}
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct conn *c = ac->data;
	if (c->failing)
		; /* the reason is set */
	else if (status != REDIS_OK && ac->err)
		snprintf(c->r->last_error, sizeof(c->r->last_error), "%s", ac->errstr);
	else if (!c->r->last_error[0] || c->ready)
		snprintf(c->r->last_error, sizeof(c->r->last_error), "the server closed the connection");
	went_down(c);
}

static void conn_start(struct conn *c)
{
	struct sl_redis *r = c->r;
	redisAsyncContext *ac;

	if (r->closing)
		return;
	ac = r->addr.unix_path ? redisAsyncConnectUnix(r->addr.unix_path)
			       : redisAsyncConnect(r->addr.host, r->addr.port);
	if (!ac)
		sl_oom();
	if (ac->err || attach(c, ac) < 0) {
		snprintf(r->last_error, sizeof(r->last_error), "%s",
			 ac->err ? ac->errstr : "cannot watch the socket");
		redisAsyncFree(ac);
		c->ac = ac;
		went_down(c);
		return;
	}
	ac->c.reader->maxbuf = 64 * 1024; /* memory kept idle after a large reply */
	ac->data = c;
	c->ac = ac;
	c->ready = false;
	c->failing = false;
	c->deadline = sl_now_ms() + r->cfg.connect_timeout_ms;
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

/* Connection attempts and commands past their deadline. */
static void on_tick(uv_timer_t *t)
{
	struct sl_redis *r = t->data;
	uint64_t now = sl_now_ms();
	struct sl_list *oldest;
	char why[128];

	if (r->state == SL_REDIS_CONNECTED && now - r->up_at >= STABLE_MS) {
		r->warned = r->recovering = false;
		r->cmd.backoff_ms = r->sub.backoff_ms = BACKOFF_MIN_MS;
	}

	snprintf(why, sizeof(why), "no answer within %u ms (sluice.shared.redis.connectTimeoutMs)",
		 r->cfg.connect_timeout_ms);
	if (r->cmd.ac && !r->cmd.ready && now > r->cmd.deadline)
		drop(&r->cmd, why);
	if (r->sub.ac && !r->sub.ready && now > r->sub.deadline)
		drop(&r->sub, why);
	if ((oldest = sl_list_first(&r->cmds)) && r->cmd.ac &&
	    now > sl_list_entry(oldest, struct cmd, link)->deadline) {
		snprintf(why, sizeof(why), "a command had no reply within %u ms "
			 "(sluice.shared.redis.commandTimeoutMs)", r->cfg.command_timeout_ms);
		drop(&r->cmd, why);
	}
}

static void conn_init(struct sl_redis *r, struct conn *c, bool sub)
{
	*c = (struct conn){ .r = r, .sub = sub, .backoff_ms = BACKOFF_MIN_MS };
	uv_timer_init(r->loop, &c->retry);
	uv_unref((uv_handle_t *)&c->retry);
	c->retry.data = c;
	r->handles++;
}

struct sl_redis *sl_redis_new(uv_loop_t *loop, const struct sl_redis_config *cfg)
{
	struct sl_redis *r = sl_alloc(sizeof(*r));
	struct sl_err err;

	*r = (struct sl_redis){ .loop = loop, .cfg = *cfg, .state = SL_REDIS_DEGRADED,
				.since = time(NULL) };
	sl_list_init(&r->cmds);
	sl_list_init(&r->listeners);
	r->cfg.url = sl_strdup(cfg->url);
	r->cfg.password = cfg->password ? sl_strdup(cfg->password) : NULL;
	r->cfg.key_prefix = sl_strdup(cfg->key_prefix ? cfg->key_prefix : "sluice:");
	if (sl_redis_url_parse(cfg->url, &r->addr, &err) < 0) /* checked at load */
		r->addr = (struct sl_redis_addr){ .host = sl_strdup("127.0.0.1"), .port = 6379 };
	snprintf(r->last_error, sizeof(r->last_error), "not connected yet");
	conn_init(r, &r->cmd, false);
	conn_init(r, &r->sub, true);
	uv_timer_init(loop, &r->tick);
	uv_unref((uv_handle_t *)&r->tick);
	r->tick.data = r;
	r->handles++;
	uv_timer_start(&r->tick, on_tick, TICK_MS, TICK_MS);
	conn_start(&r->cmd);
	conn_start(&r->sub);
	return r;
}

void sl_redis_free(struct sl_redis *r)
{
	if (!r)
		return;
	r->closing = true;
	uv_timer_stop(&r->tick);
	if (r->cmd.ac)
		redisAsyncFree(r->cmd.ac);
	if (r->sub.ac)
		redisAsyncFree(r->sub.ac);
	r->tick.data = r->cmd.retry.data = r->sub.retry.data = r;
	uv_close((uv_handle_t *)&r->tick, on_timer_closed);
	uv_close((uv_handle_t *)&r->cmd.retry, on_timer_closed);
	uv_close((uv_handle_t *)&r->sub.retry, on_timer_closed);
}

/* ---- listeners and status --------------------------------------------------- */

struct sl_redis_listener *sl_redis_listen(struct sl_redis *r, const char *channel,
					  sl_redis_message_fn *on_message, sl_redis_up_fn *on_up,
					  void *ctx)
{
	struct sl_redis_listener *l = sl_alloc(sizeof(*l));
	*l = (struct sl_redis_listener){ .r = r, .channel = channel ? sl_strdup(channel) : NULL,
					 .on_message = on_message, .on_up = on_up, .ctx = ctx };
	sl_list_push_front(&r->listeners, &l->link);
	if (r->sub.open)
		subscribe(l);
	if (r->state == SL_REDIS_CONNECTED && on_up)
		on_up(ctx);
	return l;
}

void sl_redis_unlisten(struct sl_redis_listener *l)
{
	struct sl_redis *r;
	if (!l)
		return;
	r = l->r;
	sl_list_remove(&l->link);
	free(l->channel);
	free(l);
	release(r);
}

enum sl_redis_state sl_redis_state(const struct sl_redis *r)
{
	return r->state;
}

const char *sl_redis_prefix(const struct sl_redis *r)
{
	return r->cfg.key_prefix;
}

void sl_redis_status(const struct sl_redis *r, yyjson_mut_doc *d, yyjson_mut_val *obj)
{
	char when[32];
	struct tm tm;

	if (!r) {
		yyjson_mut_obj_add_str(d, obj, "state", "off");
		return;
	}
	gmtime_r(&r->since, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	yyjson_mut_obj_add_strcpy(d, obj, "redis", r->cfg.url);
	yyjson_mut_obj_add_str(d, obj, "state",
			       r->state == SL_REDIS_CONNECTED ? "connected" : "degraded");
	yyjson_mut_obj_add_strcpy(d, obj, "since", when);
	if (r->state != SL_REDIS_CONNECTED && r->last_error[0])
		yyjson_mut_obj_add_strcpy(d, obj, "lastError", r->last_error);
	else
		yyjson_mut_obj_add_null(d, obj, "lastError");
}

/* ---- blocking, for one-shot commands ------------------------------------------ */

struct sl_redis_sync {
	redisContext *c;
};

static bool sync_ok(redisReply *rep, struct sl_err *err, const char *what)
{
	bool ok = rep && rep->type != REDIS_REPLY_ERROR;
	if (!ok)
		sl_err_set(err, "%s: %.200s", what, rep ? rep->str : "no reply");
	if (rep)
		freeReplyObject(rep);
	return ok;
}

int sl_redis_sync_open(const struct sl_redis_config *cfg, struct sl_redis_sync **out,
		       struct sl_err *err)
{
	struct sl_redis_addr a;
	struct timeval ct = { cfg->connect_timeout_ms / 1000, (cfg->connect_timeout_ms % 1000) * 1000 };
	struct timeval cmdt = { cfg->command_timeout_ms / 1000,
				(cfg->command_timeout_ms % 1000) * 1000 };
	redisContext *c;
	struct sl_err e;
	int rc = SL_ERR_IO;

	if (sl_redis_url_parse(cfg->url, &a, err) < 0)
		return SL_ERR_INVALID;
	c = a.unix_path ? redisConnectUnixWithTimeout(a.unix_path, ct)
			: redisConnectWithTimeout(a.host, a.port, ct);
	if (!c)
		sl_oom();
	if (c->err) {
		sl_err_set(err, "Redis at %s is unreachable (%s)", cfg->url, c->errstr);
		goto out;
	}
	redisSetTimeout(c, cmdt);
	c->reader->maxbuf = 64 * 1024;
	if (cfg->password &&
	    !sync_ok(redisCommand(c, "AUTH %s", cfg->password), &e, "AUTH")) {
		sl_err_set(err, "Redis at %s: %s", cfg->url, e.msg);
		goto out;
	}
	if (a.db && !sync_ok(redisCommand(c, "SELECT %d", a.db), &e, "SELECT")) {
		sl_err_set(err, "Redis at %s: %s", cfg->url, e.msg);
		goto out;
	}
	*out = sl_alloc(sizeof(**out));
	(*out)->c = c;
	c = NULL;
	rc = SL_OK;
out:
	if (c)
		redisFree(c);
	sl_redis_addr_dispose(&a);
	return rc;
}

int sl_redis_sync_command(struct sl_redis_sync *s, int argc, const char **argv,
			  const size_t *lens, struct sl_err *err)
{
	redisReply *rep = redisCommandArgv(s->c, argc, argv, lens);
	if (!rep) {
		sl_err_set(err, "Redis: %s", s->c->errstr);
		return SL_ERR_IO;
	}
	return sync_ok(rep, err, argv[0]) ? SL_OK : SL_ERR_IO;
}

void sl_redis_sync_close(struct sl_redis_sync *s)
{
	if (!s)
		return;
	redisFree(s->c);
	free(s);
}

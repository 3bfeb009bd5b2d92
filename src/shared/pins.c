/*
 * Tool pins across replicas (pins.h). The pin store (stages/pinning.c)
 * knows nothing of Redis: it tells an observer what it changed, and takes
 * changes of other replicas through its put, which are not told again, so
 * a change never echoes around the fleet. This side knows the store only
 * as a struct sl_pin_store.
 */
#include "shared/pins.h"
#include "shared/redis.h"
#include "shared/url.h"
#include "core/json.h"
#include "core/log.h"
#include "core/map.h"

#include <stdlib.h>
#include <string.h>

#define CHANNEL "pins"

char *sl_shared_pins_field(const char *key, const char *tool)
{
	return sl_printf("%s\n%s", key, tool);
}

char *sl_shared_pins_message(const char *key, const char *tool, yyjson_val *entry, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;
	char *out;

	if (!d)
		sl_oom();
	o = yyjson_mut_obj(d);
	yyjson_mut_obj_add_strcpy(d, o, "key", key);
	yyjson_mut_obj_add_strcpy(d, o, "tool", tool);
	if (entry)
		yyjson_mut_obj_add_val(d, o, "pin", yyjson_val_mut_copy(d, entry));
	else
		yyjson_mut_obj_add_null(d, o, "pin");
	out = sl_json_write_mut_val(o, len);
	yyjson_mut_doc_free(d);
	return out;
}

bool sl_shared_pins_parse(const char *msg, size_t len, yyjson_doc **doc, const char **key,
			  const char **tool, yyjson_val **entry)
{
	yyjson_doc *d = sl_json_read(msg, len, SL_JSON_READ_FLAGS, NULL);
	yyjson_val *root = yyjson_doc_get_root(d), *pin = yyjson_obj_get(root, "pin");

	*key = sl_json_str(root, "key");
	*tool = sl_json_str(root, "tool");
	if (!d || !*key || !*tool || !pin ||
	    !(yyjson_is_null(pin) || (yyjson_is_obj(pin) && sl_json_str(pin, "sha256")))) {
		yyjson_doc_free(d);
		return false;
	}
	*entry = yyjson_is_null(pin) ? NULL : pin;
	*doc = d;
	return true;
}

static bool automatic(yyjson_val *pin)
{
	return sl_json_true(pin, "automatic");
}

bool sl_shared_pins_newer(yyjson_val *theirs, yyjson_val *ours)
{
	const char *a, *b, *ha, *hb;
	int c;

	if (!theirs)
		return false;
	if (!ours)
		return true;
	/* A person's approval beats what a replica pinned by itself, so a
	 * replica that first saw a server after it changed cannot pass the
	 * change off as trusted. */
	if (automatic(theirs) != automatic(ours))
		return automatic(ours);
	a = sl_json_str(theirs, "pinnedAt");
	b = sl_json_str(ours, "pinnedAt");
	c = strcmp(a ? a : "", b ? b : ""); /* ISO 8601 in UTC: text order is time order */
	/* Of two first sights the earlier is the one to keep; of two
	 * approvals the later (last writer wins). */
	if (c != 0)
		return automatic(ours) ? c < 0 : c > 0;
	ha = sl_json_str(theirs, "sha256");
	hb = sl_json_str(ours, "sha256");
	return !ha || !hb || strcmp(ha, hb) != 0;
}

/* ---- a gateway's store ---------------------------------------------------------- */

struct sl_shared_pins {
	struct sl_redis *r;
	struct sl_pin_store pins;
	struct sl_redis_listener *l;
	char *name;                  /* <prefix>pins: the hash and the channel */
	void (*changed)(void *ctx);
	void *ctx;
	bool *alive;                 /* of the reconciliation in flight, if any */
	unsigned refs;               /* the store's, and each reply awaited */
	bool detached;
};

static void sp_unref(struct sl_shared_pins *sp)
{
	if (--sp->refs)
		return;
	free(sp->name);
	free(sp);
}

static bool apply(struct sl_shared_pins *sp, const char *key, const char *tool,
		  yyjson_val *entry);

/* An automatic pin that was already in the hash: the hash's, when it should
 * win (an approval, or an earlier first sight), replaces this replica's. */
struct check {
	struct sl_shared_pins *sp;
	char *key, *tool;
};

static void on_hash_pin(void *ctx, redisReply *rep, const char *error)
{
	struct check *k = ctx;
	struct sl_shared_pins *sp = k->sp;
	yyjson_doc *doc;
	const char *key, *tool;
	yyjson_val *entry;

	if (!sp->detached && rep && rep->type == REDIS_REPLY_STRING &&
	    sl_shared_pins_parse(rep->str, rep->len, &doc, &key, &tool, &entry)) {
		if (sl_shared_pins_newer(entry, sp->pins.entry(sp->pins.self, key, tool)) &&
		    apply(sp, key, tool, entry)) {
			sl_log(SL_LOG_INFO, "shared state: kept the pin of %s.%s another replica "
			       "made before this one saw the tool", key, tool);
			sp->changed(sp->ctx);
		}
		yyjson_doc_free(doc);
	}
	free(k->key);
	free(k->tool);
	free(k);
	sp_unref(sp);
}

static void on_setnx(void *ctx, redisReply *rep, const char *error)
{
	struct check *k = ctx;
	struct sl_shared_pins *sp = k->sp;
	char *field;
	struct sl_err err;

	if (sp->detached || !rep || rep->type != REDIS_REPLY_INTEGER || rep->integer != 0)
		goto out;
	field = sl_shared_pins_field(k->key, k->tool);
	{
		const char *argv[3] = { "HGET", sp->name, field };
		if (sl_redis_command(sp->r, on_hash_pin, k, 3, argv, NULL, &err) == 0) {
			free(field);
			return;
		}
	}
	free(field);
out:
	free(k->key);
	free(k->tool);
	free(k);
	sp_unref(sp);
}

/*
 * Writes one pin to the hash and announces it. A pin this replica made by
 * itself (automatic) goes in only where the hash has none, unannounced: the
 * other replicas pin what they see themselves, and one that saw a server
 * first keeps its pin. force (reconciling): written whatever the hash
 * holds. While Redis is down the pin stays in the file only; the
 * reconciliation after reconnecting carries it.
 */
static void publish(struct sl_shared_pins *sp, const char *key, const char *tool,
		    yyjson_val *entry, bool force)
{
	size_t mlen;
	const char *name = sp->name;
	char *field = sl_shared_pins_field(key, tool);
	char *msg = sl_shared_pins_message(key, tool, entry, &mlen);
	bool nx = entry && !force && automatic(entry);
	const char *set[4] = { !entry ? "HDEL" : nx ? "HSETNX" : "HSET", name, field, msg };
	size_t setl[4] = { strlen(set[0]), strlen(name), strlen(field), mlen };
	const char *pub[3] = { "PUBLISH", name, msg };
	size_t publ[3] = { 7, strlen(name), mlen };
	struct check *k = NULL;
	struct sl_err err;
	int rc;

	if (nx) {
		k = sl_alloc(sizeof(*k));
		*k = (struct check){ .sp = sp, .key = sl_strdup(key), .tool = sl_strdup(tool) };
		sp->refs++;
	}
	rc = sl_redis_command(sp->r, nx ? on_setnx : NULL, k, entry ? 4 : 3, set, setl, &err);
	if (rc < 0 && k) {
		free(k->key);
		free(k->tool);
		free(k);
		sp->refs--;
	}
	if (rc == 0 && !nx)
		rc = sl_redis_command(sp->r, NULL, NULL, 3, pub, publ, &err);
	if (rc < 0)
		sl_log(SL_LOG_DEBUG, "shared state: pin of %s.%s kept in the pin file only: %s",
		       key, tool, err.msg);
	free(field);
	free(msg);
}

static void on_local_change(void *ctx, const char *key, const char *tool, yyjson_val *entry)
{
	publish(ctx, key, tool, entry, false);
}

static bool apply(struct sl_shared_pins *sp, const char *key, const char *tool,
		  yyjson_val *entry)
{
	struct sl_err err;
	bool changed = false;

	if (sp->pins.put(sp->pins.self, key, tool, entry, &changed, &err) < 0)
		sl_log(SL_LOG_WARN, "shared state: a pin another replica made (%s.%s) applies to "
		       "this run only: %s", key, tool, err.msg);
	return changed;
}

static void on_message(void *ctx, const char *payload, size_t len)
{
	struct sl_shared_pins *sp = ctx;
	yyjson_doc *doc;
	const char *key, *tool;
	yyjson_val *entry;

	if (!sl_shared_pins_parse(payload, len, &doc, &key, &tool, &entry)) {
		sl_log(SL_LOG_WARN, "shared state: ignored a message on %s that is not a pin",
		       sp->name);
		return;
	}
	/* Live changes are people's (automatic pins are not announced):
	 * applied as they come, unless ours should win. */
	if ((!entry || sl_shared_pins_newer(entry, sp->pins.entry(sp->pins.self, key, tool)) ||
	     !automatic(entry)) && apply(sp, key, tool, entry)) {
		sl_log(SL_LOG_INFO, "shared state: %s %s.%s as another replica did", entry ?
		       "pinned" : "forgot", key, tool);
		sp->changed(sp->ctx);
	}
	yyjson_doc_free(doc);
}

/* Every local pin the hash lacks, or holds older: written and announced. */
static void push_missing(struct sl_shared_pins *sp, struct sl_map *seen)
{
	yyjson_val *servers, *k, *t;
	yyjson_obj_iter si, ti;

	/* Pins `sluice pins` wrote to this replica's file while Redis was
	 * down are in it: re-read a changed file first. */
	(void)sp->pins.entry(sp->pins.self, "", "");
	servers = sp->pins.servers(sp->pins.self);

	yyjson_obj_iter_init(servers, &si);
	while ((k = yyjson_obj_iter_next(&si))) {
		yyjson_obj_iter_init(yyjson_obj_iter_get_val(k), &ti);
		while ((t = yyjson_obj_iter_next(&ti))) {
			char *field = sl_shared_pins_field(yyjson_get_str(k), yyjson_get_str(t));
			yyjson_val *theirs = sl_map_get(seen, field);
			yyjson_val *ours = yyjson_obj_iter_get_val(t);
			if (!theirs || sl_shared_pins_newer(ours, theirs))
				publish(sp, yyjson_get_str(k), yyjson_get_str(t), ours, true);
			free(field);
		}
	}
}

struct reconcile {
	struct sl_shared_pins *sp;
	bool alive;
};

static void on_hash(void *ctx, redisReply *rep, const char *error)
{
	struct reconcile *rc = ctx;
	struct sl_shared_pins *sp = rc->sp;
	yyjson_doc **docs = NULL;
	struct sl_map seen;
	size_t n = 0, applied = 0;

	if (!rc->alive)
		goto out;
	sp->alive = NULL;
	if (!rep || rep->type != REDIS_REPLY_ARRAY) {
		sl_log(SL_LOG_WARN, "shared state: cannot read %s: %s", sp->name,
		       error ? error : rep && rep->type == REDIS_REPLY_ERROR ? rep->str : "not a hash");
		goto out;
	}
	sl_map_init(&seen);
	docs = sl_alloc((rep->elements / 2 + 1) * sizeof(*docs));
	for (size_t i = 0; i + 1 < rep->elements; i += 2) {
		redisReply *v = rep->element[i + 1];
		const char *key, *tool;
		yyjson_val *entry, *ours;
		if (v->type != REDIS_REPLY_STRING ||
		    !sl_shared_pins_parse(v->str, v->len, &docs[n], &key, &tool, &entry))
			continue;
		n++;
		if (!entry)
			continue;
		sl_map_put(&seen, rep->element[i]->str, entry);
		ours = sp->pins.entry(sp->pins.self, key, tool);
		if (sl_shared_pins_newer(entry, ours) && apply(sp, key, tool, entry))
			applied++;
	}
	push_missing(sp, &seen);
	sl_map_dispose(&seen);
	for (size_t i = 0; i < n; i++)
		yyjson_doc_free(docs[i]);
	free(docs);
	if (applied) {
		sl_log(SL_LOG_INFO, "shared state: took %zu pin%s from %s", applied,
		       applied == 1 ? "" : "s", sp->name);
		sp->changed(sp->ctx);
	}
out:
	free(rc);
}

/* After every (re)connect: what was missed while apart. */
static void on_up(void *ctx)
{
	struct sl_shared_pins *sp = ctx;
	struct reconcile *rc = sl_alloc(sizeof(*rc));
	const char *argv[2] = { "HGETALL", sp->name };
	struct sl_err err;

	*rc = (struct reconcile){ .sp = sp, .alive = true };
	if (sp->alive)
		*sp->alive = false; /* an older one in flight: its answer is stale */
	if (sl_redis_command(sp->r, on_hash, rc, 2, argv, NULL, &err) < 0) {
		sl_log(SL_LOG_WARN, "shared state: cannot read %s: %s", sp->name, err.msg);
		free(rc);
		sp->alive = NULL;
		return;
	}
	sp->alive = &rc->alive;
}

struct sl_shared_pins *sl_shared_pins_attach(struct sl_redis *r, struct sl_pin_store pins,
					     void (*changed)(void *ctx), void *ctx)
{
	struct sl_shared_pins *sp = sl_alloc(sizeof(*sp));

	*sp = (struct sl_shared_pins){ .r = r, .pins = pins, .changed = changed, .ctx = ctx,
				       .name = sl_redis_key(sl_redis_prefix(r), CHANNEL), .refs = 1 };
	pins.observe(pins.self, on_local_change, sp);
	sp->l = sl_redis_listen(r, sp->name, on_message, on_up, sp);
	return sp;
}

void sl_shared_pins_detach(struct sl_shared_pins *sp)
{
	if (!sp)
		return;
	if (sp->alive)
		*sp->alive = false;
	sp->pins.observe(sp->pins.self, NULL, NULL);
	sl_redis_unlisten(sp->l);
	sp->detached = true;
	sp_unref(sp);
}

/* ---- `sluice pins`: a blocking connection, for its one change ------------------- */

struct sl_shared_pins_push {
	struct sl_pin_store pins;
	const struct sl_redis_config *cfg;
	struct sl_redis_sync *conn;
	char *name;
	size_t sent;
	bool failed;
	struct sl_err err;
};

static void on_cli_change(void *ctx, const char *key, const char *tool, yyjson_val *entry)
{
	struct sl_shared_pins_push *p = ctx;
	size_t mlen;
	char *field, *msg;
	struct sl_err e;

	if (p->failed)
		return;
	if (!p->conn && sl_redis_sync_open(p->cfg, &p->conn, &p->err) < 0) {
		p->failed = true;
		return;
	}
	field = sl_shared_pins_field(key, tool);
	msg = sl_shared_pins_message(key, tool, entry, &mlen);
	{
		const char *set[4] = { entry ? "HSET" : "HDEL", p->name, field, msg };
		size_t setl[4] = { strlen(set[0]), strlen(p->name), strlen(field), mlen };
		const char *pub[3] = { "PUBLISH", p->name, msg };
		size_t publ[3] = { 7, strlen(p->name), mlen };
		if (sl_redis_sync_command(p->conn, entry ? 4 : 3, set, setl, &e) < 0 ||
		    sl_redis_sync_command(p->conn, 3, pub, publ, &e) < 0) {
			sl_err_set(&p->err, "Redis at %s: %s", p->cfg->url, e.msg);
			p->failed = true;
		} else {
			p->sent++;
		}
	}
	free(field);
	free(msg);
}

struct sl_shared_pins_push *sl_shared_pins_push_start(struct sl_pin_store pins,
						      const struct sl_redis_config *cfg)
{
	struct sl_shared_pins_push *p;

	if (!cfg->on)
		return NULL;
	p = sl_alloc(sizeof(*p));
	*p = (struct sl_shared_pins_push){ .pins = pins, .cfg = cfg,
					   .name = sl_redis_key(cfg->key_prefix, CHANNEL) };
	pins.observe(pins.self, on_cli_change, p);
	return p;
}

int sl_shared_pins_push_end(struct sl_shared_pins_push *p, size_t *sent, struct sl_err *err)
{
	int rc = SL_OK;

	*sent = 0;
	if (!p)
		return SL_OK;
	p->pins.observe(p->pins.self, NULL, NULL);
	*sent = p->sent;
	if (p->failed) {
		sl_err_set(err, "%s", p->err.msg);
		rc = SL_ERR_IO;
	}
	sl_redis_sync_close(p->conn);
	free(p->name);
	free(p);
	return rc;
}

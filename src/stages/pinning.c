/*
 * Tool pinning: trust on first sight, then refuse a tool whose definition
 * changed (a "rug pull": a server that was approved with a harmless tool and
 * later swaps in instructions for the model). See docs/stages/pinning.md.
 *
 * The pins live in <stateDir>/pins.json, shared by every sluice process of
 * the user: a change takes a lock on the directory, re-reads the file,
 * applies itself and replaces the file atomically, so two gateways never
 * lose each other's pins; a running gateway re-reads the file when it
 * changes on disk, so `sluice pins approve` takes effect without a restart.
 *
 * The store (struct sl_pins) is an object of its own so that `sluice pins`
 * can open one without the pipeline; the stage's state owns one. Two
 * generations' states may hold stores of the same file side by side during
 * a reload: the directory's lock and the re-read keep them consistent.
 */
#include "stages/pinning.h"
#include "proto/mcp.h"
#include "config/conf.h"
#include "config/config.h"
#include "core/buf.h"
#include "core/digest.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/lru.h"
#include "core/map.h"
#include "pipeline/metrics.h"
#include "shared/pins.h"
#include "upstream/upstream.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PINS_FILE "pins.json"
#define PINS_VERSION 1
/* What a pin's hash covers: 2, the whole definition, every string cleaned
 * (keys included). A pin without "scheme" is of scheme 1 (six fields). */
#define PIN_SCHEME 2
#define MAX_PINS_FILE (256u << 20)
#define WARNED_MAX 65536 /* changed definitions remembered as warned about */

enum mode { MODE_OFF, MODE_WARN, MODE_BLOCK };

struct file_id {
	bool exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct sl_pins {
	char *dir;              /* NULL: no state directory, pins live in memory only */
	char *file;
	yyjson_doc *doc;        /* the pins as last read or written; NULL: none */
	struct file_id id;      /* of the file doc came from */
	bool reload_failing;    /* warned that the file on disk cannot be re-read */
	sl_pins_change_fn *observer; /* hears every pin this store changes */
	void *observer_ctx;
	bool quiet;             /* applying a change another replica made: not told again */
	uint64_t serial;        /* moves with every change of doc: what was judged against
				 * an older doc is judged again (the tables below) */
};

/* What the stage last told a person about one server's held-back tools
 * (the set, by its signature): one per server key, so at most one per
 * configured server. */
struct change {
	char warned[SL_PIN_HEX]; /* the set last warned about; "": none */
	char asked[SL_PIN_HEX];  /* the set a client was asked about (or declined) */
	bool asking;             /* an elicitation about it is in flight */
};

struct ask;

struct sl_pinning {
	struct sl_pins *pins;   /* owned */
	enum mode changed, fresh;
	bool ask;               /* askOnChange */
	char *cfg_path;         /* for the commands the warning names */
	struct sl_lru warned;   /* "server\ntool\nsha" already warned about, at most
				 * WARNED_MAX (one forgotten is warned about again) */
	struct sl_map changes;  /* server key -> struct change (owned) */
	struct sl_list asks;    /* elicitations in flight, newest first; detached at fini */
	struct sl_shared_pins *shared; /* pins across replicas (src/shared/pins.c), once the
					* services have a Redis link (sl_pinning_share) */
	const struct sl_services *svc; /* the process's (pipeline/gen.h): its Redis link, and
					* the gateway's ear for tools/list_changed after a
					* client trusted a change */
	bool write_failing;     /* warned that pins cannot be saved */
	struct sl_lru tables;   /* server name -> struct table, at most TABLES_MAX */
	struct table *last;     /* the table table_of gave last (a listing asks for
				 * one server's tools in a row), or NULL */
	const uv_loop_t *looked_loop; /* the loop turn (its clock) the pins file was */
	uint64_t looked_at;           /* last looked at in */
};

/* ---- the store ---------------------------------------------------------------- */

static void file_id_of(const struct stat *st, struct file_id *id)
{
	id->exists = true;
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = st->st_size;
	id->mtime = st->st_mtim;
}

static bool same_id(const struct file_id *a, const struct file_id *b)
{
	if (a->exists != b->exists)
		return false;
	return !a->exists || (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
			      a->mtime.tv_sec == b->mtime.tv_sec &&
			      a->mtime.tv_nsec == b->mtime.tv_nsec);
}

static bool valid_store(yyjson_val *root, const char **why)
{
	yyjson_val *servers = yyjson_obj_get(root, "servers"), *sk, *tk;
	yyjson_obj_iter si, ti;
	if (!yyjson_is_obj(root) || !yyjson_is_obj(servers)) {
		*why = "expected an object with a \"servers\" object";
		return false;
	}
	yyjson_obj_iter_init(servers, &si);
	while ((sk = yyjson_obj_iter_next(&si))) {
		yyjson_val *tools = yyjson_obj_iter_get_val(sk);
		if (!yyjson_is_obj(tools)) {
			*why = "a server's pins must be an object";
			return false;
		}
		yyjson_obj_iter_init(tools, &ti);
		while ((tk = yyjson_obj_iter_next(&ti))) {
			const char *sha = sl_json_str(yyjson_obj_iter_get_val(tk), "sha256");
			if (!sha || strlen(sha) != 64) {
				*why = "a pin needs a 64-digit \"sha256\"";
				return false;
			}
		}
	}
	return true;
}

/* Reads the pins file: *doc NULL when it does not exist. */
static int load_file(const char *file, yyjson_doc **doc, struct file_id *id, struct sl_err *err)
{
	yyjson_read_err re;
	const char *why = NULL;
	struct stat st;
	char *text;
	ssize_t got;
	size_t n = 0;
	int fd, rc = SL_ERR_INVALID;

	*doc = NULL;
	memset(id, 0, sizeof(*id));
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return SL_OK;
		sl_err_set(err, "cannot read %s: %s", file, strerror(errno));
		return SL_ERR_IO;
	}
	if (fstat(fd, &st) < 0 || st.st_size > (off_t)MAX_PINS_FILE) {
		sl_err_set(err, "cannot read %s: %s", file,
			   st.st_size > (off_t)MAX_PINS_FILE ? "larger than 256 MiB" : strerror(errno));
		close(fd);
		return SL_ERR_IO;
	}
	file_id_of(&st, id);
	text = sl_alloc((size_t)st.st_size + 1);
	while (n < (size_t)st.st_size && (got = read(fd, text + n, (size_t)st.st_size - n)) > 0)
		n += (size_t)got;
	close(fd);
	*doc = sl_json_read(text, n, SL_JSON_READ_FLAGS, &re);
	if (!*doc && re.code == SL_JSON_READ_ERROR_DEPTH) {
		sl_err_set(err, "%s: the pins file is corrupt (%s)", file, re.msg);
	} else if (!*doc) {
		size_t line, col;
		sl_json_position(text, n, re.pos, &line, &col);
		sl_err_set(err, "%s:%zu:%zu: the pins file is corrupt (%s)", file, line, col, re.msg);
	} else if (!valid_store(yyjson_doc_get_root(*doc), &why)) {
		sl_err_set(err, "%s: the pins file is corrupt (%s)", file, why);
		yyjson_doc_free(*doc);
		*doc = NULL;
	} else {
		rc = SL_OK;
	}
	free(text);
	return rc;
}

/* Picks up a change another process made (`sluice pins approve`). */
static void refresh(struct sl_pins *s)
{
	struct file_id now = { 0 };
	struct stat st;
	struct sl_err err;
	yyjson_doc *doc;

	if (!s->file)
		return;
	if (stat(s->file, &st) == 0)
		file_id_of(&st, &now);
	else if (errno != ENOENT)
		return;
	if (same_id(&now, &s->id))
		return;
	if (load_file(s->file, &doc, &now, &err) < 0) {
		if (!s->reload_failing)
			sl_log(SL_LOG_WARN, "pinning: %s; keeping the pins read before", err.msg);
		s->reload_failing = true;
		return;
	}
	s->reload_failing = false;
	yyjson_doc_free(s->doc);
	s->doc = doc;
	s->id = now;
	s->serial++;
}

typedef void (*update_fn)(yyjson_mut_doc *d, yyjson_mut_val *servers, void *ctx);

/* Whether two stored entries are the same pin (same definition, pinned at
 * the same moment). */
static bool same_pin(yyjson_val *a, yyjson_val *b)
{
	const char *ha = sl_json_str(a, "sha256"), *hb = sl_json_str(b, "sha256");
	const char *ta = sl_json_str(a, "pinnedAt"), *tb = sl_json_str(b, "pinnedAt");
	return ha && hb && strcmp(ha, hb) == 0 &&
	       (ta == tb || (ta && tb && strcmp(ta, tb) == 0));
}

/* Tells the observer every (server key, tool) whose pin differs between
 * the servers objects before and after (a removed one with entry NULL). */
static void tell(const struct sl_pins *s, yyjson_val *before, yyjson_val *after)
{
	yyjson_obj_iter si, ti;
	yyjson_val *k, *t;

	yyjson_obj_iter_init(after, &si);
	while ((k = yyjson_obj_iter_next(&si))) {
		yyjson_val *was = yyjson_obj_get(before, yyjson_get_str(k));
		yyjson_obj_iter_init(yyjson_obj_iter_get_val(k), &ti);
		while ((t = yyjson_obj_iter_next(&ti))) {
			yyjson_val *e = yyjson_obj_iter_get_val(t);
			if (!same_pin(yyjson_obj_get(was, yyjson_get_str(t)), e))
				s->observer(s->observer_ctx, yyjson_get_str(k), yyjson_get_str(t), e);
		}
	}
	yyjson_obj_iter_init(before, &si);
	while ((k = yyjson_obj_iter_next(&si))) {
		yyjson_val *now = yyjson_obj_get(after, yyjson_get_str(k));
		yyjson_obj_iter_init(yyjson_obj_iter_get_val(k), &ti);
		while ((t = yyjson_obj_iter_next(&ti)))
			if (!yyjson_obj_get(now, yyjson_get_str(t)))
				s->observer(s->observer_ctx, yyjson_get_str(k), yyjson_get_str(t),
					    NULL);
	}
}

/* Replaces the store's document with next, telling the observer what
 * changed. */
static void set_doc(struct sl_pins *s, yyjson_doc *next)
{
	yyjson_doc *old = s->doc;
	s->doc = next;
	s->serial++;
	if (s->observer && !s->quiet)
		tell(s, old ? yyjson_obj_get(yyjson_doc_get_root(old), "servers") : NULL,
		     sl_pinning_servers(s));
	yyjson_doc_free(old);
}

static yyjson_mut_val *servers_of(yyjson_mut_doc *d, yyjson_doc *from)
{
	yyjson_mut_val *root = from ? yyjson_val_mut_copy(d, yyjson_doc_get_root(from)) : NULL;
	if (!root) {
		root = yyjson_mut_obj(d);
		yyjson_mut_obj_add_val(d, root, "servers", yyjson_mut_obj(d));
	}
	yyjson_mut_obj_remove_key(root, "version");
	yyjson_mut_obj_add_int(d, root, "version", PINS_VERSION);
	yyjson_mut_doc_set_root(d, root);
	return yyjson_mut_obj_get(root, "servers");
}

/*
 * Applies fn to the pins under the directory's lock, starting from what is
 * on disk now, and saves the result atomically. If the pins cannot be saved
 * (no state directory, read-only, disk full, a corrupt file on disk), fn is
 * applied to the pins in memory so this run stays consistent, and err says
 * why. tolerant: a corrupt file on disk is replaced (pins reset).
 */
static int update(struct sl_pins *s, update_fn fn, void *ctx, bool tolerant, struct sl_err *err)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_doc *disk = NULL, *next;
	struct file_id id = { 0 };
	struct stat st;
	struct sl_err e2;
	int dfd = -1, rc = SL_ERR_IO;
	char *text = NULL;
	size_t len;

	if (!d)
		sl_oom();
	if (!s->dir) {
		sl_err_set(err, "no state directory (set sluice.pinning.stateDir, XDG_STATE_HOME or HOME)");
		goto memory;
	}
	if (sl_make_dirs(s->dir) < 0 ||
	    (dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		sl_err_set(err, "cannot use the state directory %s: %s", s->dir, strerror(errno));
		goto memory;
	}
	/* Serialises read-modify-write among sluice processes of this user. */
	while (flock(dfd, LOCK_EX) < 0)
		if (errno != EINTR) {
			sl_err_set(err, "cannot lock %s: %s", s->dir, strerror(errno));
			goto memory;
		}
	if (load_file(s->file, &disk, &id, &e2) < 0) {
		if (!tolerant) {
			sl_err_set(err, "%s", e2.msg);
			goto memory;
		}
		disk = NULL;
	}
	fn(d, servers_of(d, disk), ctx);
	text = yyjson_mut_write(d, YYJSON_WRITE_PRETTY_TWO_SPACES, &len);
	if (!text)
		sl_oom();
	text = sl_realloc(text, len + 2);
	text[len++] = '\n';
	if (sl_write_file_atomic(s->file, text, len, 0600, err) < 0)
		goto memory;
	next = yyjson_mut_doc_imut_copy(d, NULL);
	if (!next)
		sl_oom();
	set_doc(s, next);
	memset(&s->id, 0, sizeof(s->id));
	if (stat(s->file, &st) == 0)
		file_id_of(&st, &s->id);
	rc = SL_OK;
	goto out;
memory:
	yyjson_mut_doc_free(d);
	d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	fn(d, servers_of(d, s->doc), ctx);
	next = yyjson_mut_doc_imut_copy(d, NULL);
	if (!next)
		sl_oom();
	set_doc(s, next);
out:
	free(text);
	yyjson_doc_free(disk);
	if (dfd >= 0)
		close(dfd); /* releases the lock */
	yyjson_mut_doc_free(d);
	return rc;
}

yyjson_val *sl_pinning_servers(const struct sl_pins *pins)
{
	return pins->doc ? yyjson_obj_get(yyjson_doc_get_root(pins->doc), "servers") : NULL;
}

const char *sl_pinning_file(const struct sl_pins *pins)
{
	return pins->file;
}

/* The status of def (whose pin is hex) against entry, its stored pin
 * (NULL: none, on a server that has pins); *legacy: the pin is of scheme 1
 * and still matches (it is to be re-pinned under the current scheme). */
static enum sl_pin_status entry_status(yyjson_val *entry, yyjson_val *def, const char *hex,
				       bool *legacy)
{
	yyjson_val *scheme;
	char old[SL_PIN_HEX];

	*legacy = false;
	if (!entry)
		return SL_PIN_NEW;
	scheme = yyjson_obj_get(entry, "scheme");
	if (!scheme) {
		sl_pinning_hash_v1(def, old);
		*legacy = strcmp(sl_json_str(entry, "sha256"), old) == 0;
		return *legacy ? SL_PIN_OK : SL_PIN_CHANGED;
	}
	/* A scheme this sluice does not know cannot be verified. */
	if (!yyjson_is_int(scheme) || yyjson_get_sint(scheme) != PIN_SCHEME)
		return SL_PIN_CHANGED;
	return strcmp(sl_json_str(entry, "sha256"), hex) == 0 ? SL_PIN_OK : SL_PIN_CHANGED;
}

/* The status of def (whose pin is hex) among server's pins; *pin (if not
 * NULL) gets its stored entry or NULL. */
static enum sl_pin_status status_of(const struct sl_pins *pins, const char *server,
				    yyjson_val *def, const char *hex, yyjson_val **pin, bool *legacy)
{
	yyjson_val *sv = yyjson_obj_get(sl_pinning_servers(pins), server), *entry;
	const char *name = sl_json_str(def, "name");

	*legacy = false;
	if (pin)
		*pin = NULL;
	if (!yyjson_is_obj(sv) || yyjson_obj_size(sv) == 0)
		return SL_PIN_FIRST;
	entry = name ? yyjson_obj_get(sv, name) : NULL;
	if (pin)
		*pin = entry;
	return entry_status(entry, def, hex, legacy);
}

const char *sl_pin_status_name(enum sl_pin_status st)
{
	switch (st) {
	case SL_PIN_OK:
		return "ok";
	case SL_PIN_FIRST:
		return "unpinned";
	case SL_PIN_NEW:
		return "new";
	case SL_PIN_CHANGED:
		return "changed";
	}
	return "?";
}

enum sl_pin_status sl_pinning_check(const struct sl_pins *pins, const char *server,
				    yyjson_val *def, yyjson_val **pin)
{
	char hex[SL_PIN_HEX];
	bool legacy;
	sl_pinning_hash(def, hex, NULL);
	return status_of(pins, server, def, hex, pin, &legacy);
}

struct approve_ctx {
	const char *server;
	yyjson_val *const *defs;
	const char (*hex)[SL_PIN_HEX]; /* their pins, known already; NULL: hashed here */
	size_t n;
	bool automatic; /* pinned without a person: first sight, a new tool let through */
};

static void apply_approve(yyjson_mut_doc *d, yyjson_mut_val *servers, void *ctx)
{
	struct approve_ctx *a = ctx;
	yyjson_mut_val *sv = yyjson_mut_obj_get(servers, a->server);
	char when[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!yyjson_mut_is_obj(sv)) {
		yyjson_mut_obj_remove_key(servers, a->server);
		sv = yyjson_mut_obj(d);
		yyjson_mut_obj_add(servers, yyjson_mut_strcpy(d, a->server), sv);
	}
	for (size_t i = 0; i < a->n; i++) {
		const char *name = sl_json_str(a->defs[i], "name");
		yyjson_mut_val *entry, *subject;
		char hex[SL_PIN_HEX];
		if (!name)
			continue;
		if (a->hex)
			memcpy(hex, a->hex[i], SL_PIN_HEX);
		else
			sl_pinning_hash(a->defs[i], hex, NULL);
		subject = sl_pinning_subject(d, a->defs[i]);
		sl_json_sort_keys(subject); /* stored with sorted keys */
		entry = yyjson_mut_obj(d);
		yyjson_mut_obj_add_strcpy(d, entry, "sha256", hex);
		yyjson_mut_obj_add_int(d, entry, "scheme", PIN_SCHEME);
		yyjson_mut_obj_add_strcpy(d, entry, "pinnedAt", when);
		/* Replicas let a person's approval win over such a pin, and
		 * the earliest of them win over later ones (shared/pins.c). */
		if (a->automatic)
			yyjson_mut_obj_add_bool(d, entry, "automatic", true);
		yyjson_mut_obj_add_val(d, entry, "definition", subject);
		yyjson_mut_obj_remove_key(sv, name);
		yyjson_mut_obj_add(sv, yyjson_mut_strcpy(d, name), entry);
	}
}

int sl_pinning_approve(struct sl_pins *pins, const char *server, yyjson_val *const *defs,
		       size_t n, struct sl_err *err)
{
	struct approve_ctx a = { server, defs, NULL, n, false };
	return update(pins, apply_approve, &a, false, err);
}

/* What the stage pins by itself: first sight, a new tool sluice.pinning.new
 * lets through, a re-pin under the current scheme; hex[i] is defs[i]'s pin. */
static int pin_automatic(struct sl_pins *pins, const char *server, yyjson_val *const *defs,
			 const char (*hex)[SL_PIN_HEX], size_t n, struct sl_err *err)
{
	struct approve_ctx a = { server, defs, hex, n, true };
	return update(pins, apply_approve, &a, false, err);
}

struct forget_ctx {
	const char *server, *tool;
	size_t count;
};

static void apply_forget(yyjson_mut_doc *d, yyjson_mut_val *servers, void *ctx)
{
	struct forget_ctx *f = ctx;
	yyjson_mut_val *sv;
	(void)d;
	f->count = 0;
	if (!f->server) {
		yyjson_mut_obj_iter it = yyjson_mut_obj_iter_with(servers);
		yyjson_mut_val *k;
		while ((k = yyjson_mut_obj_iter_next(&it)))
			f->count += yyjson_mut_obj_size(yyjson_mut_obj_iter_get_val(k));
		yyjson_mut_obj_clear(servers);
		return;
	}
	sv = yyjson_mut_obj_get(servers, f->server);
	if (!f->tool) {
		f->count = yyjson_mut_obj_size(sv);
		yyjson_mut_obj_remove_key(servers, f->server);
		return;
	}
	if (yyjson_mut_obj_remove_key(sv, f->tool))
		f->count = 1;
	if (yyjson_mut_obj_size(sv) == 0)
		yyjson_mut_obj_remove_key(servers, f->server);
}

int sl_pinning_forget(struct sl_pins *pins, const char *server, const char *tool,
		      size_t *count, struct sl_err *err)
{
	struct forget_ctx f = { server, tool, 0 };
	int rc = update(pins, apply_forget, &f, true, err);
	*count = f.count;
	return rc;
}

void sl_pinning_observe(struct sl_pins *pins, sl_pins_change_fn *fn, void *ctx)
{
	pins->observer = fn;
	pins->observer_ctx = ctx;
}

yyjson_val *sl_pinning_entry(struct sl_pins *pins, const char *key, const char *tool)
{
	refresh(pins);
	return yyjson_obj_get(yyjson_obj_get(sl_pinning_servers(pins), key), tool);
}

struct put_ctx {
	const char *key, *tool;
	yyjson_val *entry;
};

static void apply_put(yyjson_mut_doc *d, yyjson_mut_val *servers, void *ctx)
{
	struct put_ctx *p = ctx;
	yyjson_mut_val *sv = yyjson_mut_obj_get(servers, p->key);

	if (!p->entry) {
		yyjson_mut_obj_remove_key(sv, p->tool);
		if (yyjson_mut_obj_size(sv) == 0)
			yyjson_mut_obj_remove_key(servers, p->key);
		return;
	}
	if (!yyjson_mut_is_obj(sv)) {
		yyjson_mut_obj_remove_key(servers, p->key);
		sv = yyjson_mut_obj(d);
		yyjson_mut_obj_add(servers, yyjson_mut_strcpy(d, p->key), sv);
	}
	yyjson_mut_obj_remove_key(sv, p->tool);
	yyjson_mut_obj_add(sv, yyjson_mut_strcpy(d, p->tool), yyjson_val_mut_copy(d, p->entry));
}

int sl_pinning_put(struct sl_pins *pins, const char *key, const char *tool, yyjson_val *entry,
		   bool *changed, struct sl_err *err)
{
	struct put_ctx p = { key, tool, entry };
	yyjson_val *now = sl_pinning_entry(pins, key, tool);
	int rc;

	*changed = entry ? !same_pin(now, entry) : now != NULL;
	if (!*changed)
		return SL_OK;
	pins->quiet = true;
	rc = update(pins, apply_put, &p, false, err);
	pins->quiet = false;
	return rc;
}

static yyjson_val *link_entry(void *self, const char *key, const char *tool)
{
	return sl_pinning_entry(self, key, tool);
}

static yyjson_val *link_servers(void *self)
{
	return sl_pinning_servers(self);
}

static int link_put(void *self, const char *key, const char *tool, yyjson_val *entry,
		    bool *changed, struct sl_err *err)
{
	return sl_pinning_put(self, key, tool, entry, changed, err);
}

static void link_observe(void *self, sl_pins_change_fn *fn, void *ctx)
{
	sl_pinning_observe(self, fn, ctx);
}

struct sl_pin_store sl_pinning_link(struct sl_pins *pins)
{
	return (struct sl_pin_store){ .self = pins, .entry = link_entry, .servers = link_servers,
				      .put = link_put, .observe = link_observe };
}

/* ---- identity keys ------------------------------------------------------------ *
 *
 * Pins are kept per server *identity*: what the gateway runs (command and
 * arguments) or talks to (URL), hashed, so two configs with a server called
 * "github" that run different things never share pins, and neither a URL's
 * query nor an argument reaches the file in clear. env is left out: it
 * holds secrets, and a rotated token is not a different server. The name
 * goes in front for a person reading the file: "github#0123456789abcdef". */

#define ID_HEX 16

char *sl_pinning_key(const struct sl_server_config *sc)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o, *args;
	char hex[SL_SHA256_HEX], *canon, *key;
	size_t len;

	if (!d)
		sl_oom();
	o = yyjson_mut_obj(d);
	if (sc->url) {
		yyjson_mut_obj_add_str(d, o, "url", sc->url);
	} else {
		yyjson_mut_obj_add_str(d, o, "command", sc->command ? sc->command : "");
		args = yyjson_mut_arr(d);
		for (size_t i = 0; i < sc->nargs; i++)
			yyjson_mut_arr_add_str(d, args, sc->args[i]);
		yyjson_mut_obj_add_val(d, o, "args", args);
	}
	canon = sl_json_canonical(o, &len);
	sl_sha256_hex(canon, len, hex);
	key = sl_printf("%s#%.*s", sc->name, ID_HEX, hex);
	free(canon);
	yyjson_mut_doc_free(d);
	return key;
}

/* up's key; an upstream without a config entry (built by hand, as unit
 * tests do) is keyed by its name. */
static char *up_key(const struct sl_upstream *up)
{
	return up->cfg ? sl_pinning_key(up->cfg) : sl_strdup(up->name);
}

int sl_pinning_approve_live(struct sl_pins *pins, const struct sl_upstream *up, const char *tool,
			    sl_pin_approved_fn *fn, void *ctx, size_t *n, struct sl_err *err)
{
	yyjson_val **defs = sl_alloc((up->tools.n + 1) * sizeof(*defs));
	char *key = up_key(up);
	int rc = SL_OK;

	*n = 0;
	for (size_t i = 0; i < up->tools.n; i++) {
		yyjson_val *def = up->tools.items[i];
		const char *name = sl_json_str(def, "name");
		if (!name || (tool && strcmp(tool, name) != 0))
			continue;
		if (fn)
			fn(ctx, up, def, sl_pinning_check(pins, key, def, NULL));
		defs[(*n)++] = def;
	}
	if (*n)
		rc = sl_pinning_approve(pins, key, defs, *n, err);
	free(defs);
	free(key);
	return rc;
}

int sl_pinning_reset(struct sl_pins *pins, const struct sl_config *cfg, const char *server,
		     const char *tool, size_t *count, struct sl_err *err)
{
	char *key = NULL;
	size_t m = 0;
	int rc;

	/* A configured server's pins are under its identity key; pins of an
	 * earlier sluice under its name alone go with them. */
	for (size_t i = 0; server && i < cfg->nservers && !key; i++)
		if (strcmp(cfg->servers[i].name, server) == 0)
			key = sl_pinning_key(&cfg->servers[i]);
	if (key && sl_pinning_forget(pins, server, tool, &m, err) < 0)
		m = 0;
	rc = sl_pinning_forget(pins, key ? key : server, tool, count, err);
	if (rc == SL_OK)
		*count += m;
	free(key);
	return rc;
}

struct sl_pins *sl_pinning_store(struct sl_pinning *pg)
{
	return pg ? pg->pins : NULL;
}

/* The identity part of a key ("#" and 16 hex digits at its end), or NULL
 * for a key of an earlier sluice (the server's name alone). */
static const char *id_of(const char *key)
{
	const char *h = strrchr(key, '#');
	if (!h || strlen(h + 1) != ID_HEX)
		return NULL;
	for (const char *p = h + 1; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return NULL;
	return h;
}

/* True if key (an identity key) carries name in front. */
static bool key_named(const char *key, const char *name)
{
	const char *h = id_of(key);
	return h && (size_t)(h - key) == strlen(name) && strncmp(key, name, (size_t)(h - key)) == 0;
}

/* One move of a server's pins to its identity key. */
struct move {
	char *from, *to;
	size_t tools;
};

struct adopt_ctx {
	const struct sl_config *cfg;
	struct move *moves; /* one per configured server at most */
	size_t n;
};

static bool configured_name(const struct sl_config *cfg, const char *name, size_t len)
{
	for (size_t i = 0; i < cfg->nservers; i++)
		if (strlen(cfg->servers[i].name) == len && strncmp(cfg->servers[i].name, name, len) == 0)
			return true;
	return false;
}

/* The entry whose pins become key's: the server's name alone (pins of an
 * earlier sluice), else the same identity under a name the config no
 * longer has (the server was renamed: its pins follow it). */
static const char *adoptable(const struct sl_config *cfg, yyjson_val *servers,
			     const struct sl_server_config *sc, const char *key)
{
	yyjson_obj_iter it;
	yyjson_val *k;

	if (yyjson_obj_get(servers, key))
		return NULL;
	if (yyjson_obj_get(servers, sc->name) && !id_of(sc->name))
		return sc->name;
	yyjson_obj_iter_init(servers, &it);
	while ((k = yyjson_obj_iter_next(&it))) {
		const char *s = yyjson_get_str(k), *h = id_of(s);
		if (h && strcmp(h, id_of(key)) == 0 && !configured_name(cfg, s, (size_t)(h - s)))
			return s;
	}
	return NULL;
}

static void apply_adopt(yyjson_mut_doc *d, yyjson_mut_val *servers, void *ctx)
{
	struct adopt_ctx *a = ctx;
	(void)d;
	/* Applied to what is on disk under the lock: another process may have
	 * moved them already (then nothing is left to move). */
	for (size_t i = 0; i < a->n; i++)
		free(a->moves[i].from), free(a->moves[i].to);
	a->n = 0;
	for (size_t i = 0; i < a->cfg->nservers; i++) {
		const struct sl_server_config *sc = &a->cfg->servers[i];
		char *key = sl_pinning_key(sc);
		yyjson_mut_val *k = NULL, *v;
		yyjson_mut_obj_iter it = yyjson_mut_obj_iter_with(servers);
		const char *from = NULL;
		bool taken = yyjson_mut_obj_get(servers, key) != NULL;

		while (!taken && (k = yyjson_mut_obj_iter_next(&it))) {
			const char *s = yyjson_mut_get_str(k), *h = id_of(s);
			if ((!h && strcmp(s, sc->name) == 0) ||
			    (h && strcmp(h, id_of(key)) == 0 && !key_named(s, sc->name) &&
			     !configured_name(a->cfg, s, (size_t)(h - s)))) {
				from = s;
				break;
			}
		}
		if (!from) {
			free(key);
			continue;
		}
		a->moves[a->n].from = sl_strdup(from);
		a->moves[a->n].to = key;
		v = yyjson_mut_obj_remove_key(servers, from);
		a->moves[a->n].tools = yyjson_mut_obj_size(v);
		yyjson_mut_obj_add(servers, yyjson_mut_strcpy(d, key), v);
		a->n++;
	}
}

/* Moves pins keyed by a configured server's name alone (written by an
 * earlier sluice), or by its identity under an old name, to its identity
 * key: once, in one atomic write, with an info line per server. */
static void adopt_keys(struct sl_pins *s, const struct sl_config *cfg)
{
	yyjson_val *servers = sl_pinning_servers(s);
	struct adopt_ctx a = { cfg, NULL, 0 };
	struct sl_err err;
	bool work = false;

	if (!cfg || !servers)
		return;
	for (size_t i = 0; i < cfg->nservers && !work; i++) {
		char *key = sl_pinning_key(&cfg->servers[i]);
		work = adoptable(cfg, servers, &cfg->servers[i], key) != NULL;
		free(key);
	}
	if (!work)
		return;
	a.moves = sl_alloc((cfg->nservers + 1) * sizeof(*a.moves));
	if (update(s, apply_adopt, &a, false, &err) < 0)
		sl_log(SL_LOG_WARN, "pinning: pins moved to identity keys for this run only: %s",
		       err.msg);
	for (size_t i = 0; i < a.n; i++) {
		sl_log(SL_LOG_INFO, "pinning: moved the pins of %zu tool%s from '%s' to '%s' (pins "
		       "are now kept per server identity: its command and arguments, or its URL)",
		       a.moves[i].tools, a.moves[i].tools == 1 ? "" : "s", a.moves[i].from,
		       a.moves[i].to);
		free(a.moves[i].from);
		free(a.moves[i].to);
	}
	free(a.moves);
}

/* ---- configuration ------------------------------------------------------------ */

/* The settings of sluice.pinning; cfg is set before the section is applied
 * (a relative stateDir is taken from the config file's directory). */
struct pinning_conf {
	const struct sl_config *cfg;
	enum mode changed, fresh;
	bool ask;               /* askOnChange */
	char *dir;              /* owned; NULL: no state directory */
};

/* stateDir: ${VAR} and ~/ expanded, relative to the config file. */
static int parse_state_dir(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			   void *target)
{
	struct pinning_conf *pc = target;
	struct sl_err e;
	char *dir;

	if (!yyjson_is_str(v) || !*yyjson_get_str(v))
		return sl_conf_bad(cx, k);
	if (!(dir = sl_config_path(pc->cfg ? pc->cfg->path : NULL, yyjson_get_str(v), &e)))
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	free(pc->dir);
	pc->dir = dir;
	return SL_OK;
}

static const struct sl_conf_name modes[] = {
	{ "block", MODE_BLOCK },
	{ "warn", MODE_WARN },
	{ "off", MODE_OFF },
	{ NULL, 0 },
};

#define PC(field) SL_CONF_AT(struct pinning_conf, field)
static const struct sl_conf_key pinning_keys[] = {
	{ "changed", SL_CONF_ENUM, PC(changed), .names = modes, .dflt = MODE_BLOCK,
	  .doc = "A pinned tool whose definition changed: `block` (hidden and refused), `warn` "
		 "(one warning per change, let through), `off` (let through silently)." },
	{ "new", SL_CONF_ENUM, PC(fresh), .names = modes, .dflt = MODE_WARN,
	  .doc = "A tool that is not pinned, on a server that already has pins: `block` (hidden "
		 "and refused until approved), `warn` (one warning, then pinned), `off` (pinned "
		 "silently)." },
	{ "askOnChange", SL_CONF_BOOL, PC(ask), .dflt = 0,
	  .doc = "Ask the client's human through elicitation, once per change of a server's "
		 "held-back tools, whether to trust the new definitions (accept: pinned as "
		 "`sluice pins approve SERVER` would, and clients hear `tools/list_changed`; "
		 "decline: they stay hidden, and that change is not asked about again). Clients "
		 "that cannot elicit are never asked, nor is one to whom any of the held-back tools "
		 "is hidden (its profile, policy). Only in a config without authenticated callers "
		 "(no `sluice.http.bearerToken` nor `sluice.http.auth`): with them nobody is asked, "
		 "whatever the transport, and trusting a change is the operator's (`sluice pins "
		 "approve`, the admin page)." },
	{ "stateDir", SL_CONF_CUSTOM, PC(dir), .parse = parse_state_dir,
	  .shape = "a non-empty string",
	  .dflt_doc = "`$XDG_STATE_HOME/sluice`, else `~/.local/state/sluice`",
	  .doc = "Where `pins.json` lives; `${VAR}` and a leading `~/` are expanded, a relative "
		 "path is taken from the config file's directory." },
};
#undef PC

static const struct sl_conf_section pinning_conf = {
	"sluice.pinning",
	"Tool pinning: every tool definition is pinned at first sight, and a changed or new one "
	"is held back (docs/stages/pinning.md).",
	pinning_keys, SL_COUNT(pinning_keys), SL_CONF_STRICT, NULL,
};

/* Reads sluice.pinning (NULL: the defaults) into pc; without stateDir the
 * state directory is $XDG_STATE_HOME/sluice, else ~/.local/state/sluice. */
static int parse_section(const struct sl_config *cfg, yyjson_val *section,
			 struct pinning_conf *pc, struct sl_err *err)
{
	int rc;

	*pc = (struct pinning_conf){ .cfg = cfg };
	if ((rc = sl_conf_load(&pinning_conf, section, pc, err)) < 0) {
		free(pc->dir);
		return rc;
	}
	if (!pc->dir)
		pc->dir = sl_state_dir();
	return SL_OK;
}

/* Opens the store of dir (taken; NULL: in memory only). */
static int store_open(char *dir, bool tolerant, struct sl_pins **out, struct sl_err *err)
{
	struct sl_pins *s;
	yyjson_doc *doc = NULL;
	struct file_id id = { 0 };
	int rc;

	if (dir) {
		char *file = sl_printf("%s/%s", dir, PINS_FILE);
		struct sl_err e2;
		rc = load_file(file, &doc, &id, &e2);
		if (rc < 0 && !tolerant) {
			/* A corrupt file stops sluice rather than re-trusting every tool:
			 * resetting trust is exactly what a rug pull would want. */
			sl_err_set(err, "pinning: %s; fix or remove it, or forget every pin with "
				   "`sluice pins reset` (every tool is then trusted again at first sight)",
				   e2.msg);
			free(file);
			free(dir);
			return rc;
		}
		free(file);
	} else {
		sl_log(SL_LOG_WARN, "pinning: no state directory (neither sluice.pinning.stateDir, "
		       "XDG_STATE_HOME nor HOME is set): pins hold for this run only");
	}
	s = sl_alloc(sizeof(*s));
	s->dir = dir;
	s->file = dir ? sl_printf("%s/%s", dir, PINS_FILE) : NULL;
	s->doc = doc;
	s->id = id;
	s->serial = 1;
	*out = s;
	return SL_OK;
}

int sl_pinning_open(const struct sl_config *cfg, yyjson_val *section, bool tolerant,
		    struct sl_pins **out, struct sl_err *err)
{
	struct pinning_conf pc;
	int rc = parse_section(cfg, section, &pc, err);

	if (rc < 0 || (rc = store_open(pc.dir, tolerant, out, err)) < 0)
		return rc;
	if (!tolerant)
		adopt_keys(*out, cfg);
	return SL_OK;
}

void sl_pinning_close(struct sl_pins *pins)
{
	if (!pins)
		return;
	free(pins->dir);
	free(pins->file);
	yyjson_doc_free(pins->doc);
	free(pins);
}

/* ---- the table: each definition hashed once per list ----------------------------
 *
 * A listing, a search or a call asks about every tool it shows, and the
 * answers change only when a server's list or the pins change. So a
 * server's definitions are hashed once per list (struct sl_item_list's
 * version, never reused) and judged against its pins once per pins
 * document (the store's serial: this store's writes, a file another
 * process wrote, a replica's pin), into an array parallel to the list with
 * a map by name; a request only reads. An upstream whose list has no
 * version (made by hand, as unit tests do) is hashed at every ask. Memory:
 * docs/stages/pinning.md, "Cost". */

#define TABLES_MAX 4096 /* servers whose tables are kept; the least recently made goes */

struct tool_pin {
	char hex[SL_PIN_HEX];   /* the definition's pin; "" for a tool without a name */
	enum sl_pin_status st;  /* against the pins of the table's serial */
	bool legacy;            /* its pin is of scheme 1 and still matches */
	yyjson_val *pin;        /* its stored entry (borrowed from that document), or NULL */
	bool first;             /* the first of its name in the list (by_name's) */
};

struct table {
	struct sl_lru_entry e;  /* in pg->tables, under the server's name */
	const struct sl_upstream *up;
	uint64_t version;       /* of up->tools, which it was made from */
	char *key;              /* up's identity key */
	struct tool_pin *v;     /* v[i] is up->tools.items[i]'s */
	size_t n;
	struct sl_map by_name;  /* tool name -> index + 1 (the first of a name) */
	size_t next;            /* the index after the last row found: a listing
				 * asks for a list's tools in order */
	uint64_t serial;        /* of the pins the statuses are of */
	bool reviewed;          /* review is of that serial */
	struct sl_pin_review review;
};

static void table_free(struct sl_lru_entry *e, void *arg)
{
	struct table *t = sl_lru_item(e, struct table, e);
	struct sl_pinning *pg = arg;

	if (pg->last == t)
		pg->last = NULL;
	free(t->key);
	free(t->v);
	sl_map_dispose(&t->by_name);
	free(t);
}

static struct sl_metrics *metrics_of(const struct sl_pinning *pg)
{
	return pg->svc ? pg->svc->metrics : NULL;
}

/* Looks at the pins file at most once per turn of up's loop (its clock is
 * read at each turn's start): a listing asks about thousands of tools in
 * one turn, and a file `sluice pins approve` wrote is still seen by the
 * next request, which comes in a later turn. */
static void look(struct sl_pinning *pg, const struct sl_upstream *up)
{
	if (up->loop) {
		uint64_t now = uv_now(up->loop);
		if (pg->looked_loop == up->loop && pg->looked_at == now)
			return;
		pg->looked_loop = up->loop;
		pg->looked_at = now;
	}
	refresh(pg->pins);
}

/* Judges every tool of t against the pins: one pass over the server's
 * pins (looking each tool up in them would scan them once per tool). */
static void judge_all(struct sl_pinning *pg, struct table *t)
{
	yyjson_val *sv = yyjson_obj_get(sl_pinning_servers(pg->pins), t->key), *k;
	bool first = !yyjson_is_obj(sv) || yyjson_obj_size(sv) == 0;
	yyjson_obj_iter it;

	for (size_t i = 0; i < t->n; i++) {
		t->v[i].st = first ? SL_PIN_FIRST : SL_PIN_NEW;
		t->v[i].legacy = false;
		t->v[i].pin = NULL;
	}
	if (!first) {
		yyjson_obj_iter_init(sv, &it);
		while ((k = yyjson_obj_iter_next(&it))) {
			const char *name = yyjson_get_str(k);
			size_t i = (uintptr_t)sl_map_get(&t->by_name, name);
			struct tool_pin *tp = i ? &t->v[i - 1] : NULL;
			/* The first of a name wins, as yyjson_obj_get would pick;
			 * a key holding a NUL is no tool's name. */
			if (!tp || tp->pin || strlen(name) != yyjson_get_len(k))
				continue;
			tp->pin = yyjson_obj_iter_get_val(k);
			tp->st = entry_status(tp->pin, t->up->tools.items[i - 1], tp->hex, &tp->legacy);
		}
	}
	t->serial = pg->pins->serial;
	t->reviewed = false;
}

/* up's table, made (its list is new) or judged again (the pins changed)
 * as needed. Borrowed until the next call here. */
static struct table *table_of(struct sl_pinning *pg, const struct sl_upstream *up)
{
	struct sl_lru_entry *e;
	struct table *t = NULL;
	size_t hashed = 0;

	look(pg, up);
	if (pg->last && pg->last->up == up)
		t = pg->last;
	else if ((e = sl_lru_peek(&pg->tables, up->name)))
		t = sl_lru_item(e, struct table, e);
	if (!t || t->up != up || t->version != up->tools.version || !up->tools.version) {
		t = sl_alloc(sizeof(*t));
		*t = (struct table){ .up = up, .version = up->tools.version, .key = up_key(up),
				     .n = up->tools.n };
		t->v = sl_alloc((t->n + 1) * sizeof(*t->v));
		sl_map_init(&t->by_name);
		for (size_t i = 0; i < t->n; i++) {
			const char *name = sl_json_str(up->tools.items[i], "name");
			t->v[i].hex[0] = '\0';
			if (!name)
				continue;
			sl_pinning_hash(up->tools.items[i], t->v[i].hex, NULL);
			hashed++;
			if (!sl_map_get(&t->by_name, name)) {
				sl_map_put(&t->by_name, name, (void *)(uintptr_t)(i + 1));
				t->v[i].first = true;
			}
		}
		sl_metrics_work(metrics_of(pg), SL_METRICS_PIN_HASH, hashed);
		(void)sl_lru_put(&pg->tables, up->name, &t->e, sizeof(*t) + t->n * sizeof(*t->v), 0);
	}
	if (t->serial != pg->pins->serial)
		judge_all(pg, t);
	pg->last = t;
	return t;
}

/* def's row of t; for a definition not in t's list as the first of its
 * name, scratch, hashed and judged now. NULL: def has no name. */
static const struct tool_pin *pin_of(struct sl_pinning *pg, struct table *t,
				     yyjson_val *def, struct tool_pin *scratch)
{
	const char *name;
	size_t i = t->next;

	/* The row after the last: no lookup, and def itself is not read. */
	if (i < t->n && t->up->tools.items[i] == def && t->v[i].first) {
		t->next = i + 1;
		return &t->v[i];
	}
	if (!(name = sl_json_str(def, "name")))
		return NULL;
	i = (uintptr_t)sl_map_get(&t->by_name, name);
	if (i && t->up->tools.items[i - 1] == def) {
		t->next = i;
		return &t->v[i - 1];
	}
	sl_pinning_hash(def, scratch->hex, NULL);
	sl_metrics_work(metrics_of(pg), SL_METRICS_PIN_HASH, 1);
	scratch->st = status_of(pg->pins, t->key, def, scratch->hex, &scratch->pin,
				&scratch->legacy);
	return scratch;
}

/* ---- the stage ------------------------------------------------------------------- */

static bool warn_once(struct sl_pinning *pg, const char *server, const char *tool,
		      const char *hex)
{
	char *key = sl_printf("%s\n%s\n%s", server, tool, hex);
	bool first = sl_lru_set_add(&pg->warned, key);
	free(key);
	return first;
}

static void save_failed(struct sl_pinning *pg, const struct sl_err *err)
{
	if (!pg->write_failing)
		sl_log(SL_LOG_WARN, "pinning: pins not saved: %s; they hold for this run only", err->msg);
	pg->write_failing = true;
}

/* Pins, in one write, the tools of t's server whose status is want (FIRST
 * or NEW), or (legacy) whose pin of scheme 1 still matches. */
static void pin_all(struct sl_pinning *pg, struct table *t, enum sl_pin_status want,
		    bool legacy)
{
	const struct sl_upstream *up = t->up;
	yyjson_val **defs = sl_alloc((up->tools.n + 1) * sizeof(*defs));
	char (*hex)[SL_PIN_HEX] = sl_alloc((up->tools.n + 1) * sizeof(*hex));
	size_t n = 0;
	struct sl_err err;

	for (size_t i = 0; i < up->tools.n; i++) {
		yyjson_val *def = up->tools.items[i];
		const char *name = sl_json_str(def, "name");
		struct tool_pin scratch;
		const struct tool_pin *tp;
		if (!name)
			continue;
		tp = pin_of(pg, t, def, &scratch);
		if (tp->st != want || tp->legacy != legacy)
			continue;
		if (want == SL_PIN_NEW && pg->fresh == MODE_WARN && warn_once(pg, t->key, name, tp->hex))
			sl_log(SL_LOG_WARN, "pinning: server '%s' now offers a new tool '%s'; "
			       "pinned it (sluice.pinning.new is \"warn\")", up->name, name);
		memcpy(hex[n], tp->hex, SL_PIN_HEX);
		defs[n++] = def;
	}
	if (n) {
		if (want == SL_PIN_FIRST)
			sl_log(SL_LOG_INFO, "pinning: first sight of server '%s': pinned %zu tools",
			       up->name, n);
		else if (legacy)
			sl_log(SL_LOG_INFO, "pinning: re-pinned %zu tools of server '%s' whose pins of "
			       "an earlier sluice still match", n, up->name);
		if (pin_automatic(pg->pins, t->key, defs, (const char (*)[SL_PIN_HEX])hex, n, &err) < 0)
			save_failed(pg, &err);
		else if (!legacy)
			pg->write_failing = false;
	}
	free(hex);
	free(defs);
}

/* The tool's status after first-sight and new-tool pinning; true if it is
 * blocked. */
static bool judge(struct sl_pinning *pg, const struct sl_upstream *up, yyjson_val *def,
		  enum sl_pin_status *st, const char **pinned_at)
{
	struct tool_pin scratch;
	const struct tool_pin *tp;
	struct table *t;
	bool blocked = false;

	*pinned_at = NULL;
	if (!pg)
		return false;
	t = table_of(pg, up);
	if (!(tp = pin_of(pg, t, def, &scratch)))
		return false;
	*st = tp->st;
	switch (*st) {
	case SL_PIN_OK:
		if (tp->legacy)
			pin_all(pg, t, SL_PIN_OK, true);
		break;
	case SL_PIN_FIRST:
		pin_all(pg, t, SL_PIN_FIRST, false);
		break;
	case SL_PIN_NEW:
		if (pg->fresh == MODE_BLOCK)
			blocked = true;
		else
			pin_all(pg, t, SL_PIN_NEW, false);
		break;
	case SL_PIN_CHANGED:
		*pinned_at = sl_json_str(tp->pin, "pinnedAt");
		if (pg->changed == MODE_BLOCK)
			blocked = true;
		else if (pg->changed == MODE_WARN) {
			const char *name = sl_json_str(def, "name");
			if (warn_once(pg, t->key, name, tp->hex))
				sl_log(SL_LOG_WARN, "pinning: the definition of %s.%s changed since "
				       "it was pinned%s%s; letting it through (sluice.pinning.changed "
				       "is \"warn\"): `sluice pins diff %s.%s` shows the change",
				       up->name, name, *pinned_at ? " on " : "",
				       *pinned_at ? *pinned_at : "", up->name, name);
		}
		break;
	}
	return blocked;
}

/* ---- held-back tools, per server: the warning and the question ------------------ */

static enum sl_pin_hold hold_of(const struct sl_pinning *pg, enum sl_pin_status st)
{
	if (st == SL_PIN_CHANGED && pg->changed == MODE_BLOCK)
		return SL_PIN_HELD_CHANGED;
	if (st == SL_PIN_NEW && pg->fresh == MODE_BLOCK)
		return SL_PIN_HELD_NEW;
	return SL_PIN_SHOWN;
}

enum sl_pin_hold sl_pinning_hold(struct sl_pinning *pg, const struct sl_upstream *up,
				 yyjson_val *def)
{
	struct tool_pin scratch;
	const struct tool_pin *tp;

	if (!pg || !(tp = pin_of(pg, table_of(pg, up), def, &scratch)))
		return SL_PIN_SHOWN;
	return hold_of(pg, tp->st);
}

struct held {
	yyjson_val *def;
	const char *name;
	char hex[SL_PIN_HEX];
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct held *)a)->name, ((const struct held *)b)->name);
}

/* t's held-back set, counted and signed. */
static void review(struct sl_pinning *pg, struct table *t, struct sl_pin_review *r)
{
	const struct sl_upstream *up = t->up;
	struct held *held = sl_alloc((up->tools.n + 1) * sizeof(*held));
	struct sl_buf b;
	size_t n = 0;

	*r = (struct sl_pin_review){ 0 };
	for (size_t i = 0; i < up->tools.n; i++) {
		struct tool_pin scratch;
		const struct tool_pin *tp;
		enum sl_pin_hold h;
		if (!sl_json_str(up->tools.items[i], "name"))
			continue;
		tp = pin_of(pg, t, up->tools.items[i], &scratch);
		if ((h = hold_of(pg, tp->st)) == SL_PIN_SHOWN)
			continue;
		held[n].def = up->tools.items[i];
		held[n].name = sl_json_str(held[n].def, "name");
		memcpy(held[n++].hex, tp->hex, SL_PIN_HEX);
		if (h == SL_PIN_HELD_CHANGED)
			r->changed++;
		else
			r->fresh++;
	}
	/* The change's identity: which tools, as which definitions, whatever
	 * order the server lists them in. */
	qsort(held, n, sizeof(*held), by_name);
	sl_buf_init(&b, SIZE_MAX);
	for (size_t i = 0; i < n; i++)
		if (sl_buf_printf(&b, "%s\n%s\n", held[i].name, held[i].hex) < 0)
			sl_oom();
	if (n)
		sl_sha256_hex(b.data, b.len, r->sig);
	sl_buf_dispose(&b);
	free(held);
}

void sl_pinning_review(struct sl_pinning *pg, const struct sl_upstream *up,
		       struct sl_pin_review *r)
{
	struct table *t;

	*r = (struct sl_pin_review){ 0 };
	if (!pg || up->state != SL_UP_READY)
		return;
	t = table_of(pg, up);
	if (!t->reviewed) {
		review(pg, t, &t->review);
		t->reviewed = true;
	}
	*r = t->review;
}

static struct change *change_of(struct sl_pinning *pg, const char *key)
{
	struct change *ch = sl_map_get(&pg->changes, key);
	if (!ch) {
		ch = sl_alloc(sizeof(*ch));
		*ch = (struct change){ 0 };
		sl_map_put(&pg->changes, key, ch);
	}
	return ch;
}

/* "3 tools whose definitions changed since they were pinned and 1 new tool" */
static void held_text(const struct sl_pin_review *r, char *out, size_t n)
{
	char fresh[64] = "";
	if (r->fresh)
		snprintf(fresh, sizeof(fresh), "%s%zu new tool%s", r->changed ? " and " : "",
			 r->fresh, r->fresh == 1 ? "" : "s");
	if (r->changed)
		snprintf(out, n, "%zu tool%s whose definition%s changed since %s pinned%s", r->changed,
			 r->changed == 1 ? "" : "s", r->changed == 1 ? "" : "s",
			 r->changed == 1 ? "it was" : "they were", fresh);
	else
		snprintf(out, n, "%s", fresh);
}

/* Another replica changed pins (src/shared/pins.c applied them to this
 * store): held-back tools are judged again when clients list, as after an
 * approval a client made here. */
static void on_shared_change(void *ctx)
{
	struct sl_pinning *pg = ctx;
	sl_services_tools_changed(pg->svc);
}

void sl_pinning_share(struct sl_pinning *pg)
{
	if (pg && !pg->shared && pg->svc && pg->svc->redis)
		pg->shared = sl_shared_pins_attach(pg->svc->redis, sl_pinning_link(pg->pins),
						   on_shared_change, pg);
}

size_t sl_pinning_announce(struct sl_pinning *pg, const struct sl_upstream *up)
{
	struct sl_pin_review r;
	struct change *ch;
	char *key, what[200];

	sl_pinning_review(pg, up, &r);
	if (!pg)
		return 0;
	sl_pinning_share(pg);
	key = up_key(up);
	ch = change_of(pg, key);
	if (r.changed + r.fresh == 0) {
		ch->warned[0] = '\0'; /* the next change warns again */
	} else if (strcmp(ch->warned, r.sig) != 0) {
		snprintf(ch->warned, sizeof(ch->warned), "%s", r.sig);
		held_text(&r, what, sizeof(what));
		sl_log(SL_LOG_WARN, "pinning: server '%s' offers %s; %s hidden from clients until "
		       "trusted. Review: `sluice pins diff %s --config %s`; trust: `sluice pins "
		       "approve %s --config %s`%s", up->name, what,
		       r.changed + r.fresh == 1 ? "it is" : "they are", up->name, pg->cfg_path,
		       up->name, pg->cfg_path,
		       pg->ask ? " (or accept when a client asks, sluice.pinning.askOnChange)" : "");
	}
	free(key);
	return r.changed + r.fresh;
}

/* An elicitation in flight: "trust the new definitions of server s?" */
struct ask {
	struct sl_pinning *pg;  /* NULL once the stage's state is gone */
	struct sl_list link;    /* in pg->asks */
	struct sl_upstream *up; /* lives as long as the gateway */
	char *key;
	char sig[SL_PIN_HEX];   /* the change asked about */
};

/* What the person reads: the server's name as configured, quoted and
 * escaped, and counts. Nothing the server wrote (tool names, descriptions)
 * goes in, so none of it can pass for the dialog's own words. */
static char *ask_message(const struct sl_pinning *pg, const struct sl_upstream *up,
			 const struct sl_pin_review *r)
{
	struct sl_buf b;
	char what[200];
	int rc;

	held_text(r, what, sizeof(what));
	sl_buf_init(&b, SIZE_MAX);
	rc = sl_buf_appends(&b, "sluice pinning: the server ");
	rc = rc ? rc : sl_escape(&b, up->name, strlen(up->name), SL_ESCAPE_QUOTED);
	rc = rc ? rc : sl_buf_printf(&b, " offers %s (an upgrade, or a server swapping in new "
				     "instructions). They stay hidden unless you trust them. "
				     "Trust the new definitions of all %zu? "
				     "(`sluice pins diff ", what, r->changed + r->fresh);
	rc = rc ? rc : sl_escape(&b, up->name, strlen(up->name), SL_ESCAPE_LOG);
	rc = rc ? rc : sl_buf_appends(&b, "` shows the change.)");
	if (rc < 0)
		sl_oom();
	return sl_buf_take(&b, NULL);
}

/* Pins every live tool of up, as `sluice pins approve SERVER` does, if its
 * held-back set is still the one sig names (a person trusted that change,
 * not whatever came after it). True if they were approved. */
static bool trust(struct sl_pinning *pg, const struct sl_upstream *up, const char *key,
		  const char *sig)
{
	struct sl_pin_review r;
	struct sl_err err;

	sl_pinning_review(pg, up, &r);
	if (r.changed + r.fresh == 0 || strcmp(r.sig, sig) != 0) {
		sl_log(SL_LOG_WARN, "pinning: the tools of server '%s' changed again while a client "
		       "was asked about them; nothing approved", up->name);
		return false;
	}
	if (sl_pinning_approve(pg->pins, key, (yyjson_val *const *)up->tools.items, up->tools.n,
			       &err) < 0)
		save_failed(pg, &err);
	sl_log(SL_LOG_INFO, "pinning: a client's user trusted the new definitions of server '%s' "
	       "(%zu changed, %zu new): pinned", up->name, r.changed, r.fresh);
	return true;
}

static void on_ask_answer(void *ctx, const char *action, yyjson_val *content)
{
	struct ask *a = ctx;
	struct sl_pinning *pg = a->pg;
	struct change *ch;

	if (!pg)
		goto out; /* the stage's state is gone (a reload): nothing to do */
	sl_list_remove(&a->link);
	ch = change_of(pg, a->key);
	ch->asking = false;
	if (!action) {
		/* No answer (the client went away): another session may be asked. */
		ch->asked[0] = '\0';
		goto out;
	}
	if (strcmp(action, "accept") == 0 && sl_json_true(content, "trust")) {
		if (trust(pg, a->up, a->key, a->sig))
			sl_services_tools_changed(pg->svc);
		else
			ch->asked[0] = '\0'; /* a newer change: ask about that one */
	} else {
		sl_log(SL_LOG_INFO, "pinning: a client's user did not trust the new definitions of "
		       "server '%s' (%s); they stay hidden and this change is not asked about again",
		       a->up->name, action);
	}
out:
	free(a->key);
	free(a);
}

/* Asks the client behind ask about up's held-back set r (key: up's
 * identity key), unless it was asked already; true if a question went out. */
static bool ask_person(struct sl_pinning *pg, const struct sl_asker *ask, struct sl_upstream *up,
		       const char *key, const struct sl_pin_review *r)
{
	struct change *ch = change_of(pg, key);
	yyjson_mut_doc *d;
	struct ask *a;
	char *msg;
	bool asked;

	if (ch->asking || strcmp(ch->asked, r->sig) == 0)
		return false; /* once per change */
	a = sl_alloc(sizeof(*a));
	*a = (struct ask){ .pg = pg, .up = up, .key = sl_strdup(key) };
	snprintf(a->sig, sizeof(a->sig), "%s", r->sig);
	msg = ask_message(pg, up, r);
	d = yyjson_mut_doc_new(NULL);
	if (!d)
		sl_oom();
	asked = ask->elicit && ask->elicit(ask->ctx, msg, d,
					   sl_mcp_yes_no_schema(d, "trust", "Trust the new definitions"),
					   on_ask_answer, a);
	if (asked) {
		snprintf(ch->asked, sizeof(ch->asked), "%s", r->sig);
		ch->asking = true;
		sl_list_push_front(&pg->asks, &a->link);
	} else {
		free(a->key);
		free(a);
	}
	yyjson_mut_doc_free(d);
	free(msg);
	return asked;
}

bool sl_pinning_asks(const struct sl_pinning *pg)
{
	return pg && pg->ask;
}

/* Every held-back tool of up may be seen by who through ask's endpoint: a
 * question about the set would otherwise tell them a hidden tool exists,
 * and their yes would trust it for those who see it. */
static bool sees_held(struct sl_pinning *pg, const struct sl_asker *ask,
		      const struct sl_caller *who, const struct sl_upstream *up)
{
	for (size_t i = 0; i < up->tools.n; i++) {
		yyjson_val *def = up->tools.items[i];
		if (sl_pinning_hold(pg, up, def) != SL_PIN_SHOWN &&
		    (!ask->sees || !ask->sees(ask->ctx, who, up, def)))
			return false;
	}
	return true;
}

void sl_pinning_offer(struct sl_pinning *pg, const struct sl_asker *ask,
		      const struct sl_caller *who, struct sl_upstream *up)
{
	struct sl_pin_review r;
	char *key;

	if (!sl_pinning_asks(pg) || !ask->can_elicit || !ask->can_elicit(ask->ctx))
		return;
	sl_pinning_review(pg, up, &r);
	if (r.changed + r.fresh == 0 || !sees_held(pg, ask, who, up))
		return;
	key = up_key(up);
	(void)ask_person(pg, ask, up, key, &r);
	free(key);
}

static bool pinning_visible(void *state, const struct sl_caller *who,
			     const struct sl_upstream *up, yyjson_val *tool)
{
	enum sl_pin_status st = SL_PIN_OK;
	const char *at;
	return !judge(state, up, tool, &st, &at);
}

/* Every definition and router summary a client sees goes through here:
 * hidden characters never reach a model, whatever the server sent. */
static void pinning_present(void *state, yyjson_mut_doc *d, yyjson_mut_val *tool)
{
	(void)state;
	sl_pinning_clean(d, tool);
}

/* up's advertised definition of tool, or NULL. */
static yyjson_val *find_def(struct sl_pinning *pg, const struct sl_upstream *up, const char *tool)
{
	size_t i = (uintptr_t)sl_map_get(&table_of(pg, up)->by_name, tool);
	return i ? up->tools.items[i - 1] : NULL;
}

/* ---- asking within a call ------------------------------------------------------
 *
 * A call to a held-back tool (a client that remembered it from before the
 * upgrade) is the other moment to ask. A 2025-11-25 client is asked
 * through elicitation beside the refusal (the call is not held: it is
 * refused at once, and the tools appear with tools/list_changed if the
 * person trusts them). A 2026-07-28 client, which has no server-to-client
 * requests, gets an input_required result whose requestState binds the
 * answer to this server and this change (sealed with the generation's key,
 * with an expiry: core/digest.h's sl_seal, as every state a client carries
 * back); its retry with the answer trusts the change and runs. */

#define ASK_STATE_SECONDS 600

/* What a state of this ask stands for (core/digest.h's seal): the purpose,
 * the server and the change. */
static char *ask_what(const char *key, const char *sig)
{
	return sl_printf("sluice-pins\n%s\n%s", key, sig);
}

static bool ask_state_valid(const struct sl_call *c, const char *key, const char *sig,
			    const char *state)
{
	char *what = ask_what(key, sig);
	bool ok = sl_seal_check(c->gen->key, sizeof(c->gen->key), state, what) == SL_SEAL_OK;

	free(what);
	return ok;
}

static void ask_mrtr(struct sl_pinning *pg, struct sl_call *c, const char *key,
		     const struct sl_pin_review *r)
{
	yyjson_mut_val *res = yyjson_mut_obj(c->doc), *reqs = yyjson_mut_obj(c->doc);
	yyjson_mut_val *q = yyjson_mut_obj(c->doc), *params = yyjson_mut_obj(c->doc);
	char *msg = ask_message(pg, c->up, r), *what = ask_what(key, r->sig), *state;

	state = sl_seal(c->gen->key, sizeof(c->gen->key), sl_seal_now() + ASK_STATE_SECONDS, what);
	free(what);
	/* MCP 2026-07-28 MRTR: ask through an input_required result. */
	yyjson_mut_obj_add_str(c->doc, params, "mode", "form");
	yyjson_mut_obj_add_strcpy(c->doc, params, "message", msg);
	yyjson_mut_obj_add_val(c->doc, params, "requestedSchema",
			       sl_mcp_yes_no_schema(c->doc, "trust", "Trust the new definitions"));
	yyjson_mut_obj_add_str(c->doc, q, "method", "elicitation/create");
	yyjson_mut_obj_add_val(c->doc, q, "params", params);
	yyjson_mut_obj_add_val(c->doc, reqs, "pinning", q);
	yyjson_mut_obj_add_str(c->doc, res, "resultType", "input_required");
	yyjson_mut_obj_add_val(c->doc, res, "inputRequests", reqs);
	yyjson_mut_obj_add_strcpy(c->doc, res, "requestState", state);
	c->input_required = res;
	c->outcome = SL_OUTCOME_INPUT_REQUIRED;
	free(state);
	free(msg);
}

/* With askOnChange, for a call to a held-back tool: NEXT (the person
 * trusted the change: the call runs), DONE (an input_required, or a refusal
 * set here), or DECLINED (refuse as usual; *note says if a question went
 * out). */
static enum sl_stage_rc ask_in_call(struct sl_pinning *pg, struct sl_call *c, const char **note)
{
	yyjson_mut_val *resp = c->input_responses ?
			       yyjson_mut_obj_get(c->input_responses, "pinning") : NULL;
	struct sl_pin_review r;
	enum sl_stage_rc rc = SL_STAGE_DECLINED;
	struct change *ch;
	char *key;

	sl_pinning_review(pg, c->up, &r);
	if (r.changed + r.fresh == 0 || !sees_held(pg, &c->ask, c->who, c->up))
		return SL_STAGE_DECLINED; /* refused as usual: the operator trusts it */
	key = up_key(c->up);
	ch = change_of(pg, key);
	if (c->mrtr && resp && c->request_state) {
		const char *action = yyjson_mut_get_str(yyjson_mut_obj_get(resp, "action"));
		yyjson_mut_val *content = yyjson_mut_obj_get(resp, "content");
		if (!ask_state_valid(c, key, r.sig, c->request_state)) {
			sl_call_set_error(c, SL_OUTCOME_DENIED, "sluice refused %s.%s: the answer about "
					  "trusting server '%s' came back with a requestState that is not "
					  "ours, expired, or is for tools that changed since", c->up->name,
					  c->tool, c->up->name);
			rc = SL_STAGE_DONE;
		} else if (action && strcmp(action, "accept") == 0 &&
			   yyjson_mut_is_true(yyjson_mut_obj_get(content, "trust"))) {
			if (trust(pg, c->up, key, r.sig)) {
				sl_services_tools_changed(pg->svc);
				rc = SL_STAGE_NEXT;
			}
		} else {
			snprintf(ch->asked, sizeof(ch->asked), "%s", r.sig);
			*note = " The user did not trust the new definitions when asked.";
		}
	} else if (strcmp(ch->asked, r.sig) != 0 && !ch->asking) {
		if (c->mrtr) {
			snprintf(ch->asked, sizeof(ch->asked), "%s", r.sig);
			ask_mrtr(pg, c, key, &r);
			rc = SL_STAGE_DONE;
		} else if (sl_call_can_ask(c) && ask_person(pg, &c->ask, c->up, key, &r)) {
			*note = " sluice is asking the user whether to trust the new definitions; if "
				"they do, the tools come back (tools/list_changed) and the call can be "
				"made again.";
		}
	}
	free(key);
	return rc;
}

static enum sl_stage_rc pinning_request(void *state, struct sl_call *c)
{
	struct sl_pinning *pg = state;
	yyjson_val *def = pg ? find_def(pg, c->up, c->tool) : NULL;
	enum sl_pin_status st = SL_PIN_OK;
	const char *at, *s = c->up->name, *t = c->tool, *note = "";
	char when[64];

	if (!def)
		return SL_STAGE_DECLINED; /* not advertised: not ours to judge */
	if (!judge(pg, c->up, def, &st, &at))
		return SL_STAGE_NEXT;
	/* The pin's date, before asking re-reads the pins (which frees it). */
	snprintf(when, sizeof(when), "%s", at ? at : "");
	at = at ? when : NULL;
	if (pg->ask) {
		enum sl_stage_rc rc = ask_in_call(pg, c, &note);
		if (rc != SL_STAGE_DECLINED)
			return rc;
	}
	if (st == SL_PIN_CHANGED)
		sl_call_set_error(c, SL_OUTCOME_DENIED,
				  "sluice refused %s.%s: the tool's definition changed since it was "
				  "pinned%s%s, which can be a rug pull (a server swapping in new "
				  "instructions). Review the change with `sluice pins diff %s.%s`; if it "
				  "is trusted, approve it with `sluice pins approve %s.%s`.%s",
				  s, t, at ? " on " : "", at ? at : "", s, t, s, t, note);
	else
		sl_call_set_error(c, SL_OUTCOME_DENIED,
				  "sluice refused %s.%s: it is a new tool on server '%s' and new tools "
				  "need approval (sluice.pinning.new is \"block\"). Review it with "
				  "`sluice pins diff %s.%s` and approve it with `sluice pins approve %s.%s`.%s",
				  s, t, s, s, t, s, t, note);
	return SL_STAGE_DONE;
}

/* Callers present a credential: static tokens, OAuth, or the shared
 * bearerToken (as src/auth/auth.c decides whether to ask for one). */
static bool authenticated(const struct sl_config *cfg)
{
	return cfg && (cfg->http.bearer_token || cfg->http.auth.ntokens || cfg->http.auth.resource);
}

static int pinning_init(const struct sl_config *cfg, const struct sl_services *svc,
			yyjson_val *section, void **state, struct sl_err *err)
{
	struct pinning_conf pc;
	struct sl_pinning *pg;
	struct sl_pins *pins;
	int rc;

	*state = NULL;
	if ((rc = parse_section(cfg, section, &pc, err)) < 0 ||
	    (rc = store_open(pc.dir, false, &pins, err)) < 0)
		return rc;
	adopt_keys(pins, cfg);
	pg = sl_alloc(sizeof(*pg));
	pg->pins = pins;
	pg->svc = svc;
	pg->changed = pc.changed;
	pg->fresh = pc.fresh;
	/* A gateway whose callers carry credentials serves a team: one
	 * caller's yes would trust a definition for all of them, so nobody is
	 * asked and trusting is the operator's act (sluice pins, /admin). */
	pg->ask = pc.ask && !authenticated(cfg);
	if (pc.ask && !pg->ask)
		sl_log(SL_LOG_WARN, "pinning: askOnChange asks nobody on a gateway with authenticated "
		       "callers (sluice.http.auth, bearerToken): a changed definition is trusted by "
		       "the operator, with `sluice pins approve` or the admin page");
	pg->cfg_path = sl_strdup(cfg && cfg->path ? cfg->path : "FILE");
	sl_list_init(&pg->asks);
	sl_lru_init_set(&pg->warned, WARNED_MAX);
	sl_map_init(&pg->changes);
	sl_lru_init(&pg->tables, TABLES_MAX, 0, table_free, pg);
	*state = pg;
	return SL_OK;
}

static void free_change(const char *key, void *value, void *ctx)
{
	(void)key;
	(void)ctx;
	free(value);
}

static void pinning_fini(void *state)
{
	struct sl_pinning *pg = state;
	struct sl_list *n, *next;

	if (!pg)
		return;
	/* An answer that comes after this finds its ask detached. */
	sl_list_each_safe(n, next, &pg->asks) {
		struct ask *a = sl_list_entry(n, struct ask, link);
		sl_list_remove(n);
		a->pg = NULL;
	}
	sl_shared_pins_detach(pg->shared);
	sl_pinning_close(pg->pins);
	sl_lru_dispose(&pg->warned);
	sl_map_each(&pg->changes, free_change, NULL);
	sl_map_dispose(&pg->changes);
	sl_lru_dispose(&pg->tables);
	free(pg->cfg_path);
	free(pg);
}

const struct sl_stage sl_stage_pinning = {
	.name = "pinning",
	.conf = &pinning_conf,
	.init = pinning_init,
	.fini = pinning_fini,
	.visible = pinning_visible,
	.present = pinning_present,
	.request = pinning_request,
};

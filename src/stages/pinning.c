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
#include "config/conf.h"
#include "config/config.h"
#include "core/digest.h"
#include "core/log.h"
#include "core/map.h"

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
/* Deeper than any real schema; beyond it objects keep their order (still
 * deterministic) and strings are not cleaned, so a hostile definition cannot
 * exhaust the stack. */
#define MAX_DEPTH 128
#define MAX_PINS_FILE (256u << 20)

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
};

struct sl_pinning {
	struct sl_pins *pins;   /* owned */
	enum mode changed, fresh;
	struct sl_map warned;   /* "server\ntool\nsha" already warned about */
	bool write_failing;     /* warned that pins cannot be saved */
};

/* ---- hidden characters --------------------------------------------------- */

/* The length of the invisible character at p (UTF-8), or 0. */
static size_t invisible_at(const unsigned char *p, size_t n)
{
	if (n >= 2 && p[0] == 0xC2 && p[1] == 0xAD) /* U+00AD soft hyphen */
		return 2;
	if (n >= 3 && p[0] == 0xE2 && p[1] == 0x80 &&
	    ((p[2] >= 0x8B && p[2] <= 0x8F) || (p[2] >= 0xAA && p[2] <= 0xAE)))
		return 3; /* U+200B-U+200F, U+202A-U+202E */
	if (n >= 3 && p[0] == 0xE2 && p[1] == 0x81 &&
	    ((p[2] >= 0xA0 && p[2] <= 0xA4) || (p[2] >= 0xA6 && p[2] <= 0xA9)))
		return 3; /* U+2060-U+2064, U+2066-U+2069 */
	if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
		return 3; /* U+FEFF */
	if (n >= 4 && p[0] == 0xF3 && p[1] == 0xA0 && (p[2] == 0x80 || p[2] == 0x81) &&
	    p[3] >= 0x80 && p[3] <= 0xBF)
		return 4; /* U+E0000-U+E007F, the tag block */
	return 0;
}

size_t sl_pinning_strip(char *s, size_t len)
{
	unsigned char *p = (unsigned char *)s;
	size_t r = 0, w = 0;
	while (r < len) {
		size_t k = invisible_at(p + r, len - r);
		if (k) {
			r += k;
			continue;
		}
		p[w++] = p[r++];
	}
	if (w < len)
		p[w] = '\0';
	return w;
}

static void clean_str(yyjson_mut_doc *d, yyjson_mut_val *v)
{
	const char *s = yyjson_mut_get_str(v);
	size_t n = yyjson_mut_get_len(v), k;
	char *copy;
	yyjson_mut_val *nv;

	if (!s)
		return;
	for (k = 0; k < n; k++)
		if (invisible_at((const unsigned char *)s + k, n - k))
			break;
	if (k == n)
		return;
	copy = sl_strndup(s, n);
	n = sl_pinning_strip(copy, n);
	nv = yyjson_mut_strncpy(d, copy, n);
	free(copy);
	if (nv)
		yyjson_mut_set_strn(v, yyjson_mut_get_str(nv), n);
}

/* Every string under v, keys included: an enum value, a default, a
 * property's name or an icon's URL reaches the client as much as a
 * description does. */
static void clean_all(yyjson_mut_doc *d, yyjson_mut_val *v, int depth)
{
	if (depth > MAX_DEPTH)
		return;
	if (yyjson_mut_is_str(v)) {
		clean_str(d, v);
	} else if (yyjson_mut_is_obj(v)) {
		yyjson_mut_obj_iter it = yyjson_mut_obj_iter_with(v);
		yyjson_mut_val *k;
		while ((k = yyjson_mut_obj_iter_next(&it))) {
			clean_str(d, k);
			clean_all(d, yyjson_mut_obj_iter_get_val(k), depth + 1);
		}
	} else if (yyjson_mut_is_arr(v)) {
		yyjson_mut_arr_iter it = yyjson_mut_arr_iter_with(v);
		yyjson_mut_val *x;
		while ((x = yyjson_mut_arr_iter_next(&it)))
			clean_all(d, x, depth + 1);
	}
}

void sl_pinning_clean(yyjson_mut_doc *d, yyjson_mut_val *tool)
{
	clean_all(d, tool, 0);
}

/* ---- scheme 1, for pins written before scheme 2 ---------------------------------
 *
 * Scheme 1 hashed six fields, cleaned of hidden characters in titles and
 * descriptions only. A pin without "scheme" is one: it is compared this
 * way once, and re-pinned under scheme 2 when it still matches. */

static void clean_key_v1(yyjson_mut_doc *d, yyjson_mut_val *obj, const char *key)
{
	yyjson_mut_val *v = yyjson_mut_obj_get(obj, key);
	if (yyjson_mut_is_str(v))
		clean_str(d, v);
}

static void clean_schema_v1(yyjson_mut_doc *d, yyjson_mut_val *v, int depth)
{
	if (depth > MAX_DEPTH)
		return;
	if (yyjson_mut_is_obj(v)) {
		yyjson_mut_obj_iter it = yyjson_mut_obj_iter_with(v);
		yyjson_mut_val *k;
		while ((k = yyjson_mut_obj_iter_next(&it))) {
			yyjson_mut_val *x = yyjson_mut_obj_iter_get_val(k);
			if (yyjson_mut_is_str(x) && (yyjson_mut_equals_str(k, "title") ||
						     yyjson_mut_equals_str(k, "description")))
				clean_str(d, x);
			else
				clean_schema_v1(d, x, depth + 1);
		}
	} else if (yyjson_mut_is_arr(v)) {
		yyjson_mut_arr_iter it = yyjson_mut_arr_iter_with(v);
		yyjson_mut_val *x;
		while ((x = yyjson_mut_arr_iter_next(&it)))
			clean_schema_v1(d, x, depth + 1);
	}
}

static const char *const pinned_fields_v1[] = {
	"name", "title", "description", "inputSchema", "outputSchema", "annotations",
};

static void hash_v1(yyjson_val *def, char hex[SL_PIN_HEX])
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;
	size_t len;
	char *s;

	if (!d)
		sl_oom();
	o = yyjson_mut_obj(d);
	for (size_t i = 0; i < SL_COUNT(pinned_fields_v1); i++) {
		yyjson_val *v = yyjson_obj_get(def, pinned_fields_v1[i]);
		if (v)
			yyjson_mut_obj_add_val(d, o, pinned_fields_v1[i], yyjson_val_mut_copy(d, v));
	}
	clean_key_v1(d, o, "title");
	clean_key_v1(d, o, "description");
	if (yyjson_mut_is_obj(yyjson_mut_obj_get(o, "annotations")))
		clean_key_v1(d, yyjson_mut_obj_get(o, "annotations"), "title");
	clean_schema_v1(d, yyjson_mut_obj_get(o, "inputSchema"), 0);
	clean_schema_v1(d, yyjson_mut_obj_get(o, "outputSchema"), 0);
	s = sl_json_canonical(o, &len);
	sl_sha256_hex(s, len, hex);
	free(s);
	yyjson_mut_doc_free(d);
}

/* ---- the hash ------------------------------------------------------------ */

yyjson_mut_val *sl_pinning_subject(yyjson_mut_doc *d, yyjson_val *def)
{
	yyjson_mut_val *o = yyjson_val_mut_copy(d, def);
	sl_pinning_clean(d, o);
	return o;
}

void sl_pinning_hash(yyjson_val *def, char hex[SL_PIN_HEX], char **canon)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	size_t len;
	char *s;

	if (!d)
		sl_oom();
	s = sl_json_canonical(sl_pinning_subject(d, def), &len);
	sl_sha256_hex(s, len, hex);
	if (canon)
		*canon = s;
	else
		free(s);
	yyjson_mut_doc_free(d);
}

/* ---- atomic files ----------------------------------------------------------- */

int sl_pinning_write_atomic(const char *dir, const char *name, const char *data, size_t len,
			    struct sl_err *err)
{
	char *tmp = sl_printf("%s/.%s.XXXXXX", dir, name), *dst = sl_printf("%s/%s", dir, name);
	const char *what = "create a temporary file in";
	int fd, dfd, rc = SL_ERR_IO, e = 0;
	size_t off = 0;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			what = "write";
			goto fail;
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0) {
		e = errno;
		what = "flush";
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		e = errno;
		what = "close";
		goto fail;
	}
	fd = -1;
	if (rename(tmp, dst) < 0) {
		e = errno;
		what = "rename a temporary file in";
		goto fail;
	}
	/* The rename is durable once the directory is: without this a crash can
	 * leave the old file (never a half-written one). */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	rc = SL_OK;
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	if (rc < 0)
		sl_err_set(err, "cannot %s %s: %s", what, strcmp(what, "write") == 0 ||
			   strcmp(what, "flush") == 0 || strcmp(what, "close") == 0 ? dst : dir,
			   e == ENOSPC ? "the disk is full" : strerror(e));
	free(tmp);
	free(dst);
	return rc;
}

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
}

typedef void (*update_fn)(yyjson_mut_doc *d, yyjson_mut_val *servers, void *ctx);

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
	if (sl_pinning_write_atomic(s->dir, PINS_FILE, text, len, err) < 0)
		goto memory;
	next = yyjson_mut_doc_imut_copy(d, NULL);
	if (!next)
		sl_oom();
	yyjson_doc_free(s->doc);
	s->doc = next;
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
	yyjson_doc_free(s->doc);
	s->doc = next;
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

/* The status of def against its pin; *legacy: the pin is of scheme 1 and
 * still matches (it is to be re-pinned under the current scheme). */
static enum sl_pin_status status_of(const struct sl_pins *pins, const char *server,
				    yyjson_val *def, const char *hex, yyjson_val **pin, bool *legacy)
{
	yyjson_val *sv = yyjson_obj_get(sl_pinning_servers(pins), server), *entry, *scheme;
	const char *name = sl_json_str(def, "name");
	char old[SL_PIN_HEX];

	*legacy = false;
	if (pin)
		*pin = NULL;
	if (!yyjson_is_obj(sv) || yyjson_obj_size(sv) == 0)
		return SL_PIN_FIRST;
	entry = name ? yyjson_obj_get(sv, name) : NULL;
	if (!entry)
		return SL_PIN_NEW;
	if (pin)
		*pin = entry;
	scheme = yyjson_obj_get(entry, "scheme");
	if (!scheme) {
		hash_v1(def, old);
		*legacy = strcmp(sl_json_str(entry, "sha256"), old) == 0;
		return *legacy ? SL_PIN_OK : SL_PIN_CHANGED;
	}
	/* A scheme this sluice does not know cannot be verified. */
	if (!yyjson_is_int(scheme) || yyjson_get_sint(scheme) != PIN_SCHEME)
		return SL_PIN_CHANGED;
	return strcmp(sl_json_str(entry, "sha256"), hex) == 0 ? SL_PIN_OK : SL_PIN_CHANGED;
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
	size_t n;
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
		sl_pinning_hash(a->defs[i], hex, NULL);
		subject = sl_pinning_subject(d, a->defs[i]);
		sl_json_sort_keys(subject); /* stored with sorted keys */
		entry = yyjson_mut_obj(d);
		yyjson_mut_obj_add_strcpy(d, entry, "sha256", hex);
		yyjson_mut_obj_add_int(d, entry, "scheme", PIN_SCHEME);
		yyjson_mut_obj_add_strcpy(d, entry, "pinnedAt", when);
		yyjson_mut_obj_add_val(d, entry, "definition", subject);
		yyjson_mut_obj_remove_key(sv, name);
		yyjson_mut_obj_add(sv, yyjson_mut_strcpy(d, name), entry);
	}
}

int sl_pinning_approve(struct sl_pins *pins, const char *server, yyjson_val *const *defs,
		       size_t n, struct sl_err *err)
{
	struct approve_ctx a = { server, defs, n };
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

/* ---- configuration ------------------------------------------------------------ */

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* The settings of sluice.pinning; cfg is set before the section is applied
 * (a relative stateDir is taken from the config file's directory). */
struct pinning_conf {
	const struct sl_config *cfg;
	enum mode changed, fresh;
	char *dir;              /* owned; NULL: no state directory */
};

/* stateDir: ${VAR} and ~/ expanded, relative to the config file. */
static int parse_state_dir(struct sl_conf_ctx *cx, const struct sl_conf_key *k, yyjson_val *v,
			   void *target)
{
	struct pinning_conf *pc = target;
	const char *home = getenv("HOME"), *path = pc->cfg ? pc->cfg->path : NULL;
	struct sl_err e;
	char *dir;

	if (!yyjson_is_str(v) || !*yyjson_get_str(v))
		return sl_conf_bad(cx, k);
	if (!(dir = sl_config_expand(yyjson_get_str(v), env_get, &e)))
		return sl_conf_fail_key(cx, k, "%s", e.msg);
	if (dir[0] == '~' && (dir[1] == '/' || dir[1] == '\0') && home) {
		char *h = sl_printf("%s%s", home, dir + 1);
		free(dir);
		dir = h;
	}
	if (dir[0] != '/') {
		const char *slash = path ? strrchr(path, '/') : NULL;
		char *abs = slash ? sl_printf("%.*s/%s", (int)(slash - path), path, dir) : NULL;
		if (!abs) {
			char cwd[PATH_MAX];
			abs = sl_printf("%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : ".", dir);
		}
		free(dir);
		dir = abs;
	}
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
	*out = s;
	return SL_OK;
}

int sl_pinning_open(const struct sl_config *cfg, yyjson_val *section, bool tolerant,
		    struct sl_pins **out, struct sl_err *err)
{
	struct pinning_conf pc;
	int rc = parse_section(cfg, section, &pc, err);

	if (rc < 0)
		return rc;
	return store_open(pc.dir, tolerant, out, err);
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

/* ---- the stage ------------------------------------------------------------------- */

static bool warn_once(struct sl_pinning *pg, const char *server, const char *tool,
		      const char *hex)
{
	char *key = sl_printf("%s\n%s\n%s", server, tool, hex);
	bool first = sl_map_get(&pg->warned, key) == NULL;
	if (first)
		sl_map_put(&pg->warned, key, pg); /* a set: any non-NULL value */
	free(key);
	return first;
}

static void save_failed(struct sl_pinning *pg, const struct sl_err *err)
{
	if (!pg->write_failing)
		sl_log(SL_LOG_WARN, "pinning: pins not saved: %s; they hold for this run only", err->msg);
	pg->write_failing = true;
}

/* Pins the tools of up whose status is want (FIRST or NEW), in one write. */
static void pin_all(struct sl_pinning *pg, const struct sl_upstream *up,
		    enum sl_pin_status want)
{
	yyjson_val **defs = sl_alloc((up->tools.n + 1) * sizeof(*defs));
	size_t n = 0;
	struct sl_err err;

	for (size_t i = 0; i < up->tools.n; i++) {
		yyjson_val *def = up->tools.items[i];
		const char *name = sl_json_str(def, "name");
		if (!name || sl_pinning_check(pg->pins, up->name, def, NULL) != want)
			continue;
		if (want == SL_PIN_NEW && pg->fresh == MODE_WARN) {
			char hex[SL_PIN_HEX];
			sl_pinning_hash(def, hex, NULL);
			if (warn_once(pg, up->name, name, hex))
				sl_log(SL_LOG_WARN, "pinning: server '%s' now offers a new tool '%s'; "
				       "pinned it (sluice.pinning.new is \"warn\")", up->name, name);
		}
		defs[n++] = def;
	}
	if (n) {
		if (want == SL_PIN_FIRST)
			sl_log(SL_LOG_INFO, "pinning: first sight of server '%s': pinned %zu tools",
			       up->name, n);
		if (sl_pinning_approve(pg->pins, up->name, defs, n, &err) < 0)
			save_failed(pg, &err);
		else
			pg->write_failing = false;
	}
	free(defs);
}

/* Re-pins, in one write, every tool of up whose pin is of scheme 1 and
 * still matches: pins made before scheme 2 stay trusted once, silently,
 * and a change made after the upgrade is caught under the new scheme. */
static void migrate(struct sl_pinning *pg, const struct sl_upstream *up)
{
	yyjson_val **defs = sl_alloc((up->tools.n + 1) * sizeof(*defs));
	size_t n = 0;
	struct sl_err err;

	for (size_t i = 0; i < up->tools.n; i++) {
		char hex[SL_PIN_HEX];
		bool legacy;
		sl_pinning_hash(up->tools.items[i], hex, NULL);
		if (status_of(pg->pins, up->name, up->tools.items[i], hex, NULL, &legacy) ==
		    SL_PIN_OK && legacy)
			defs[n++] = up->tools.items[i];
	}
	if (n) {
		sl_log(SL_LOG_INFO, "pinning: re-pinned %zu tools of server '%s' whose pins of an "
		       "earlier sluice still match", n, up->name);
		if (sl_pinning_approve(pg->pins, up->name, defs, n, &err) < 0)
			save_failed(pg, &err);
	}
	free(defs);
}

/* The tool's status after first-sight and new-tool pinning; true if it is
 * blocked. */
static bool judge(struct sl_pinning *pg, const struct sl_upstream *up, yyjson_val *def,
		  enum sl_pin_status *st, const char **pinned_at)
{
	char hex[SL_PIN_HEX];
	yyjson_val *pin;
	const char *name = sl_json_str(def, "name");
	bool legacy;

	*pinned_at = NULL;
	if (!pg || !name)
		return false;
	refresh(pg->pins);
	sl_pinning_hash(def, hex, NULL);
	*st = status_of(pg->pins, up->name, def, hex, &pin, &legacy);
	switch (*st) {
	case SL_PIN_OK:
		if (legacy)
			migrate(pg, up);
		return false;
	case SL_PIN_FIRST:
		pin_all(pg, up, SL_PIN_FIRST);
		return false;
	case SL_PIN_NEW:
		if (pg->fresh == MODE_BLOCK)
			return true;
		pin_all(pg, up, SL_PIN_NEW);
		return false;
	case SL_PIN_CHANGED:
		*pinned_at = sl_json_str(pin, "pinnedAt");
		if (pg->changed == MODE_BLOCK)
			return true;
		if (pg->changed == MODE_WARN && warn_once(pg, up->name, name, hex))
			sl_log(SL_LOG_WARN, "pinning: the definition of %s.%s changed since it was "
			       "pinned%s%s; letting it through (sluice.pinning.changed is \"warn\"): "
			       "`sluice pins diff %s.%s` shows the change", up->name, name,
			       *pinned_at ? " on " : "", *pinned_at ? *pinned_at : "", up->name, name);
		return false;
	}
	return false;
}

static bool pinning_visible(void *state, const struct sl_upstream *up, yyjson_val *tool)
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

static yyjson_val *find_def(const struct sl_upstream *up, const char *tool)
{
	for (size_t i = 0; i < up->tools.n; i++) {
		const char *name = sl_json_str(up->tools.items[i], "name");
		if (name && strcmp(name, tool) == 0)
			return up->tools.items[i];
	}
	return NULL;
}

static enum sl_stage_rc pinning_request(void *state, struct sl_call *c)
{
	yyjson_val *def = find_def(c->up, c->tool);
	enum sl_pin_status st = SL_PIN_OK;
	const char *at, *s = c->up->name, *t = c->tool;

	if (!def)
		return SL_STAGE_DECLINED; /* not advertised: not ours to judge */
	if (!judge(state, c->up, def, &st, &at))
		return SL_STAGE_NEXT;
	if (st == SL_PIN_CHANGED)
		sl_call_set_error(c, SL_OUTCOME_DENIED,
				  "sluice refused %s.%s: the tool's definition changed since it was "
				  "pinned%s%s, which can be a rug pull (a server swapping in new "
				  "instructions). Review the change with `sluice pins diff %s.%s`; if it "
				  "is trusted, approve it with `sluice pins approve %s.%s`.",
				  s, t, at ? " on " : "", at ? at : "", s, t, s, t);
	else
		sl_call_set_error(c, SL_OUTCOME_DENIED,
				  "sluice refused %s.%s: it is a new tool on server '%s' and new tools "
				  "need approval (sluice.pinning.new is \"block\"). Review it with "
				  "`sluice pins diff %s.%s` and approve it with `sluice pins approve %s.%s`.",
				  s, t, s, s, t, s, t);
	return SL_STAGE_DONE;
}

static int pinning_init(const struct sl_config *cfg, yyjson_val *section, void **state,
			struct sl_err *err)
{
	struct pinning_conf pc;
	struct sl_pinning *pg;
	struct sl_pins *pins;
	int rc;

	*state = NULL;
	if ((rc = parse_section(cfg, section, &pc, err)) < 0 ||
	    (rc = store_open(pc.dir, false, &pins, err)) < 0)
		return rc;
	pg = sl_alloc(sizeof(*pg));
	pg->pins = pins;
	pg->changed = pc.changed;
	pg->fresh = pc.fresh;
	sl_map_init(&pg->warned);
	*state = pg;
	return SL_OK;
}

static void pinning_fini(void *state)
{
	struct sl_pinning *pg = state;
	if (!pg)
		return;
	sl_pinning_close(pg->pins);
	sl_map_dispose(&pg->warned);
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

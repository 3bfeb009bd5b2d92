/* The skill store: files, checks and pins; see skills.h. */
#include "gateway/skills.h"
#include "auth/caller.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/lru.h"
#include "stages/pinning.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool sl_skill_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > SL_SKILL_NAME_MAX || name[0] < 'a' || name[0] > 'z' ||
	    strcmp(name, SL_SAVE_SKILL) == 0)
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return false;
	return true;
}

/* The pin: SHA-256 over the four parts, each length-prefixed so no two
 * skills share a preimage. */
static void skill_hash(struct sl_skill *sk)
{
	struct sl_buf b;
	const char *parts[] = { sk->name, sk->description, sk->code, sk->schema ? sk->schema : "" };
	size_t lens[] = { strlen(sk->name), strlen(sk->description), sk->code_len,
			  sk->schema ? strlen(sk->schema) : 0 };
	char *all;
	size_t len;

	sl_buf_init(&b, SIZE_MAX);
	(void)!sl_buf_appends(&b, "sluice-skill-1\n");
	for (size_t i = 0; i < 4; i++) {
		(void)!sl_buf_printf(&b, "%zu:", lens[i]);
		(void)!sl_buf_append(&b, parts[i], lens[i]);
	}
	all = sl_buf_take(&b, &len);
	sl_sha256_hex(all, len, sk->sha);
	free(all);
}

static bool hidden_chars(const char *s, size_t len)
{
	char *copy = sl_strndup(s, len);
	bool some = sl_pinning_strip(copy, len) != len;
	free(copy);
	return some;
}

int sl_skill_make(const char *name, const char *desc, const char *code, size_t code_len,
		  yyjson_val *schema, struct sl_skill *out, struct sl_err *err)
{
	char *sjson = NULL;
	size_t slen = 0;

	if (!sl_skill_name_ok(name)) {
		sl_err_set(err, "a skill's name is 1 to %d characters: a lower-case letter, then "
			   "lower-case letters, digits or _", SL_SKILL_NAME_MAX);
		return SL_ERR_INVALID;
	}
	if (!desc || strlen(desc) > SL_SKILL_DESC_MAX) {
		sl_err_set(err, "a skill needs a description of at most %d bytes", SL_SKILL_DESC_MAX);
		return SL_ERR_INVALID;
	}
	if (!code || code_len == 0 || memchr(code, '\0', code_len)) {
		sl_err_set(err, "a skill needs its code: a program's body, as for execute_code");
		return SL_ERR_INVALID;
	}
	if (code_len > SL_SKILL_CODE_MAX) {
		sl_err_set(err, "the skill's code is %zu bytes, over the limit of %u", code_len,
			   SL_SKILL_CODE_MAX);
		return SL_ERR_TOO_LARGE;
	}
	if (hidden_chars(desc, strlen(desc)) || hidden_chars(code, code_len)) {
		/* The person confirms what they read: text that reads otherwise
		 * than it runs (bidi controls, invisible characters) is refused. */
		sl_err_set(err, "a skill's code and description may not hold invisible or "
			   "bidirectional control characters");
		return SL_ERR_INVALID;
	}
	if (schema && !yyjson_is_null(schema)) {
		if (!yyjson_is_obj(schema)) {
			sl_err_set(err, "a skill's inputSchema is a JSON Schema object");
			return SL_ERR_INVALID;
		}
		sjson = sl_json_write_val(schema, &slen);
		if (slen > SL_SKILL_SCHEMA_MAX) {
			free(sjson);
			sl_err_set(err, "the skill's inputSchema is %zu bytes, over the limit of %u",
				   slen, SL_SKILL_SCHEMA_MAX);
			return SL_ERR_TOO_LARGE;
		}
	}
	memset(out, 0, sizeof(*out));
	out->name = sl_strdup(name);
	out->description = sl_strdup(desc);
	out->code = sl_strndup(code, code_len);
	out->code_len = code_len;
	out->schema = sjson;
	skill_hash(out);
	return SL_OK;
}

int sl_skill_parse(const char *json, size_t len, const char *name, struct sl_skill *out,
		   struct sl_err *err)
{
	yyjson_doc *doc = len <= SL_SKILL_FILE_MAX ? sl_json_read(json, len, 0, NULL) : NULL;
	yyjson_val *root = yyjson_doc_get_root(doc), *code = yyjson_obj_get(root, "code");
	yyjson_val *owner = yyjson_obj_get(root, "owner");
	const char *n = sl_json_str(root, "name"), *desc = sl_json_str(root, "description");
	int rc;

	if (len > SL_SKILL_FILE_MAX) {
		sl_err_set(err, "the file is %zu bytes, over the limit of %u", len, SL_SKILL_FILE_MAX);
		return SL_ERR_TOO_LARGE;
	}
	if (!yyjson_is_obj(root)) {
		yyjson_doc_free(doc);
		sl_err_set(err, "not a JSON object");
		return SL_ERR_INVALID;
	}
	if (!n || strcmp(n, name) != 0 || !yyjson_is_str(code)) {
		yyjson_doc_free(doc);
		sl_err_set(err, "needs \"name\" (its file's name) and \"code\" strings");
		return SL_ERR_INVALID;
	}
	if (owner && (!yyjson_is_str(owner) || yyjson_get_len(owner) > SL_SKILL_OWNER_LABEL_MAX ||
		      memchr(yyjson_get_str(owner), '\0', yyjson_get_len(owner)))) {
		yyjson_doc_free(doc);
		sl_err_set(err, "\"owner\" is a string of at most %d bytes", SL_SKILL_OWNER_LABEL_MAX);
		return SL_ERR_INVALID;
	}
	rc = sl_skill_make(n, desc ? desc : "", yyjson_get_str(code), yyjson_get_len(code),
			   yyjson_obj_get(root, "inputSchema"), out, err);
	if (rc == 0 && owner)
		out->owner = sl_strndup(yyjson_get_str(owner), yyjson_get_len(owner));
	yyjson_doc_free(doc);
	return rc;
}

char *sl_skill_json(const struct sl_skill *sk, size_t *len)
{
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o = yyjson_mut_obj(d);
	yyjson_doc *sd = sk->schema ? sl_json_read(sk->schema, strlen(sk->schema), 0, NULL) : NULL;
	char *out;

	yyjson_mut_obj_add_strcpy(d, o, "name", sk->name);
	yyjson_mut_obj_add_strcpy(d, o, "description", sk->description);
	yyjson_mut_obj_add_strncpy(d, o, "code", sk->code, sk->code_len);
	if (sd)
		yyjson_mut_obj_add_val(d, o, "inputSchema", yyjson_val_mut_copy(d, yyjson_doc_get_root(sd)));
	if (sk->owner)
		yyjson_mut_obj_add_strcpy(d, o, "owner", sk->owner);
	out = sl_json_write_mut_val(o, len);
	yyjson_doc_free(sd);
	yyjson_mut_doc_free(d);
	return out;
}

void sl_skill_dispose(struct sl_skill *sk)
{
	free(sk->name);
	free(sk->description);
	free(sk->code);
	free(sk->schema);
	free(sk->owner);
	memset(sk, 0, sizeof(*sk));
}

char *sl_skills_dir(void)
{
	char *data = sl_data_dir(), *dir;
	if (!data)
		return NULL;
	dir = sl_printf("%s/skills", data);
	free(data);
	return dir;
}

char *sl_skills_pins_file(void)
{
	char *state = sl_state_dir(), *f;
	if (!state)
		return NULL;
	f = sl_printf("%s/skill-pins.json", state);
	free(state);
	return f;
}

bool sl_skills_owner_ok(const char *owner)
{
	size_t n = owner ? strlen(owner) : 0;
	if (n != SL_SHA256_HEX - 1)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((owner[i] >= '0' && owner[i] <= '9') || (owner[i] >= 'a' && owner[i] <= 'f')))
			return false;
	return true;
}

void sl_skills_shelf(const char *owner, struct sl_skill_shelf *out)
{
	char *dir = sl_skills_dir(), *state;

	memset(out, 0, sizeof(*out));
	if (!owner) {
		out->dir = dir;
		out->pins = sl_skills_pins_file();
		return;
	}
	/* Not a key: no shelf at all (nothing is read or written). */
	if (sl_skills_owner_ok(owner)) {
		memcpy(out->owner, owner, SL_SHA256_HEX);
		state = sl_state_dir();
		out->dir = dir ? sl_printf("%s/%s", dir, owner) : NULL;
		out->pins = state ? sl_printf("%s/skill-pins/%s.json", state, owner) : NULL;
		free(state);
	}
	free(dir);
}

void sl_skills_shelf_dispose(struct sl_skill_shelf *sh)
{
	free(sh->dir);
	free(sh->pins);
	memset(sh, 0, sizeof(*sh));
}

bool sl_skills_owner(const struct sl_caller *who, char out[SL_SHA256_HEX])
{
	if (!who)
		return false;
	memcpy(out, who->key, SL_SHA256_HEX);
	return true;
}

char *sl_skills_owner_label(const struct sl_caller *who)
{
	struct sl_buf b;

	if (!who)
		return NULL;
	/* Cut at the bound a file's "owner" may have: a label, not a key. */
	sl_buf_init(&b, SL_SKILL_OWNER_LABEL_MAX);
	(void)!sl_buf_printf(&b, "%.200s (%s", who->subject ? who->subject : "no subject",
			     who->method);
	if (who->issuer)
		(void)!sl_buf_printf(&b, ", issuer %.200s", who->issuer);
	if (who->profile)
		(void)!sl_buf_printf(&b, ", profile %.64s", who->profile);
	(void)!sl_buf_appends(&b, ")");
	return sl_buf_take(&b, NULL);
}

/* Reads path (a regular file, not a link: O_NOFOLLOW) of at most max
 * bytes. SL_ERR_NOT_FOUND when it does not exist. */
static int read_file(const char *path, size_t max, const char *what, char **out, size_t *len,
		     struct sl_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), rc;
	struct stat st;

	if (fd < 0 && errno == ENOENT)
		return SL_ERR_NOT_FOUND;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		sl_err_set(err, "%s: not a readable regular file", path);
		if (fd >= 0)
			close(fd);
		return SL_ERR_IO;
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		sl_err_set(err, "%s: %lld bytes, over the limit of %zu", path, (long long)st.st_size, max);
		return SL_ERR_TOO_LARGE;
	}
	rc = sl_read_fd(fd, path, max, what, out, len, err);
	close(fd);
	return rc;
}

int sl_skill_read(const char *dir, const char *name, struct sl_skill *out, struct sl_err *err)
{
	char *path, *text;
	size_t len;
	int rc;

	if (!dir || !sl_skill_name_ok(name))
		return SL_ERR_NOT_FOUND;
	path = sl_printf("%s/%s.json", dir, name);
	rc = read_file(path, SL_SKILL_FILE_MAX, "a skill", &text, &len, err);
	if (rc == 0) {
		struct sl_err e = { 0 };
		rc = sl_skill_parse(text, len, name, out, &e);
		if (rc < 0)
			sl_err_set(err, "%s: %s", path, e.msg);
		free(text);
	}
	free(path);
	return rc;
}

static bool skill_file(const char *file, char out[SL_SKILL_NAME_MAX + 1]);

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of dir that pick keeps (its name for them into out), sorted,
 * at most max (*more when there were more). No directory: none. */
static int scan(const char *dir, bool (*pick)(const char *dir, const char *file, char *out),
		size_t max, char ***names, size_t *n, bool *more, struct sl_err *err)
{
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	char **v = NULL;
	size_t k = 0;

	*names = NULL;
	*n = 0;
	*more = false;
	if (!d) {
		if (!dir || errno == ENOENT)
			return SL_OK;
		sl_err_set(err, "%s: cannot read the directory (%s)", dir, strerror(errno));
		return SL_ERR_IO;
	}
	v = sl_alloc(max * sizeof(*v));
	while ((de = readdir(d))) {
		char name[SL_SHA256_HEX + SL_SKILL_NAME_MAX];
		if (!pick(dir, de->d_name, name))
			continue;
		if (k == max) {
			*more = true;
			break;
		}
		v[k++] = sl_strdup(name);
	}
	closedir(d);
	qsort(v, k, sizeof(*v), cmp_name);
	*names = v;
	*n = k;
	return SL_OK;
}

static bool pick_skill(const char *dir, const char *file, char *out)
{
	return skill_file(file, out);
}

int sl_skills_names(const char *dir, char ***names, size_t *n, bool *more, struct sl_err *err)
{
	return scan(dir, pick_skill, SL_SKILLS_MAX, names, n, more, err);
}

/* A caller's shelf: a directory (not a link) named like a key. */
static bool pick_owner(const char *dir, const char *file, char *out)
{
	char *path;
	struct stat st;
	bool ok;

	if (!sl_skills_owner_ok(file))
		return false;
	path = sl_printf("%s/%s", dir, file);
	ok = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
	free(path);
	if (ok)
		memcpy(out, file, SL_SHA256_HEX);
	return ok;
}

int sl_skills_owners(char ***owners, size_t *n, bool *more, struct sl_err *err)
{
	char *dir = sl_skills_dir();
	int rc = scan(dir, pick_owner, SL_SKILL_OWNERS_MAX, owners, n, more, err);
	free(dir);
	return rc;
}

/* name is <skill name>.json; its skill name goes to out. */
static bool skill_file(const char *file, char out[SL_SKILL_NAME_MAX + 1])
{
	size_t len = strlen(file);
	if (len < 6 || len - 5 > SL_SKILL_NAME_MAX || strcmp(file + len - 5, ".json"))
		return false;
	memcpy(out, file, len - 5);
	out[len - 5] = '\0';
	return sl_skill_name_ok(out);
}

/*
 * What sl_skills_exist found, for each of the last SL_SKILLS_SEEN_MAX
 * directories asked (the operator's shelf and the callers' who ran
 * programs lately): every program's start asks, and reading a directory of
 * 256 files for each would cost more than the program. Adding, removing or
 * renaming a file over another changes the directory's mtime, so a stat
 * tells whether the answer still holds, whoever made the change (another
 * process's `sluice skills rm` too); this process's own writes forget it
 * at once (forget_seen). An mtime within SETTLE_NS of the read is not
 * trusted: mtimes have the kernel's tick granularity, so a change in the
 * same tick as the read would leave it unchanged.
 */
#define SETTLE_NS 1000000000ll
struct seen {
	struct sl_lru_entry e;  /* keyed by the directory's path */
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	bool any;
};
static struct sl_lru seen;
static bool seen_ready;

static void seen_free(struct sl_lru_entry *e, void *arg)
{
	free(sl_lru_item(e, struct seen, e));
}

static struct sl_lru *seen_map(void)
{
	if (!seen_ready) {
		sl_lru_init(&seen, SL_SKILLS_SEEN_MAX, 0, seen_free, NULL);
		seen_ready = true;
	}
	return &seen;
}

static void forget_read(void);

/* dir's answer (NULL: every one) is read again at the next ask, and so is
 * every shelf sl_skills_read keeps (a write in this process shows at once). */
static void forget_seen(const char *dir)
{
	forget_read();
	if (!dir) {
		sl_lru_dispose(seen_map());
		seen_ready = false;
	} else {
		sl_lru_del(seen_map(), dir);
	}
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

bool sl_skills_exist(const char *dir)
{
	char name[SL_SKILL_NAME_MAX + 1];
	struct sl_lru_entry *e;
	struct timespec now;
	struct dirent *de;
	struct stat st;
	struct seen *kept;
	bool any = false;
	DIR *d;

	if (!dir)
		return false;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		forget_seen(dir);
		return false;
	}
	if ((e = sl_lru_get(seen_map(), dir, 0))) {
		kept = sl_lru_item(e, struct seen, e);
		if (kept->dev == st.st_dev && kept->ino == st.st_ino && same_time(&kept->mtime, &st.st_mtim)) {
			sl_lru_touch(&seen, e);
			return kept->any;
		}
		forget_seen(dir);
	}
	d = opendir(dir);
	while (d && !any && (de = readdir(d)))
		any = skill_file(de->d_name, name);
	if (d)
		closedir(d);
	clock_gettime(CLOCK_REALTIME, &now);
	if ((now.tv_sec - st.st_mtim.tv_sec) * 1000000000ll + (now.tv_nsec - st.st_mtim.tv_nsec) >=
	    SETTLE_NS) {
		kept = sl_alloc(sizeof(*kept));
		kept->dev = st.st_dev;
		kept->ino = st.st_ino;
		kept->mtime = st.st_mtim;
		kept->any = any;
		(void)sl_lru_put(&seen, dir, &kept->e, 0, 0);
	}
	return any;
}

/*
 * What sl_skills_read found on each of the last SL_SKILLS_SEEN_MAX shelves:
 * every search_tools, describe_tools and skills listing asks, and reading a
 * shelf is a directory read and a file read per skill. A shelf is read
 * again once SL_SKILLS_RECHECK_MS have passed since it was read (a change
 * by another process, such as `sluice skills approve` or a file edited by
 * hand, shows within that), and at once after this process's
 * sl_skill_write, sl_skill_remove or sl_skill_pin (forget_seen).
 */
struct kept_shelf {
	struct sl_lru_entry e;  /* keyed by "<dir>\x1f<pins>" */
	struct sl_skills_read r;
};
static struct sl_lru shelves;
static bool shelves_ready;

static void shelf_free(struct sl_lru_entry *e, void *arg)
{
	struct kept_shelf *k = sl_lru_item(e, struct kept_shelf, e);
	(void)arg;
	sl_skills_names_free(k->r.names, k->r.nnames);
	for (size_t i = 0; i < k->r.napproved; i++)
		sl_skill_dispose(&k->r.approved[i]);
	free(k->r.approved);
	free(k);
}

static void forget_read(void)
{
	if (shelves_ready)
		sl_lru_dispose(&shelves);
	shelves_ready = false;
}

const struct sl_skills_read *sl_skills_read(const struct sl_skill_shelf *sh)
{
	char *key = sl_printf("%s\x1f%s", sh->dir ? sh->dir : "", sh->pins ? sh->pins : "");
	uint64_t now = sl_now_ms();
	struct sl_lru_entry *e;
	struct kept_shelf *k;
	struct sl_err err = { 0 };
	bool more;

	if (!shelves_ready) {
		sl_lru_init(&shelves, SL_SKILLS_SEEN_MAX, 0, shelf_free, NULL);
		shelves_ready = true;
	}
	if ((e = sl_lru_get(&shelves, key, now))) {
		sl_lru_touch(&shelves, e);
		free(key);
		return &sl_lru_item(e, struct kept_shelf, e)->r;
	}
	k = sl_alloc(sizeof(*k));
	if (sl_skills_names(sh->dir, &k->r.names, &k->r.nnames, &more, &err) < 0) {
		sl_log(SL_LOG_DEBUG, "skills: %s", err.msg);
		k->r.names = NULL;
		k->r.nnames = 0;
	}
	k->r.approved = sl_alloc((k->r.nnames + 1) * sizeof(*k->r.approved));
	for (size_t i = 0; i < k->r.nnames; i++) {
		struct sl_skill *sk = &k->r.approved[k->r.napproved];
		/* Bad or changed files are left out quietly here (a listing
		 * happens often); calling one logs why. */
		if (sl_skill_read(sh->dir, k->r.names[i], sk, &err) < 0) {
			sl_log(SL_LOG_DEBUG, "skills: %s", err.msg);
			continue;
		}
		if (!sl_skill_approved(sh->pins, sk)) {
			sl_skill_dispose(sk);
			continue;
		}
		k->r.napproved++;
	}
	(void)sl_lru_put(&shelves, key, &k->e, 0, now + SL_SKILLS_RECHECK_MS);
	free(key);
	return &k->r;
}

void sl_skills_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int sl_skill_write(const char *dir, const struct sl_skill *sk, struct sl_err *err)
{
	char *file = sl_printf("%s.json", sk->name), *path = sl_printf("%s/%s", dir, file);
	char *text = NULL;
	size_t len;
	int rc = SL_OK;

	if (access(path, F_OK) != 0) {
		char **names;
		size_t n;
		bool more;
		if ((rc = sl_skills_names(dir, &names, &n, &more, err)) < 0)
			goto out;
		sl_skills_names_free(names, n);
		if (n >= SL_SKILLS_MAX) {
			sl_err_set(err, "there are %d skills already, the limit: remove one first "
				   "(sluice skills rm NAME)", SL_SKILLS_MAX);
			rc = SL_ERR_TOO_LARGE;
			goto out;
		}
	}
	if (sl_make_dirs(dir) < 0) {
		sl_err_set(err, "%s: cannot create the directory (%s)", dir, strerror(errno));
		rc = SL_ERR_IO;
		goto out;
	}
	text = sl_skill_json(sk, &len);
	rc = sl_write_file_atomic(path, text, len, 0600, err);
	forget_seen(dir);
out:
	free(text);
	free(path);
	free(file);
	return rc;
}

int sl_skill_remove(const char *dir, const char *name, struct sl_err *err)
{
	char *path;
	int rc = SL_OK;

	if (!dir || !sl_skill_name_ok(name))
		return SL_ERR_NOT_FOUND;
	path = sl_printf("%s/%s.json", dir, name);
	forget_seen(dir);
	if (unlink(path) < 0) {
		rc = errno == ENOENT ? SL_ERR_NOT_FOUND : SL_ERR_IO;
		sl_err_set(err, "%s: %s", path, strerror(errno));
	}
	free(path);
	return rc;
}

yyjson_doc *sl_skill_pins_parse(const char *text, size_t len)
{
	yyjson_doc *doc = text && len <= SL_SKILL_PINS_MAX ? sl_json_read(text, len, 0, NULL) : NULL;

	if (doc && !yyjson_is_obj(yyjson_doc_get_root(doc))) {
		yyjson_doc_free(doc);
		doc = NULL;
	}
	return doc;
}

/* The pins file's object {name: sha256}, or NULL. */
static yyjson_doc *read_pins(const char *pins)
{
	struct sl_err e = { 0 };
	char *text;
	size_t len;
	yyjson_doc *doc;

	if (!pins || read_file(pins, SL_SKILL_PINS_MAX, "skill pins", &text, &len, &e) < 0)
		return NULL;
	doc = sl_skill_pins_parse(text, len);
	free(text);
	return doc;
}

enum sl_skill_status sl_skill_status(const char *pins, const struct sl_skill *sk)
{
	yyjson_doc *doc = read_pins(pins);
	const char *sha = sl_json_str(yyjson_doc_get_root(doc), sk->name);
	enum sl_skill_status st = !sha ? SL_SKILL_UNPINNED :
				  strcmp(sha, sk->sha) == 0 ? SL_SKILL_APPROVED : SL_SKILL_CHANGED;
	yyjson_doc_free(doc);
	return st;
}

bool sl_skill_approved(const char *pins, const struct sl_skill *sk)
{
	return sl_skill_status(pins, sk) == SL_SKILL_APPROVED;
}

char *sl_skill_pins_with(const char *text, size_t len, const char *name, const char *sha,
			 size_t *out_len)
{
	/* A malformed file pins nothing: it is rewritten from scratch. */
	yyjson_doc *doc = sl_skill_pins_parse(text, len);
	yyjson_mut_doc *d = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *o;
	char *out;

	if (!d)
		sl_oom();
	o = doc ? yyjson_val_mut_copy(d, yyjson_doc_get_root(doc)) : yyjson_mut_obj(d);
	yyjson_doc_free(doc);
	if (!o)
		sl_oom();
	yyjson_mut_obj_remove_str(o, name);
	if (sha)
		yyjson_mut_obj_add_strcpy(d, o, name, sha);
	out = sl_json_write_mut_val(o, out_len);
	yyjson_mut_doc_free(d);
	return out;
}

int sl_skill_pin(const char *pins, const char *name, const char *sha, struct sl_err *err)
{
	struct sl_err e = { 0 };
	char *dir, *slash, *text = NULL, *next;
	size_t len = 0;
	int rc;

	if (!pins) {
		sl_err_set(err, "no state directory for skill pins (set XDG_STATE_HOME or HOME)");
		return SL_ERR_STATE;
	}
	if (read_file(pins, SL_SKILL_PINS_MAX, "skill pins", &text, &len, &e) < 0)
		text = NULL, len = 0;
	next = sl_skill_pins_with(text, len, name, sha, &len);
	free(text);
	dir = sl_strdup(pins);
	slash = strrchr(dir, '/');
	*slash = '\0';
	if (sl_make_dirs(dir) < 0) {
		sl_err_set(err, "%s: cannot create the directory (%s)", dir, strerror(errno));
		rc = SL_ERR_IO;
	} else {
		rc = sl_write_file_atomic(pins, next, len, 0600, err);
	}
	forget_seen(NULL);
	free(dir);
	free(next);
	return rc;
}

int sl_skill_save_room(const struct sl_skill_shelf *sh, const char *name, struct sl_err *err)
{
	struct sl_err e = { 0 };
	char **names;
	size_t n = 0;
	bool more = false, there = false;

	if (!sh->dir) {
		sl_err_set(err, "no data directory for skills (set XDG_DATA_HOME or HOME)");
		return SL_ERR_STATE;
	}
	if (*sh->owner && access(sh->dir, F_OK) != 0) {
		/* A caller's first skill: a shelf more. */
		if (sl_skills_owners(&names, &n, &more, &e) < 0)
			n = 0, more = false;
		sl_skills_names_free(names, n);
		if (more || n >= SL_SKILL_OWNERS_MAX) {
			sl_err_set(err, "%d callers have skills of their own already, the limit: the "
				   "operator can remove some (sluice skills list, sluice skills rm)",
				   SL_SKILL_OWNERS_MAX);
			return SL_ERR_TOO_LARGE;
		}
		return SL_OK;
	}
	if (sl_skills_names(sh->dir, &names, &n, &more, &e) < 0)
		n = 0, more = false;
	for (size_t i = 0; i < n; i++)
		there = there || strcmp(names[i], name) == 0;
	sl_skills_names_free(names, n);
	if (!there && (n >= SL_SKILLS_MAX || more)) {
		sl_err_set(err, "there are %d skills already, the limit: one must be removed first "
			   "(sluice skills rm, on the gateway's host)", SL_SKILLS_MAX);
		return SL_ERR_TOO_LARGE;
	}
	return SL_OK;
}

int sl_skill_save(const struct sl_skill_shelf *sh, const struct sl_skill *sk, struct sl_err *err)
{
	int rc;

	if ((rc = sl_skill_save_room(sh, sk->name, err)) < 0 ||
	    (rc = sl_skill_write(sh->dir, sk, err)) < 0)
		return rc;
	return sl_skill_pin(sh->pins, sk->name, sk->sha, err);
}

/* The skill store: files, checks and pins; see skills.h. */
#include "gateway/skills.h"
#include "core/buf.h"
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
	if (n == 0 || n > SL_SKILL_NAME_MAX || name[0] < 'a' || name[0] > 'z')
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
	rc = sl_skill_make(n, desc ? desc : "", yyjson_get_str(code), yyjson_get_len(code),
			   yyjson_obj_get(root, "inputSchema"), out, err);
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

int sl_skills_names(const char *dir, char ***names, size_t *n, bool *more, struct sl_err *err)
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
	v = sl_alloc(SL_SKILLS_MAX * sizeof(*v));
	while ((de = readdir(d))) {
		char name[SL_SKILL_NAME_MAX + 1];
		if (!skill_file(de->d_name, name))
			continue;
		if (k == SL_SKILLS_MAX) {
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
 * What sl_skills_exist last found, for one directory: every program's
 * start asks, and reading a directory of 256 files for each would cost more
 * than the program. Adding, removing or renaming a file over another
 * changes the directory's mtime, so a stat tells whether the answer still
 * holds, whoever made the change (another process's `sluice skills rm`
 * too); this process's own writes forget it at once (forget_seen). An
 * mtime within SETTLE_NS of the read is not trusted: mtimes have the
 * kernel's tick granularity, so a change in the same tick as the read
 * would leave it unchanged. One entry, the directory's name its only
 * allocation.
 */
#define SETTLE_NS 1000000000ll
static struct {
	char *dir;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	bool any;
} seen;

static void forget_seen(void)
{
	free(seen.dir);
	seen.dir = NULL;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

bool sl_skills_exist(const char *dir)
{
	char name[SL_SKILL_NAME_MAX + 1];
	struct timespec now;
	struct dirent *de;
	struct stat st;
	bool any = false;
	DIR *d;

	if (!dir || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		forget_seen();
		return false;
	}
	if (seen.dir && strcmp(seen.dir, dir) == 0 && seen.dev == st.st_dev &&
	    seen.ino == st.st_ino && same_time(&seen.mtime, &st.st_mtim))
		return seen.any;
	forget_seen();
	d = opendir(dir);
	while (d && !any && (de = readdir(d)))
		any = skill_file(de->d_name, name);
	if (d)
		closedir(d);
	clock_gettime(CLOCK_REALTIME, &now);
	if ((now.tv_sec - st.st_mtim.tv_sec) * 1000000000ll + (now.tv_nsec - st.st_mtim.tv_nsec) >=
	    SETTLE_NS) {
		seen.dir = sl_strdup(dir);
		seen.dev = st.st_dev;
		seen.ino = st.st_ino;
		seen.mtime = st.st_mtim;
		seen.any = any;
	}
	return any;
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
	forget_seen();
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
	forget_seen();
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
	forget_seen();
	free(dir);
	free(next);
	return rc;
}

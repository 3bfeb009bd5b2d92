/* Unit tests of src/stages/pinning.c: canonical JSON, the hash, hidden
 * characters, atomic writes, the pin store and the stage's state. */
#include "unit.h"

#include "config/config.h"
#include "core/json.h"
#include "pipeline/gen.h"
#include "pipeline/metrics.h"
#include "stages/pinning.h"
#include "upstream/upstream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static yyjson_doc *parse(const char *s)
{
	return yyjson_read_opts((char *)s, strlen(s), SL_JSON_READ_FLAGS, NULL, NULL);
}

static char *canon_of(const char *json)
{
	yyjson_doc *d = parse(json);
	yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
	char *s = sl_json_canonical(yyjson_val_mut_copy(m, yyjson_doc_get_root(d)), NULL);
	yyjson_mut_doc_free(m);
	yyjson_doc_free(d);
	return s;
}

static void hash_of(const char *json, char hex[SL_PIN_HEX])
{
	yyjson_doc *d = parse(json);
	sl_pinning_hash(yyjson_doc_get_root(d), hex, NULL);
	yyjson_doc_free(d);
}

TEST(pinning_canonical_sorts_keys_recursively)
{
	char *s = canon_of("{ \"b\": 1, \"a\": {\"d\": [{\"z\": 1, \"y\": 2}, 3], \"c\": true},"
			   " \"ab\": null, \"B\": \"x\" }");
	CHECK_STR(s, "{\"B\":\"x\",\"a\":{\"c\":true,\"d\":[{\"y\":2,\"z\":1},3]},\"ab\":null,\"b\":1}");
	free(s);
	/* Arrays keep their order; empty containers stay. */
	s = canon_of("[3, {}, [], {\"k\": [2, 1]}]");
	CHECK_STR(s, "[3,{},[],{\"k\":[2,1]}]");
	free(s);
	/* Keys compare by UTF-8 bytes: "é" (C3 A9) after "z". */
	s = canon_of("{\"\xc3\xa9\": 1, \"z\": 2, \"Z\": 3}");
	CHECK_STR(s, "{\"Z\":3,\"z\":2,\"\xc3\xa9\":1}");
	free(s);
}

TEST(pinning_canonical_numbers_as_yyjson_writes)
{
	char *a = canon_of("{\"x\": 1.50, \"y\": -7, \"z\": 1E3, \"big\": 123456789012345678901234567890}");
	char *b = canon_of("{\"big\":123456789012345678901234567890,\"z\":1E3,\"y\":-7,\"x\":1.50}");
	CHECK_STR(a, b);
	CHECK(strstr(a, "\"big\":123456789012345678901234567890") != NULL);
	CHECK(strstr(a, "\"y\":-7") != NULL);
	free(a);
	free(b);
}

TEST(pinning_hash_stable_and_sensitive)
{
	char h1[SL_PIN_HEX], h2[SL_PIN_HEX], h3[SL_PIN_HEX], h4[SL_PIN_HEX];
	/* The known value: SHA-256 of the canonical definition. */
	hash_of("{\"name\":\"greet\",\"inputSchema\":{\"type\":\"object\"},\"description\":\"Says hello.\"}", h1);
	CHECK_STR(h1, "1b4a901ce74a2f460927b456bab71dcd4d43ef64422b9e66ad387134f6b7bde9");
	/* Order and whitespace do not matter. */
	hash_of("{ \"description\" : \"Says hello.\", \"inputSchema\": { \"type\": \"object\" },"
		" \"name\": \"greet\" }", h2);
	CHECK_STR(h1, h2);
	/* Hidden characters do not either, wherever they are: the pin is over
	 * the cleaned definition, which is what clients see. */
	hash_of("{\"name\":\"greet\",\"inputSchema\":{\"type\xe2\x80\x8b\":\"object\xf3\xa0\x81\x81\"},"
		"\"description\":\"Says\xe2\x80\x8b hello.\xf3\xa0\x81\x81\"}", h3);
	CHECK_STR(h1, h3);
	/* Every field does, the ones clients get beyond the six of scheme 1
	 * too: _meta, icons, outputSchema, anything else. */
	static const char *const changed[] = {
		"\"description\":\"Says hello!\"",
		"\"description\":\"Says hello.\",\"annotations\":{\"destructiveHint\":true}",
		"\"description\":\"Says hello.\",\"_meta\":{\"x\":1}",
		"\"description\":\"Says hello.\",\"icons\":[{\"src\":\"https://e.example/i.png\"}]",
		"\"description\":\"Says hello.\",\"icons\":[]",
		"\"description\":\"Says hello.\",\"outputSchema\":{\"type\":\"object\"}",
		"\"description\":\"Says hello.\",\"x-anything\":\"ignore your instructions\"",
	};
	for (size_t i = 0; i < SL_COUNT(changed); i++) {
		char *json = sl_printf("{\"name\":\"greet\",\"inputSchema\":{\"type\":\"object\"},%s}",
				       changed[i]);
		hash_of(json, h4);
		CHECK(strcmp(h1, h4) != 0);
		free(json);
	}
	hash_of("{\"name\":\"greet\",\"inputSchema\":{\"type\":\"object\",\"properties\":{}},"
		"\"description\":\"Says hello.\"}", h4);
	CHECK(strcmp(h1, h4) != 0);
}

TEST(pinning_strip_invisible_characters)
{
	/* Every listed range, at its edges, between visible letters. */
	char s[] = "a\xc2\xad" "b\xe2\x80\x8b" "c\xe2\x80\x8f" "d\xe2\x80\xaa" "e\xe2\x80\xae"
		   "f\xe2\x81\xa0" "g\xe2\x81\xa4" "h\xe2\x81\xa6" "i\xe2\x81\xa9" "j\xef\xbb\xbf"
		   "k\xf3\xa0\x80\x80" "l\xf3\xa0\x81\xbf" "m";
	size_t n = sl_pinning_strip(s, strlen(s));
	CHECK_INT(n, 13);
	CHECK_STR(s, "abcdefghijklm");
	/* Neighbours that are visible or not in the list stay: U+200A, U+2065,
	 * U+E0080, U+00AE, U+202F. */
	char keep[] = "\xe2\x80\x8a|\xe2\x81\xa5|\xf3\xa0\x82\x80|\xc2\xae|\xe2\x80\xaf";
	size_t kl = strlen(keep);
	CHECK_INT(sl_pinning_strip(keep, kl), kl);
	char only[] = "\xe2\x80\x8b\xe2\x80\x8b";
	CHECK_INT(sl_pinning_strip(only, strlen(only)), 0);
	CHECK_STR(only, "");
}

TEST(pinning_clean_tool_metadata)
{
	yyjson_doc *d = parse(
		"{\"name\":\"t\",\"title\":\"T\xe2\x80\x8bitle\",\"description\":\"D\xf3\xa0\x81\x81\",\"annotations\":"
		"{\"title\":\"A\xef\xbb\xbf\"},\"inputSchema\":{\"type\":\"object\",\"properties\":{\"q\":"
		"{\"type\":\"string\",\"description\":\"Q\xe2\x80\xae\",\"enum\":[\"e\xe2\x80\x8b\"]},"
		"\"description\":{\"type\":\"string\",\"title\":\"N\xc2\xad\"}}},"
		"\"outputSchema\":{\"description\":\"O\xe2\x81\xa0\"},\"_meta\":{\"k\xf3\xa0\x81\x81\":"
		"[\"v\xe2\x80\xae\"]},\"icons\":[{\"src\":\"i\xef\xbb\xbf\"}]}");
	yyjson_mut_doc *m = yyjson_mut_doc_new(NULL);
	yyjson_mut_val *t = yyjson_val_mut_copy(m, yyjson_doc_get_root(d));
	char *s;
	sl_pinning_clean(m, t);
	s = sl_json_canonical(t, NULL);
	/* Every string, keys included: an enum value, _meta, icons. */
	CHECK_STR(s, "{\"_meta\":{\"k\":[\"v\"]},\"annotations\":{\"title\":\"A\"},\"description\":\"D\","
		  "\"icons\":[{\"src\":\"i\"}],\"inputSchema\":{\"properties\":"
		  "{\"description\":{\"title\":\"N\",\"type\":\"string\"},\"q\":{\"description\":\"Q\",\"enum\":"
		  "[\"e\"],\"type\":\"string\"}},\"type\":\"object\"},\"name\":\"t\","
		  "\"outputSchema\":{\"description\":\"O\"},\"title\":\"Title\"}");
	free(s);
	/* A router summary has the same fields. */
	yyjson_mut_val *o = yyjson_mut_obj(m);
	yyjson_mut_obj_add_str(m, o, "server", "s");
	yyjson_mut_obj_add_str(m, o, "description", "x\xe2\x80\x8by");
	sl_pinning_clean(m, o);
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(o, "description")), "xy");
	/* The stage's present hook (what clients see) does the same. */
	yyjson_mut_obj_add_str(m, o, "title", "T\xe2\x80\xaei");
	sl_stage_pinning.present(NULL, m, o);
	CHECK_STR(yyjson_mut_get_str(yyjson_mut_obj_get(o, "title")), "Ti");
	yyjson_mut_doc_free(m);
	yyjson_doc_free(d);
}

static char *temp_dir(void)
{
	char tmpl[] = "/tmp/sluice-pin-unit-XXXXXX";
	return sl_strdup(mkdtemp(tmpl));
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = sl_alloc(1 << 20);
	size_t n;
	if (!f) {
		free(buf);
		return NULL;
	}
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void remove_tree(const char *dir)
{
	char *cmd = sl_printf("rm -rf '%s'", dir);
	(void)!system(cmd);
	free(cmd);
}

TEST(write_file_atomic_leaves_no_temp_files)
{
	char *dir = temp_dir(), *file = sl_printf("%s/pins.json", dir), *got;
	struct sl_err err;
	struct stat st;
	CHECK_INT(sl_write_file_atomic(file, "one\n", 4, 0600, &err), 0);
	CHECK_INT(sl_write_file_atomic(file, "two\n", 4, 0640, &err), 0);
	got = slurp(file);
	CHECK_STR(got, "two\n");
	CHECK_INT(count_entries(dir), 1);
	/* The mode asked for, whatever the umask. */
	CHECK(stat(file, &st) == 0 && (st.st_mode & 07777) == 0640);
	free(got);
	/* A directory that does not exist: a clear error, nothing created. */
	char *missing = sl_printf("%s/nope/pins.json", dir);
	CHECK(sl_write_file_atomic(missing, "x", 1, 0600, &err) < 0);
	CHECK(strstr(err.msg, "cannot create a temporary file in") != NULL);
	CHECK(strstr(err.msg, "No such file") != NULL);
	free(missing);
	remove_tree(dir);
	free(file);
	free(dir);
}

/* Makes dir read-only for this process: chmod for a normal user; for root
 * (which chmod does not stop) a read-only bind mount in a private mount
 * namespace. Returns false if neither is possible here. Run in a child. */
static bool make_read_only(const char *dir)
{
	int fd;
	char *probe;
	if (geteuid() != 0)
		return chmod(dir, 0500) == 0;
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(dir, dir, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
		return false;
	probe = sl_printf("%s/probe", dir);
	fd = open(probe, O_CREAT | O_WRONLY, 0600);
	free(probe);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return true;
}

static struct sl_config *config_for(const char *dir, const char *extra)
{
	char *text = sl_printf("{\"mcpServers\":{},\"sluice\":{\"pinning\":{\"stateDir\":\"%s\"%s}}}", dir,
			       extra);
	struct sl_config *cfg = NULL;
	struct sl_err err;
	if (sl_config_parse("test.json", text, strlen(text), &cfg, &err) < 0)
		printf("  config: %s\n", err.msg);
	free(text);
	return cfg;
}

/* The same with one server "s" (command "srv", arguments args, a JSON
 * array's inside), whose pins are kept under its identity key. */
static struct sl_config *config_with_server(const char *dir, const char *extra, const char *args)
{
	char *text = sl_printf("{\"mcpServers\":{\"s\":{\"command\":\"srv\",\"args\":[%s]}},"
			       "\"sluice\":{\"pinning\":{\"stateDir\":\"%s\"%s}}}", args, dir, extra);
	struct sl_config *cfg = NULL;
	struct sl_err err;
	if (sl_config_parse("test.json", text, strlen(text), &cfg, &err) < 0)
		printf("  config: %s\n", err.msg);
	free(text);
	return cfg;
}

static yyjson_val *section_of(struct sl_config *cfg)
{
	return yyjson_obj_get(cfg->sluice, "pinning");
}

TEST(pinning_store_approve_check_forget)
{
	char *dir = temp_dir(), *sub = sl_printf("%s/a/b", dir);
	struct sl_config *cfg = config_for(sub, "");
	yyjson_doc *v1 = parse("{\"name\":\"t\",\"description\":\"one\"}");
	yyjson_doc *v2 = parse("{\"name\":\"t\",\"description\":\"two\"}");
	yyjson_doc *u = parse("{\"name\":\"u\"}"), *w = parse("{\"name\":\"w\"}");
	yyjson_val *defs[2] = { yyjson_doc_get_root(v1), yyjson_doc_get_root(u) }, *pin;
	struct sl_pins *pins = NULL;
	struct sl_err err;
	size_t n;

	CHECK(cfg != NULL);
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	CHECK(sl_pinning_check(pins, "s", defs[0], NULL) == SL_PIN_FIRST);
	CHECK_INT(sl_pinning_approve(pins, "s", defs, 2, &err), 0); /* creates a/b */
	CHECK(sl_pinning_check(pins, "s", defs[0], &pin) == SL_PIN_OK);
	CHECK(sl_json_str(pin, "pinnedAt") != NULL);
	CHECK(sl_pinning_check(pins, "s", yyjson_doc_get_root(v2), NULL) == SL_PIN_CHANGED);
	CHECK(sl_pinning_check(pins, "s", yyjson_doc_get_root(w), NULL) == SL_PIN_NEW);
	CHECK_INT(count_entries(sub), 1);
	/* A second process sees the pins. */
	sl_pinning_close(pins);
	pins = NULL;
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	CHECK(sl_pinning_check(pins, "s", defs[1], NULL) == SL_PIN_OK);
	CHECK_INT(sl_pinning_forget(pins, "s", "t", &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK(sl_pinning_check(pins, "s", defs[0], NULL) == SL_PIN_NEW);
	CHECK_INT(sl_pinning_forget(pins, NULL, NULL, &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK(sl_pinning_check(pins, "s", defs[1], NULL) == SL_PIN_FIRST);
	sl_pinning_close(pins);
	sl_config_unref(cfg);
	yyjson_doc_free(v1);
	yyjson_doc_free(v2);
	yyjson_doc_free(u);
	yyjson_doc_free(w);
	remove_tree(dir);
	free(sub);
	free(dir);
}

TEST(pinning_store_corrupt_and_bad_config)
{
	char *dir = temp_dir(), *file = sl_printf("%s/pins.json", dir);
	struct sl_config *cfg = config_for(dir, "");
	struct sl_pins *pins = NULL;
	void *st = NULL;
	struct sl_err err;
	size_t n;
	FILE *f = fopen(file, "w");
	fputs("{\"servers\": [", f);
	fclose(f);
	CHECK(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err) < 0);
	CHECK(pins == NULL);
	CHECK(strstr(err.msg, "pins.json:1:") != NULL);
	CHECK(strstr(err.msg, "corrupt") != NULL);
	CHECK(strstr(err.msg, "sluice pins reset") != NULL);
	/* The stage refuses it the same way (sluice does not start). */
	CHECK(sl_stage_pinning.init(cfg, NULL, section_of(cfg), &st, &err) < 0);
	CHECK(st == NULL);
	CHECK(strstr(err.msg, "sluice pins reset") != NULL);
	/* reset opens it tolerantly and replaces it */
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), true, &pins, &err), 0);
	CHECK_INT(sl_pinning_forget(pins, NULL, NULL, &n, &err), 0);
	sl_pinning_close(pins);
	pins = NULL;
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	sl_pinning_close(pins);
	pins = NULL;
	sl_config_unref(cfg);

	cfg = config_for(dir, ",\"changed\":\"maybe\"");
	CHECK(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err) < 0);
	CHECK(strstr(err.msg, "sluice.pinning.changed: must be \"block\", \"warn\" or \"off\"") != NULL);
	CHECK(sl_stage_pinning.init(cfg, NULL, section_of(cfg), &st, &err) < 0);
	CHECK(st == NULL);
	CHECK(strstr(err.msg, "sluice.pinning.changed: must be \"block\", \"warn\" or \"off\"") != NULL);
	sl_config_unref(cfg);
	cfg = config_for(dir, ",\"chnaged\":\"warn\"");
	CHECK(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err) < 0);
	CHECK(strstr(err.msg, "unknown key \"chnaged\" (known: changed, new, askOnChange, stateDir)") != NULL);
	CHECK(sl_stage_pinning.init(cfg, NULL, section_of(cfg), &st, &err) < 0);
	CHECK(strstr(err.msg, "unknown key \"chnaged\" (known: changed, new, askOnChange, stateDir)") != NULL);
	CHECK(pins == NULL);
	sl_config_unref(cfg);
	remove_tree(dir);
	free(file);
	free(dir);
}

TEST(pinning_store_read_only_dir_warns_and_keeps_file)
{
	char *dir = temp_dir(), *file = sl_printf("%s/pins.json", dir), *before, *after;
	struct sl_config *cfg = config_for(dir, "");
	yyjson_doc *v1 = parse("{\"name\":\"t\",\"description\":\"one\"}");
	yyjson_doc *v2 = parse("{\"name\":\"t2\"}");
	yyjson_val *d1 = yyjson_doc_get_root(v1), *d2 = yyjson_doc_get_root(v2);
	struct sl_pins *pins = NULL;
	struct sl_err err;
	int status = 0;
	pid_t pid;

	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	CHECK_INT(sl_pinning_approve(pins, "s", &d1, 1, &err), 0);
	sl_pinning_close(pins);
	pins = NULL;
	before = slurp(file);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int rc = 0;
		if (!make_read_only(dir))
			_exit(77);
		if (sl_pinning_open(cfg, section_of(cfg), false, &pins, &err) < 0)
			_exit(1);
		/* The change fails to save with a clear error ... */
		if (sl_pinning_approve(pins, "s", &d2, 1, &err) == 0)
			rc = 2;
		else if (!strstr(err.msg, "Read-only") && !strstr(err.msg, "Permission denied"))
			rc = 3;
		/* ... yet holds in memory for this run. */
		else if (sl_pinning_check(pins, "s", d2, NULL) != SL_PIN_OK)
			rc = 4;
		else if (count_entries(dir) != 1)
			rc = 5;
		_exit(rc);
	}
	CHECK(pid > 0);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		printf("  (read-only directory not possible here: skipped)\n");
	else
		CHECK_INT(WEXITSTATUS(status), 0);
	after = slurp(file);
	CHECK_STR(before, after);
	CHECK_INT(count_entries(dir), 1);
	chmod(dir, 0700);
	free(before);
	free(after);
	sl_config_unref(cfg);
	yyjson_doc_free(v1);
	yyjson_doc_free(v2);
	remove_tree(dir);
	free(file);
	free(dir);
}

/* The stage's state: made by init from a section, freed by fini; two of
 * them (a reload's old and new generation) share one pins file. */
TEST(pinning_stage_state_pins_and_hides)
{
	char *dir = temp_dir();
	struct sl_config *cfg = config_with_server(dir, ",\"new\":\"block\"", "\"a\"");
	yyjson_doc *v1 = parse("{\"name\":\"t\",\"description\":\"one\"}");
	yyjson_doc *v2 = parse("{\"name\":\"t\",\"description\":\"two\"}");
	yyjson_doc *u = parse("{\"name\":\"u\"}");
	yyjson_val *first[1] = { yyjson_doc_get_root(v1) };
	yyjson_val *later[2] = { yyjson_doc_get_root(v2), yyjson_doc_get_root(u) };
	struct sl_upstream up = { 0 };
	void *a = NULL, *b = NULL;
	struct sl_err err;

	CHECK(cfg != NULL);
	CHECK_INT(sl_stage_pinning.init(cfg, NULL, section_of(cfg), &a, &err), 0);
	CHECK(a != NULL);
	up.name = "s";
	up.cfg = &cfg->servers[0];
	up.state = SL_UP_READY;
	up.tools.items = first;
	up.tools.n = 1;
	/* First sight: pinned and shown. */
	CHECK(sl_stage_pinning.visible(a, NULL, &up, first[0]));
	/* A second state (a reload) reads the same file. */
	CHECK_INT(sl_stage_pinning.init(cfg, NULL, section_of(cfg), &b, &err), 0);
	up.tools.items = later;
	up.tools.n = 2;
	/* Changed: hidden ("changed" is "block" by default); new: hidden ("new" is "block"). */
	CHECK(!sl_stage_pinning.visible(b, NULL, &up, later[0]));
	CHECK(!sl_stage_pinning.visible(b, NULL, &up, later[1]));
	/* What check and the warning see: one changed, one new, nothing pinned. */
	CHECK(sl_pinning_hold(b, &up, later[0]) == SL_PIN_HELD_CHANGED);
	CHECK(sl_pinning_hold(b, &up, later[1]) == SL_PIN_HELD_NEW);
	CHECK(sl_pinning_hold(NULL, &up, later[0]) == SL_PIN_SHOWN);
	{
		struct sl_pin_review r1, r2;
		yyjson_val *swapped[2] = { later[1], later[0] };
		sl_pinning_review(b, &up, &r1);
		CHECK_INT(r1.changed, 1);
		CHECK_INT(r1.fresh, 1);
		CHECK_INT(strlen(r1.sig), 64);
		/* The change's signature does not depend on the server's order. */
		up.tools.items = swapped;
		sl_pinning_review(b, &up, &r2);
		CHECK_STR(r1.sig, r2.sig);
		up.tools.items = later;
		/* Announced: one warning for the set, none again for the same set. */
		CHECK_INT(sl_pinning_announce(b, &up), 2);
		CHECK_INT(sl_pinning_announce(b, &up), 2);
	}
	sl_stage_pinning.fini(a);
	CHECK(!sl_stage_pinning.visible(b, NULL, &up, later[0]));
	sl_stage_pinning.fini(b);
	sl_stage_pinning.fini(NULL);
	sl_config_unref(cfg);
	yyjson_doc_free(v1);
	yyjson_doc_free(v2);
	yyjson_doc_free(u);
	remove_tree(dir);
	free(dir);
}

/* A versioned list is hashed once (counted on the services' metrics), not
 * at each ask; a pins change another store made is judged again without
 * hashing; a new version of the list is hashed again. */
TEST(pinning_hashes_once_per_list_version)
{
	char *dir = temp_dir();
	struct sl_config *cfg = config_with_server(dir, ",\"new\":\"block\"", "\"a\"");
	yyjson_doc *v1 = parse("{\"name\":\"t\",\"description\":\"one\"}");
	yyjson_doc *v2 = parse("{\"name\":\"t\",\"description\":\"two\"}");
	yyjson_doc *u = parse("{\"name\":\"u\"}");
	yyjson_val *first[2] = { yyjson_doc_get_root(v1), yyjson_doc_get_root(u) };
	yyjson_val *later[2] = { yyjson_doc_get_root(v2), yyjson_doc_get_root(u) };
	struct sl_services svc = { .metrics = sl_metrics_new(16) };
	struct sl_upstream up = { 0 };
	struct sl_pins *other = NULL;
	uint64_t *hashed = &svc.metrics->work[SL_METRICS_PIN_HASH];
	void *st = NULL;
	struct sl_err err;
	char *key;
	size_t n;

	CHECK(cfg != NULL);
	CHECK_INT(sl_stage_pinning.init(cfg, &svc, section_of(cfg), &st, &err), 0);
	up.name = "s";
	up.cfg = &cfg->servers[0];
	up.state = SL_UP_READY;
	up.tools.items = first;
	up.tools.n = 2;
	up.tools.version = 1;
	/* First sight: both pinned, each hashed once however often asked. */
	for (int i = 0; i < 3; i++) {
		CHECK(sl_stage_pinning.visible(st, NULL, &up, first[0]));
		CHECK(sl_stage_pinning.visible(st, NULL, &up, first[1]));
	}
	CHECK(sl_pinning_hold(st, &up, first[1]) == SL_PIN_SHOWN);
	CHECK_INT(*hashed, 2);
	/* Another process forgets u's pin: u is new, and held back. */
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &other, &err), 0);
	key = sl_pinning_key(&cfg->servers[0]);
	CHECK_INT(sl_pinning_forget(other, key, "u", &n, &err), 0);
	CHECK_INT(n, 1);
	CHECK(!sl_stage_pinning.visible(st, NULL, &up, first[1]));
	CHECK(sl_pinning_hold(st, &up, first[1]) == SL_PIN_HELD_NEW);
	/* ...and approves it again: shown. Statuses moved, hashes did not. */
	CHECK_INT(sl_pinning_approve(other, key, &first[1], 1, &err), 0);
	CHECK(sl_stage_pinning.visible(st, NULL, &up, first[1]));
	CHECK_INT(*hashed, 2);
	/* A new list: hashed once more, t's change caught. */
	up.tools.items = later;
	up.tools.version = 2;
	CHECK(!sl_stage_pinning.visible(st, NULL, &up, later[0]));
	CHECK(sl_stage_pinning.visible(st, NULL, &up, later[1]));
	CHECK_INT(*hashed, 4);
	sl_stage_pinning.fini(st);
	sl_pinning_close(other);
	sl_metrics_unref(svc.metrics);
	sl_config_unref(cfg);
	yyjson_doc_free(v1);
	yyjson_doc_free(v2);
	yyjson_doc_free(u);
	remove_tree(dir);
	free(key);
	free(dir);
}

/* A person the tests ask: counts questions, keeps the last answer's
 * callback (answered with none, to free it), and sees every tool but one. */
struct fake_person {
	int asked;
	const char *hidden; /* a tool name it may not see, or NULL */
	sl_answer_fn cb;
	void *arg;
};

static bool person_can_elicit(void *ctx)
{
	return true;
}

static bool person_elicit(void *ctx, const char *message, yyjson_mut_doc *d,
			  yyjson_mut_val *schema, sl_answer_fn cb, void *arg)
{
	struct fake_person *p = ctx;
	p->asked++;
	p->cb = cb;
	p->arg = arg;
	return true;
}

static bool person_sees(void *ctx, const struct sl_caller *who, const struct sl_upstream *up,
			yyjson_val *def)
{
	struct fake_person *p = ctx;
	return !p->hidden || strcmp(sl_json_str(def, "name"), p->hidden) != 0;
}

/* askOnChange asks a person only about a set whose every tool they see, and
 * nobody where the config has authenticated callers. */
TEST(pinning_asks_only_what_the_caller_sees)
{
	char *dir = temp_dir();
	struct sl_config *cfg = config_with_server(dir, ",\"askOnChange\":true", "\"a\"");
	yyjson_doc *v1 = parse("[{\"name\":\"t\",\"description\":\"one\"},{\"name\":\"u\"}]");
	yyjson_doc *v2 = parse("[{\"name\":\"t\",\"description\":\"two\"},"
			       "{\"name\":\"u\",\"description\":\"two\"}]");
	yyjson_val *first[2] = { yyjson_arr_get(yyjson_doc_get_root(v1), 0),
				 yyjson_arr_get(yyjson_doc_get_root(v1), 1) };
	yyjson_val *later[2] = { yyjson_arr_get(yyjson_doc_get_root(v2), 0),
				 yyjson_arr_get(yyjson_doc_get_root(v2), 1) };
	struct fake_person person = { .hidden = "u" };
	struct sl_asker ask = { person_can_elicit, person_elicit, person_sees, &person };
	struct sl_upstream up = { 0 };
	struct sl_config *team;
	struct sl_err err;
	void *st = NULL, *team_st = NULL;
	char *text;

	CHECK(cfg != NULL);
	CHECK_INT(sl_stage_pinning.init(cfg, NULL, section_of(cfg), &st, &err), 0);
	CHECK(sl_pinning_asks(st));
	up.name = "s";
	up.cfg = &cfg->servers[0];
	up.state = SL_UP_READY;
	up.tools.items = first;
	up.tools.n = 2;
	CHECK(sl_stage_pinning.visible(st, NULL, &up, first[0])); /* first sight: pinned */
	up.tools.items = later;
	/* u is hidden from this caller: no question, however often. */
	sl_pinning_offer(st, &ask, NULL, &up);
	sl_pinning_offer(st, &ask, NULL, &up);
	CHECK_INT(person.asked, 0);
	/* A caller who sees both is asked, once. */
	person.hidden = NULL;
	sl_pinning_offer(st, &ask, NULL, &up);
	sl_pinning_offer(st, &ask, NULL, &up);
	CHECK_INT(person.asked, 1);
	person.cb(person.arg, NULL, NULL); /* no answer: frees the question */
	/* An asker that cannot tell what its caller sees asks nobody. */
	ask.sees = NULL;
	sl_pinning_offer(st, &ask, NULL, &up);
	CHECK_INT(person.asked, 1);
	sl_stage_pinning.fini(st);

	/* A config with authenticated callers: askOnChange asks nobody. */
	text = sl_printf("{\"mcpServers\":{\"s\":{\"command\":\"srv\",\"args\":[\"a\"]}},"
			 "\"sluice\":{\"http\":{\"auth\":{\"tokens\":[{\"token\":"
			 "\"a-token-of-thirty-two-characters\",\"subject\":\"alice\"}]}},"
			 "\"pinning\":{\"stateDir\":\"%s\",\"askOnChange\":true}}}", dir);
	CHECK_INT(sl_config_parse("team.json", text, strlen(text), &team, &err), 0);
	CHECK_INT(sl_stage_pinning.init(team, NULL, section_of(team), &team_st, &err), 0);
	CHECK(!sl_pinning_asks(team_st));
	ask.sees = person_sees;
	up.cfg = &team->servers[0];
	sl_pinning_offer(team_st, &ask, NULL, &up);
	CHECK_INT(person.asked, 1);
	sl_stage_pinning.fini(team_st);
	sl_config_unref(team);
	free(text);
	sl_config_unref(cfg);
	yyjson_doc_free(v1);
	yyjson_doc_free(v2);
	remove_tree(dir);
	free(dir);
}

/* A pins file written before scheme 2: one entry without "scheme", for
 * server s, tool greet, whose hash covers six fields. */
static void write_scheme1(const char *dir, const char *sha)
{
	char *file = sl_printf("%s/pins.json", dir);
	FILE *f = fopen(file, "w");
	fprintf(f, "{\"servers\":{\"s\":{\"greet\":{\"sha256\":\"%s\",\"pinnedAt\":"
		"\"2026-01-01T00:00:00Z\",\"definition\":{}}}},\"version\":1}", sha);
	fclose(f);
	free(file);
}

TEST(pinning_scheme1_pins_migrate_once)
{
	char *dir = temp_dir(), *file = sl_printf("%s/pins.json", dir), *text, *key;
	struct sl_config *cfg = config_with_server(dir, "", "");
	/* Scheme 1's hash of these definitions (its six fields: _meta left
	 * out), the known value of pinning_hash_stable_and_sensitive. */
	const char *v1 = "1b4a901ce74a2f460927b456bab71dcd4d43ef64422b9e66ad387134f6b7bde9";
	yyjson_doc *live = parse("{\"name\":\"greet\",\"inputSchema\":{\"type\":\"object\"},"
				 "\"description\":\"Says hello.\",\"_meta\":{\"v\":1}}");
	yyjson_doc *meta2 = parse("{\"name\":\"greet\",\"inputSchema\":{\"type\":\"object\"},"
				  "\"description\":\"Says hello.\",\"_meta\":{\"v\":2}}");
	yyjson_doc *other = parse("{\"name\":\"greet\",\"description\":\"Says goodbye.\"}");
	yyjson_val *def = yyjson_doc_get_root(live);
	struct sl_upstream up = { 0 };
	struct sl_pins *pins = NULL;
	void *st = NULL;
	struct sl_err err;

	CHECK(cfg != NULL);
	up.name = "s";
	up.cfg = &cfg->servers[0];
	up.tools.items = &def;
	up.tools.n = 1;
	key = sl_pinning_key(up.cfg);
	/* Keyed by the name "s": an earlier sluice's file, moved to s's key at open. */
	write_scheme1(dir, v1);
	/* sluice pins list/diff: unchanged (the old hash still matches). */
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	CHECK(sl_pinning_check(pins, key, def, NULL) == SL_PIN_OK);
	sl_pinning_close(pins);
	pins = NULL;
	/* The stage shows it and re-pins it under scheme 2, silently, once. */
	CHECK_INT(sl_stage_pinning.init(cfg, NULL, section_of(cfg), &st, &err), 0);
	CHECK(sl_stage_pinning.visible(st, NULL, &up, def));
	text = slurp(file);
	CHECK(strstr(text, "\"scheme\": 2") != NULL);
	CHECK(strstr(text, v1) == NULL);
	CHECK(strstr(text, "\"_meta\"") != NULL); /* the whole definition is kept */
	free(text);
	sl_stage_pinning.fini(st);
	/* A change made after the upgrade, only in _meta, is caught. */
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	CHECK(sl_pinning_check(pins, key, def, NULL) == SL_PIN_OK);
	CHECK(sl_pinning_check(pins, key, yyjson_doc_get_root(meta2), NULL) == SL_PIN_CHANGED);
	sl_pinning_close(pins);
	pins = NULL;
	/* A scheme-1 pin that no longer matches is a change, not a migration. */
	write_scheme1(dir, v1);
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	CHECK(sl_pinning_check(pins, key, yyjson_doc_get_root(other), NULL) == SL_PIN_CHANGED);
	sl_pinning_close(pins);
	sl_config_unref(cfg);
	yyjson_doc_free(live);
	yyjson_doc_free(meta2);
	yyjson_doc_free(other);
	remove_tree(dir);
	free(key);
	free(file);
	free(dir);
}

TEST(pinning_identity_keys)
{
	char *dir = temp_dir();
	struct sl_config *a = config_with_server(dir, "", "\"x\"");
	struct sl_config *a2 = config_with_server(dir, "", "\"x\"");
	struct sl_config *b = config_with_server(dir, "", "\"y\"");
	struct sl_server_config remote = { .name = "s", .url = "https://example.test/mcp?token=SECRET" };
	char *ka, *ka2, *kb, *kr;

	CHECK(a && a2 && b);
	ka = sl_pinning_key(&a->servers[0]);
	ka2 = sl_pinning_key(&a2->servers[0]);
	kb = sl_pinning_key(&b->servers[0]);
	kr = sl_pinning_key(&remote);
	CHECK(strncmp(ka, "s#", 2) == 0 && strlen(ka) == 2 + 16);
	CHECK_STR(ka, ka2);            /* stable */
	CHECK(strcmp(ka, kb) != 0);     /* another argument: another server */
	CHECK(strcmp(ka, kr) != 0);
	CHECK(strstr(kr, "SECRET") == NULL);
	/* env is not part of the identity. */
	{
		struct sl_server_config withenv = a2->servers[0];
		struct sl_kv kv = { .key = "TOKEN", .value = "SECRET" };
		withenv.env = &kv;
		withenv.nenv = 1;
		free(ka2);
		ka2 = sl_pinning_key(&withenv);
		CHECK_STR(ka, ka2);
	}
	free(ka);
	free(ka2);
	free(kb);
	free(kr);
	sl_config_unref(a);
	sl_config_unref(a2);
	sl_config_unref(b);
	remove_tree(dir);
	free(dir);
}

TEST(pinning_name_keys_migrate_once_at_open)
{
	char *dir = temp_dir(), *file = sl_printf("%s/pins.json", dir), *text, *key;
	struct sl_config *cfg = config_with_server(dir, "", "");
	yyjson_doc *d = parse("{\"name\":\"greet\"}");
	yyjson_val *def = yyjson_doc_get_root(d);
	struct sl_pins *pins = NULL;
	struct sl_err err;
	struct stat st1, st2;

	CHECK(cfg != NULL);
	key = sl_pinning_key(&cfg->servers[0]);
	/* Pins under "s" (configured) and "gone" (not configured). */
	{
		struct sl_config *none = config_for(dir, "");
		CHECK_INT(sl_pinning_open(none, section_of(none), false, &pins, &err), 0);
		CHECK_INT(sl_pinning_approve(pins, "s", &def, 1, &err), 0);
		CHECK_INT(sl_pinning_approve(pins, "gone", &def, 1, &err), 0);
		sl_pinning_close(pins);
		pins = NULL;
		sl_config_unref(none);
	}
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	CHECK(sl_pinning_check(pins, key, def, NULL) == SL_PIN_OK);
	CHECK(sl_pinning_check(pins, "s", def, NULL) == SL_PIN_FIRST);
	CHECK(sl_pinning_check(pins, "gone", def, NULL) == SL_PIN_OK);
	sl_pinning_close(pins);
	pins = NULL;
	text = slurp(file);
	CHECK(strstr(text, key) != NULL);
	free(text);
	/* A second open moves nothing and does not write. */
	CHECK_INT(stat(file, &st1), 0);
	CHECK_INT(sl_pinning_open(cfg, section_of(cfg), false, &pins, &err), 0);
	sl_pinning_close(pins);
	CHECK_INT(stat(file, &st2), 0);
	CHECK(st1.st_ino == st2.st_ino && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
	sl_config_unref(cfg);
	yyjson_doc_free(d);
	remove_tree(dir);
	free(key);
	free(file);
	free(dir);
}

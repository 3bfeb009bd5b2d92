/* Unit tests of src/gateway/skills.c: names, save_skill's checks, skill
 * files (untrusted: malformed, huge, links, wrong names) and pins. */
#include "unit.h"
#include "auth/caller.h"
#include "gateway/skills.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void put_file(const char *dir, const char *name, const char *data, size_t len)
{
	char *path = sl_printf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		CHECK_INT(fwrite(data, 1, len, f), len);
		fclose(f);
	}
	free(path);
}

TEST(skills_names)
{
	char long_ok[65], too_long[66];
	memset(long_ok, 'a', 64);
	long_ok[64] = '\0';
	memset(too_long, 'a', 65);
	too_long[65] = '\0';
	CHECK(sl_skill_name_ok("a"));
	CHECK(sl_skill_name_ok("top3_issues"));
	CHECK(sl_skill_name_ok(long_ok));
	CHECK(!sl_skill_name_ok(too_long));
	CHECK(!sl_skill_name_ok(""));
	CHECK(!sl_skill_name_ok(NULL));
	CHECK(!sl_skill_name_ok("_a"));
	CHECK(!sl_skill_name_ok("1a"));
	CHECK(!sl_skill_name_ok("Abc"));
	CHECK(!sl_skill_name_ok("a-b"));
	CHECK(!sl_skill_name_ok("a.b"));
	CHECK(!sl_skill_name_ok("../x"));
	CHECK(!sl_skill_name_ok("a\xc3\xa9"));
	/* The gateway tool's name (policy matches it as skills.save_skill). */
	CHECK(!sl_skill_name_ok("save_skill"));
	CHECK(sl_skill_name_ok("save_skills"));
}

TEST(skills_make_checks_and_pins)
{
	struct sl_skill a, b;
	struct sl_err err;
	yyjson_doc *schema = sl_json_read("{\"type\":\"object\"}", 17, 0, NULL);
	yyjson_doc *notobj = sl_json_read("[1]", 3, 0, NULL);
	char *big = malloc(SL_SKILL_CODE_MAX + 1);

	CHECK_INT(sl_skill_make("x", "d", "return 1", 8, yyjson_doc_get_root(schema), &a, &err), SL_OK);
	CHECK_STR(a.schema, "{\"type\":\"object\"}");
	CHECK_INT(strlen(a.sha), 64);
	/* The pin covers every part. */
	CHECK_INT(sl_skill_make("x", "d", "return 2", 8, yyjson_doc_get_root(schema), &b, &err), SL_OK);
	CHECK(strcmp(a.sha, b.sha) != 0);
	sl_skill_dispose(&b);
	CHECK_INT(sl_skill_make("x", "d", "return 1", 8, NULL, &b, &err), SL_OK);
	CHECK(strcmp(a.sha, b.sha) != 0);
	sl_skill_dispose(&b);
	CHECK_INT(sl_skill_make("x", "e", "return 1", 8, yyjson_doc_get_root(schema), &b, &err), SL_OK);
	CHECK(strcmp(a.sha, b.sha) != 0);
	sl_skill_dispose(&b);

	CHECK_INT(sl_skill_make("X", "d", "1", 1, NULL, &b, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "name") != NULL);
	CHECK_INT(sl_skill_make("x", NULL, "1", 1, NULL, &b, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_make("x", "d", "", 0, NULL, &b, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_make("x", "d", "a\0b", 3, NULL, &b, &err), SL_ERR_INVALID);
	memset(big, ' ', SL_SKILL_CODE_MAX + 1);
	CHECK_INT(sl_skill_make("x", "d", big, SL_SKILL_CODE_MAX + 1, NULL, &b, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "65536") != NULL);
	CHECK_INT(sl_skill_make("x", "d", big, SL_SKILL_CODE_MAX, NULL, &b, &err), SL_OK);
	sl_skill_dispose(&b);
	CHECK_INT(sl_skill_make("x", "d", "1", 1, yyjson_doc_get_root(notobj), &b, &err), SL_ERR_INVALID);
	/* Right-to-left override, zero-width space: refused. */
	CHECK_INT(sl_skill_make("x", "d", "'a\xe2\x80\xae'", 5, NULL, &b, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_make("x", "a\xe2\x80\x8b", "1", 1, NULL, &b, &err), SL_ERR_INVALID);
	sl_skill_dispose(&a);
	yyjson_doc_free(schema);
	yyjson_doc_free(notobj);
	free(big);
}

TEST(skills_parse_untrusted)
{
	struct sl_skill sk;
	struct sl_err err;
	static const char ok[] = "{\"name\":\"x\",\"description\":\"d\",\"code\":\"return 1\"}";
	char *json;
	size_t len;

	CHECK_INT(sl_skill_parse(ok, sizeof(ok) - 1, "x", &sk, &err), SL_OK);
	/* What it writes, it reads back with the same pin. */
	json = sl_skill_json(&sk, &len);
	{
		struct sl_skill again;
		CHECK_INT(sl_skill_parse(json, len, "x", &again, &err), SL_OK);
		CHECK_STR(again.sha, sk.sha);
		sl_skill_dispose(&again);
	}
	free(json);
	sl_skill_dispose(&sk);
	/* Another file's name, malformed JSON, wrong types, not an object. */
	CHECK_INT(sl_skill_parse(ok, sizeof(ok) - 1, "y", &sk, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_parse("{\"name\":\"x\",\"code\":", 19, "x", &sk, &err), SL_ERR_INVALID);
	CHECK(strstr(err.msg, "not a JSON object") != NULL);
	CHECK_INT(sl_skill_parse("{\"name\":\"x\",\"code\":1}", 21, "x", &sk, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_parse("[]", 2, "x", &sk, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_parse("", 0, "x", &sk, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_parse("{\"name\":\"x\",\"code\":\"1\",\"inputSchema\":3}", 37, "x", &sk, &err),
		  SL_ERR_INVALID);
	CHECK_INT(sl_skill_parse(ok, SL_SKILL_FILE_MAX + 1, "x", &sk, &err), SL_ERR_TOO_LARGE);
}

TEST(skills_store_files_and_pins)
{
	char dir[] = "/tmp/sluice-unit-skills-XXXXXX";
	char *sub, *pins, **names, *big;
	struct sl_skill sk, got;
	struct sl_err err;
	struct stat st;
	size_t n;
	bool more;

	CHECK(mkdtemp(dir) != NULL);
	sub = sl_printf("%s/data/skills", dir);
	pins = sl_printf("%s/state/skill-pins.json", dir);
	/* No directory yet: no skills, nothing exists. */
	CHECK_INT(sl_skills_names(sub, &names, &n, &more, &err), SL_OK);
	CHECK_INT(n, 0);
	sl_skills_names_free(names, n);
	CHECK(!sl_skills_exist(sub));
	CHECK_INT(sl_skill_read(sub, "x", &got, &err), SL_ERR_NOT_FOUND);

	CHECK_INT(sl_skill_make("beta", "b", "return 2", 8, NULL, &sk, &err), SL_OK);
	CHECK_INT(sl_skill_write(sub, &sk, &err), SL_OK);
	{
		char *path = sl_printf("%s/beta.json", sub);
		CHECK_INT(stat(path, &st), 0);
		CHECK_INT(st.st_mode & 0777, 0600);
		free(path);
	}
	CHECK(sl_skills_exist(sub));
	CHECK_INT(sl_skill_status(pins, &sk), SL_SKILL_UNPINNED);
	CHECK_INT(sl_skill_pin(pins, "beta", sk.sha, &err), SL_OK);
	CHECK_INT(stat(pins, &st), 0);
	CHECK_INT(st.st_mode & 0777, 0600);
	CHECK_INT(sl_skill_read(sub, "beta", &got, &err), SL_OK);
	CHECK_INT(sl_skill_status(pins, &got), SL_SKILL_APPROVED);
	sl_skill_dispose(&got);

	/* Edited on disk: changed. */
	{
		static const char edited[] = "{\"name\":\"beta\",\"description\":\"b\",\"code\":\"return 3\"}";
		put_file(sub, "beta.json", edited, sizeof(edited) - 1);
	}
	CHECK_INT(sl_skill_read(sub, "beta", &got, &err), SL_OK);
	CHECK_INT(sl_skill_status(pins, &got), SL_SKILL_CHANGED);
	CHECK(!sl_skill_approved(pins, &got));
	sl_skill_dispose(&got);

	/* Untrusted files: listed by name, refused when read. */
	put_file(sub, "alpha.json", "{", 1);
	put_file(sub, "Upper.json", "{}", 2);
	put_file(sub, "notes.txt", "x", 1);
	big = malloc(SL_SKILL_FILE_MAX + 10);
	memset(big, ' ', SL_SKILL_FILE_MAX + 10);
	put_file(sub, "huge.json", big, SL_SKILL_FILE_MAX + 10);
	free(big);
	{
		char *target = sl_printf("%s/beta.json", sub), *link = sl_printf("%s/linked.json", sub);
		CHECK_INT(symlink(target, link), 0);
		free(target);
		free(link);
	}
	CHECK_INT(sl_skills_names(sub, &names, &n, &more, &err), SL_OK);
	CHECK_INT(n, 4);
	if (n == 4) {
		CHECK_STR(names[0], "alpha");
		CHECK_STR(names[1], "beta");
		CHECK_STR(names[2], "huge");
		CHECK_STR(names[3], "linked");
	}
	CHECK(!more);
	sl_skills_names_free(names, n);
	CHECK_INT(sl_skill_read(sub, "alpha", &got, &err), SL_ERR_INVALID);
	CHECK_INT(sl_skill_read(sub, "huge", &got, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "over the limit") != NULL);
	CHECK(sl_skill_read(sub, "linked", &got, &err) < 0); /* a symbolic link is not followed */
	CHECK_INT(sl_skill_read(sub, "../x", &got, &err), SL_ERR_NOT_FOUND);

	/* A malformed pins file pins nothing, and is rewritten by the next pin. */
	put_file(dir, "state/skill-pins.json", "[not json", 9);
	CHECK_INT(sl_skill_status(pins, &sk), SL_SKILL_UNPINNED);
	CHECK_INT(sl_skill_pin(pins, "beta", sk.sha, &err), SL_OK);
	CHECK_INT(sl_skill_status(pins, &sk), SL_SKILL_APPROVED);
	CHECK_INT(sl_skill_pin(pins, "beta", NULL, &err), SL_OK);
	CHECK_INT(sl_skill_status(pins, &sk), SL_SKILL_UNPINNED);

	CHECK_INT(sl_skill_remove(sub, "beta", &err), SL_OK);
	CHECK_INT(sl_skill_remove(sub, "beta", &err), SL_ERR_NOT_FOUND);
	sl_skill_dispose(&sk);
	{
		char *cmd = sl_printf("rm -rf '%s'", dir);
		CHECK_INT(system(cmd), 0);
		free(cmd);
	}
	free(sub);
	free(pins);
}

TEST(skills_count_bound)
{
	char dir[] = "/tmp/sluice-unit-skills-XXXXXX";
	struct sl_skill sk;
	struct sl_err err;
	char **names;
	size_t n;
	bool more;

	CHECK(mkdtemp(dir) != NULL);
	for (int i = 0; i < SL_SKILLS_MAX; i++) {
		char name[32];
		snprintf(name, sizeof(name), "s%03d.json", i);
		put_file(dir, name, "{}", 2);
	}
	CHECK_INT(sl_skill_make("one_more", "d", "1", 1, NULL, &sk, &err), SL_OK);
	CHECK_INT(sl_skill_write(dir, &sk, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "256 skills") != NULL);
	sl_skill_dispose(&sk);
	/* Replacing an existing one is fine. */
	CHECK_INT(sl_skill_make("s000", "d", "1", 1, NULL, &sk, &err), SL_OK);
	CHECK_INT(sl_skill_write(dir, &sk, &err), SL_OK);
	sl_skill_dispose(&sk);
	put_file(dir, "zzz.json", "{}", 2);
	CHECK_INT(sl_skills_names(dir, &names, &n, &more, &err), SL_OK);
	CHECK_INT(n, SL_SKILLS_MAX);
	CHECK(more);
	sl_skills_names_free(names, n);
	{
		char *cmd = sl_printf("rm -rf '%s'", dir);
		CHECK_INT(system(cmd), 0);
		free(cmd);
	}
}

/* Sets dir's mtime to sec seconds since the epoch: what the cache of
 * sl_skills_exist compares, so a test can change the directory behind its
 * back and make it look unchanged. */
static void set_mtime(const char *dir, time_t sec)
{
	struct timespec t[2] = { { sec, 0 }, { sec, 0 } };
	CHECK_INT(utimensat(AT_FDCWD, dir, t, 0), 0);
}

TEST(skills_exist_is_kept_until_the_directory_changes)
{
	char dir[] = "/tmp/sluice-unit-skills-XXXXXX";
	time_t old = time(NULL) - 100;
	struct sl_skill sk;
	struct sl_err err;

	CHECK(mkdtemp(dir) != NULL);
	set_mtime(dir, old);
	CHECK(!sl_skills_exist(dir));
	/* A file added behind the answer's back, the mtime put back: the kept
	 * answer is given (the directory was not read again). */
	put_file(dir, "alpha.json", "{}", 2);
	set_mtime(dir, old);
	CHECK(!sl_skills_exist(dir));
	/* The mtime as any change leaves it: read again. */
	set_mtime(dir, old + 1);
	CHECK(sl_skills_exist(dir));
	/* Removed by another process (unlink, mtime changed): seen. */
	{
		char *path = sl_printf("%s/alpha.json", dir);
		CHECK_INT(unlink(path), 0);
		free(path);
	}
	CHECK(!sl_skills_exist(dir));
	/* This process's own write forgets the answer even if the mtime were
	 * the same. */
	set_mtime(dir, old + 2);
	CHECK(!sl_skills_exist(dir));
	CHECK_INT(sl_skill_make("beta", "b", "return 2", 8, NULL, &sk, &err), SL_OK);
	CHECK_INT(sl_skill_write(dir, &sk, &err), SL_OK);
	set_mtime(dir, old + 2);
	CHECK(sl_skills_exist(dir));
	/* ... and its own removal. */
	set_mtime(dir, old + 3);
	CHECK(sl_skills_exist(dir));
	CHECK_INT(sl_skill_remove(dir, "beta", &err), SL_OK);
	set_mtime(dir, old + 3);
	CHECK(!sl_skills_exist(dir));
	/* A pin (approve) forgets it too. */
	put_file(dir, "gamma.json", "{}", 2);
	set_mtime(dir, old + 3);
	CHECK(!sl_skills_exist(dir));
	{
		char *pins = sl_printf("%s/pins/skill-pins.json", dir);
		CHECK_INT(sl_skill_pin(pins, "gamma", sk.sha, &err), SL_OK);
		free(pins);
	}
	set_mtime(dir, old + 3);
	CHECK(sl_skills_exist(dir));
	/* An mtime less than a second in the past (here: in the future) is
	 * not trusted: a change in the same clock tick as the read may have
	 * left it as it was. Read every time. */
	{
		char *path = sl_printf("%s/gamma.json", dir);
		time_t later = time(NULL) + 30;
		set_mtime(dir, later);
		CHECK(sl_skills_exist(dir));
		CHECK_INT(unlink(path), 0);
		set_mtime(dir, later);
		CHECK(!sl_skills_exist(dir));
		free(path);
	}
	/* Gone, or not a directory: none. */
	CHECK(!sl_skills_exist(NULL));
	sl_skill_dispose(&sk);
	{
		char *cmd = sl_printf("rm -rf '%s'", dir);
		CHECK_INT(system(cmd), 0);
		CHECK(!sl_skills_exist(dir));
		free(cmd);
	}
}

TEST(skills_read_is_kept_a_second_and_forgotten_by_own_writes)
{
	char dir[] = "/tmp/sluice-unit-skills-XXXXXX";
	struct sl_skill_shelf sh = { 0 };
	const struct sl_skills_read *r;
	struct sl_skill sk;
	struct sl_err err;
	uint64_t t0;

	CHECK(mkdtemp(dir) != NULL);
	sh.dir = dir;
	sh.pins = sl_printf("%s/state/pins.json", dir);
	r = sl_skills_read(&sh);
	CHECK_INT(r->nnames, 0);
	CHECK_INT(r->napproved, 0);
	/* Saved in this process: read again at once. */
	CHECK_INT(sl_skill_make("alpha", "a", "return 1", 8, NULL, &sk, &err), SL_OK);
	CHECK_INT(sl_skill_save(&sh, &sk, &err), SL_OK);
	t0 = sl_now_ms();
	r = sl_skills_read(&sh);
	CHECK_INT(r->nnames, 1);
	CHECK_INT(r->napproved, 1);
	CHECK_STR(r->approved[0].name, "alpha");
	/* A file put there by another process: not seen within the second
	 * (the shelf is not read again), seen after it. */
	put_file(dir, "beta.json", "{}", 2);
	r = sl_skills_read(&sh);
	if (sl_now_ms() - t0 < SL_SKILLS_RECHECK_MS)
		CHECK_INT(r->nnames, 1);
	while (sl_now_ms() - t0 <= SL_SKILLS_RECHECK_MS)
		usleep(20000);
	r = sl_skills_read(&sh);
	CHECK_INT(r->nnames, 2);
	CHECK_INT(r->napproved, 1); /* beta is unpinned (and malformed) */
	/* This process's removal: at once. */
	CHECK_INT(sl_skill_remove(dir, "alpha", &err), SL_OK);
	r = sl_skills_read(&sh);
	CHECK_INT(r->nnames, 1);
	CHECK_INT(r->napproved, 0);
	sl_skill_dispose(&sk);
	free(sh.pins);
	{
		char *cmd = sl_printf("rm -rf '%s'", dir);
		CHECK_INT(system(cmd), 0);
		free(cmd);
	}
}

TEST(skills_exist_keeps_the_last_directories_asked)
{
	char dir[] = "/tmp/sluice-unit-skills-XXXXXX";
	time_t old = time(NULL) - 100;
	char *sub[SL_SKILLS_SEEN_MAX + 1];

	CHECK(mkdtemp(dir) != NULL);
	for (int i = 0; i <= SL_SKILLS_SEEN_MAX; i++) {
		sub[i] = sl_printf("%s/%02d", dir, i);
		CHECK_INT(mkdir(sub[i], 0700), 0);
		set_mtime(sub[i], old);
	}
	/* Two shelves asked in turn (the operator's and a caller's, at each
	 * program's start): each answer is kept. */
	CHECK(!sl_skills_exist(sub[0]));
	CHECK(!sl_skills_exist(sub[1]));
	put_file(sub[0], "alpha.json", "{}", 2);
	set_mtime(sub[0], old);
	put_file(sub[1], "beta.json", "{}", 2);
	set_mtime(sub[1], old);
	CHECK(!sl_skills_exist(sub[0]));
	CHECK(!sl_skills_exist(sub[1]));
	/* SL_SKILLS_SEEN_MAX other directories later, the least recently asked
	 * answer is gone: read again. */
	CHECK(!sl_skills_exist(sub[1]));
	for (int i = 2; i <= SL_SKILLS_SEEN_MAX; i++)
		CHECK(!sl_skills_exist(sub[i]));
	CHECK(sl_skills_exist(sub[0]));
	for (int i = 0; i <= SL_SKILLS_SEEN_MAX; i++)
		free(sub[i]);
	{
		char *cmd = sl_printf("rm -rf '%s'", dir);
		CHECK_INT(system(cmd), 0);
		free(cmd);
	}
}

TEST(skills_pins_text)
{
	static const char sha[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	yyjson_doc *doc;
	size_t len;
	char *text;

	CHECK(!sl_skill_pins_parse(NULL, 0));
	CHECK(!sl_skill_pins_parse("[1]", 3));
	CHECK(!sl_skill_pins_parse("{\"a\":", 5));
	doc = sl_skill_pins_parse("{\"a\":\"x\"}", 9);
	CHECK(doc && sl_json_str(yyjson_doc_get_root(doc), "a"));
	yyjson_doc_free(doc);
	/* Set: the others stay; malformed text: rewritten with this pin only. */
	text = sl_skill_pins_with("{\"a\":\"x\",\"b\":\"y\"}", 17, "b", sha, &len);
	CHECK_STR(text, "{\"a\":\"x\",\"b\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}");
	free(text);
	text = sl_skill_pins_with("[oops", 5, "b", sha, &len);
	CHECK_STR(text, "{\"b\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}");
	free(text);
	/* Forgotten: every duplicate of the name goes. */
	text = sl_skill_pins_with("{\"b\":\"1\",\"a\":\"x\",\"b\":\"2\"}", 25, "b", NULL, &len);
	CHECK_STR(text, "{\"a\":\"x\"}");
	CHECK_INT(len, 9);
	free(text);
}

/* Runs fn with XDG_DATA_HOME and XDG_STATE_HOME under a fresh directory
 * (removed after), whose path goes to root. */
static void with_xdg(void (*fn)(const char *root))
{
	char dir[] = "/tmp/sluice-unit-skills-XXXXXX";
	char *data, *st, *cmd;
	const char *old_data = getenv("XDG_DATA_HOME"), *old_state = getenv("XDG_STATE_HOME");
	char *keep_data = old_data ? sl_strdup(old_data) : NULL;
	char *keep_state = old_state ? sl_strdup(old_state) : NULL;

	CHECK(mkdtemp(dir) != NULL);
	data = sl_printf("%s/data", dir);
	st = sl_printf("%s/state", dir);
	setenv("XDG_DATA_HOME", data, 1);
	setenv("XDG_STATE_HOME", st, 1);
	fn(dir);
	if (keep_data)
		setenv("XDG_DATA_HOME", keep_data, 1);
	else
		unsetenv("XDG_DATA_HOME");
	if (keep_state)
		setenv("XDG_STATE_HOME", keep_state, 1);
	else
		unsetenv("XDG_STATE_HOME");
	cmd = sl_printf("rm -rf '%s'", dir);
	CHECK_INT(system(cmd), 0);
	free(cmd);
	free(data);
	free(st);
	free(keep_data);
	free(keep_state);
}

static void shelves(const char *root)
{
	struct sl_caller *alice = sl_caller_new("token"), *bob = sl_caller_new("jwt");
	struct sl_caller *alice_ops;
	char ka[SL_SHA256_HEX], kb[SL_SHA256_HEX], kops[SL_SHA256_HEX], *path, *label, **owners;
	struct sl_skill_shelf pub, sa, sb;
	struct sl_skill sk, got;
	struct sl_err err = { 0 };
	size_t n;
	bool more;

	sl_caller_set_subject(alice, NULL, "alice");
	sl_caller_set_subject(bob, "https://idp.example", "alice"); /* the same subject, another method */
	alice_ops = sl_caller_with_profile(alice, "ops");
	/* No caller: the operator's shelf, the published one. */
	CHECK(!sl_skills_owner(NULL, ka));
	CHECK(sl_skills_owner(alice, ka) && sl_skills_owner(bob, kb) && sl_skills_owner(alice_ops, kops));
	CHECK(strcmp(ka, kb) != 0);
	CHECK(strcmp(ka, kops) != 0); /* a shelf per profile */
	CHECK(sl_skills_owner_ok(ka));
	CHECK(!sl_skills_owner_ok("../x"));
	CHECK(!sl_skills_owner_ok(NULL));
	label = sl_skills_owner_label(bob);
	CHECK_STR(label, "alice (jwt, issuer https://idp.example)");
	free(label);
	label = sl_skills_owner_label(alice_ops);
	CHECK_STR(label, "alice (token, profile ops)");
	free(label);
	CHECK(sl_skills_owner_label(NULL) == NULL);

	sl_skills_shelf(NULL, &pub);
	sl_skills_shelf(ka, &sa);
	sl_skills_shelf(kb, &sb);
	path = sl_printf("%s/data/sluice/skills", root);
	CHECK_STR(pub.dir, path);
	free(path);
	path = sl_printf("%s/data/sluice/skills/%s", root, ka);
	CHECK_STR(sa.dir, path);
	free(path);
	path = sl_printf("%s/state/sluice/skill-pins/%s.json", root, ka);
	CHECK_STR(sa.pins, path);
	free(path);
	CHECK_STR(pub.owner, "");
	CHECK_STR(sa.owner, ka);
	{
		/* Not a key: no shelf. */
		struct sl_skill_shelf bad;
		sl_skills_shelf("../../etc", &bad);
		CHECK(bad.dir == NULL && bad.pins == NULL);
		sl_skills_shelf_dispose(&bad);
	}

	/* The same name on two shelves: each its own file and pin. */
	CHECK_INT(sl_skill_make("same", "a", "return 'a'", 10, NULL, &sk, &err), SL_OK);
	sk.owner = sl_strdup("alice (token)");
	CHECK_INT(sl_skill_save(&sa, &sk, &err), SL_OK);
	sl_skill_dispose(&sk);
	CHECK_INT(sl_skill_make("same", "b", "return 'b'", 10, NULL, &sk, &err), SL_OK);
	CHECK_INT(sl_skill_save(&sb, &sk, &err), SL_OK);
	CHECK_INT(sl_skill_read(sa.dir, "same", &got, &err), SL_OK);
	CHECK_STR(got.code, "return 'a'");
	CHECK_STR(got.owner, "alice (token)");
	CHECK(sl_skill_approved(sa.pins, &got));
	CHECK(!sl_skill_approved(sb.pins, &got)); /* pinned on its own shelf only */
	CHECK(!sl_skill_approved(pub.pins, &got));
	sl_skill_dispose(&got);
	CHECK(sl_skill_approved(sb.pins, &sk));
	CHECK_INT(sl_skill_read(pub.dir, "same", &got, &err), SL_ERR_NOT_FOUND);
	/* The published shelf lists its own files only, not the callers' directories. */
	CHECK(!sl_skills_exist(pub.dir));
	CHECK(sl_skills_exist(sa.dir) && sl_skills_exist(sb.dir));
	CHECK_INT(sl_skills_owners(&owners, &n, &more, &err), SL_OK);
	CHECK_INT(n, 2);
	CHECK(!more);
	if (n == 2)
		CHECK(strcmp(owners[0], owners[1]) < 0 && (!strcmp(owners[0], ka) || !strcmp(owners[1], ka)));
	sl_skills_names_free(owners, n);
	sl_skill_dispose(&sk);

	/* An "owner" that is not a short string: a bad file. */
	{
		static const char bad[] = "{\"name\":\"x\",\"code\":\"1\",\"owner\":7}";
		CHECK_INT(sl_skill_parse(bad, sizeof(bad) - 1, "x", &got, &err), SL_ERR_INVALID);
		CHECK(strstr(err.msg, "owner") != NULL);
	}
	sl_skills_shelf_dispose(&pub);
	sl_skills_shelf_dispose(&sa);
	sl_skills_shelf_dispose(&sb);
	sl_caller_unref(alice);
	sl_caller_unref(alice_ops);
	sl_caller_unref(bob);
}

TEST(skills_shelves_per_caller)
{
	with_xdg(shelves);
}

static void owners_bound(const char *root)
{
	char *base = sl_printf("%s/data/sluice/skills", root), key[SL_SHA256_HEX];
	struct sl_skill_shelf sh;
	struct sl_skill sk;
	struct sl_err err = { 0 };

	CHECK_INT(sl_make_dirs(base), 0);
	for (int i = 0; i < SL_SKILL_OWNERS_MAX; i++) {
		char *dir;
		snprintf(key, sizeof(key), "%064x", i);
		dir = sl_printf("%s/%s", base, key);
		CHECK_INT(mkdir(dir, 0700), 0);
		free(dir);
	}
	CHECK_INT(sl_skill_make("one", "d", "1", 1, NULL, &sk, &err), SL_OK);
	/* A new caller's shelf would be one too many. */
	snprintf(key, sizeof(key), "%064x", SL_SKILL_OWNERS_MAX);
	sl_skills_shelf(key, &sh);
	CHECK_INT(sl_skill_save_room(&sh, "one", &err), SL_ERR_TOO_LARGE);
	CHECK_INT(sl_skill_save(&sh, &sk, &err), SL_ERR_TOO_LARGE);
	CHECK(strstr(err.msg, "1024 callers") != NULL);
	sl_skills_shelf_dispose(&sh);
	/* A caller who has a shelf, and the operator, still save. */
	snprintf(key, sizeof(key), "%064x", 5);
	sl_skills_shelf(key, &sh);
	CHECK_INT(sl_skill_save_room(&sh, "one", &err), SL_OK);
	CHECK_INT(sl_skill_save(&sh, &sk, &err), SL_OK);
	sl_skills_shelf_dispose(&sh);
	sl_skills_shelf(NULL, &sh);
	CHECK_INT(sl_skill_save(&sh, &sk, &err), SL_OK);
	sl_skills_shelf_dispose(&sh);
	sl_skill_dispose(&sk);
	free(base);
}

TEST(skills_owners_bound)
{
	with_xdg(owners_bound);
}
